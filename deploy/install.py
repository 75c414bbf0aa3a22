"""Installs shotstream outside Bazel: `bazel run //:install -- --prefix=DIR`.

DIR/bin/               shotstream_server, shotstream
DIR/include/shotstream/ the C++ client's public headers (client/, common/, gpu/),
                       included as "shotstream/client/client.h" (-IDIR/include)
DIR/LIBDIR/            libshotstream_client.so.VERSION (+ SONAME and .so links), .a
DIR/LIBDIR/pkgconfig/  shotstream-client.pc
DIR/LIBDIR/cmake/shotstream/  shotstreamConfig.cmake (+ version): shotstream::client
DIR/share/shotstream/  config.example.yaml, shotstream.service

The tree is relocatable: the .pc and CMake files find the prefix from where they lie
(${pcfiledir}, CMAKE_CURRENT_LIST_DIR); nothing in them names the build machine.
`--destdir=STAGE` writes DIR under STAGE (for packaging, as make's DESTDIR).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def runfile(path):
    """A file of this target's runfiles by workspace-relative path (bazel run or a test),
    else of the source tree and bazel-bin (run straight from a checkout)."""
    roots = [os.environ.get("RUNFILES_DIR"), os.environ.get("TEST_SRCDIR"),
             os.path.abspath(sys.argv[0]) + ".runfiles"]
    for root in roots:
        if root and os.path.exists(os.path.join(root, "shotstream", path)):
            return os.path.join(root, "shotstream", path)
    for base in (os.path.join(HERE, ".."), os.path.join(HERE, "..", "bazel-bin")):
        if os.path.exists(os.path.join(base, path)):
            return os.path.abspath(os.path.join(base, path))
    raise FileNotFoundError(f"{path}: not built (bazel build //:install)")


def read_bzl(path, find=runfile):
    """The names a .bzl file of plain values defines (it is valid Python too)."""
    scope = {}
    with open(find(path)) as f:
        exec(f.read(), scope)
    return scope


def manifest(find=runfile):
    """client/manifest.bzl: the client's headers and dependencies, written once."""
    return read_bzl("client/manifest.bzl", find)


def version(find=runfile):
    """The one version string for Bazel's outputs (bazel/version.bzl), and the SOVERSION."""
    scope = read_bzl("bazel/version.bzl", find)
    return scope["SHOTSTREAM_VERSION"], scope["SOVERSION"]


def needed(path):
    """The DT_NEEDED names of an ELF file (readelf -d)."""
    out = subprocess.run(["readelf", "-d", path], capture_output=True, text=True,
                         check=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def cuda_libs(lib):
    """Link flags a static link of the client needs for CUDA: empty unless this build is
    --config=cuda (the shared library then needs libcudart)."""
    if not any(n.startswith("libcudart") for n in needed(lib)):
        return []
    root = os.environ.get("CUDA_PATH", "/usr/local/cuda")
    return [f"-L{root}/lib64", "-lcudart"]


def relpath_up(subdir):
    """The path from PREFIX/subdir back to PREFIX ("../.." for lib/pkgconfig)."""
    return "/".join([".."] * len(subdir.strip("/").split("/")))


def pc_file(ver, libdir, cuda, prefix, m):
    # Outside the linker's own directories a program must find the library at run time:
    # the rpath goes with the link flags (as CMake's imported target gets it for free).
    rpath = "" if prefix.rstrip("/") in ("/usr", "") else " -Wl,-rpath,${libdir}"
    return "\n".join([
        "# pkg-config file of the shotstream C++ client (installed by bazel run //:install).",
        f"prefix=${{pcfiledir}}/{relpath_up(libdir + '/pkgconfig')}",
        "exec_prefix=${prefix}",
        f"libdir=${{prefix}}/{libdir}",
        "includedir=${prefix}/include",
        "",
        "Name: shotstream-client",
        "Description: C++ client of the shotstream seismic shot-gather service",
        f"Version: {ver}",
        "Requires: " + " ".join(m["PKG_CONFIG_REQUIRES"]),
        "Requires.private: " + " ".join(m["PKG_CONFIG_PRIVATE"]),
        "Libs: -L${libdir}" + rpath + " -lshotstream_client",
        "Libs.private: " + " ".join([f for f, _, _ in m["PLAIN_PRIVATE"]] + cuda + ["-lpthread"]),
        "Cflags: -I${includedir}",
        "",
    ])


def cmake_config(ver, soversion, libdir, cuda, m):
    plain = [f for f, _, _ in m["PLAIN_PRIVATE"]]
    cmake_dir = f"{libdir}/cmake/shotstream"
    return f"""# CMake package of the shotstream C++ client (installed by bazel run //:install).
#   find_package(shotstream REQUIRED)
#   target_link_libraries(app shotstream::client)         # the shared library
#   target_link_libraries(app shotstream::client_static)  # or the static archive
# Its dependencies (Debian's gRPC, protobuf, Abseil) come through pkg-config, as in
# shotstream-client.pc.
include(CMakeFindDependencyMacro)
find_dependency(PkgConfig)
pkg_check_modules(SHOTSTREAM_DEPS REQUIRED IMPORTED_TARGET {" ".join(m["PKG_CONFIG_REQUIRES"])})
pkg_check_modules(SHOTSTREAM_PRIVATE_DEPS REQUIRED IMPORTED_TARGET {" ".join(m["PKG_CONFIG_PRIVATE"])})
find_dependency(Threads)

get_filename_component(_shotstream_prefix "${{CMAKE_CURRENT_LIST_DIR}}/{relpath_up(cmake_dir)}"
                       ABSOLUTE)
if(NOT TARGET shotstream::client)
  add_library(shotstream::client SHARED IMPORTED)
  set_target_properties(shotstream::client PROPERTIES
    IMPORTED_LOCATION "${{_shotstream_prefix}}/{libdir}/libshotstream_client.so.{ver}"
    IMPORTED_SONAME "libshotstream_client.so.{soversion}"
    INTERFACE_INCLUDE_DIRECTORIES "${{_shotstream_prefix}}/include"
    INTERFACE_COMPILE_FEATURES cxx_std_17
    INTERFACE_LINK_LIBRARIES PkgConfig::SHOTSTREAM_DEPS)
  add_library(shotstream::client_static STATIC IMPORTED)
  set_target_properties(shotstream::client_static PROPERTIES
    IMPORTED_LOCATION "${{_shotstream_prefix}}/{libdir}/libshotstream_client.a"
    INTERFACE_INCLUDE_DIRECTORIES "${{_shotstream_prefix}}/include"
    INTERFACE_COMPILE_FEATURES cxx_std_17
    INTERFACE_LINK_LIBRARIES "PkgConfig::SHOTSTREAM_DEPS;PkgConfig::SHOTSTREAM_PRIVATE_DEPS;Threads::Threads{''.join(';' + f for f in plain + cuda)}")
endif()
unset(_shotstream_prefix)
"""


def cmake_version(ver):
    # 0.x releases may change the ABI: only the same major.minor is compatible.
    return f"""# Version of the shotstream CMake package: the same major.minor is compatible.
set(PACKAGE_VERSION "{ver}")
string(REGEX MATCH "^[0-9]+\\\\.[0-9]+" _shotstream_have "${{PACKAGE_VERSION}}")
string(REGEX MATCH "^[0-9]+\\\\.[0-9]+" _shotstream_want "${{PACKAGE_FIND_VERSION}}")
if(PACKAGE_FIND_VERSION AND NOT _shotstream_have STREQUAL _shotstream_want)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
elseif(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
unset(_shotstream_have)
unset(_shotstream_want)
"""


class Installer:
    """Copies files into STAGE/PREFIX and remembers what it wrote (for the .deb)."""

    def __init__(self, prefix, destdir=""):
        self.prefix = prefix
        self.root = os.path.join(destdir, prefix.lstrip("/")) if destdir else prefix
        self.written = []

    def path(self, rel):
        return os.path.join(self.root, rel)

    def copy(self, src, rel, mode=0o644):
        dst = self.path(rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if os.path.lexists(dst):
            os.unlink(dst)
        shutil.copyfile(src, dst)
        os.chmod(dst, mode)
        self.written.append(rel)

    def write(self, rel, text, mode=0o644):
        dst = self.path(rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        tmp = dst + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, dst)
        self.written.append(rel)

    def link(self, target, rel):
        dst = self.path(rel)
        if os.path.lexists(dst):
            os.unlink(dst)
        os.symlink(target, dst)
        self.written.append(rel)


def install(prefix, destdir="", libdir="lib", find=runfile):
    """Installs everything under PREFIX (inside DESTDIR when given); `find` maps a
    workspace-relative path to the built file. Returns the Installer (its .written lists
    the paths, relative to PREFIX)."""
    ver, soversion = version(find)
    inst = Installer(prefix, destdir)
    inst.copy(find("server/shotstream_server"), "bin/shotstream_server", 0o755)
    inst.copy(find("client/shotstream"), "bin/shotstream", 0o755)
    m = manifest(find)
    for h in m["PUBLIC_HEADERS"]:
        inst.copy(find(h), f"include/shotstream/{h}")
    lib = find("client/libshotstream_client.so")
    real = f"libshotstream_client.so.{ver}"
    inst.copy(lib, f"{libdir}/{real}", 0o755)
    inst.link(real, f"{libdir}/libshotstream_client.so.{soversion}")
    inst.link(f"libshotstream_client.so.{soversion}", f"{libdir}/libshotstream_client.so")
    inst.copy(find("client/libshotstream_client.a"), f"{libdir}/libshotstream_client.a")
    cuda = cuda_libs(lib)
    inst.write(f"{libdir}/pkgconfig/shotstream-client.pc", pc_file(ver, libdir, cuda, prefix, m))
    inst.write(f"{libdir}/cmake/shotstream/shotstreamConfig.cmake",
               cmake_config(ver, soversion, libdir, cuda, m))
    inst.write(f"{libdir}/cmake/shotstream/shotstreamConfigVersion.cmake", cmake_version(ver))
    inst.copy(find("deploy/config.example.yaml"), "share/shotstream/config.example.yaml")
    with open(find("deploy/systemd/shotstream.service")) as f:
        unit = f.read().replace("/usr/local/bin/", f"{prefix.rstrip('/')}/bin/")
    inst.write("share/shotstream/shotstream.service", unit)
    return inst


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--prefix", default="/usr/local")
    parser.add_argument("--destdir", default="", help="stage under this root (packaging)")
    parser.add_argument("--libdir", default="lib", help="relative to the prefix")
    args = parser.parse_args()
    cwd = os.environ.get("BUILD_WORKING_DIRECTORY", os.getcwd())  # bazel run's caller
    prefix = os.path.normpath(os.path.join(cwd, args.prefix))
    destdir = os.path.join(cwd, args.destdir) if args.destdir else ""
    try:
        inst = install(prefix, destdir, args.libdir)
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit(f"install: {e}")
    for rel in inst.written:
        print(os.path.join(prefix, rel))
    print(f"installed shotstream {version()[0]} into {prefix}")


if __name__ == "__main__":
    main()

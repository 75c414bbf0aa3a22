"""Installs the shotstream Python package outside Bazel:

    pip install ./client/python        # needs protoc + grpc_python_plugin, or grpcio-tools
    pip install --no-build-isolation --no-index ./client/python   # offline, Debian's setuptools

The build step generates shotstream/v1/shotstream_pb2*.py from the .proto: the copy an
sdist carries (proto/ beside this file), else the repository's proto/shotstream/v1/.
Runtime needs only grpcio, protobuf and numpy.

Where the C++ build dependencies are there (client/manifest.bzl lists them, and the
sources: the one list Bazel loads too), it also builds the native extension
shotstream._native (the C++ client bound with pybind11, what shotstream.Client runs on)
from the client's sources: the repository's, or the copy an sdist carries (native_src/).
Where they are not, the package runs on the grpcio fallback and says what it lacks, at
install and at first use. SHOTSTREAM_BUILD_NATIVE=0 skips the extension."""

import os
import shutil
import subprocess
import sys
import tempfile

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

from setuptools.command.sdist import sdist

HERE = os.path.dirname(os.path.abspath(__file__))

PROTO = "shotstream/v1/shotstream.proto"
VENDORED = os.path.join(HERE, "proto")  # in an sdist
REPO_PROTO = os.path.join(HERE, "..", "..", "proto")


VENDORED_NATIVE = os.path.join(HERE, "native_src")  # in an sdist
REPO_ROOT = os.path.join(HERE, "..", "..")
MANIFEST = "client/manifest.bzl"


def manifest():
    """client/manifest.bzl: the extension's sources and dependencies, written once (Bazel
    loads the same file); from the sdist's copy, else the repository's."""
    for root in (VENDORED_NATIVE, REPO_ROOT):
        path = os.path.join(root, MANIFEST)
        if os.path.isfile(path):
            scope = {}
            with open(path) as f:
                exec(f.read(), scope)
            return scope
    return None


M = manifest() or {"NATIVE_SOURCES": [], "NATIVE_HEADERS": [], "PKG_CONFIG_REQUIRES": [],
                   "PKG_CONFIG_PRIVATE": [], "PLAIN_PRIVATE": [], "DEBIAN_BUILD_PACKAGES": []}
NATIVE_SOURCES = M["NATIVE_SOURCES"]
NATIVE_HEADERS = M["NATIVE_HEADERS"]
# The extension links what the library does, statically private ones included, and
# compiles against pybind11 and this interpreter's headers.
PKG_CONFIG = M["PKG_CONFIG_REQUIRES"] + M["PKG_CONFIG_PRIVATE"] + ["pybind11"]
PLAIN_LIBS = M["PLAIN_PRIVATE"]
NATIVE_FLAGS = ["-std=c++17", "-O2", "-g0", "-Wall", "-Wno-sign-compare", "-fvisibility=hidden",
                "-fsized-deallocation"]
# Public headers are included as "shotstream/<package>/<header>" (the installed layout).
PUBLIC_PACKAGES = sorted({h.split("/")[0] for h in M.get("PUBLIC_HEADERS", [])})
MISSING_NOTE = "_native_missing.txt"  # in the installed package when the extension is not


def native_root():
    for root in (VENDORED_NATIVE, REPO_ROOT):
        if NATIVE_SOURCES and all(os.path.isfile(os.path.join(root, f))
                                  for f in NATIVE_SOURCES + NATIVE_HEADERS):
            return os.path.abspath(root)
    return None


def native_missing():
    """What the native build lacks here (empty: it can be built)."""
    if os.environ.get("SHOTSTREAM_BUILD_NATIVE", "1") == "0":
        return ["SHOTSTREAM_BUILD_NATIVE=0"]
    missing = []
    if native_root() is None:
        missing.append("the C++ client sources (native_src/ or the repository)")
    for tool, package in (("pkg-config", "pkg-config"), ("protoc", "protobuf-compiler"),
                          ("grpc_cpp_plugin", "protobuf-compiler-grpc"), ("g++", "g++")):
        if shutil.which(tool) is None:
            missing.append(f"{tool} ({package})")
    if shutil.which("pkg-config"):
        for module in PKG_CONFIG:
            if subprocess.run(["pkg-config", "--exists", module]).returncode != 0:
                missing.append(f"pkg-config {module}")
    for _, header, package in PLAIN_LIBS:
        if not any(os.path.isfile(os.path.join(d, header))
                   for d in ("/usr/include", "/usr/local/include")):
            missing.append(f"{header} ({package})")
    return missing


def proto_root():
    for root in (VENDORED, REPO_PROTO):
        if os.path.isfile(os.path.join(root, PROTO)):
            return os.path.abspath(root)
    raise SystemExit(f"shotstream: {PROTO} not found in {VENDORED} or {REPO_PROTO}")


class SdistWithProto(sdist):
    """An sdist that builds outside the repository: the .proto and the C++ client's
    sources go in with it."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        dst = os.path.join(base_dir, "proto", os.path.dirname(PROTO))
        os.makedirs(dst, exist_ok=True)
        shutil.copy(os.path.join(proto_root(), PROTO), dst)
        root = native_root()
        if root is not None:
            for f in NATIVE_SOURCES + NATIVE_HEADERS + [MANIFEST]:
                out = os.path.join(base_dir, "native_src", f)
                os.makedirs(os.path.dirname(out), exist_ok=True)
                shutil.copy(os.path.join(root, f), out)


class BuildNative(build_ext):
    """shotstream._native where the C++ dependencies are there; else the package goes
    without it, and says so (stderr now, _native_missing.txt for the first use)."""

    def finalize_options(self):
        super().finalize_options()
        self.parallel = os.cpu_count() or 1

    def run(self):
        missing = native_missing()
        note = os.path.join(os.path.abspath(self.build_lib), "shotstream", MISSING_NOTE)
        if missing:
            text = ("shotstream: the native extension (the C++ client shotstream.Client runs "
                    "on) was not built; missing: " + ", ".join(missing) +
                    ". The package runs on the slower grpcio fallback. To build it (Debian): "
                    "apt-get install " + " ".join(M["DEBIAN_BUILD_PACKAGES"]) +
                    ", then pip install again.")
            sys.stderr.write(text + "\n")
            os.makedirs(os.path.dirname(note), exist_ok=True)
            with open(note, "w") as f:
                f.write(text + "\n")
            self.extensions = []
            return
        if os.path.exists(note):
            os.remove(note)
        root = native_root()
        # Generated code and the links into the source tree live outside it, removed after
        # the build: links left under client/python/build sent `bazel build //...` into
        # "infinite symlink expansion" after a `pip install ./client/python`.
        gen = tempfile.mkdtemp(prefix="shotstream-gen-")
        try:
            self._build_in(gen, root)
        finally:
            shutil.rmtree(gen, ignore_errors=True)

    def _build_in(self, gen, root):
        subprocess.check_call(
            ["protoc", f"-I{proto_root()}", f"--cpp_out={gen}", f"--grpc_out={gen}",
             f"--plugin=protoc-gen-grpc={shutil.which('grpc_cpp_plugin')}", PROTO],
            cwd=proto_root())
        cflags = subprocess.check_output(["pkg-config", "--cflags"] + PKG_CONFIG, text=True)
        libs = subprocess.check_output(["pkg-config", "--libs"] + PKG_CONFIG, text=True)
        for package in PUBLIC_PACKAGES:  # gen/shotstream/client -> ROOT/client, ...
            link = os.path.join(gen, "shotstream", package)
            if not os.path.lexists(link):
                os.symlink(os.path.join(root, package), link)
        for ext in self.extensions:
            ext.sources = [os.path.join(root, f) for f in NATIVE_SOURCES] + [
                os.path.join(gen, "shotstream", "v1", "shotstream.pb.cc"),
                os.path.join(gen, "shotstream", "v1", "shotstream.grpc.pb.cc")]
            ext.include_dirs = [gen, root]
            ext.extra_compile_args = NATIVE_FLAGS + cflags.split()
            ext.extra_link_args = libs.split() + [flag for flag, _, _ in PLAIN_LIBS]
        super().run()


class BuildWithStubs(build_py):
    def run(self):
        super().run()
        # Absolute: protoc runs in the proto folder (a relative build/lib was looked for
        # there, and pip install failed with "build/lib/: No such file or directory").
        out = os.path.abspath(self.build_lib)
        os.makedirs(os.path.join(out, "shotstream", "v1"), exist_ok=True)
        root = proto_root()
        if shutil.which("protoc") and shutil.which("grpc_python_plugin"):
            cmd = ["protoc", f"-I{root}", f"--python_out={out}", f"--grpc_python_out={out}",
                   f"--plugin=protoc-gen-grpc_python={shutil.which('grpc_python_plugin')}", PROTO]
        else:
            cmd = [sys.executable, "-m", "grpc_tools.protoc", f"-I{root}",
                   f"--python_out={out}", f"--grpc_python_out={out}", PROTO]
        subprocess.check_call(cmd, cwd=root)
        with open(os.path.join(out, "shotstream", "v1", "__init__.py"), "w") as f:
            f.write("# Generated gRPC stubs of shotstream.v1.\n")


# Name, version, dependencies: pyproject.toml ([project]). Here only what needs code: the
# stubs generated at build time and the optional native extension.
setup(
    ext_modules=[Extension("shotstream._native", sources=["(set by BuildNative)"],
                           language="c++")],
    cmdclass={"build_py": BuildWithStubs, "build_ext": BuildNative, "sdist": SdistWithProto},
)

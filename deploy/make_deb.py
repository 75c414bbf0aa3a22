"""Builds the Debian package (bazel build //deploy:deb): what `bazel run //:install`
installs, with --prefix=/usr and Debian's multiarch library directory, plus the systemd
unit in /lib/systemd/system and the example config as the conffile
/etc/shotstream/config.yaml. `Depends:` comes from dpkg-shlibdeps over every ELF file
in the package, so it names the Debian runtime packages the binaries really link.

The service is not enabled or started on install: edit /etc/shotstream/config.yaml, then
`systemctl enable --now shotstream`.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import install

DESCRIPTION = """seismic shot gathers over gRPC, for FWI and imaging on GPUs
 shotstream_server serves SEG-Y, SU, NumPy, HDF5 and Zarr (MDIO) surveys as shot
 gathers (catalogs of trace offsets, coalesced reads, per-client prefetch,
 CRC-checked chunks) and stores the gathers clients write; the shotstream CLI
 lists, fetches, plots and benchmarks them. The C++ client library (headers,
 shared and static library, pkg-config and CMake files) lands shots in pinned host
 buffers and stages them to the GPU."""


def elf_files(root):
    out = []
    for d, _, files in os.walk(root):
        for name in files:
            p = os.path.join(d, name)
            if os.path.islink(p) or name.endswith(".a"):
                continue
            with open(p, "rb") as f:
                if f.read(4) == b"\x7fELF":
                    out.append(p)
    return sorted(out)


def shlib_depends(root, files):
    """dpkg-shlibdeps' Depends for the ELF files (it wants a debian/control to read)."""
    work = tempfile.mkdtemp()
    try:
        os.makedirs(os.path.join(work, "debian"))
        with open(os.path.join(work, "debian", "control"), "w") as f:
            f.write("Source: shotstream\n\nPackage: shotstream\nArchitecture: any\n")
        res = subprocess.run(["dpkg-shlibdeps", "-O", "--ignore-missing-info",
                              f"-l{root}/usr/lib/{multiarch()}"] + files,
                             cwd=work, capture_output=True, text=True)
        if res.returncode != 0:
            sys.exit(f"make_deb: dpkg-shlibdeps failed: {res.stderr}")
        for line in res.stdout.splitlines():
            if line.startswith("shlibs:Depends="):
                return line[len("shlibs:Depends="):]
        sys.exit(f"make_deb: no shlibs:Depends in dpkg-shlibdeps output: {res.stdout}")
    finally:
        shutil.rmtree(work)


def multiarch():
    return subprocess.run(["gcc", "-print-multiarch"], capture_output=True, text=True,
                          check=True).stdout.strip()


def installed_kib(root):
    total = 0
    for d, _, files in os.walk(root):
        for name in files:
            p = os.path.join(d, name)
            if not os.path.islink(p):
                total += os.path.getsize(p)
    return (total + 1023) // 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--bindir", required=True, help="where Bazel put the built files")
    args = parser.parse_args()

    def find(rel):  # sources lie in the execroot as they are; outputs under --bindir
        return rel if os.path.exists(rel) else os.path.join(args.bindir, rel)

    ver, _ = install.version(find)
    arch = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True,
                          check=True).stdout.strip()
    stage = tempfile.mkdtemp()
    try:
        root = os.path.join(stage, "root")
        install.install("/usr", root, f"lib/{multiarch()}", find)
        usr = os.path.join(root, "usr")
        units = os.path.join(root, "lib", "systemd", "system")
        os.makedirs(units)
        shutil.move(os.path.join(usr, "share/shotstream/shotstream.service"), units)
        os.makedirs(os.path.join(root, "etc", "shotstream"))
        shutil.copyfile(find("deploy/config.example.yaml"),
                        os.path.join(root, "etc", "shotstream", "config.yaml"))
        doc = os.path.join(usr, "share", "doc", "shotstream")
        os.makedirs(doc)
        shutil.copyfile(find("README.md"), os.path.join(doc, "README.md"))
        depends = shlib_depends(root, elf_files(root))
        debian = os.path.join(root, "DEBIAN")
        os.makedirs(debian)
        with open(os.path.join(debian, "control"), "w") as f:
            f.write(f"Package: shotstream\nVersion: {ver}\nArchitecture: {arch}\n"
                    "Maintainer: shotstream developers <shotstream@localhost>\n"
                    "Section: science\nPriority: optional\n"
                    f"Installed-Size: {installed_kib(root)}\nDepends: {depends}\n"
                    f"Description: {DESCRIPTION}\n")
        with open(os.path.join(debian, "conffiles"), "w") as f:
            f.write("/etc/shotstream/config.yaml\n")
        for d, dirs, files in os.walk(root):
            for name in dirs:
                os.chmod(os.path.join(d, name), 0o755)
        res = subprocess.run(["dpkg-deb", "--root-owner-group", "-Zxz", "--build", root,
                              args.out], capture_output=True, text=True)
        if res.returncode != 0:
            sys.exit(f"make_deb: dpkg-deb failed: {res.stderr}")
    finally:
        shutil.rmtree(stage)


if __name__ == "__main__":
    main()

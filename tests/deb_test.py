"""The Debian package (bazel build //deploy:deb): its control fields, its files, and a
Depends: that covers every shared library its programs link (each one's owning package,
asked of dpkg on this machine); the packaged server runs from the extracted tree."""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
import harness  # noqa: E402


def read_version():
    scope = {}
    with open(harness.runfile("bazel/version.bzl")) as f:
        exec(f.read(), scope)
    return scope["SHOTSTREAM_VERSION"]


VERSION = read_version()
DEB = harness.runfile(f"deploy/shotstream_{VERSION}_amd64.deb")
MULTIARCH = subprocess.run(["gcc", "-print-multiarch"], capture_output=True, text=True,
                           check=True).stdout.strip()


def dpkg_deb(*args):
    return subprocess.run(["dpkg-deb", *args], capture_output=True, text=True, check=True,
                          timeout=60).stdout


class DebTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        cls.root = os.path.join(cls.tmp, "root")
        dpkg_deb("-x", DEB, cls.root)
        cls.fields = {}
        for line in dpkg_deb("-f", DEB).splitlines():
            if not line.startswith(" ") and ":" in line:
                key, value = line.split(":", 1)
                cls.fields[key] = value.strip()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_control(self):
        self.assertEqual(self.fields["Package"], "shotstream")
        self.assertEqual(self.fields["Version"], VERSION)
        self.assertEqual(self.fields["Architecture"], "amd64")
        self.assertIn("/etc/shotstream/config.yaml", dpkg_deb("-I", DEB, "conffiles"))

    def test_files(self):
        listing = dpkg_deb("-c", DEB)
        names = set(re.findall(r" \./(\S+)", listing))
        lib = f"usr/lib/{MULTIARCH}"
        for path in ["usr/bin/shotstream_server", "usr/bin/shotstream",
                     "usr/include/shotstream/client/client.h",
                     "usr/include/shotstream/gpu/device_stager.h",
                     f"{lib}/libshotstream_client.so.{VERSION}", f"{lib}/libshotstream_client.so",
                     f"{lib}/libshotstream_client.a", f"{lib}/pkgconfig/shotstream-client.pc",
                     f"{lib}/cmake/shotstream/shotstreamConfig.cmake",
                     "lib/systemd/system/shotstream.service", "etc/shotstream/config.yaml",
                     "usr/share/doc/shotstream/README.md"]:
            self.assertIn(path, names)
        for line in listing.splitlines():
            self.assertIn(" root/root ", line)
        with open(os.path.join(self.root, "lib/systemd/system/shotstream.service")) as f:
            self.assertIn("ExecStart=/usr/bin/shotstream_server --config=/etc/shotstream/",
                          f.read())

    def test_depends_covers_every_linked_library(self):
        depends = {d.split()[0] for d in self.fields["Depends"].split(",")}
        for pkg in ["libgrpc++1.51", "libprotobuf32", "libabsl20220623", "libisal2",
                    "libyaml-cpp0.7", "libcivetweb1", "libc6"]:
            self.assertIn(pkg, depends)
        elves = [os.path.join(self.root, "usr/bin", n) for n in ("shotstream_server",
                                                                  "shotstream")]
        elves.append(os.path.join(self.root, f"usr/lib/{MULTIARCH}/libshotstream_client.so"))
        checked = set()
        for elf in elves:
            # What it links itself (NEEDED), where the loader finds it (ldd); libraries
            # those pull in come with their own packages' Depends.
            direct = set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]",
                                    subprocess.run(["readelf", "-d", elf], capture_output=True,
                                                   text=True, check=True).stdout))
            for line in subprocess.run(["ldd", elf], capture_output=True, text=True,
                                       check=True).stdout.splitlines():
                m = re.match(r"\s*(\S+) => (/\S+)", line)
                if not m or m.group(1) not in direct:
                    continue
                path = os.path.realpath(m.group(2))
                owner = subprocess.run(["dpkg", "-S", path], capture_output=True, text=True)
                if owner.returncode != 0:  # /usr/lib vs /lib (merged /usr): ask both
                    alt = path.replace("/usr/lib/", "/lib/", 1)
                    owner = subprocess.run(["dpkg", "-S", alt], capture_output=True, text=True)
                self.assertEqual(owner.returncode, 0, f"{path}: no package owns it")
                pkg = owner.stdout.split(":")[0]
                self.assertIn(pkg, depends, f"{os.path.basename(elf)} links {path} of {pkg}")
                checked.add(path)
        self.assertGreater(len(checked), 15)  # gRPC, protobuf, Abseil's many, libc, ...

    def test_packaged_server_serves(self):
        survey = os.path.join(self.tmp, "s.sgy")
        harness.write_survey(survey, 5, [1, 2], 10, 50)
        with harness.Server([f"--dataset=s={survey}"],
                            binary=os.path.join(self.root, "usr/bin/shotstream_server")) as s:
            out = subprocess.run([os.path.join(self.root, "usr/bin/shotstream"), "ls",
                                  f"--target={s.target}"], capture_output=True, text=True,
                                 timeout=60)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertRegex(out.stdout, r"\bs\b.*READY")


if __name__ == "__main__":
    unittest.main()

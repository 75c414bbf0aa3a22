"""The C++ client outside Bazel: `bazel run //:install` into a temporary prefix, the prefix
moved elsewhere (it must be relocatable), then programs built against it with g++ and
pkg-config and with CMake's find_package, run against the installed server, their shots
compared bit for bit with segyio's reading of the file."""

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
import harness  # noqa: E402

VERSION_BZL = harness.runfile("bazel/version.bzl")
PY_VERSION = harness.runfile("client/python/src/shotstream/_version.py")
SHOT_VALUES = harness.runfile("tests/install/shot_values.cc")
CMAKE_PROJECT = os.path.dirname(harness.runfile("tests/install/CMakeLists.txt"))
FWI_LOOP = harness.runfile("client/examples/fwi_loop.cc")


def run(cmd, **kw):
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)
    if res.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({res.returncode}):\n{res.stdout}\n"
                             f"{res.stderr}")
    return res.stdout


def read_version(path, name):
    scope = {}
    with open(path) as f:
        exec(f.read(), scope)
    return scope[name]


class InstallTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        staged = os.path.join(cls.tmp, "staged")
        cls.listing = run([harness.runfile("deploy/install"), f"--prefix={staged}"])
        # Relocatable: everything must work from where the tree is moved to.
        cls.prefix = os.path.join(cls.tmp, "moved", "prefix")
        os.makedirs(os.path.dirname(cls.prefix))
        shutil.move(staged, cls.prefix)
        cls.staged = staged
        cls.version = read_version(VERSION_BZL, "SHOTSTREAM_VERSION")
        cls.soversion = read_version(VERSION_BZL, "SOVERSION")
        cls.env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(cls.prefix, "lib", "pkgconfig"))
        cls.survey = os.path.join(cls.tmp, "line.sgy")
        harness.write_survey(cls.survey, 5, [11, 12, 13], 40, 300, seed=4)
        cls.expected = harness.segyio_shots([cls.survey])
        cls.server = harness.Server([f"--dataset=line={cls.survey}"],
                                    binary=os.path.join(cls.prefix, "bin", "shotstream_server"))

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def pkg_config(self, *args):
        return run(["pkg-config", *args], env=self.env).split()

    def check_shot_values(self, exe, what):
        out = os.path.join(self.tmp, f"{what}.f32")
        line = run([exe, self.server.target, "line", "12", out]).strip().splitlines()[-1]
        samples, headers = self.expected[12]
        self.assertEqual(line, f"shot 12 {samples.shape[0]} {samples.shape[1]} "
                               f"{headers['offset'][0]:g}", what)
        got = np.fromfile(out, dtype=np.float32).reshape(samples.shape)
        np.testing.assert_array_equal(got, samples, err_msg=what)

    def check_fwi_loop(self, exe, what):
        out = run([exe, f"--target={self.server.target}", "--dataset=line", "--iterations=2",
                   "--compute_ms=0"])
        self.assertEqual(len(re.findall(r"^iteration \d: 3 shots", out, re.M)), 2, out)
        # The loop sums every sample it staged, over both passes.
        total = 2 * sum(float(s.astype(np.float64).sum()) for s, _ in self.expected.values())
        checksum = float(re.search(r"checksum (\S+)", out).group(1))
        self.assertAlmostEqual(checksum / total, 1.0, places=5, msg=f"{what}: {out}")

    def test_versions_agree(self):
        self.assertEqual(self.version, read_version(PY_VERSION, "__version__"),
                         "bazel/version.bzl and the Python package's _version.py differ")
        major, minor = self.version.split(".")[:2]
        self.assertEqual(self.soversion, f"{major}.{minor}" if major == "0" else major)

    def test_layout(self):
        p = self.prefix
        for rel in ["bin/shotstream_server", "bin/shotstream",
                    "include/shotstream/client/client.h",
                    f"lib/libshotstream_client.so.{self.version}", "lib/libshotstream_client.a",
                    "lib/pkgconfig/shotstream-client.pc",
                    "lib/cmake/shotstream/shotstreamConfig.cmake",
                    "lib/cmake/shotstream/shotstreamConfigVersion.cmake",
                    "share/shotstream/config.example.yaml",
                    "share/shotstream/shotstream.service"]:
            self.assertTrue(os.path.isfile(os.path.join(p, rel)), rel)
        self.assertEqual(os.readlink(f"{p}/lib/libshotstream_client.so"),
                         f"libshotstream_client.so.{self.soversion}")
        self.assertEqual(os.readlink(f"{p}/lib/libshotstream_client.so.{self.soversion}"),
                         f"libshotstream_client.so.{self.version}")
        dyn = run(["readelf", "-d", f"{p}/lib/libshotstream_client.so"])
        self.assertIn(f"Library soname: [libshotstream_client.so.{self.soversion}]", dyn)
        # Debian's libraries are linked, not bundled.
        for lib in ["libgrpc++.so", "libprotobuf.so", "libisal.so"]:
            self.assertIn(lib, dyn)
        exported = run(["nm", "-D", "-C", "--defined-only", f"{p}/lib/libshotstream_client.so"])
        self.assertIn("shotstream::client::Client::Connect", exported)
        self.assertNotRegex(exported, r" [TW] (google::protobuf|shotstream::wire|shotstream::v1)")
        # Nothing of the build machine in the files a build reads.
        for rel in ["lib/pkgconfig/shotstream-client.pc",
                    "lib/cmake/shotstream/shotstreamConfig.cmake"]:
            with open(os.path.join(p, rel)) as f:
                text = f.read()
            for bad in [self.tmp, "bazel-", "execroot", os.getcwd()]:
                self.assertNotIn(bad, text, rel)
        with open(f"{p}/share/shotstream/shotstream.service") as f:
            self.assertIn(f"ExecStart={self.staged}/bin/shotstream_server ", f.read())
        self.assertIn(f"installed shotstream {self.version} into {self.staged}", self.listing)

    def test_headers_are_self_contained(self):
        cflags = self.pkg_config("--cflags", "shotstream-client")
        headers = glob.glob(os.path.join(self.prefix, "include", "shotstream", "*", "*.h"))
        self.assertGreaterEqual(len(headers), 5)
        for h in headers:
            run(["g++", "-std=c++17", "-fsyntax-only", "-Wall", "-Werror", *cflags,
                 "-x", "c++", "-include", h, "/dev/null"])

    def test_pkg_config_build(self):
        libdir = self.pkg_config("--variable=libdir", "shotstream-client")[0]
        flags = self.pkg_config("--cflags", "--libs", "shotstream-client")
        exe = os.path.join(self.tmp, "pc_shot_values")
        # The README's line alone: the headers as "shotstream/client/client.h" under
        # -I$prefix/include, and the .pc's rpath finding the library at run time.
        self.assertIn(f"-I{os.path.dirname(libdir)}/include", flags)
        self.assertIn(f"-Wl,-rpath,{libdir}", flags)
        run(["g++", "-std=c++17", SHOT_VALUES, "-o", exe, *flags])
        self.assertIn(f"libshotstream_client.so.{self.soversion} => {libdir}/",
                      run(["ldd", exe]))
        self.check_shot_values(exe, "pkg-config, shared")
        # The static archive: the same program, with --static's private dependencies.
        static = [f for f in self.pkg_config("--static", "--libs", "shotstream-client")
                  if f != "-lshotstream_client"]
        exe_static = os.path.join(self.tmp, "pc_shot_values_static")
        run(["g++", "-std=c++17", SHOT_VALUES, "-o", exe_static,
             *self.pkg_config("--cflags", "shotstream-client"),
             os.path.join(libdir, "libshotstream_client.a"), *static])
        linked = run(["ldd", exe_static])
        self.assertNotIn("libshotstream_client", linked)
        # A --config=cuda install stages through CUDA: the static link takes its runtime
        # from the .pc's private flags.
        cuda = "libcudart" in run(["readelf", "-d", os.path.join(libdir, "libshotstream_client.so")])
        self.assertEqual("-lcudart" in static, cuda)
        self.assertEqual("libcudart" in linked, cuda)
        self.check_shot_values(exe_static, "pkg-config, static")
        fwi = os.path.join(self.tmp, "pc_fwi_loop")
        run(["g++", "-std=c++17", FWI_LOOP, "-o", fwi, *flags,
             *self.pkg_config("--cflags", "--libs", "absl_flags", "absl_flags_parse")])
        self.check_fwi_loop(fwi, "pkg-config fwi_loop")

    def test_cmake_build(self):
        build = os.path.join(self.tmp, "cmake-build")
        run(["cmake", "-S", CMAKE_PROJECT, "-B", build, f"-DCMAKE_PREFIX_PATH={self.prefix}",
             f"-DFWI_LOOP={FWI_LOOP}", "-DCMAKE_BUILD_TYPE=Release"])
        run(["cmake", "--build", build, "-j2"])
        self.check_shot_values(os.path.join(build, "shot_values"), "CMake, shared")
        self.check_shot_values(os.path.join(build, "shot_values_static"), "CMake, static")
        self.check_fwi_loop(os.path.join(build, "fwi_loop"), "CMake fwi_loop")
        # find_package(shotstream 9.0) must refuse this version.
        bad = os.path.join(self.tmp, "cmake-bad")
        os.makedirs(bad)
        with open(os.path.join(bad, "CMakeLists.txt"), "w") as f:
            f.write("cmake_minimum_required(VERSION 3.16)\nproject(p CXX)\n"
                    "find_package(shotstream 9.0 REQUIRED)\n")
        res = subprocess.run(["cmake", "-S", bad, "-B", os.path.join(bad, "b"),
                              f"-DCMAKE_PREFIX_PATH={self.prefix}"],
                             capture_output=True, text=True, timeout=300)
        self.assertNotEqual(res.returncode, 0)
        self.assertIn(self.version, res.stderr)

    def test_installed_cli(self):
        out = run([os.path.join(self.prefix, "bin", "shotstream"), "ls",
                   f"--target={self.server.target}"])
        self.assertIn("line", out)


if __name__ == "__main__":
    unittest.main()

"""`pip install` of the Python package outside Bazel, as a user outside this repository
does it: an sdist made from the repository's layout, installed offline into a fresh venv
(`--system-site-packages` for Debian's grpcio, protobuf and numpy). With the C++ build
dependencies (here: tools/install_deps.sh installs them) the install builds the native
extension, and the Python client's own tests then run against the installed package, both
paths; without them (a pkg-config that finds nothing stands in) it installs the grpcio
package and says what it lacks."""

import glob
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
import harness  # noqa: E402

# What an sdist needs from the repository besides client/python: the .proto and the C++
# client's sources, as client/manifest.bzl lists them (setup.py reads the same file).
_manifest = {}
with open(harness.runfile("client/manifest.bzl")) as f:
    exec(f.read(), _manifest)
NATIVE = _manifest["NATIVE_SOURCES"] + _manifest["NATIVE_HEADERS"] + ["client/manifest.bzl"]


def make_checkout(repo):
    """What a checkout holds for the package at `repo`: client/python, the .proto and the
    C++ client's sources (no build outputs)."""
    src = os.path.dirname(harness.runfile("client/python/setup.py"))
    shutil.copytree(src, os.path.join(repo, "client", "python"),
                    ignore=shutil.ignore_patterns("*.so", "build", "*.egg-info"))
    for f in ["proto/shotstream/v1/shotstream.proto"] + NATIVE:
        os.makedirs(os.path.dirname(os.path.join(repo, f)), exist_ok=True)
        shutil.copy(harness.runfile(f), os.path.join(repo, f))


class PipInstallTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        repo = os.path.join(cls.tmp, "repo")
        make_checkout(repo)
        dist = os.path.join(cls.tmp, "dist")
        res = subprocess.run([sys.executable, "setup.py", "-q", "sdist", "-d", dist],
                             cwd=os.path.join(repo, "client", "python"), capture_output=True,
                             text=True)
        assert res.returncode == 0, res.stderr
        cls.sdist = glob.glob(os.path.join(dist, "shotstream-*.tar.gz"))[0]
        shutil.rmtree(repo)  # the sdist builds on its own
        harness.write_survey(os.path.join(cls.tmp, "v.sgy"), 5, [4, 5], 6, 30)
        cls.want = harness.segyio_shots([os.path.join(cls.tmp, "v.sgy")])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def install(self, name, **env):
        """A fresh venv with the sdist pip-installed; returns its python and pip's output."""
        venv = os.path.join(self.tmp, name)
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv],
                       check=True, capture_output=True)
        py = os.path.join(venv, "bin", "python")
        res = subprocess.run([py, "-m", "pip", "install", "-v", "--no-build-isolation",
                              "--no-index", self.sdist], capture_output=True, text=True,
                             cwd=self.tmp, timeout=600, env=dict(os.environ, **env))
        self.assertEqual(res.returncode, 0, res.stdout[-3000:] + res.stderr[-3000:])
        return py, res.stdout + res.stderr

    def run_installed(self, py, code, *args):
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        return subprocess.run([py, "-W", "always", "-c", code] + list(args),
                              capture_output=True, text=True, cwd=self.tmp, env=env,
                              timeout=300)

    def test_the_sdist_carries_the_proto_and_the_cpp_client(self):
        with tarfile.open(self.sdist) as t:
            names = t.getnames()
        self.assertTrue(any(n.endswith("/pyproject.toml") for n in names), names)
        self.assertTrue(any(n.endswith("/proto/shotstream/v1/shotstream.proto") for n in names))
        for f in NATIVE:
            self.assertTrue(any(n.endswith("/native_src/" + f) for n in names), f)

    def test_with_the_cpp_dependencies_the_install_is_native_and_passes_the_client_tests(self):
        py, _ = self.install("native")
        with harness.Server([f"--dataset=d={self.tmp}/v.sgy"]) as server:
            res = self.run_installed(
                py, "import os, sys, shotstream; c = shotstream.Client(sys.argv[1]); "
                "print(shotstream.__file__, c.native); "
                "[print(s.shot_id, repr(s.samples.astype('float64').sum())) "
                "for s in c.stream('d', [5, 4])]; "
                "print(shotstream.__version__, os.path.isfile(os.path.join("
                "os.path.dirname(shotstream.__file__), 'py.typed')))", server.target)
        self.assertEqual(res.returncode, 0, res.stderr)
        lines = res.stdout.split("\n")
        path, native = lines[0].split()
        self.assertIn(os.path.join(self.tmp, "native", "lib"), path)  # the installed copy
        self.assertEqual(native, "True")
        self.assertNotIn("native extension", res.stderr)  # nothing to say
        for line, sid in zip(lines[1:3], (5, 4)):
            got_id, got_sum = line.split()
            self.assertEqual(int(got_id), sid)
            self.assertEqual(float(got_sum), float(self.want[sid][0].astype("float64").sum()))
        # One version string (src/shotstream/_version.py), and the typing marker installed.
        with open(harness.runfile("client/python/src/shotstream/_version.py")) as f:
            version = f.read().split('__version__ = "')[1].split('"')[0]
        self.assertEqual(lines[3], f"{version} True")
        # The installed metadata registers the xarray engine: open_dataset by URL.
        with harness.Server([f"--dataset=d={self.tmp}/v.sgy"]) as server:
            res = self.run_installed(
                py, "import sys, xarray as xr; "
                "print(sorted(xr.backends.list_engines())); "
                "ds = xr.open_dataset(f'shotstream://{sys.argv[1]}/d', engine='shotstream', "
                "chunks={}); print(repr(float(ds.samples.sel(shot=4).astype('f8').sum())))",
                server.target)
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertIn("'shotstream'", res.stdout.split("\n")[0])
        self.assertEqual(float(res.stdout.split("\n")[1]),
                         float(self.want[4][0].astype("float64").sum()))
        # The Python client's tests, against this installed package, on both paths.
        test = harness.runfile("tests/python_client_test.py")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        for extra in ([], ["--grpcio"]):
            res = subprocess.run([py, test] + extra, capture_output=True, text=True,
                                 env=env, timeout=600)
            self.assertEqual(res.returncode, 0, f"python_client_test {extra}:\n" +
                             res.stderr[-4000:])
            self.assertIn("OK", res.stderr.splitlines()[-1])
            ran = [l for l in res.stderr.splitlines() if l.startswith("Ran ")]
            print(f"python_client_test {' '.join(extra) or '(native)'} against the pip "
                  f"install: {ran[-1] if ran else '?'}, OK", file=sys.stderr)

    def test_an_install_from_a_checkout_leaves_no_link_into_it(self):
        # pip builds a local directory in place: links to the checkout left under
        # client/python/build sent `bazel build //...` into "infinite symlink expansion".
        repo = os.path.join(self.tmp, "checkout")
        make_checkout(repo)
        venv = os.path.join(self.tmp, "from_checkout")
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv],
                       check=True, capture_output=True)
        py = os.path.join(venv, "bin", "python")
        res = subprocess.run([py, "-m", "pip", "install", "--no-build-isolation", "--no-index",
                              "./client/python"], capture_output=True, text=True, cwd=repo,
                             timeout=900)
        self.assertEqual(res.returncode, 0, res.stdout[-3000:] + res.stderr[-3000:])
        links = [os.path.join(d, n) for d, dirs, files in os.walk(repo)
                 for n in dirs + files if os.path.islink(os.path.join(d, n))]
        self.assertEqual(links, [], "links left in the checkout")
        res = self.run_installed(py, "import shotstream.client as m; "
                                     "print(m._native is not None)")
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(res.stdout.strip(), "True")  # the links were needed, and were there

    def test_without_them_it_installs_the_grpcio_package_and_says_what_it_lacks(self):
        # pkg-config that finds no module stands in for a machine without the dev packages.
        py, pip_output = self.install("plain", PKG_CONFIG_LIBDIR="/nonexistent",
                                      PKG_CONFIG_PATH="/nonexistent")
        self.assertIn("the native extension", pip_output)  # said at install
        with harness.Server([f"--dataset=d={self.tmp}/v.sgy"]) as server:
            res = self.run_installed(
                py, "import sys, shotstream; c = shotstream.Client(sys.argv[1]); "
                "d = shotstream.Client(sys.argv[1]); "  # said once, not twice
                "print(c.native, sum(s.samples.size for s in c.stream('d', [4, 5])))",
                server.target)
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(res.stdout.split(), ["False", str(sum(self.want[s][0].size for s in (4, 5)))])
        self.assertEqual(res.stderr.count("RuntimeWarning"), 1, res.stderr)
        self.assertIn("missing: pkg-config grpc++", res.stderr)
        self.assertIn("apt-get install", res.stderr)


if __name__ == "__main__":
    unittest.main()

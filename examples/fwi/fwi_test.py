"""The FWI example, small (4 shots, a coarse grid, two iterations, two ranks), run as a
user runs it: the misfit falls, the datasets it wrote read back exactly through a real
server, a rank killed mid-iteration and the run started again ends with the model of the
run that was never interrupted, and the pictures are real PNGs."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

import harness
import shotstream

FWI = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fwi.py")
SMALL = ["--shots=4", "--nz=30", "--nx=60", "--dx=20", "--nt=300", "--dt_ms=2", "--freq=6",
         "--receivers=30", "--iterations=2", "--sigma=6"]


def run(workdir, *extra):
    res = subprocess.run([sys.executable, FWI, f"--workdir={workdir}"] + SMALL + list(extra),
                         capture_output=True, text=True, timeout=600)
    return res.returncode, res.stdout, res.stderr


class FwiTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        cls.whole = os.path.join(cls.tmp, "whole")
        rc, cls.out, err = run(cls.whole)
        assert rc == 0, cls.out + err

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_it_prints_the_misfit_per_iteration_and_the_misfit_falls(self):
        misfits = [float(m) for m in re.findall(r"^iteration \d+/2: misfit (\S+)", self.out, re.M)]
        self.assertEqual(len(misfits), 2, self.out)
        self.assertLess(misfits[1], misfits[0])
        self.assertRegex(self.out, r"io wait .* [\d.]+%")

    def test_the_datasets_it_wrote_read_back_exactly(self):
        written = os.path.join(self.whole, "server", "written")
        run_id = re.search(r"wrote dataset (fwi-\w+)-observed", self.out).group(1)
        observed = np.load(os.path.join(self.whole, "observed.npy"))
        synthetic = np.load(os.path.join(self.whole, "synthetic.npy"))
        model = np.load(os.path.join(self.whole, "model_final.npy"))
        with harness.Server([f"--write_dir={written}"]) as server:
            for native in harness.client_paths():
                with shotstream.Client(server.target, native=native) as c:
                    got = {s.shot_id: s for s in c.stream(
                        f"{run_id}-observed", [1, 2, 3, 4],
                        headers=["source_x", "group_x", "offset"])}
                    for k in range(4):
                        np.testing.assert_array_equal(got[k + 1].samples, observed[k])
                        h = got[k + 1].headers
                        np.testing.assert_array_equal(h["offset"], h["group_x"] - h["source_x"])
                    self.assertEqual(got[1].headers["group_x"][1], 2 * 20.0)  # cell 2, 20 m
                    self.assertEqual(c.dataset(f"{run_id}-observed").sample_interval_us, 2000)
                    for s in c.stream(f"{run_id}-synthetic", [1, 2, 3, 4]):
                        np.testing.assert_array_equal(s.samples, synthetic[s.shot_id - 1])
                    inverted = next(iter(c.stream(f"{run_id}-model", [1]))).samples
                    np.testing.assert_array_equal(inverted, model.T)
            # `shotstream plot` draws what it wrote.
            plots = os.path.join(self.tmp, "plots") + "/"
            for name in ("model", "synthetic"):
                harness.cli("plot", f"--target={server.target}", f"--dataset={run_id}-{name}",
                            f"--out={plots}")
            self.assertEqual(len([p for p in os.listdir(plots) if p.endswith(".png")]), 2)

    def test_the_pictures_are_real_images(self):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.image as mpimg
        paths = re.findall(r"^picture: (\S+)", self.out, re.M)
        self.assertEqual([os.path.basename(p) for p in paths],
                         ["models.png", "gathers.png", "misfit.png"])
        for p in paths:
            with open(p, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            img = mpimg.imread(p)
            self.assertGreater(img.shape[0] * img.shape[1], 100_000, p)
            self.assertGreater(float(img[..., :3].std()), 0.05, p)  # not a blank page

    def test_a_rank_killed_mid_iteration_resumes_to_the_same_model(self):
        workdir = os.path.join(self.tmp, "killed")
        rc, out, err = run(workdir, "--crash_rank=1", "--crash_at=2:1")
        self.assertNotEqual(rc, 0, out + err)
        self.assertIn("rank 1: dying in iteration 2 after 1 shots", out)
        self.assertIn("run the same command again to resume", out)
        self.assertFalse(os.path.exists(os.path.join(workdir, "model_final.npy")))
        rc, out, err = run(workdir)
        self.assertEqual(rc, 0, out + err)
        self.assertIn("resuming run", out)
        self.assertRegex(out, r"(?m)^iteration 2/2: misfit")
        self.assertNotRegex(out, r"(?m)^iteration 1/2", "iteration 1 was not done again")
        whole = np.load(os.path.join(self.whole, "model_final.npy"))
        resumed = np.load(os.path.join(workdir, "model_final.npy"))
        self.assertLessEqual(np.abs(resumed - whole).max() / np.abs(whole).max(), 1e-5)
        # The same command once more: that run had finished, so a new one starts.
        rc, out, err = run(workdir)
        self.assertEqual(rc, 0, out + err)
        self.assertIn("had finished: starting a new one", out)
        self.assertRegex(out, r"(?m)^iteration 1/2: misfit")


if __name__ == "__main__":
    unittest.main()

"""The QC example through a real server and a LocalCluster: its RMS and spectra per shot
equal numpy's over segyio's reading of the survey, the dataset it writes back holds the
balanced gathers (read back by segyio), and its pictures are drawn."""

import os
import tempfile
import unittest

import numpy as np
import segyio

import harness
import qc
import synth


class QcTest(unittest.TestCase):

    def test_the_example_as_it_comes(self):
        tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        synth.write_survey(f"{tmp}/survey", n_shots=6, traces_per_shot=20, n_samples=250,
                           n_files=2, fmt=5)
        oracle = harness.segyio_shots([f"{tmp}/survey/{f}" for f in
                                       sorted(os.listdir(f"{tmp}/survey"))])
        with harness.Server([f"--dataset=line={tmp}/survey/*.sgy",
                             f"--write_dir={tmp}/written"]) as server:
            rms, spectra = qc.qc(server.target, "line", f"{tmp}/out", workers=2,
                                 shots_per_chunk=4)
        ids = sorted(oracle)
        self.assertEqual(list(rms.shot.values), ids)
        want = {s: np.sqrt(np.mean(oracle[s][0].astype("f8") ** 2)) for s in ids}
        np.testing.assert_allclose(rms.values, [want[s] for s in ids], rtol=1e-12)
        for k, s in enumerate(ids):
            spec = np.abs(np.fft.rfft(oracle[s][0].astype("f8"), axis=1)).mean(axis=0)
            np.testing.assert_allclose(spectra.values[k], spec, rtol=1e-6, atol=1e-9)
        back = harness.segyio_shots([f"{tmp}/written/line_balanced.sgy"])
        for s in ids:
            np.testing.assert_allclose(back[s][0], oracle[s][0] / want[s], rtol=1e-6)
            np.testing.assert_array_equal(back[s][1]["offset"], oracle[s][1]["offset"])
        with segyio.open(f"{tmp}/written/line_balanced.sgy", ignore_geometry=True) as f:
            self.assertEqual(f.tracecount, 6 * 20)
        for png in ("rms.png", "spectra.png", "gathers.png"):
            self.assertGreater(os.path.getsize(f"{tmp}/out/{png}"), 5000, png)


if __name__ == "__main__":
    unittest.main()

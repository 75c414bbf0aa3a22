"""Datasets that heal, against the real binary: a FAILED dataset loaded again when its bad
file is replaced (polled) and on SIGHUP, SIGHUP reloading the configuration (datasets
added, removed, changed) while another dataset's stream runs through it, and
on_bad_file: skip serving the good files and listing the bad ones. segyio writes the
files and reads them back as the oracle."""
import os
import shutil
import signal
import tempfile
import unittest

import grpc
import numpy as np

import harness
import shotstream
from harness import wait_for


def cut(path):
    """A copy that stopped half way: the binary header and part of a trace."""
    with open(path, "r+b") as f:
        f.truncate(3600 + 240 + 100)


class HealTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        # The good parts, kept aside to mend with; p2 is replaced by a new file (rename).
        cls.good = os.path.join(cls.tmp, "good")
        os.makedirs(cls.good)
        for k, shots in enumerate(([1, 2], [3, 4], [5, 6]), start=1):
            harness.write_survey(os.path.join(cls.good, f"p{k}.sgy"), 5, shots, 6, 40, seed=k)
        cls.want = harness.segyio_shots(
            [os.path.join(cls.good, f"p{k}.sgy") for k in (1, 2, 3)])
        # Another dataset whose stream runs through every heal and reload.
        cls.other = os.path.join(cls.tmp, "other.sgy")
        harness.write_survey(cls.other, 5, list(range(101, 161)), 4, 200, seed=9)
        cls.other_want = harness.segyio_shots([cls.other])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def survey(self, name):
        """p1..p3 with p2 cut, in a directory of its own."""
        d = os.path.join(self.tmp, name)
        os.makedirs(d)
        for k in (1, 2, 3):
            shutil.copy(os.path.join(self.good, f"p{k}.sgy"), d)
        cut(os.path.join(d, "p2.sgy"))
        return d

    def mend(self, d):
        """p2 replaced by a whole copy (written beside it, renamed over it)."""
        shutil.copy(os.path.join(self.good, "p2.sgy"), os.path.join(d, "p2.tmp"))
        os.rename(os.path.join(d, "p2.tmp"), os.path.join(d, "p2.sgy"))

    def check_shots(self, c, dataset, ids, want):
        for shot in c.stream(dataset, ids):
            np.testing.assert_array_equal(shot.samples, want[shot.shot_id][0])

    def start_other_stream(self, c):
        """A stream of the other dataset, one shot read; the rest are read by finish()."""
        it = iter(c.stream("other", list(range(101, 161)), queue_depth=2))
        first = next(it)
        got = [first.shot_id]
        np.testing.assert_array_equal(first.samples, self.other_want[first.shot_id][0])

        def finish():
            for shot in it:
                np.testing.assert_array_equal(shot.samples, self.other_want[shot.shot_id][0])
                got.append(shot.shot_id)
            self.assertEqual(got, list(range(101, 161)))  # every shot, once, in order
        return finish

    def state(self, c, name):
        return next(d for d in c.list_datasets() if d.name == name)

    def test_a_failed_dataset_heals_when_its_file_is_replaced(self):
        d = self.survey("polled")
        with harness.Server([f"--dataset=p={d}/*.sgy", f"--dataset=other={self.other}",
                             "--heal_interval=0.1s"]) as server:
            for native in harness.client_paths():
                with shotstream.Client(server.target, native=native) as c:
                    info = self.state(c, "p")
                    self.assertEqual(info.state, "FAILED")
                    self.assertIn("p2.sgy", info.error)
                    with self.assertRaises(shotstream.ShotstreamError) as e:
                        c.dataset("p")
                    self.assertEqual(e.exception.code(), grpc.StatusCode.FAILED_PRECONDITION)
            with shotstream.Client(server.target) as c:
                finish = self.start_other_stream(c)
                self.mend(d)
                wait_for(lambda: self.state(c, "p").state == "READY", what="the heal")
                finish()
                self.assertEqual(list(c.dataset("p").shot_ids), [1, 2, 3, 4, 5, 6])
                self.check_shots(c, "p", [1, 2, 3, 4, 5, 6], self.want)
            server.said("dataset p: READY again, loaded again")
            self.assertEqual(harness.health(server.target, "shotstream.v1.ShotStream/p"),
                             harness.SERVING)

    def test_sighup_retries_a_failed_dataset(self):
        d = self.survey("sighup")
        with harness.Server([f"--dataset=p={d}/*.sgy", "--heal_interval=0"]) as server, \
                shotstream.Client(server.target) as c:
            self.assertEqual(self.state(c, "p").state, "FAILED")
            self.mend(d)  # not polled: only SIGHUP looks
            server.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: any("SIGHUP: configuration reloaded" in l
                                 for l in server.stderr_lines), what="the reload")
            self.assertIn("SIGHUP: dataset p: retried", "".join(server.stderr_lines))
            wait_for(lambda: self.state(c, "p").state == "READY", what="the retry")
            self.check_shots(c, "p", [3, 4], self.want)

    def test_sighup_reloads_the_configuration_without_dropping_other_streams(self):
        d = os.path.join(self.tmp, "reload")
        os.makedirs(d)
        for k in (1, 2, 3):
            shutil.copy(os.path.join(self.good, f"p{k}.sgy"), d)
        cfg = os.path.join(self.tmp, "reload.yaml")

        def config(datasets, extra=""):
            with open(cfg, "w") as f:
                f.write(extra + "datasets:\n" + "".join(
                    f"  - {{name: {n}, files: '{g}'}}\n" for n, g in datasets))
        config([("other", self.other), ("first", f"{d}/p1.sgy"), ("gone", f"{d}/p3.sgy")])
        with harness.Server([f"--config={cfg}"]) as server, \
                shotstream.Client(server.target) as c:
            finish = self.start_other_stream(c)
            config([("other", self.other), ("first", f"{d}/p[12].sgy"), ("new", f"{d}/p3.sgy")],
                   extra="limits: {max_streams: 7}\n")
            server.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: any("SIGHUP: configuration reloaded" in l
                                 for l in server.stderr_lines), what="the reload")
            said = "".join(server.stderr_lines)
            for line in ("SIGHUP: dataset gone: removed", "SIGHUP: dataset new: added",
                         "SIGHUP: dataset first: changed",
                         "SIGHUP: take effect at a restart: limits.max_streams"):
                self.assertIn(line, said)
            wait_for(lambda: {x.name: x.state for x in c.list_datasets()} ==
                     {"other": "READY", "first": "READY", "new": "READY"},
                     what="the datasets as configured")
            self.assertEqual(list(c.dataset("first").shot_ids), [1, 2, 3, 4])
            self.check_shots(c, "first", [3, 4], self.want)
            self.check_shots(c, "new", [5, 6], self.want)
            with self.assertRaises(shotstream.ShotstreamError) as e:
                c.dataset("gone")
            self.assertEqual(e.exception.code(), grpc.StatusCode.NOT_FOUND)
            finish()
            self.assertEqual(harness.health(server.target, "shotstream.v1.ShotStream/gone"),
                             harness.NOT_SERVING)
            # A configuration that does not parse changes nothing, and says so.
            with open(cfg, "w") as f:
                f.write("datasets: [\n")
            server.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: any("configuration not reloaded, the old one stays" in l
                                 for l in server.stderr_lines), what="the refusal")
            self.assertEqual(len(c.list_datasets()), 3)

    def test_on_bad_file_skip_serves_the_good_files_and_lists_the_bad_ones(self):
        d = self.survey("skip")
        cfg = os.path.join(self.tmp, "skip.yaml")
        with open(cfg, "w") as f:
            f.write(f"heal_interval: 0.1s\ndatasets:\n  - {{name: p, files: '{d}/*.sgy', "
                    "on_bad_file: skip}\n")
        for args in ([f"--config={cfg}"],
                     [f"--dataset=p={d}/*.sgy", "--on_bad_file=skip", "--heal_interval=0"]):
            res = harness.cli_server(*args, "--check_config")
            self.assertEqual(res.returncode, 0, res.stderr)
            with harness.Server(args) as server:
                for native in harness.client_paths():
                    with shotstream.Client(server.target, native=native) as c:
                        info = c.dataset("p")
                        self.assertEqual(info.state, "READY")
                        self.assertEqual(info.n_files, 2)
                        self.assertEqual(list(info.shot_ids), [1, 2, 5, 6])
                        self.assertEqual(len(info.bad_files), 1)
                        self.assertTrue(info.bad_files[0].startswith(f"{d}/p2.sgy: "),
                                        info.bad_files)
                        self.check_shots(c, "p", [1, 2, 5, 6], self.want)
                server.said(f"dataset p: left out (on_bad_file: skip): {d}/p2.sgy")
                out = harness.cli("info", f"--target={server.target}", "--dataset=p").stdout
                self.assertIn(f"bad_file: {d}/p2.sgy: ", out)
        # Healed once the file is mended: every file served, none left out.
        with harness.Server([f"--config={cfg}"]) as server, \
                shotstream.Client(server.target) as c:
            self.mend(d)
            wait_for(lambda: c.dataset("p").n_files == 3, what="the heal")
            self.assertEqual(c.dataset("p").bad_files, [])
            self.check_shots(c, "p", [3, 4], self.want)


if __name__ == "__main__":
    unittest.main()

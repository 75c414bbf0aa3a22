"""Survey scale through a real server: a dataset of 1,000 SEG-Y files (one shot each,
written by segyio) served under a descriptor limit of 64 (RLIMIT_NOFILE set for the server
process), by two streams at once reading every shot in different orders while the open-file
cache closes and reopens files under them (zero-copy shots keep their mappings until sent);
descriptors stay under the limit; a file rewritten while it was closed is still found
changed (DATA_LOSS naming it), the dataset rebuilt, and the others keep serving; the shot
list a page at a time. Values compared with segyio's reading of the same files."""

import os
import random
import shutil
import sys
import tempfile
import threading
import unittest

import grpc
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
import harness  # noqa: E402

import shotstream  # noqa: E402

N_FILES, TRACES, SAMPLES = 1000, 3, 16
LIMIT = 64


def open_descriptors(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


class ManyFilesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        cls.dir = os.path.join(cls.tmp, "shots")
        os.mkdir(cls.dir)
        cls.paths = []
        for i in range(N_FILES):
            path = os.path.join(cls.dir, f"s{i:04d}.sgy")
            harness.write_survey(path, 5, [i + 1], TRACES, SAMPLES, seed=i)
            cls.paths.append(path)
        cls.oracle = harness.segyio_shots(cls.paths)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_serves_every_file_under_a_small_descriptor_limit_with_eviction_under_reads(self):
        with harness.Server([f"--dataset=d={self.dir}/*.sgy", "--metrics_listen=127.0.0.1:0"],
                            nofile=LIMIT) as server:
            def line(prefix):
                harness.wait_for(lambda: any(l.startswith(prefix) for l in server.stderr_lines),
                                 what=prefix)
                return next(l for l in server.stderr_lines if l.startswith(prefix))

            self.assertIn(f"descriptor limit {LIMIT} (the hard limit)", line("open files:"))
            self.assertIn(f"up to {LIMIT // 2} data files held open", line("open files:"))
            ready = line("dataset d: ")
            self.assertIn(f"{N_FILES} files", ready)
            self.assertIn("bytes a trace", ready)
            most = [0]
            done = threading.Event()

            def watch():
                while not done.wait(0.005):
                    most[0] = max(most[0], open_descriptors(server.proc.pid))

            watcher = threading.Thread(target=watch)
            watcher.start()
            orders = [list(range(1, N_FILES + 1)), random.Random(3).sample(range(1, N_FILES + 1), N_FILES)]
            got = [{} for _ in orders]
            errors = []

            def read(k):
                try:
                    with shotstream.Client(server.target) as c:
                        for shot in c.stream("d", orders[k], queue_depth=4):
                            got[k][shot.shot_id] = shot.samples
                except Exception as e:  # noqa: BLE001 - reported below
                    errors.append(e)

            readers = [threading.Thread(target=read, args=(k,)) for k in range(len(orders))]
            for r in readers:
                r.start()
            for r in readers:
                r.join()
            done.set()
            watcher.join()
            self.assertEqual(errors, [], "".join(server.stderr_lines[-20:]))
            for k in range(len(orders)):
                self.assertEqual(len(got[k]), N_FILES)
                for sid, samples in got[k].items():
                    np.testing.assert_array_equal(samples, self.oracle[sid][0], err_msg=str(sid))
            self.assertGreater(most[0], 0)
            self.assertLess(most[0], LIMIT)
            # The cache closed files to make room while the streams read (each file was read
            # by both, so reopened), and holds no more than its capacity.
            m = server.metrics()
            self.assertEqual(m["shotstream_open_files_limit"], LIMIT // 2)
            self.assertLessEqual(m["shotstream_open_files"], LIMIT // 2)
            self.assertGreater(m["shotstream_file_evictions_total"], N_FILES)
            self.assertGreater(m["shotstream_file_opens_total"], 2 * N_FILES)
            # The shot list a page at a time.
            with shotstream.Client(server.target) as c:
                pages = list(c.dataset_pages("d", page_size=300))
            self.assertEqual([len(p.shot_ids) for p in pages], [300, 300, 300, 100])
            self.assertEqual([s for p in pages for s in p.shot_ids], list(range(1, N_FILES + 1)))

    def test_a_file_rewritten_while_closed_is_found_and_the_others_keep_serving(self):
        d = os.path.join(self.tmp, "rewrite")
        shutil.copytree(self.dir, d)
        with harness.Server([f"--dataset=d={d}/*.sgy", "--open_files=8"], nofile=LIMIT) as server, \
                shotstream.Client(server.target) as c:
            self.assertEqual(len(list(c.stream("d", list(range(1, 101))))), 100)  # s0000 evicted
            path = os.path.join(d, "s0000.sgy")
            with open(path, "r+b") as f:  # the same size, other samples
                f.seek(3600 + 240)
                f.write(np.full(SAMPLES, 7.0, ">f4").tobytes())
            os.utime(path, ns=(0, 1))  # a modification time surely different
            with self.assertRaises(shotstream.ShotstreamError) as e:
                list(c.stream("d", [1]))
            self.assertEqual(e.exception.code(), grpc.StatusCode.DATA_LOSS)
            self.assertIn("s0000.sgy", e.exception.details())
            # The dataset is rebuilt in the background, then serves the new samples and the
            # others as before.
            harness.wait_for(lambda: any("d: READY again" in l for l in server.stderr_lines),
                             what="the rebuild")
            shot = next(iter(c.stream("d", [1])))
            np.testing.assert_array_equal(shot.samples[0], np.full(SAMPLES, 7.0, "f4"))
            shot = next(iter(c.stream("d", [500])))
            np.testing.assert_array_equal(shot.samples, self.oracle[500][0])
            self.assertIsNone(server.proc.poll())


if __name__ == "__main__":
    unittest.main()

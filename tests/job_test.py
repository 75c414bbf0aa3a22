"""Jobs through the real server: consumer processes share one epoch (each shot exactly
once when every consumer ends normally), a consumer SIGKILLed mid-epoch loses nothing
(duplicates bounded), a server restarted mid-epoch with --job_dir resumes without loss,
and consumers that disagree are refused before any data."""

import os
import signal
import subprocess
import sys
import threading
import time
import unittest

import grpc
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
import harness  # noqa: E402

import shotstream  # noqa: E402

N_SHOTS = 60
QUEUE_DEPTH = 2
CONSUMER = """
import sys, time
import shotstream
target, job, delay = sys.argv[1], sys.argv[2], float(sys.argv[3])
with shotstream.Client(target) as c:
    for shot in c.stream_job("d", job, list(range(1, %d + 1)), epoch=0, seed=4,
                             queue_depth=%d):
        assert shot.samples.shape == (12, 50), shot.samples.shape
        print("got", shot.shot_id, flush=True)
        time.sleep(delay)
print("end", flush=True)
""" % (N_SHOTS, QUEUE_DEPTH)


class JobTest(harness.ConsumerProcessTest):
    N_SHOTS, TRACES, SAMPLES = N_SHOTS, 12, 50
    CONSUMER = CONSUMER

    def consumer(self, target, job, delay):
        return subprocess.Popen([sys.executable, self.script, target, job, str(delay)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=self.env)

    @staticmethod
    def shots_of(out):
        return [int(line.split()[1]) for line in out.splitlines() if line.startswith("got ")]

    def test_three_consumers_take_every_shot_exactly_once(self):
        with harness.Server([f"--dataset=d={self.data}/*.sgy",
                             "--metrics_listen=127.0.0.1:0"]) as server:
            procs = [self.consumer(server.target, "once", d) for d in (0.005, 0.01, 0.04)]
            outs = [p.communicate(timeout=120) for p in procs]
            for p, (out, err) in zip(procs, outs):
                self.assertEqual(p.returncode, 0, err)
                self.assertTrue(out.rstrip().endswith("end"))
            got = [self.shots_of(out) for out, _ in outs]
            self.assertEqual(sorted(sum(got, [])), list(range(1, N_SHOTS + 1)))
            self.assertGreater(len(got[0]), len(got[2]), "the fastest takes the most")
            m = server.metrics()
            self.assertEqual(m["shotstream_job_shots_done_total"], N_SHOTS)
            self.assertEqual(m["shotstream_job_shots_handed_total"], N_SHOTS)
            self.assertEqual(m["shotstream_job_shots_returned_total"], 0)

    def test_a_consumer_killed_mid_epoch_loses_nothing(self):
        with harness.Server([f"--dataset=d={self.data}/*.sgy"]) as server:
            steady = [self.consumer(server.target, "kill", 0.02) for _ in range(2)]
            victim = self.consumer(server.target, "kill", 0.05)
            seen = []
            for line in victim.stdout:
                if line.startswith("got "):
                    seen.append(int(line.split()[1]))
                if len(seen) == 3:
                    break
            victim.send_signal(signal.SIGKILL)
            victim.wait()
            outs = [p.communicate(timeout=120) for p in steady]
            for p, (out, err) in zip(steady, outs):
                self.assertEqual(p.returncode, 0, err)
            rest = sum((self.shots_of(out) for out, _ in outs), [])
            self.assertEqual(set(seen + rest), set(range(1, N_SHOTS + 1)), "none lost")
            self.assertEqual(len(rest), len(set(rest)), "the others took each shot once")
            twice = set(seen) & set(rest)
            self.assertLessEqual(len(twice), QUEUE_DEPTH + 1, twice)

    def test_a_server_restarted_mid_epoch_with_a_job_dir_resumes(self):
        port = harness.free_port()
        job_dir = os.path.join(self.tmp, "jobs")
        args = [f"--dataset=d={self.data}/*.sgy", f"--listen=127.0.0.1:{port}",
                f"--job_dir={job_dir}"]
        server = harness.Server(args)
        try:
            first = self.consumer(server.target, "restart", 0.02)
            seen = []
            for line in first.stdout:
                if line.startswith("got "):
                    seen.append(int(line.split()[1]))
                if len(seen) == 20:
                    break
            server.stop(signal.SIGKILL)
            first.communicate(timeout=60)
            self.assertNotEqual(first.returncode, 0, "its server died under it")
            server = harness.Server(args)
            out, err = self.consumer(server.target, "restart", 0).communicate(timeout=120)
        finally:
            server.stop()
        rest = self.shots_of(out)
        self.assertTrue(out.rstrip().endswith("end"), err)
        self.assertEqual(set(seen + rest), set(range(1, N_SHOTS + 1)), "none lost")
        self.assertLessEqual(len(set(seen) & set(rest)), QUEUE_DEPTH + 1,
                             "the shots recorded done are not handed again")
        self.assertTrue(os.path.exists(os.path.join(job_dir, "d.restart.0.job")))

    def test_two_servers_each_run_the_job_for_the_shots_they_hold(self):
        halves = []
        for k, shots in enumerate((range(1, 16), range(16, 31))):
            path = os.path.join(self.tmp, f"node{k}.sgy")
            harness.write_survey(path, 5, list(shots), 4, 20, seed=k)
            halves.append(path)
        servers = [harness.Server([f"--dataset=d={p}"]) for p in halves]
        try:
            targets = [s.target for s in servers]
            got = [[], []]

            def consume(k):  # a consumer a thread: each waits only on its own shots
                with shotstream.Client(targets) as c:
                    for shot in c.stream_job("d", "two", list(range(1, 31)), queue_depth=1):
                        got[k].append(shot.shot_id)
                        time.sleep(0.005)

            threads = [threading.Thread(target=consume, args=(k,)) for k in (0, 1)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=120)
            self.assertEqual(sorted(got[0] + got[1]), list(range(1, 31)))
            # Each server's log shows the job's streams: both served a share.
            for s in servers:
                self.assertTrue(any(l.startswith("job stream") for l in s.stderr_lines))
        finally:
            for s in servers:
                s.stop()

    def test_disagreeing_consumers_and_unknown_shots_are_refused(self):
        with harness.Server([f"--dataset=d={self.data}/*.sgy"]) as server:
            with shotstream.Client(server.target) as c:
                a = c.stream_job("d", "agree", [1, 2, 3], seed=1, queue_depth=1)
                first = next(a)
                self.assertIn(first.shot_id, (1, 2, 3))
                for ids, seed in (([1, 2], 1), ([1, 2, 3], 2)):
                    with self.assertRaises(shotstream.ShotstreamError) as cm:
                        next(c.stream_job("d", "agree", ids, seed=seed))
                    self.assertEqual(cm.exception.code(), grpc.StatusCode.FAILED_PRECONDITION)
                    self.assertIn("job 'agree'", cm.exception.details())
                with self.assertRaises(shotstream.ShotstreamError) as cm:
                    next(c.stream_job("d", "unknown", [1, 9999]))
                self.assertEqual(cm.exception.code(), grpc.StatusCode.NOT_FOUND)
                self.assertIn("9999", cm.exception.details())
                self.assertEqual(sorted([first.shot_id] + [s.shot_id for s in a]), [1, 2, 3])

    def test_a_job_selects_and_encodes_its_shots_as_a_stream_does(self):
        # window, where, encoding, headers and raw trace headers: a job's shots are what a
        # stream with the same selection gives, sample for sample (grpcio path; the native
        # client's jobs are tested in //client:client_test).
        selection = dict(headers=["offset"], window=(5, 40), where={"offset": (120, 200)},
                         trace_headers=True)
        ids = list(range(1, 11))
        with harness.Server([f"--dataset=d={self.data}/*.sgy"]) as server, \
                shotstream.Client(server.target, native=False) as c:
            for encoding in ("float32", "native", "int16", "lossless", "zfp"):
                with self.subTest(encoding=encoding):
                    want = {s.shot_id: s for s in c.stream("d", ids, encoding=encoding,
                                                          **selection)}
                    got = {s.shot_id: s for s in c.stream_job("d", "sel-" + encoding, ids,
                                                              encoding=encoding, **selection)}
                    self.assertEqual(sorted(got), ids)
                    for sid, shot in got.items():
                        self.assertEqual(shot.samples.shape[1], 35)
                        self.assertLess(shot.samples.shape[0], 12)  # the condition kept some
                        self.assertEqual(shot.encoding, want[sid].encoding)
                        np.testing.assert_array_equal(shot.samples, want[sid].samples)
                        np.testing.assert_array_equal(shot.headers["offset"],
                                                      want[sid].headers["offset"])
                        np.testing.assert_array_equal(shot.trace_headers,
                                                      want[sid].trace_headers)


if __name__ == "__main__":
    unittest.main()

"""Huge shots through a real server: gathers larger than the server's in-flight budget are
read, encoded and sent in pieces (--piece_bytes), so that several consumers of them hold
the server to pieces, not shots; every chunk carries its own CRC-32, so a corrupt piece
is found before the shot's end; stream(..., pieces=True) hands a shot over part by part,
exact against segyio, also across a server killed in the middle of a shot."""

import os
import shutil
import signal
import sys
import tempfile
import threading
import unittest

import grpc
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
import harness  # noqa: E402

import shotstream  # noqa: E402

SHOTS = [1, 2, 3]
NT, NS = 3000, 2000
SHOT_BYTES = NT * NS * 4  # 24 MB as float32
PIECE = 2 << 20
BUDGET = 4 << 20  # less than a sixth of one shot
CONSUMERS = 4


class HugeShotsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        cls.ibm = os.path.join(cls.tmp, "das_ibm.sgy")
        harness.write_survey(cls.ibm, 1, SHOTS, NT, NS, seed=38)
        cls.oracle = harness.segyio_shots([cls.ibm])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def args(self, *extra):
        return [f"--dataset=h={self.ibm}", f"--piece_bytes={PIECE}",
                f"--max_inflight_bytes={BUDGET}", "--metrics_listen=127.0.0.1:0",
                "--log_streams=false", "--grace_period=0s", *extra]

    def clients(self, target, **kw):
        """A native client (the C++ core) and a grpcio one, where both are there."""
        out = [shotstream.Client(target, **kw)]
        if out[0].native:
            out.append(shotstream.Client(target, native=False, **kw))
        return out

    def assemble(self, parts):
        """Parts of shots (pieces=True) in stream order -> [(shot_id, samples, headers)],
        checking that each shot's parts follow each other, none twice, none missing."""
        shots = []
        for p in parts:
            if p.first_trace == 0:
                self.assertTrue(not shots or shots[-1][3], "a shot began inside another")
                shots.append([p.shot_id, [], dict(p.headers), False])
            else:
                self.assertEqual(p.headers, {}, "headers with the first part only")
            sid, chunks, _, done = shots[-1]
            self.assertFalse(done)
            self.assertEqual(p.shot_id, sid)
            have = sum(len(c) for c in chunks)
            self.assertEqual(p.first_trace, have, "parts in order, none twice, none missing")
            chunks.append(np.array(p.samples))
            shots[-1][3] = p.last_piece
            if p.last_piece:
                self.assertEqual(have + len(p.samples), p.shot_traces)
        self.assertTrue(all(s[3] for s in shots), "every shot ended")
        return [(sid, np.concatenate(c) if c else np.zeros((0, NS), np.float32), h)
                for sid, c, h, _ in shots]

    def test_shots_larger_than_the_budget_go_to_several_consumers_in_bounded_memory(self):
        with harness.Server(self.args()) as server:
            idle = harness.anon_kb(server.proc.pid)
            peak = [idle]
            done = threading.Event()

            def sample():  # the server's anonymous memory while the streams run
                while not done.wait(0.02):
                    peak[0] = max(peak[0], harness.anon_kb(server.proc.pid))

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            errors, got = [], {}

            def consume(k):
                try:
                    with shotstream.Client(server.target) as c:
                        got[k] = [(s.shot_id, np.array(s.samples)) for s in
                                  c.stream("h", SHOTS, queue_depth=2)]
                except Exception as e:  # reported below
                    errors.append(e)

            threads = [threading.Thread(target=consume, args=(k,)) for k in range(CONSUMERS)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(300)
            done.set()
            sampler.join()
            self.assertEqual(errors, [])
            for k in range(CONSUMERS):
                self.assertEqual([sid for sid, _ in got[k]], SHOTS)
                for sid, samples in got[k]:
                    np.testing.assert_array_equal(samples, self.oracle[sid][0])
            # The CLI's bench takes parts too, every shot checked, in order.
            r = harness.cli_bench(server.target, "h", pieces="true", shots="1,2,3")
            self.assertEqual((r["shots"], r["checksums_verified"], r["in_order"], r["pieces"]),
                             (3, 3, True, True))
            self.assertEqual(r["bytes"], 3 * SHOT_BYTES)
            m = server.metrics()
            # The budget holds pieces: at most the limit plus one piece a stream (the
            # progress rule), never a shot.
            self.assertLessEqual(m["shotstream_inflight_bytes_peak"], BUDGET + CONSUMERS * PIECE)
            grown = (peak[0] - idle) * 1024
            print(f"server anonymous memory: {idle} kB idle, {peak[0]} kB at most with "
                  f"{CONSUMERS} streams of {SHOT_BYTES >> 20} MB shots", file=sys.stderr)
            self.assertLess(grown, 2 * SHOT_BYTES,
                            "held pieces, not one shot a stream "
                            f"({CONSUMERS} x {SHOT_BYTES >> 20} MB)")

    def test_parts_are_exact_with_headers_windows_conditions_and_encodings(self):
        with harness.Server(self.args()) as server:
            for c in self.clients(server.target):
                with c:
                    for kw in ({}, {"headers": ["offset", "group_x"],
                                    "where": {"offset": (-900, 40000)}, "window": (100, 1700)},
                               {"encoding": "lossless", "trace_headers": True},
                               {"encoding": "native", "max_chunk_bytes": 3 << 20}):
                        if kw.get("encoding") == "lossless" and not c.native:
                            try:
                                import blosc  # noqa: F401
                            except ImportError:
                                continue
                        parts = list(c.stream("h", SHOTS, pieces=True, **kw))
                        self.assertGreater(len(parts), len(SHOTS), "shots came in parts")
                        for (sid, samples, headers), want in zip(self.assemble(parts), SHOTS):
                            self.assertEqual(sid, want)
                            oracle, oracle_h = self.oracle[sid]
                            keep = np.ones(NT, bool)
                            if "where" in kw:
                                lo, hi = kw["where"]["offset"]
                                keep = (oracle_h["offset"] >= lo) & (oracle_h["offset"] <= hi)
                            a, b = kw.get("window", (0, NS))
                            np.testing.assert_array_equal(samples, oracle[keep, a:b],
                                                          err_msg=f"{kw} native={c.native}")
                            for h in kw.get("headers", []):
                                np.testing.assert_array_equal(headers[h], oracle_h[h][keep])
                        if kw.get("trace_headers"):
                            self.assertEqual(parts[0].trace_headers.shape, (NT, 240))
                    # The same shots whole: as before pieces existed.
                    whole = list(c.stream("h", [2]))
                    self.assertEqual(whole[0].first_trace, 0)
                    self.assertEqual(whole[0].shot_traces, NT)
                    self.assertTrue(whole[0].last_piece)
                    np.testing.assert_array_equal(whole[0].samples, self.oracle[2][0])

    def test_a_corrupt_piece_is_data_loss_naming_its_traces_before_the_shot_ends(self):
        with harness.Server(self.args("--testing_corrupt_shot=2")) as server:
            for c in self.clients(server.target):
                with c:
                    parts = []
                    with self.assertRaises(shotstream.ShotstreamError) as e:
                        for p in c.stream("h", SHOTS, pieces=True):
                            parts.append(p)
                    self.assertEqual(e.exception.code(), grpc.StatusCode.DATA_LOSS)
                    self.assertIn("shot 2", str(e.exception))
                    self.assertIn("traces [0, ", str(e.exception))
                    # Shot 1 came whole, in parts; nothing of shot 2 was handed over.
                    self.assertEqual({p.shot_id for p in parts}, {1})
                    self.assertTrue(parts[-1].last_piece)
                    # Whole shots: the shot never arrives either.
                    with self.assertRaises(shotstream.ShotstreamError) as e:
                        list(c.stream("h", [2]))
                    self.assertEqual(e.exception.code(), grpc.StatusCode.DATA_LOSS)

    def test_a_server_killed_inside_a_shot_resumes_without_a_part_twice(self):
        port = harness.free_port()
        args = [f"--listen=127.0.0.1:{port}"] + self.args()
        server = harness.Server(args)
        try:
            for native in (True, False):
                with shotstream.Client(server.target, retries=5, native=native) as c:
                    parts, killed = [], False
                    for p in c.stream("h", SHOTS, pieces=True, queue_depth=1):
                        parts.append(p)
                        if p.shot_id == 2 and p.first_trace > 0 and not killed:
                            server.stop(signal.SIGKILL)  # inside shot 2
                            server = harness.Server(args)
                            killed = True
                    self.assertGreater(c.reconnects, 0, f"native={native}")
                    for (sid, samples, _), want in zip(self.assemble(parts), SHOTS):
                        self.assertEqual(sid, want)
                        np.testing.assert_array_equal(samples, self.oracle[sid][0])
        finally:
            server.stop()


if __name__ == "__main__":
    unittest.main()

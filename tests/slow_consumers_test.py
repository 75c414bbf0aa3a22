"""Slow and stalled consumers through a real server: forty streams whose consumers read
one message and then nothing (a hung worker, a debugger, a GPU job computing for
minutes) stop nobody else's stream, give back what they read ahead after the stall
timeout, and get every shot once, in order, when they read on. Jobs hold the same rules:
a stalled consumer's read-ahead goes back to the job for the others."""

import os
import shutil
import sys
import tempfile
import threading
import unittest
import zlib

import grpc
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
import harness  # noqa: E402

import shotstream  # noqa: E402
from shotstream.v1 import shotstream_pb2 as pb  # noqa: E402
from shotstream.v1 import shotstream_pb2_grpc as pb_grpc  # noqa: E402

SHOTS = list(range(1, 21))
NT, NS = 256, 1000
SHOT_BYTES = NT * NS * 4  # 1 MB as float32
# A budget of 128 shots, as 1 GiB is 140 shots of 7.68 MB: forty stalled streams with
# queue depth 8 hold all of it (their fair share, 3 shots each) until they give it back.
BUDGET = 128 * SHOT_BYTES
STALLED = 40
REQUEST = SHOTS * 5  # more than the sockets between server and a stalled client hold
# Jobs: shots of 4 MB, so that a job consumer's limit (queue depth + 1 shots not done) is
# more than those sockets hold, and some of its read-ahead stays on the server.
JOB_SHOTS = list(range(1, 13))
JOB_NT = 1024


class StalledStream:
    """A raw grpcio stream on its own connection that has read its first message."""

    def __init__(self, target, queue_depth=8):
        self.channel = grpc.insecure_channel(target)
        stub = pb_grpc.ShotStreamStub(self.channel)
        self.call = stub.StreamShots(pb.StreamShotsRequest(
            dataset="d", shot_ids=REQUEST, queue_depth=queue_depth))
        self.first = next(self.call)

    def close(self):
        self.call.cancel()
        self.channel.close()


class SlowConsumersTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        cls.path = os.path.join(cls.tmp, "line.sgy")
        harness.write_survey(cls.path, 5, SHOTS, NT, NS, seed=35)
        cls.job_path = os.path.join(cls.tmp, "job.sgy")
        harness.write_survey(cls.job_path, 5, JOB_SHOTS, JOB_NT, NS, seed=36)
        cls.oracle = {sid: samples for sid, (samples, _) in
                      harness.segyio_shots([cls.path]).items()}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def server(self, stall_timeout, budget=BUDGET):
        return harness.Server([f"--dataset=d={self.path}", f"--dataset=j={self.job_path}",
                               f"--max_inflight_bytes={budget}",
                               f"--stall_timeout={stall_timeout}", "--max_queue_depth=8",
                               "--metrics_listen=127.0.0.1:0", "--log_streams=false",
                               "--grace_period=0s"])  # the stalled streams are cut

    def stall(self, server):
        """STALLED streams that hold the budget: each read one message, and the server's
        writes to it wait (the metrics say every one holds bytes)."""
        streams = [StalledStream(server.target) for _ in range(STALLED)]
        self.addCleanup(lambda: [s.close() for s in streams])
        harness.wait_for(lambda: server.metrics()["shotstream_inflight_bytes"]
                         >= STALLED * SHOT_BYTES, what="the stalled streams to hold bytes")
        return streams

    def consume(self, server, timeout=120):
        """A consumer reading normally (queue depth 8) finishes, with every value."""
        got, errors = [], []

        def run():
            try:
                with shotstream.Client(server.target) as c:
                    for shot in c.stream("d", SHOTS, queue_depth=8):
                        got.append((shot.shot_id, np.array(shot.samples)))
            except Exception as e:  # reported below
                errors.append(e)

        t = threading.Thread(target=run, daemon=True)
        t.start()
        t.join(timeout)
        self.assertFalse(t.is_alive(), f"starved: {len(got)} of {len(SHOTS)} shots in "
                         f"{timeout} s beside {STALLED} stalled streams")
        self.assertEqual(errors, [])
        self.assertEqual([sid for sid, _ in got], SHOTS)
        for sid, samples in got:
            np.testing.assert_array_equal(samples, self.oracle[sid])

    def test_a_consumer_finishes_beside_forty_stalled_streams_that_never_give_back(self):
        # Stall timeout off: the budget's progress rule alone (a stream that holds nothing
        # gets its next shot, also when it queued while holding its last). A budget of
        # half a shot a stalled stream: each holds one shot, over the limit, by that rule.
        with self.server("0s", budget=STALLED // 2 * SHOT_BYTES) as server:
            self.stall(server)
            self.consume(server)
            m = server.metrics()
            self.assertEqual(m["shotstream_stalled_streams"], 0)
            self.assertEqual(m["shotstream_shots_given_back_total"], 0)
            self.assertGreater(m["shotstream_budget_waits_total"], 0, "the budget was full")

    def test_stalled_streams_give_back_and_one_that_reads_on_gets_every_shot_once(self):
        with self.server("1s") as server:
            streams = self.stall(server)
            self.consume(server)
            harness.wait_for(lambda: server.metrics()["shotstream_stalled_streams"] == STALLED,
                             what="every stalled stream to give back")
            m = server.metrics()
            self.assertGreaterEqual(m["shotstream_shots_given_back_total"], STALLED)
            self.assertEqual(m["shotstream_bytes_given_back_total"],
                             m["shotstream_shots_given_back_total"] * SHOT_BYTES)
            # Each holds at most the shot it is sending now.
            self.assertLessEqual(m["shotstream_inflight_bytes"], STALLED * SHOT_BYTES)

            # One reads on: every shot of its request, once, in order, each CRC and value
            # right, the shots it gave back read again.
            s = streams[0]
            order, buf, chunks = [], bytearray(), [s.first]
            for chunk in s.call:
                chunks.append(chunk)
            for chunk in chunks:
                if chunk.offset == 0:
                    order.append((chunk.index, chunk.shot_id))
                    buf = bytearray()
                self.assertEqual(chunk.offset, len(buf))
                buf += chunk.samples
                if chunk.last:
                    self.assertEqual(zlib.crc32(bytes(buf)), chunk.crc32, chunk.shot_id)
                    got = np.frombuffer(bytes(buf), dtype="<f4").reshape(NT, NS)
                    np.testing.assert_array_equal(got, self.oracle[chunk.shot_id])
            self.assertEqual(order, list(enumerate(REQUEST)))
            self.assertEqual(s.call.code(), grpc.StatusCode.OK)
            harness.wait_for(lambda: server.metrics()["shotstream_stalled_streams"]
                             == STALLED - 1, what="the stream that read on to count as such")

    def test_a_stalled_job_consumers_read_ahead_goes_back_to_the_job(self):
        with self.server("1s") as server:
            # A raw consumer (no read-ahead of its own) that reads one message, then
            # neither reads nor says it is done with anything.
            channel = grpc.insecure_channel(server.target)
            self.addCleanup(channel.close)
            hold = threading.Event()
            self.addCleanup(hold.set)

            def requests():
                yield pb.JobRequest(start=pb.JobStart(dataset="j", job="fwi",
                                                      shot_ids=JOB_SHOTS, queue_depth=8))
                hold.wait()

            call = pb_grpc.ShotStreamStub(channel).StreamJob(requests())
            next(call)
            harness.wait_for(
                lambda: server.metrics()["shotstream_job_shots_returned_total"] > 0,
                what="the stalled consumer to give its read-ahead back to the job")
            m = server.metrics()
            self.assertEqual(m["shotstream_stalled_streams"], 1)
            still_held = m["shotstream_job_shots_handed_total"] - \
                m["shotstream_job_shots_returned_total"]
            # Without the give-back it would hold its limit, queue depth + 1 shots.
            self.assertLess(still_held, 9)

            seen = []
            with shotstream.Client(server.target, native=False) as steady:
                def run():
                    for shot in steady.stream_job("j", "fwi", JOB_SHOTS, queue_depth=2):
                        seen.append(shot.shot_id)

                t = threading.Thread(target=run, daemon=True)
                t.start()
                # The steady consumer takes every shot but those the stalled one holds...
                harness.wait_for(lambda: len(seen) == len(JOB_SHOTS) - still_held,
                                 what="the steady consumer to take the shots given back")
                call.cancel()  # ... and those once it is gone
                t.join(120)
                self.assertFalse(t.is_alive())
            self.assertEqual(sorted(seen), JOB_SHOTS, "every shot once")


if __name__ == "__main__":
    unittest.main()

"""Slow and stalled consumers against the byte budget: what forty stalled streams cost a
consumer that reads normally, and how evenly eight consumers share a small budget. Used by
tools/bench.py (`bazel run -c opt //:bench -- --only=consumers`).

A stalled stream is a raw grpcio stream on its own connection (queue depth 8, all shots 5
times) that reads one message and then nothing, as a hung worker or a GPU job computing for
minutes does. `shotstream bench --repeat=3` (one stream, the default queue depth) is
timed alone and beside forty of them, alternated, on servers with the default budget
(1 GiB): one whose stalled streams give back their read-ahead (--stall_timeout=2s, timed
once all forty did) and one where they never do (--stall_timeout=0s: the budget's
progress and fair-share rules alone). Then eight `shotstream bench` streams with queue
depth 8 on a server whose budget holds 16 shots: the fastest stream's time over the
slowest's."""

import os
import time

import grpc

import harness  # the test harness: a real server process
import synth

SHOTS, TRACES, SAMPLES = 40, 480, 4000  # 7.68 MB shots, as in the repro
SHOT_BYTES = TRACES * SAMPLES * 4
STALLED = 40


class Stalled:
    """STALLED raw streams, each on its own connection, that read one message each."""

    def __init__(self, target):
        from shotstream.v1 import shotstream_pb2 as pb
        from shotstream.v1 import shotstream_pb2_grpc as pb_grpc
        ids = list(range(1, SHOTS + 1)) * 5
        self.channels, self.calls = [], []
        for _ in range(STALLED):
            ch = grpc.insecure_channel(target)
            call = pb_grpc.ShotStreamStub(ch).StreamShots(
                pb.StreamShotsRequest(dataset="d", shot_ids=ids, queue_depth=8))
            next(call)
            self.channels.append(ch)
            self.calls.append(call)

    def close(self):
        for call in self.calls:
            call.cancel()
        for ch in self.channels:
            ch.close()


def settled(server, key="shotstream_sample_bytes_sent_total", still=0.5, timeout=60):
    """Waits until the server's writes to the stalled streams stopped (nothing sent for
    `still` seconds): their consumers' sockets and windows are full."""
    deadline = time.time() + timeout
    last = server.metrics()[key]
    while time.time() < deadline:
        time.sleep(still)
        now = server.metrics()[key]
        if now == last:
            return
        last = now
    raise RuntimeError("the stalled streams never stopped receiving")


def wait_until_stalled(server):
    harness.wait_for(lambda: server.metrics()["shotstream_stalled_streams"] == STALLED,
                     timeout=60, what="every stalled stream to give back")


def measure(work, reps=3):
    data = os.path.join(work, "consumers")
    synth.write_survey(data, SHOTS, TRACES, SAMPLES, n_files=4, fmt=5)
    harness.warm_page_cache(data)
    common = [f"--dataset=d={data}/*.sgy", "--metrics_listen=127.0.0.1:0",
              "--log_streams=false", "--grace_period=0s"]
    result = {"shots": SHOTS, "traces": TRACES, "samples": SAMPLES, "stalled": STALLED,
              "reps": reps, "alone_gbps": [], "given_back_gbps": [], "never_gbps": [],
              "inflight_mb_given_back": [], "inflight_mb_never": [],
              "fair_slowest_over_fastest": [], "fair_gbps": [], "fair_alone_gbps": []}
    with harness.Server(common + ["--stall_timeout=2s"]) as gives, \
            harness.Server(common + ["--stall_timeout=0s"]) as never:
        for s in (gives, never):
            harness.cli_bench(s.target, "d")  # the channel path and the page cache, once

        def alone():
            result["alone_gbps"].append(harness.cli_bench(gives.target, "d", repeat=3)["gbps"])

        def beside(server, key, wait):
            stalled = Stalled(server.target)
            try:
                wait(server)
                result[f"inflight_mb_{key}"].append(
                    server.metrics()["shotstream_inflight_bytes"] / 1e6)
                result[f"{key}_gbps"].append(
                    harness.cli_bench(server.target, "d", repeat=3)["gbps"])
            finally:
                stalled.close()
            harness.wait_for(lambda: server.metrics()["shotstream_active_streams"] == 0,
                             what="the stalled streams to end")

        runs = [alone, lambda: beside(gives, "given_back", wait_until_stalled),
                lambda: beside(never, "never", settled)]
        for r in range(reps):
            for k in range(len(runs)):  # each rep in another order
                runs[(r + k) % len(runs)]()

    with harness.Server([f"--dataset=d={data}/*.sgy", "--log_streams=false",
                         f"--max_inflight_bytes={16 * SHOT_BYTES}"]) as small:
        harness.cli_bench(small.target, "d")
        for _ in range(reps):
            r = harness.cli_bench(small.target, "d", streams=8, queue_depth=8, repeat=2)
            result["fair_slowest_over_fastest"].append(
                r["fastest_stream_seconds"] / r["slowest_stream_seconds"])
            result["fair_gbps"].append(r["gbps"])
            result["fair_alone_gbps"].append(
                harness.cli_bench(small.target, "d", queue_depth=8, repeat=2)["gbps"])
    return result

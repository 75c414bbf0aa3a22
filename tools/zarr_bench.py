"""Zarr shots through the server against zarr-python reading the same shots into numpy in
one process. Used by tools/bench.py (`bazel run -c opt //:bench -- --only=zarr`).

A v2 store written by zarr-python: [shots, traces, samples] float32, one chunk a shot and a
quarter of its samples (time in 4 chunks), Blosc(zstd, shuffle) as MDIO writes it, larger
than the server's decoded-chunk cache so that an epoch reads from the store. Each run reads
every shot once in a new random order (an FWI epoch), alternating the server (`shotstream
bench`, one stream) and zarr-python (`array[i]`), on a warm page cache. The server's CPU
per shot comes from /proc; the quarter window (`--window=0:SAMPLES/4`, one time chunk) is
measured in the same runs."""

import os
import statistics
import time

import numcodecs
import numpy as np
import zarr

import harness  # the test harness: a real server process

SHOTS, TRACES, SAMPLES = 160, 240, 2000  # 1.92 MB shots, 307 MB in all


def measure(work, reps=5):
    rng = np.random.default_rng(7)
    path = os.path.join(work, "survey.zarr")
    arr = zarr.open_array(path, mode="w", shape=(SHOTS, TRACES, SAMPLES),
                          chunks=(1, TRACES, SAMPLES // 4), dtype="f4",
                          compressor=numcodecs.Blosc(cname="zstd", clevel=3,
                                                     shuffle=numcodecs.Blosc.SHUFFLE))
    for i in range(SHOTS):  # smooth traces, as seismic is: they compress
        t = np.linspace(0, 40, SAMPLES, dtype="f4")
        arr[i] = (np.sin(t[None, :] + rng.uniform(0, 6, (TRACES, 1))) * 100 +
                  rng.standard_normal((TRACES, SAMPLES)) * 2).astype("f4")
    harness.warm_page_cache(*[os.path.join(dp, f) for dp, _, fs in os.walk(path) for f in fs])
    out = {"shots": SHOTS, "traces": TRACES, "samples": SAMPLES, "chunks": [1, TRACES, SAMPLES // 4],
           "compressor": "blosc zstd level 3, shuffle",
           "server_shots_per_s": [], "zarr_shots_per_s": [], "window_shots_per_s": [],
           "server_cpu_ms_per_shot": []}
    stored = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(path) for f in fs)
    out["ratio"] = SHOTS * TRACES * SAMPLES * 4 / stored
    with harness.Server([f"--dataset=z={path}", "--sample_interval_us=2000"]) as server:
        harness.cli_bench(server.target, "z", shots="1,2,3")  # untimed: connection
        a = zarr.open_array(path, mode="r")
        for rep in range(reps):
            order = ",".join(str(i + 1) for i in rng.permutation(SHOTS))
            c0 = harness.cpu_seconds(server.proc.pid)
            r = harness.cli_bench(server.target, "z", shots=order)
            out["server_cpu_ms_per_shot"].append(
                (harness.cpu_seconds(server.proc.pid) - c0) / SHOTS * 1e3)
            out["server_shots_per_s"].append(r["shots"] / r["seconds"])
            t0 = time.perf_counter()
            for i in rng.permutation(SHOTS):
                np.asarray(a[int(i)])
            out["zarr_shots_per_s"].append(SHOTS / (time.perf_counter() - t0))
            order = ",".join(str(i + 1) for i in rng.permutation(SHOTS))
            r = harness.cli_bench(server.target, "z", shots=order, window=f"0:{SAMPLES // 4}")
            out["window_shots_per_s"].append(r["shots"] / r["seconds"])
    med = statistics.median
    out["server_over_zarr"] = med(out["server_shots_per_s"]) / med(out["zarr_shots_per_s"])
    out["window_over_full"] = med(out["window_shots_per_s"]) / med(out["server_shots_per_s"])
    out["reps"] = reps
    return out

"""NumPy and HDF5 sources against SEG-Y and h5py, in one run on the same shots. Used by
tools/bench.py (`bazel run -c opt //:bench -- --only=sources`).

- .npy [shots, traces, samples] float32 against the same shots in an IEEE little-endian
  SEG-Y file, both from the page cache through one server, `shotstream bench` alternated.
- chunked gzip HDF5 (one chunk a shot): the server's read rate per CPU second (one reader
  thread; the library inflates) against h5py reading the same chunks in this process."""

import os
import statistics
import time

import h5py
import numpy as np

import harness  # the test harness: a real server process
import synth  # survey writers

SHOTS, TRACES, SAMPLES = 48, 240, 2000  # 1.92 MB shots


def measure(work, reps=5):
    rng = np.random.default_rng(1)
    data = (rng.standard_normal((SHOTS, TRACES, SAMPLES)) * 100).astype("<f4")
    npy, sgy, h5 = (os.path.join(work, n) for n in ("cube.npy", "cube_le.sgy", "cube_gz.h5"))
    np.save(npy, data)
    synth.write_le_segy(sgy, data, range(1, SHOTS + 1))
    with h5py.File(h5, "w") as f:
        f.create_dataset("data", data=data, chunks=(1, TRACES, SAMPLES), compression="gzip",
                         compression_opts=4)
    harness.warm_page_cache(npy, sgy, h5)
    out = {"shots": SHOTS, "traces": TRACES, "samples": SAMPLES, "npy_gbps": [],
           "segy_gbps": []}
    with harness.Server([f"--dataset=npy={npy}", f"--dataset=segy={sgy}"]) as server:
        for name in ("npy", "segy"):  # untimed: connection and page cache
            harness.cli_bench(server.target, name)
        for _ in range(reps):
            for name in ("npy", "segy"):
                out[f"{name}_gbps"].append(harness.cli_bench(server.target, name, repeat=3)["gbps"])
    # HDF5: bytes delivered per CPU second of the server (one reader) and of h5py.
    server_rate, h5py_rate = [], []
    with harness.Server([f"--dataset=h5={h5}", "--readers=1"]) as server:
        harness.cli_bench(server.target, "h5")
        for _ in range(reps):
            c0 = harness.cpu_seconds(server.proc.pid)
            r = harness.cli_bench(server.target, "h5")
            server_rate.append(r["bytes"] / (harness.cpu_seconds(server.proc.pid) - c0) / 1e9)
            with h5py.File(h5, "r") as f:
                d = f["data"]
                t0 = time.process_time()
                n = sum(d[i].nbytes for i in range(SHOTS))
                h5py_rate.append(n / (time.process_time() - t0) / 1e9)
    out["h5_server_gb_per_cpu_s"] = server_rate
    out["h5py_gb_per_cpu_s"] = h5py_rate
    out["npy_over_segy"] = (statistics.median(out["npy_gbps"]) /
                            statistics.median(out["segy_gbps"]))
    out["h5_over_h5py"] = statistics.median(server_rate) / statistics.median(h5py_rate)
    out["reps"] = reps
    return out

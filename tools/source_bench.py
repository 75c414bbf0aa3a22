"""NumPy and HDF5 sources against SEG-Y and h5py, in one run on the same shots. Used by
tools/bench.py (`bazel run -c opt //:bench -- --only=sources`).

- .npy [shots, traces, samples] float32 against the same shots in an IEEE little-endian
  SEG-Y file, both from the page cache through one server, `shotstream bench` alternated.
- chunked gzip HDF5 (one chunk a shot): the server's read rate per CPU second (one reader
  thread; the library inflates) against h5py reading the same chunks in this process."""

import json
import os
import statistics
import time

import h5py
import numpy as np

import harness  # the test harness: a real server process

SHOTS, TRACES, SAMPLES = 48, 240, 2000  # 1.92 MB shots


def write_le_segy(path, data):
    """IEEE float32 little-endian SEG-Y of `data` [shots, traces, samples] (numpy)."""
    n_shots, n_traces, ns = data.shape
    head = np.zeros(3600, np.uint8)
    head[3216:3218] = np.frombuffer(np.int16(2000).astype("<i2").tobytes(), np.uint8)
    head[3220:3222] = np.frombuffer(np.uint16(ns).astype("<u2").tobytes(), np.uint8)
    head[3224:3226] = np.frombuffer(np.int16(5).astype("<i2").tobytes(), np.uint8)
    rec = np.zeros((n_shots, n_traces), dtype=[("h", "V240"), ("s", "<f4", (ns,))])
    th = np.zeros((n_shots, n_traces, 240), np.uint8)
    ids = np.arange(1, n_shots + 1, dtype="<i4")
    th[:, :, 8:12] = np.frombuffer(ids.tobytes(), np.uint8).reshape(n_shots, 1, 4)
    th[:, :, 114:116] = np.frombuffer(np.uint16(ns).astype("<u2").tobytes(), np.uint8)
    rec["h"] = th.reshape(n_shots, n_traces, 240).view("V240")[..., 0]
    rec["s"] = data
    with open(path, "wb") as f:
        f.write(head.tobytes())
        f.write(rec.tobytes())


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench(target, dataset, **flags):
    args = ["bench", f"--target={target}", f"--dataset={dataset}"]
    args += [f"--{k}={v}" for k, v in flags.items()]
    return json.loads(harness.cli(*args).stdout.strip().splitlines()[-1])


def warm(*paths):
    for p in paths:
        with open(p, "rb") as f:
            while f.read(1 << 24):
                pass


def measure(work, reps=5):
    rng = np.random.default_rng(1)
    data = (rng.standard_normal((SHOTS, TRACES, SAMPLES)) * 100).astype("<f4")
    npy, sgy, h5 = (os.path.join(work, n) for n in ("cube.npy", "cube_le.sgy", "cube_gz.h5"))
    np.save(npy, data)
    write_le_segy(sgy, data)
    with h5py.File(h5, "w") as f:
        f.create_dataset("data", data=data, chunks=(1, TRACES, SAMPLES), compression="gzip",
                         compression_opts=4)
    warm(npy, sgy, h5)
    out = {"shots": SHOTS, "traces": TRACES, "samples": SAMPLES, "npy_gbps": [],
           "segy_gbps": []}
    with harness.Server([f"--dataset=npy={npy}", f"--dataset=segy={sgy}"]) as server:
        for name in ("npy", "segy"):  # untimed: connection and page cache
            bench(server.target, name)
        for _ in range(reps):
            for name in ("npy", "segy"):
                out[f"{name}_gbps"].append(bench(server.target, name, repeat=3)["gbps"])
    # HDF5: bytes delivered per CPU second of the server (one reader) and of h5py.
    server_rate, h5py_rate = [], []
    with harness.Server([f"--dataset=h5={h5}", "--readers=1"]) as server:
        bench(server.target, "h5")
        for _ in range(reps):
            c0 = cpu_seconds(server.proc.pid)
            r = bench(server.target, "h5")
            server_rate.append(r["bytes"] / (cpu_seconds(server.proc.pid) - c0) / 1e9)
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

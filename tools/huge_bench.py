"""Huge shots: gathers of a gigabyte and more (DAS, ocean-bottom receiver gathers), read
and sent in pieces (--piece_bytes, 8 MiB by default). Used by tools/bench.py (`bazel run
-c opt //:bench -- --only=huge`).

Data (numpy, written once): one IBM-float shot of 30,000 traces x 8,000 samples (0.96 GB
as float32) and one big-endian IEEE shot of 50,000 x 8,000 (1.6 GB), each in 8 files; and
copies of the same files whose field_record makes shots of 750 traces (24 MB) and of 240
traces (7.68 MB): the same bytes, as ordinary shots. Every client is `shotstream bench
--pieces` (the client takes each shot in parts, so that it holds parts, not gigabytes).

Memory: three concurrent streams (`--streams=3`) of the IBM shot, the server's anonymous
memory (RssAnon) sampled every 10 ms, against idle; with the default pieces, and with
--piece_bytes=0 (every shot whole, as before pieces).

Rates: the IBM shot against the same traces as 24 MB shots, one stream each, alternated on
one server; the IEEE shot against the same data as 7.68 MB shots, each on a fresh server
(its first pass: the mapping's pages first touched), alternated, and a second pass on the
same server. The page cache is warm throughout.

Ordinary shots (with --baseline=DIR, a directory holding the shotstream_server and
shotstream binaries of the version before): 40 shots of 480 x 4000 (7.68 MB), IEEE and
IBM, streamed on loopback by `shotstream bench --repeat=3 --warmup_shots=8` from this
version's client to this version's server and from the baseline's to the baseline's,
alternated; the ratio of the medians."""

import json
import os
import shutil
import subprocess

import numpy as np

import harness  # the test harness: a real server process
import synth  # numpy SEG-Y writing
from scale_bench import Sampler  # the peak of a figure of a process while it runs

NS = 8000
IBM_TRACES, IBM_SMALL = 30_000, 750
IEEE_TRACES, IEEE_SMALL = 50_000, 240
FILES = 8


def write_gather(directory, fmt, n_traces, seed):
    """One shot (field_record 1) of n_traces x NS in FILES files of format fmt."""
    os.makedirs(directory, exist_ok=True)
    rng = np.random.default_rng(seed)
    per_file = -(-n_traces // FILES)
    bps = 4
    for f in range(FILES):
        lo, hi = f * per_file, min(n_traces, (f + 1) * per_file)
        with open(os.path.join(directory, f"gather_{f:02d}.sgy"), "wb") as out:
            out.write(synth._header_bytes(NS, 2000, fmt))
            for b in range(lo, hi, 500):
                n = min(500, hi - b)
                headers = np.zeros((n, 60), dtype=">i4")
                headers[:, 0] = np.arange(b, b + n) + 1  # bytes 1-4
                headers[:, 2] = 1                          # bytes 9-12 field record
                headers[:, 3] = np.arange(b, b + n) + 1    # bytes 13-16 trace number
                headers.view(">i2")[:, 57] = NS            # bytes 115-116
                data = rng.standard_normal((n, NS)).astype(np.float32)
                rows = np.empty((n, 240 + bps * NS), dtype=np.uint8)
                rows[:, :240] = headers.view(np.uint8).reshape(n, 240)
                rows[:, 240:] = synth._encode(data, fmt).view(np.uint8).reshape(n, bps * NS)
                out.write(rows.tobytes())


def as_small_shots(src, dst, traces_per_shot):
    """A copy of src's files whose field_record makes shots of traces_per_shot traces."""
    os.makedirs(dst, exist_ok=True)
    first = 0
    for name in sorted(os.listdir(src)):
        shutil.copyfile(os.path.join(src, name), os.path.join(dst, name))
        m = np.memmap(os.path.join(dst, name), dtype=np.uint8, mode="r+", offset=3600)
        rows = m.reshape(-1, 240 + 4 * NS)
        k = np.arange(first, first + len(rows))
        rows[:, 8:12] = np.frombuffer((k // traces_per_shot + 1).astype(">i4").tobytes(),
                                      np.uint8).reshape(-1, 4)
        first += len(rows)
        m.flush()
        del m, rows


def server(*args):
    return harness.Server(["--log_streams=false", *args])


def bench(target, dataset, **flags):
    return harness.cli_bench(target, dataset, pieces="true", **flags)


def memory(ibm, piece_bytes):
    """Three streams of the IBM shot: the server's anonymous memory, idle and at most (MB),
    and the streams' rate."""
    with server(f"--dataset=g={ibm}/*.sgy", f"--piece_bytes={piece_bytes}") as s:
        idle = harness.anon_kb(s.proc.pid)
        with Sampler(harness.anon_kb, 0.01) as sampler:
            sampler.pid = s.proc.pid
            r = bench(s.target, "g", streams=3)
        return {"idle_mb": idle / 1024, "peak_mb": sampler.peak / 1024,
                "above_idle_mb": (sampler.peak - idle) / 1024, "gbps": r["gbps"],
                "slowest_stream_s": r["slowest_stream_seconds"]}


def ordinary(work, baseline, reps):
    """This version against the baseline's binaries on ordinary shots, alternated."""
    out = {"baseline": baseline}
    for fmt, name in ((5, "float32"), (1, "ibm")):
        d = os.path.join(work, f"ordinary_{name}")
        synth.write_survey(d, 40, 480, 4000, n_files=4, fmt=fmt)
        harness.warm_page_cache(d)
        new = server(f"--dataset=d={d}/*.sgy")
        old = harness.Server(["--log_streams=false", f"--dataset=d={d}/*.sgy"],
                             binary=os.path.join(baseline, "shotstream_server"))
        try:
            rates = {"new": [], "old": []}
            for _ in range(reps):
                for which, s, cli in (("new", new, harness.runfile(harness.CLI)),
                                      ("old", old, os.path.join(baseline, "shotstream"))):
                    res = subprocess.run([cli, "bench", f"--target={s.target}", "--dataset=d",
                                          "--repeat=3", "--warmup_shots=8"],
                                         capture_output=True, text=True, check=True, timeout=600)
                    rates[which].append(json.loads(res.stdout.strip().splitlines()[-1])["gbps"])
            out[name] = rates
        finally:
            new.stop()
            old.stop()
            shutil.rmtree(d, ignore_errors=True)
    return out


def measure(work, reps=3, baseline=None):
    ibm, ibm_small = os.path.join(work, "huge_ibm"), os.path.join(work, "huge_ibm_24mb")
    ieee, ieee_small = os.path.join(work, "huge_ieee"), os.path.join(work, "huge_ieee_7mb")
    write_gather(ibm, 1, IBM_TRACES, seed=1)
    as_small_shots(ibm, ibm_small, IBM_SMALL)
    write_gather(ieee, 5, IEEE_TRACES, seed=2)
    as_small_shots(ieee, ieee_small, IEEE_SMALL)
    harness.warm_page_cache(ibm, ibm_small, ieee, ieee_small)
    out = {"ibm_shot_gb": IBM_TRACES * NS * 4 / 1e9, "ieee_shot_gb": IEEE_TRACES * NS * 4 / 1e9,
           "piece_bytes": 8 << 20, "memory": {}, "ibm_gbps": [], "ibm_small_gbps": [],
           "ieee_first_gbps": [], "ieee_second_gbps": [], "ieee_small_first_gbps": [],
           "ieee_small_second_gbps": []}
    out["memory"]["pieces"] = memory(ibm, 8 << 20)
    out["memory"]["whole"] = memory(ibm, 0)
    # The IBM shot against 24 MB shots of the same traces, alternated on one server.
    with server(f"--dataset=g={ibm}/*.sgy", f"--dataset=s={ibm_small}/*.sgy") as s:
        for _ in range(reps):
            out["ibm_gbps"].append(bench(s.target, "g")["gbps"])
            out["ibm_small_gbps"].append(bench(s.target, "s")["gbps"])
    # The IEEE shot against 7.68 MB shots, each on a fresh server, alternated.
    for _ in range(reps):
        for name, path, first, second in (
                ("g", ieee, "ieee_first_gbps", "ieee_second_gbps"),
                ("s", ieee_small, "ieee_small_first_gbps", "ieee_small_second_gbps")):
            with server(f"--dataset={name}={path}/*.sgy") as s:
                out[first].append(bench(s.target, name)["gbps"])
                out[second].append(bench(s.target, name)["gbps"])
    for d in (ibm, ibm_small, ieee, ieee_small):
        shutil.rmtree(d, ignore_errors=True)
    if baseline:
        out["ordinary"] = ordinary(work, baseline, max(5, reps))
    return out

"""Survey scale: what the catalog costs per trace, and a dataset of very many files under
a small descriptor limit. Used by tools/bench.py (`bazel run -c opt //:bench --
--only=scale`).

Catalog memory. A synthetic SEG-Y file of TRACES traces of one IEEE sample (244 bytes a
trace), written twice: shot-ordered (shots of 1,000 traces, one after another) and
scattered (each trace's shot drawn at random, so every shot's traces are interleaved with
all the others'). For each, a server loads it alone (`--index_only` would exit: the server
runs, as in production) and the figures are its anonymous memory (RssAnon of
/proc/PID/status) after load minus that of the same server over a one-shot file, and the
peak of RssAnon while it scans (sampled every 2 ms) minus the same baseline; the scan rate
is the traces over the build time the server reports (segyio's attributes(FieldRecord)[:]
on the shot-ordered file beside it). The catalog is saved
(`--catalog_dir`) and a second server reopens it: its reported load time, and its log
says "reused" (no trace header read), and its anonymous memory (the reopened trace list is
read from the file's mapping: page cache, not heap).

Many files. FILES files of one shot each (10 traces of 50 samples), a server started under
RLIMIT_NOFILE 1024 (soft and hard, as `ulimit -n 1024`): its load time, one stream over
every shot (`shotstream bench --shots=all`), and the most descriptors in /proc/PID/fd
while it loads and streams (sampled every 5 ms)."""

import os
import re
import struct
import threading
import time

import numpy as np

import harness  # the test harness: a real server process

TRACES = 20_000_000
SHOT_TRACES = 1000
FILES = 100_000
TRACE = np.dtype([("a", "V8"), ("field_record", ">i4"), ("b", "V102"), ("ns", ">u2"),
                  ("c", "V124"), ("sample", ">f4")])
assert TRACE.itemsize == 244


def binary_header(n_samples):
    head = bytearray(3600)
    struct.pack_into(">h", head, 3216, 2000)       # sample interval, us
    struct.pack_into(">H", head, 3220, n_samples)  # samples per trace
    struct.pack_into(">h", head, 3224, 5)          # IEEE float
    return bytes(head)


def write_one_sample_file(path, shot_of):
    """`shot_of(first, n)`: the shot ids of traces [first, first + n)."""
    with open(path, "wb") as f:
        f.write(binary_header(1))
        step = 1_000_000
        for first in range(0, TRACES, step):
            n = min(step, TRACES - first)
            block = np.zeros(n, TRACE)
            block["field_record"] = shot_of(first, n)
            block["ns"] = 1
            block["sample"] = np.arange(first, first + n, dtype="f4")
            f.write(block.tobytes())


class Sampler:
    """The peak of f(pid) every `period` seconds while it runs."""

    def __init__(self, f, period):
        self.f, self.period, self.peak, self.pid = f, period, 0, None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run)

    def run(self):
        while not self.done.is_set():
            if self.pid is not None:
                self.peak = max(self.peak, self.f(self.pid))
            time.sleep(self.period)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join()


def build_seconds(server, name):
    line = next(l for l in server.stderr_lines if l.startswith(f"dataset {name}: "))
    return float(re.search(r"\(([0-9.]+) s;", line).group(1)), line.strip()


def segyio_traces_per_s(path):
    """segyio's attributes(FieldRecord)[:] over the file, timed in a child process (segyio
    can abort the process on odd files)."""
    import subprocess
    import sys
    code = ("import segyio, sys, time\n"
            "t = time.perf_counter()\n"
            "with segyio.open(sys.argv[1], ignore_geometry=True) as f:\n"
            "    n = len(f.attributes(segyio.TraceField.FieldRecord)[:])\n"
            "print(n / (time.perf_counter() - t))\n")
    res = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True,
                         timeout=600, check=True)
    return float(res.stdout.strip())


def catalog_memory(work, layout):
    path = os.path.join(work, f"{layout}.sgy")
    rng = np.random.default_rng(7)
    n_shots = TRACES // SHOT_TRACES
    if layout == "shot_ordered":
        write_one_sample_file(path, lambda first, n: np.arange(first, first + n) // SHOT_TRACES + 1)
    else:
        write_one_sample_file(path, lambda first, n: rng.integers(1, n_shots + 1, n))
    harness.warm_page_cache(path)
    small = os.path.join(work, "small.sgy")
    with open(small, "wb") as f:
        f.write(binary_header(1))
        block = np.zeros(SHOT_TRACES, TRACE)
        block["field_record"] = 1
        block["ns"] = 1
        f.write(block.tobytes())
    with harness.Server([f"--dataset=d={small}"]) as server:
        base = harness.anon_kb(server.proc.pid)
    cat = os.path.join(work, f"catalog_{layout}")
    with Sampler(harness.anon_kb, 0.002) as s:
        with harness.Server([f"--dataset=d={path}", f"--catalog_dir={cat}"], timeout=600,
                            started=lambda p: setattr(s, "pid", p.pid)) as server:
            seconds, line = build_seconds(server, "d")
            resident = harness.anon_kb(server.proc.pid)
            peak = s.peak
    with harness.Server([f"--dataset=d={path}", f"--catalog_dir={cat}"], timeout=600) as server:
        reload_seconds, reload_line = build_seconds(server, "d")
        reload_anon = harness.anon_kb(server.proc.pid)
    segyio_rate = segyio_traces_per_s(path) if layout == "shot_ordered" else None
    os.remove(path)
    return {
        "segyio_traces_per_s": segyio_rate,
        "traces": TRACES,
        "resident_bytes_per_trace": (resident - base) * 1024 / TRACES,
        "peak_bytes_per_trace": (max(peak, resident) - base) * 1024 / TRACES,
        "scan_traces_per_s": TRACES / seconds,
        "reload_seconds": reload_seconds,
        "reload_reused": "reused" in reload_line,
        "reload_anon_bytes_per_trace": (reload_anon - base) * 1024 / TRACES,
        "server_line": line,
    }


def many_files(work):
    d = os.path.join(work, "files")
    os.makedirs(d, exist_ok=True)
    traces, samples = 10, 50
    t = np.dtype([("a", "V8"), ("field_record", ">i4"), ("b", "V102"), ("ns", ">u2"),
                  ("c", "V124"), ("samples", ">f4", (samples,))])
    head = binary_header(samples)
    block = np.zeros(traces, t)
    block["ns"] = samples
    block["samples"] = np.arange(traces * samples, dtype="f4").reshape(traces, samples)
    for i in range(FILES):
        block["field_record"] = i + 1
        with open(os.path.join(d, f"s{i:06d}.sgy"), "wb") as f:
            f.write(head + block.tobytes())
    with harness.Server([f"--dataset=m={d}/s000000.sgy"]) as server:
        base = harness.anon_kb(server.proc.pid)
    descriptors = lambda pid: len(os.listdir(f"/proc/{pid}/fd"))  # noqa: E731
    with Sampler(descriptors, 0.005) as s:
        with harness.Server([f"--dataset=m={d}/*.sgy"], timeout=600, nofile=1024,
                            started=lambda p: setattr(s, "pid", p.pid)) as server:
            seconds, line = build_seconds(server, "m")
            open_line = next(l for l in server.stderr_lines if l.startswith("open files:"))
            per_file = (harness.anon_kb(server.proc.pid) - base) * 1024 / FILES
            r = harness.cli_bench(server.target, "m", shots="all", queue_depth=8)
            peak = s.peak
    return {
        "files": FILES,
        "limit": 1024,
        "load_seconds": seconds,
        "shots_streamed": r["shots"],
        "stream_shots_per_s": r["shots"] / r["seconds"],
        "max_descriptors": peak,
        "anon_bytes_per_file": per_file,
        "open_line": open_line.strip(),
        "server_line": line,
    }


def measure(work):
    out = {"date": time.strftime("%Y-%m-%d")}
    for layout in ("shot_ordered", "scattered"):
        out[layout] = catalog_memory(work, layout)
    out["many_files"] = many_files(work)
    return out


if __name__ == "__main__":
    import json
    import sys
    import tempfile
    with tempfile.TemporaryDirectory(dir=sys.argv[1] if len(sys.argv) > 1 else None) as w:
        print(json.dumps(measure(w), indent=1))

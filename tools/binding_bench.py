"""The Python client on the C++ client (the pybind11 extension), against the C++ client
itself, on loopback. Used by tools/bench.py (`bazel run -c opt //:bench -- --only=binding`).

- Rate: 40 shots of 480 x 4000 IEEE samples (7.68 MB), streamed `passes` times by
  `shotstream bench` (the C++ client) and by shotstream.Client.stream (native, after
  shotstream.tune()), each a fresh process, alternated; and Client.stream_job over the
  same shots (one consumer: the job's shots are the stream's) against Client.stream, in
  one process, alternated; and Client.stream in a process forked after its parent
  streamed (its client in the helper process: shotstream._bridge), with the helper's
  start.
- Per-shot overhead of the binding (Python -> C++ -> numpy): 20,000 shots of one trace of
  256 samples (1 KiB), streamed by `shotstream bench` and by Client.stream (native, the
  shot's samples touched), alternated: each client's wall time and CPU time per shot (the
  C++ CLI's whole process from rusage, its start included; Python's loop from
  time.process_time, every thread). The binding's cost is the difference in CPU."""

import os
import resource
import subprocess
import sys

import harness  # the test harness: a real server process
import synth  # numpy SEG-Y writing

BIG_SHOTS, BIG_TRACES, BIG_SAMPLES = 40, 480, 4000
TINY_SHOTS = 20_000

PY = r"""
import os, sys, time, shotstream
shotstream.tune()
target, dataset, mode, passes = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])


def run(c):
    assert c.native
    ids = [int(s) for s in c.dataset(dataset).shot_ids]
    for _ in c.stream(dataset, ids[:8], queue_depth=4):
        pass
    out = []
    for p in range(passes):
        t, cpu = time.perf_counter(), time.process_time()
        if mode == "job":
            # A job of its own each pass (a finished job hands out nothing again).
            shots = c.stream_job(dataset, f"bench-{os.getpid()}-{p}", ids, queue_depth=4)
        else:
            shots = c.stream(dataset, ids, queue_depth=4)
        n = k = 0
        for s in shots:
            n += s.samples.nbytes
            k += 1
            s.samples[0, 0]  # touched, as a consumer does
        out.append((time.perf_counter() - t, n, k, time.process_time() - cpu))
    return " ".join(f"{t} {n} {k} {c}" for t, n, k, c in out)


if mode == "forked":
    # A process forked after its parent streamed (a DataLoader worker under fork): its
    # client runs in the helper process (shotstream._bridge). The helper's start, then
    # the passes as the other modes time them.
    with shotstream.Client(target) as parent:
        parent.dataset(dataset)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        t = time.perf_counter()
        with shotstream.Client(target) as c:
            start = time.perf_counter() - t
            os.write(w, f"{start} {run(c)}".encode())
        os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        print(f.read())
    assert os.waitpid(pid, 0)[1] == 0
else:
    with shotstream.Client(target) as c:
        print(run(c))
"""


def _py_output(target, dataset, mode, passes, env):
    """The numbers PY printed for one run of it."""
    res = subprocess.run([sys.executable, "-c", PY, target, dataset, mode, str(passes)],
                         capture_output=True, text=True, env=env, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    return res.stdout.split()


def _passes(v):
    """[(seconds, bytes, shots, CPU seconds of the process, every thread)] of PY's passes."""
    return [(float(v[i]), int(v[i + 1]), int(v[i + 2]), float(v[i + 3]))
            for i in range(0, len(v), 4)]


def python_runs(target, dataset, mode, passes, env):
    """Each pass of Client.stream or stream_job, as _passes gives them."""
    return _passes(_py_output(target, dataset, mode, passes, env))


def forked_runs(target, dataset, passes, env):
    """(seconds the forked process's Client took to start its helper, its passes)."""
    v = _py_output(target, dataset, "forked", passes, env)
    return float(v[0]), _passes(v[1:])


def cpp_run(target, dataset, n_shots, passes):
    """(seconds, bytes, CPU seconds of the whole process) of `shotstream bench` over the
    dataset's shots, `passes` times."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = harness.cli_bench(target, dataset, repeat=passes, warmup_shots=8, queue_depth=4)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert r["shots"] == n_shots * passes and r["in_order"], r
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return r["seconds"], r["bytes"], cpu


def measure(work, env, reps=5):
    big = os.path.join(work, "binding_big")
    tiny = os.path.join(work, "binding_tiny")
    if not os.path.isdir(big):
        synth.write_survey(big, n_shots=BIG_SHOTS, traces_per_shot=BIG_TRACES,
                           n_samples=BIG_SAMPLES, n_files=4, fmt=5)
    if not os.path.isdir(tiny):
        synth.write_survey(tiny, n_shots=TINY_SHOTS, traces_per_shot=1, n_samples=256,
                           n_files=1, fmt=5)
    out = {"cpp_gbps": [], "py_gbps": [], "stream_gbps": [], "job_gbps": [],
           "forked_gbps": [], "forked_start_s": [],
           "tiny_cpp_us": [], "tiny_py_us": [], "tiny_cpp_cpu_us": [], "tiny_py_cpu_us": [], "big_shot_mb": BIG_TRACES * BIG_SAMPLES * 4 / 1e6,
           "tiny_shots": TINY_SHOTS}
    with harness.Server([f"--dataset=big={big}/*.sgy", f"--dataset=tiny={tiny}/*.sgy",
                         "--log_streams=false"]) as s:
        cpp_run(s.target, "big", BIG_SHOTS, 1)  # first touches out of the figures
        for _ in range(reps):
            sec, n, _ = cpp_run(s.target, "big", BIG_SHOTS, 3)
            out["cpp_gbps"].append(n / sec / 1e9)
            runs = python_runs(s.target, "big", "stream", 3, env)
            out["py_gbps"].append(sum(r[1] for r in runs) / sum(r[0] for r in runs) / 1e9)
            for mode, key in (("stream", "stream_gbps"), ("job", "job_gbps")):
                runs = python_runs(s.target, "big", mode, 2, env)
                assert all(r[2] == BIG_SHOTS for r in runs), runs
                out[key].append(sum(r[1] for r in runs) / sum(r[0] for r in runs) / 1e9)
            start, runs = forked_runs(s.target, "big", 2, env)
            assert all(r[2] == BIG_SHOTS for r in runs), runs
            out["forked_gbps"].append(sum(r[1] for r in runs) / sum(r[0] for r in runs) / 1e9)
            out["forked_start_s"].append(start)
            sec, _, cpu = cpp_run(s.target, "tiny", TINY_SHOTS, 1)
            out["tiny_cpp_us"].append(sec / TINY_SHOTS * 1e6)
            out["tiny_cpp_cpu_us"].append(cpu / TINY_SHOTS * 1e6)
            (sec, _, k, cpu), = python_runs(s.target, "tiny", "stream", 1, env)
            assert k == TINY_SHOTS
            out["tiny_py_us"].append(sec / TINY_SHOTS * 1e6)
            out["tiny_py_cpu_us"].append(cpu / TINY_SHOTS * 1e6)
    return out

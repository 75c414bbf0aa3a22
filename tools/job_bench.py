"""Jobs against a static split: 4 consumer processes, one 4x slower than the others, over
one epoch of a dataset, on loopback; and the job's server CPU per shot against plain
streams of the same shots. Used by tools/bench.py (`bazel run -c opt //:bench -- --only=jobs`).

Each consumer stands for a GPU rank: per shot it "computes" for a fixed time (a sleep),
20 ms on the fast ones and 80 ms on the slow one. The ideal epoch is total work / total
speed; a job hands each shot to whichever consumer asks, a static split gives each a
quarter of the shots."""

import os
import statistics
import subprocess
import sys

import harness  # the test harness: a real server process

CONSUMER = r"""
import sys, time
import shotstream
target, mode, delay, rank, n = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
ids = list(range(1, n + 1))
with shotstream.Client(target) as c:
    c.dataset("d")  # connected
    print("ready", flush=True)
    sys.stdin.readline()  # go
    t0 = time.time()
    shots = (c.stream_job("d", "bench", ids, epoch=int(sys.argv[6]), seed=1, queue_depth=2)
             if mode == "job" else c.stream("d", ids[rank::4], queue_depth=2))
    k = 0
    for shot in shots:
        time.sleep(delay)
        k += 1
    print("done", t0, time.time(), k, flush=True)
"""

FAST, SLOW = 0.02, 0.08


def epoch(target, mode, n, env, epoch_no):
    """Seconds from the first consumer's start to the last one's end; shots per consumer."""
    delays = [FAST, FAST, FAST, SLOW]
    procs = [subprocess.Popen([sys.executable, "-c", CONSUMER, target, mode, str(d), str(r),
                               str(n), str(epoch_no)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env)
             for r, d in enumerate(delays)]
    for p in procs:
        assert p.stdout.readline().strip() == "ready", p.stderr.read()
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    starts, ends, counts = [], [], []
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-2000:]
        _, t0, t1, k = out.split()[-4:]
        starts.append(float(t0))
        ends.append(float(t1))
        counts.append(int(k))
    assert sum(counts) == n, counts
    return max(ends) - min(starts), counts


def cpu_per_shot(data_dir, env, n=3000, reps=3):
    """Server CPU microseconds per shot: a job with one consumer against one stream, of
    the same n tiny shots, each in a fresh server, alternated `reps` times (medians)."""
    def run(mode):
        with harness.Server([f"--dataset=d={data_dir}/*.sgy", "--log_streams=false"]) as s:
            script = (
                "import sys, shotstream\n"
                "c = shotstream.Client(sys.argv[1]); ids = list(range(1, %d + 1))\n"
                "it = c.stream_job('d', 'cpu', ids, queue_depth=4) if sys.argv[2] == 'job' "
                "else c.stream('d', ids, queue_depth=4)\n"
                "assert sum(1 for _ in it) == len(ids)\n" % n)
            before = harness.cpu_seconds(s.proc.pid)
            res = subprocess.run([sys.executable, "-c", script, s.target, mode],
                                 capture_output=True, text=True, env=env, timeout=600)
            assert res.returncode == 0, res.stderr[-2000:]
            return harness.cpu_seconds(s.proc.pid) - before
    jobs, plains = [], []
    for _ in range(reps):
        jobs.append(run("job"))
        plains.append(run("stream"))
    job, plain = statistics.median(jobs), statistics.median(plains)
    return {"job_cpu_s": job, "stream_cpu_s": plain, "shots": n, "reps": reps,
            "overhead_us_per_shot": (job - plain) / n * 1e6}


def measure(work, env, reps=3, n=400):
    """{"ideal_s", "job_s": [...], "static_s": [...], "job_counts": [...], "cpu": {...}}."""
    import synth
    data = os.path.join(work, "jobs")
    synth.write_survey(data, n_shots=max(n, 3000), traces_per_shot=1, n_samples=10,
                       n_files=1, fmt=5)
    out = {"shots": n, "fast_s": FAST, "slow_s": SLOW,
           "ideal_s": n / (3 / FAST + 1 / SLOW), "job_s": [], "static_s": []}
    with harness.Server([f"--dataset=d={data}/*.sgy", "--log_streams=false"]) as s:
        for r in range(reps):  # alternated
            t, counts = epoch(s.target, "job", n, env, r)
            out["job_s"].append(t)
            out["job_counts"] = counts
            t, _ = epoch(s.target, "static", n, env, r)
            out["static_s"].append(t)
    out["cpu"] = cpu_per_shot(data, env)
    return out

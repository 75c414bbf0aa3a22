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


# Resume and commit (the issue "Training that survives"): a consumer that trains `take`
# shots of a job, committing every 10, and prints its last token.
COMMITTER = r"""
import sys
import shotstream
target, n, take, every = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
with shotstream.Client(target) as c:
    it = c.stream_job("big", "resume", list(range(1, n + 1)), seed=3, queue_depth=4)
    token = b""
    for k in range(1, take + 1):
        next(it)
        if k % every == 0:
            token = it.commit(k // every)
    print(token.hex(), flush=True)
"""

# Seconds from stream_job(..., resume=token) to the first shot, in a connected client.
RESUMER = r"""
import sys, time
import shotstream
target, n, token = sys.argv[1], int(sys.argv[2]), bytes.fromhex(sys.argv[3])
ids = list(range(1, n + 1))
with shotstream.Client(target) as c:
    c.dataset("big")  # connected
    t0 = time.perf_counter()
    it = c.stream_job("big", "resume", ids, seed=3, queue_depth=4, resume=token)
    next(it)
    print(time.perf_counter() - t0, flush=True)
"""

# One consumer's epoch of a job, committing every `every` shots (0: never), computing
# `compute` seconds a shot; prints the epoch's seconds.
EPOCH = r"""
import sys, time
import shotstream
target, name, n, every, compute = (sys.argv[1], sys.argv[2], int(sys.argv[3]),
                                   int(sys.argv[4]), float(sys.argv[5]))
with shotstream.Client(target) as c:
    c.dataset("mid")  # connected
    t0 = time.perf_counter()
    it = c.stream_job("mid", name, list(range(1, n + 1)), seed=5, queue_depth=4)
    for k, shot in enumerate(it, 1):
        if compute:
            time.sleep(compute)
        if every and k % every == 0:
            it.commit(k // every)
    print(time.perf_counter() - t0, flush=True)
"""


def _python(env, script, *args):
    res = subprocess.run([sys.executable, "-c", script] + [str(a) for a in args],
                         capture_output=True, text=True, env=env, timeout=900)
    assert res.returncode == 0, res.stderr[-2000:]
    return res.stdout.split()[-1]


def measure_resume(work, env, reps=3, n=100_000, take=20_000, every=10):
    """Time from stream_job(resume=token) to the first shot, for an epoch of `n` tiny
    shots whose job file holds take/every commits (--job_dir): on the server that holds
    the job (a rollback in memory) and on a server restarted on the job directory (the
    file replayed first), `reps` times each."""
    import synth
    data = os.path.join(work, "resume")
    synth.write_survey(data, n_shots=n, traces_per_shot=1, n_samples=10, n_files=1, fmt=5)
    job_dir = os.path.join(work, "resume-jobs")
    os.makedirs(job_dir, exist_ok=True)
    for f in os.listdir(job_dir):
        os.remove(os.path.join(job_dir, f))
    args = [f"--dataset=big={data}/*.sgy", f"--job_dir={job_dir}", "--log_streams=false"]
    out = {"shots": n, "committed_shots": take, "commits": take // every,
           "same_server_s": [], "restarted_s": []}
    with harness.Server(args) as s:
        token = _python(env, COMMITTER, s.target, n, take, every)
        for _ in range(reps):
            out["same_server_s"].append(float(_python(env, RESUMER, s.target, n, token)))
    out["job_file_bytes"] = sum(os.path.getsize(os.path.join(job_dir, f))
                                for f in os.listdir(job_dir))
    for _ in range(reps):
        with harness.Server(args) as s:
            out["restarted_s"].append(float(_python(env, RESUMER, s.target, n, token)))
    return out


def measure_commits(work, env, reps=3, n=2000, every=10, compute=(0.0, 0.002, 0.01)):
    """One consumer's epoch of a job with a commit every `every` shots against the same
    job without commits (--job_dir: each commit is synced to disk), alternated, with no
    compute (streaming alone: the worst case) and with `compute` seconds a shot."""
    import synth
    data = os.path.join(work, "commits")
    traces, samples = 100, 1000  # 0.4 MB shots
    synth.write_survey(data, n_shots=n, traces_per_shot=traces, n_samples=samples,
                       n_files=2, fmt=5)
    harness.warm_page_cache(data)
    job_dir = os.path.join(work, "commit-jobs")
    os.makedirs(job_dir, exist_ok=True)
    out = {"shots": n, "every": every, "shot_mb": traces * samples * 4 / 1e6, "cases": []}
    with harness.Server([f"--dataset=mid={data}/*.sgy", f"--job_dir={job_dir}",
                         "--log_streams=false"]) as s:
        _python(env, EPOCH, s.target, "warm", n, 0, 0.0)
        run = 0
        for c in compute:
            case = {"compute_s": c, "commits_s": [], "plain_s": []}
            for _ in range(reps):  # alternated
                run += 1
                case["commits_s"].append(float(_python(env, EPOCH, s.target, f"c{run}", n,
                                                       every, c)))
                case["plain_s"].append(float(_python(env, EPOCH, s.target, f"p{run}", n, 0,
                                                     c)))
            case["ratio"] = (statistics.median(case["plain_s"]) /
                             statistics.median(case["commits_s"]))
            out["cases"].append(case)
    return out

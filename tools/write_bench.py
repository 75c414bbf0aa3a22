"""Writing shots (WriteShots) from the C++ client against streaming the same shots back,
in one run, over loopback into the page cache (a tmpfs write_dir, so that the commit's
fsync costs nothing and the figure is the service's own). Used by tools/bench.py
(`bazel run -c opt //:bench -- --only=writes`).

`shotstream put` sends shot_ID.npy files (read from the page cache) and reports its own
time from the first shot to the server's answer (the file renamed and its catalog built);
`shotstream bench` streams the written dataset back. The server's anonymous resident
memory is sampled while it writes."""

import os
import re
import resource
import shutil
import statistics
import tempfile
import threading

import numpy as np

import harness  # the test harness: a real server process

SHOTS, TRACES, SAMPLES = 48, 480, 4000  # 7.68 MB shots


def measure(work, reps=3):
    src = os.path.join(work, "put_src")
    os.makedirs(src, exist_ok=True)
    rng = np.random.default_rng(2)
    for sid in range(1, SHOTS + 1):
        np.save(os.path.join(src, f"shot_{sid}.npy"),
                rng.standard_normal((TRACES, SAMPLES)).astype("<f4"))
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else work
    out_dir = tempfile.mkdtemp(prefix="shotstream_write_bench_", dir=shm)
    result = {"shots": SHOTS, "traces": TRACES, "samples": SAMPLES, "write_gbps": [],
              "read_gbps": [], "anon_before_mb": [], "anon_peak_mb": [], "reps": reps,
              "server_user_s_per_gb": [], "server_system_s_per_gb": [],
              "client_s_per_gb": [],
              "write_dir": "tmpfs" if shm == "/dev/shm" else "disk"}
    try:
        with harness.Server([f"--write_dir={out_dir}", "--dataset=src=" + os.path.join(
                src, "shot_1.npy")]) as server:
            for r in range(reps + 1):  # the first pass is untimed (connection, page cache)
                name = f"w{r}"
                rss = [harness.anon_kb(server.proc.pid)]
                done = threading.Event()

                def sample():
                    while not done.wait(0.02):
                        rss.append(harness.anon_kb(server.proc.pid))
                t = threading.Thread(target=sample, daemon=True)
                t.start()
                u0, s0 = harness.cpu_times(server.proc.pid)
                c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                res = harness.cli("put", f"--target={server.target}", f"--dataset={name}",
                                  f"--from={src}", "--sample_interval_us=1000",
                                  "--progress=false")
                done.set()
                t.join()
                u1, s1 = harness.cpu_times(server.proc.pid)
                c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                gb = SHOTS * TRACES * SAMPLES * 4 / 1e9
                m = re.search(r"; ([0-9.]+) s, ([0-9.]+) GB/s", res.stdout)
                read_gbps = harness.cli_bench(server.target, name, repeat=2)["gbps"]
                if r > 0:
                    result["write_gbps"].append(float(m.group(2)))
                    result["read_gbps"].append(read_gbps)
                    result["anon_before_mb"].append(rss[0] / 1024)
                    result["anon_peak_mb"].append(max(rss) / 1024)
                    result["server_user_s_per_gb"].append((u1 - u0) / gb)
                    result["server_system_s_per_gb"].append((s1 - s0) / gb)
                    result["client_s_per_gb"].append((c1.ru_utime + c1.ru_stime - c0.ru_utime -
                                                      c0.ru_stime) / gb)
                os.remove(os.path.join(out_dir, f"{name}.sgy"))
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    result["write_over_read"] = (statistics.median(result["write_gbps"]) /
                                 statistics.median(result["read_gbps"]))
    return result

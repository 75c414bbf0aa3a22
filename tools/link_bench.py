"""shotstream over an emulated network link: two network namespaces joined by a veth pair,
a token-bucket rate limit (tbf) on both ends (../shared/docs/PERFORMANCE_NOTES.md has the
recipe). Needs root and `ip`/`tc`; everything it creates it removes.

Measured in turns on the same link, 7.68 MB IEEE shots, queue depth 4: iperf3 (the link's
limit), `shotstream bench` (the C++ client), the Python client through its native
extension and through grpcio alone. `python` may name another interpreter, e.g. a venv
with a pip-installed package (then its own `shotstream` is used, not Bazel's)."""

import json
import os
import resource
import shutil
import subprocess
import time

SERVER_NS, CLIENT_NS = "ss-bench-srv", "ss-bench-cli"
SERVER_IP, CLIENT_IP = "10.250.19.1", "10.250.19.2"

PY_STREAM = """
import sys, time, shotstream
target, native, rounds = sys.argv[1], sys.argv[2] == "1", int(sys.argv[3])
if native:
    shotstream.tune()
with shotstream.Client(target, native=native) as c:
    ids = [int(s) for s in c.dataset("ieee").shot_ids]
    for _ in c.stream("ieee", ids[:8], queue_depth=4):
        pass
    t = time.perf_counter()
    n = sum(s.samples.nbytes for s in c.stream("ieee", ids * rounds, queue_depth=4))
    print(n / (time.perf_counter() - t) / 1e9, c.native)
"""


def available():
    """Why the link cannot be emulated here, or None."""
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    for tool in ("ip", "tc", "iperf3"):
        if shutil.which(tool) is None:
            return f"needs {tool}"
    return None


def _run(*cmd):
    subprocess.run(list(cmd), check=True, capture_output=True)


def setup(rate):
    teardown()
    _run("ip", "netns", "add", SERVER_NS)
    _run("ip", "netns", "add", CLIENT_NS)
    _run("ip", "link", "add", "ssb-s", "type", "veth", "peer", "name", "ssb-c")
    _run("ip", "link", "set", "ssb-s", "netns", SERVER_NS)
    _run("ip", "link", "set", "ssb-c", "netns", CLIENT_NS)
    for ns, dev, ip in ((SERVER_NS, "ssb-s", SERVER_IP), (CLIENT_NS, "ssb-c", CLIENT_IP)):
        _run("ip", "-n", ns, "addr", "add", f"{ip}/30", "dev", dev)
        _run("ip", "-n", ns, "link", "set", dev, "up")
        _run("ip", "-n", ns, "link", "set", "lo", "up")
        _run("tc", "-n", ns, "qdisc", "add", "dev", dev, "root", "tbf", "rate", rate,
             "burst", "4mb", "latency", "20ms")


def teardown():
    for ns in (SERVER_NS, CLIENT_NS):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def _in(ns, *cmd, **kw):
    return subprocess.run(["ip", "netns", "exec", ns] + list(cmd), capture_output=True,
                          text=True, **kw)


# Untimed shots each `shotstream bench` of the encodings benchmark streams first.
WARMUP_SHOTS = 4

# What the encodings benchmark streams on each link (name, dataset, flags, the float32
# configuration it is compared with): (a) an int16 survey, (b) IEEE samples of a 16-bit
# recording, (c) IEEE full-precision samples (events plus noise).
ENCODING_CONFIGS = [
    ("float32", "a", [], None),
    ("native", "a", ["--encoding=native"], "float32"),
    ("float32 (b)", "b", [], None),
    ("window of 1/4 of the samples", "b", ["--window=0:500"], "float32 (b)"),
    ("offsets of half the traces", "b", ["--where=offset:0:3090"], "float32 (b)"),
    ("lossless", "b", ["--encoding=lossless"], "float32 (b)"),
    ("int16", "b", ["--encoding=int16"], "float32 (b)"),
    ("zfp, tolerance 1e-3", "b", ["--encoding=zfp", "--tolerance=1e-3"], "float32 (b)"),
    ("quantized, tolerance 1e-3", "b", ["--encoding=quantized", "--tolerance=1e-3"],
     "float32 (b)"),
    ("auto (b)", "b", ["--encoding=auto"], "float32 (b)"),
    ("auto (b), tolerance 1e-3", "b", ["--encoding=auto", "--tolerance=1e-3"], "float32 (b)"),
    ("float32 (c)", "c", [], None),
    ("lossless (c)", "c", ["--encoding=lossless"], "float32 (c)"),
    ("auto (c)", "c", ["--encoding=auto"], "float32 (c)"),
]


def _cpu_seconds(pid):
    """User + system CPU seconds of process `pid` so far (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children_cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _stop(*procs):
    for p in procs:
        if p is not None:
            p.terminate()
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()


def _start_server(server_bin, datasets):
    server = subprocess.Popen(["ip", "netns", "exec", SERVER_NS, server_bin,
                               f"--listen={SERVER_IP}:50051", "--log_streams=false",
                               "--drain_delay=0s"] +
                              [f"--dataset={n}={g}" for n, g in datasets.items()],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = server.stdout.readline()
    assert line.startswith("shotstream listening on"), line
    line = server.stdout.readline()  # it listens while its datasets load
    assert line.startswith("shotstream datasets loaded"), line
    return server


def _iperf3():
    for attempt in range(20):  # iperf3 -s takes a moment to listen
        res = _in(CLIENT_NS, "iperf3", "-c", SERVER_IP, "-l", "1M", "-t", "3", "-J", timeout=60)
        if res.returncode == 0:
            return json.loads(res.stdout)["end"]["sum_received"]["bits_per_second"] / 8e9
        time.sleep(0.1)
    raise RuntimeError(f"iperf3 failed: {res.stderr}")


def measure_encodings(server_bin, cli_bin, datasets, rates=("10gbit", "1gbit"), reps=2):
    """Shots a second of every ENCODING_CONFIGS entry on each emulated link, the
    configurations alternated `reps` times, with iperf3 on the same link;
    {rate: {"iperf3": [...], "configs": {name: {...}}}}, or {"skipped": why}."""
    why = available()
    if why:
        return {"skipped": why}
    out = {}
    for rate in rates:
        setup(rate)
        iperf = server = None
        try:
            iperf = subprocess.Popen(["ip", "netns", "exec", SERVER_NS, "iperf3", "-s"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            server = _start_server(server_bin, datasets)
            target = f"{SERVER_IP}:50051"
            # About 0.5-1 s a run at either rate.
            repeat = "10" if rate.startswith("10g") else "2"
            row = {"iperf3": [], "configs": {}}
            # auto learns from a client's earlier streams: one unmeasured run of each first
            # (its warm-up stream sends plain and measures the link and the codec; its
            # main stream tries what the model suggests; the measured runs then pick by
            # what each delivered).
            for name, ds, flags, base in ENCODING_CONFIGS:
                if "--encoding=auto" in flags:
                    _in(CLIENT_NS, cli_bin, "bench", f"--target={target}", f"--dataset={ds}",
                        f"--repeat={repeat}", f"--warmup_shots={WARMUP_SHOTS}",
                        "--queue_depth=4", *flags,
                        timeout=600)
            for _ in range(reps):
                row["iperf3"].append(_iperf3())
                for name, ds, flags, base in ENCODING_CONFIGS:
                    # CPU a shot, server and client (the client's warm-up shots included:
                    # an upper bound), which on a machine they share bounds shots/s.
                    server_cpu, client_cpu = _cpu_seconds(server.pid), _children_cpu_seconds()
                    res = _in(CLIENT_NS, cli_bin, "bench", f"--target={target}",
                              f"--dataset={ds}", f"--repeat={repeat}",
                              f"--warmup_shots={WARMUP_SHOTS}",
                              "--queue_depth=4", *flags, timeout=600)
                    assert res.returncode == 0, res.stderr[-2000:]
                    j = json.loads(res.stdout.strip().splitlines()[-1])
                    shots = j["shots"] + WARMUP_SHOTS
                    c = row["configs"].setdefault(name, {"dataset": ds, "flags": flags,
                                                         "baseline": base, "shots_per_s": [],
                                                         "wire_ratio": [], "encoding": None,
                                                         "server_cpu_ms": [],
                                                         "client_cpu_ms": []})
                    c["server_cpu_ms"].append(
                        (_cpu_seconds(server.pid) - server_cpu) / shots * 1e3)
                    c["client_cpu_ms"].append(
                        (_children_cpu_seconds() - client_cpu) / shots * 1e3)
                    c["shots_per_s"].append(j["shots"] / j["seconds"])
                    c["wire_ratio"].append(j["bytes"] / max(1, j["wire_bytes"]))
                    c["encoding"] = j.get("encoding")
            out[rate] = row
        finally:
            _stop(server, iperf)
            teardown()
    return out


def measure(server_bin, cli_bin, data_glob, package_dir, reps=3, rate="10gbit", python=None):
    """The link's figures, GB/s a run ({"iperf3": [...], "cpp": [...], ...} under "runs"),
    or {"skipped": why}."""
    why = available()
    if why:
        return {"skipped": why}
    setup(rate)
    iperf = server = None
    try:
        iperf = subprocess.Popen(["ip", "netns", "exec", SERVER_NS, "iperf3", "-s"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        server = _start_server(server_bin, {"ieee": data_glob})
        target = f"{SERVER_IP}:50051"
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        if python is None:
            env["PYTHONPATH"] = package_dir
        py = python or "/usr/bin/python3"
        out = {"rate": rate, "python": "pip-installed" if python else "bazel-bin"}
        runs = {"iperf3": [], "cpp": [], "py_native": [], "py_grpcio": []}
        natives = set()
        for _ in range(reps):
            runs["iperf3"].append(_iperf3())
            res = _in(CLIENT_NS, cli_bin, "bench", f"--target={target}", "--dataset=ieee",
                      "--repeat=2", "--warmup_shots=8", "--queue_depth=4", timeout=300)
            runs["cpp"].append(json.loads(res.stdout.strip().splitlines()[-1])["gbps"])
            for key, native in (("py_native", "1"), ("py_grpcio", "0")):
                res = subprocess.run(["ip", "netns", "exec", CLIENT_NS, py, "-c", PY_STREAM,
                                      target, native, "2"], capture_output=True, text=True,
                                     env=env, timeout=300)
                assert res.returncode == 0, res.stderr[-2000:]
                gbps, was_native = res.stdout.split()
                runs[key].append(float(gbps))
                if native == "1":
                    natives.add(was_native)
        out["runs"] = runs
        out["py_native_was_native"] = natives == {"True"}
        return out
    finally:
        _stop(server, iperf)
        teardown()

"""shotstream benchmark: every figure against a limit or an alternative measured in the
same run, on the same data. Writes a JSON file and regenerates BENCHMARKS.md.

    bazel run -c opt //:bench                      # ~3 minutes on 2 cores
    bazel run -c opt //:bench -- --reps=3 --shots=20   # quicker

What it measures (medians over --reps runs, with min..max):
  - loopback TCP with iperf3 (the limit of the wire here);
  - shotstream -> C++ client (`shotstream bench`) and -> Python client (through its native
    extension, its default, and through the grpcio stubs alone), IEEE and IBM;
  - a Python grpcio + segyio server (tools/baseline_server.py) -> the same clients;
  - 1, 2, 4, 8 concurrent C++ clients, and queue depths 1, 2, 4, 8;
  - catalog build (`shotstream_server --index_only`) vs segyio attributes().
"""

import argparse
import datetime
import json
import os
import platform
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "testing"))

import harness  # noqa: E402
import consumer_bench  # noqa: E402
import job_bench  # noqa: E402
import link_bench  # noqa: E402
import source_bench  # noqa: E402
import huge_bench  # noqa: E402
import binding_bench  # noqa: E402
import scale_bench  # noqa: E402
import zarr_bench  # noqa: E402
import write_bench  # noqa: E402
import xarray_bench  # noqa: E402
import load  # noqa: E402
import synth  # noqa: E402


def package_dir():
    return harness.runfile("client/python/shotstream/__init__.py").rsplit("/shotstream/", 1)[0]


sys.path.insert(0, package_dir())
import shotstream  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def summary(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "runs": values}


def iperf3(seconds=3):
    if shutil.which("iperf3") is None:
        return None
    port = free_port()
    srv = subprocess.Popen(["iperf3", "-s", "-1", "-p", str(port)], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    try:
        out = subprocess.run(["iperf3", "-c", "127.0.0.1", "-p", str(port), "-l", "1M", "-t",
                              str(seconds), "-J"], capture_output=True, text=True, timeout=60)
        end = json.loads(out.stdout)["end"]
        got, cpu = end["sum_received"], end["cpu_utilization_percent"]
        per_byte = got["seconds"] / got["bytes"] * 1e9 / 100  # ns of CPU per byte per %
        return {"gbps": got["bits_per_second"] / 8e9,
                "sender_ns_per_byte": cpu["host_total"] * per_byte,
                "receiver_ns_per_byte": cpu["remote_total"] * per_byte}
    finally:
        srv.wait(timeout=30)


cpp_bench = harness.cli_bench
CPP_PASSES = 5  # passes over the shots per `shotstream bench` run (the headline figures)
WARM_SHOTS = 8  # streamed untimed first: connection set-up and flow-control ramp-up
SETTLE_SECONDS = 3  # pause between an iperf3 run and a headline run, either way round


def py_bench(target, dataset, ids, queue_depth=2, native=None):
    with shotstream.Client(target, native=native) as c:
        for _ in c.stream(dataset, ids[:WARM_SHOTS], queue_depth=queue_depth):
            pass
        t = time.perf_counter()
        n = sum(s.samples.nbytes for s in c.stream(dataset, ids, queue_depth=queue_depth))
        return n / (time.perf_counter() - t) / 1e9


def py_bench_fresh(target, dataset, ids, reps, tune=True, **env):
    """py_bench `reps` times in one fresh python3 whose environment adds `env` (e.g.
    SHOTSTREAM_NATIVE="0": plain grpcio), after shotstream.tune() unless `tune` is False
    (then with SHOTSTREAM_TUNE=0, so that the first Client does not tune either).
    Returns the GB/s of each pass."""
    if not tune:
        env = dict(env, SHOTSTREAM_TUNE="0")
    code = ("import sys, bench\n"
            f"{'bench.shotstream.tune()' if tune else 'pass'}\n"
            "ids = [int(x) for x in sys.argv[3].split(',')]\n"
            "for _ in range(int(sys.argv[4])):\n"
            "    print(bench.py_bench(sys.argv[1], sys.argv[2], ids), flush=True)\n")
    res = subprocess.run(["/usr/bin/python3", "-c", code, target, dataset,
                          ",".join(str(i) for i in ids), str(reps)],
                         env=dict(os.environ, PYTHONPATH=HERE, **env), capture_output=True,
                         text=True, check=True)
    return [float(x) for x in res.stdout.split()]


def settings_ab(ieee_dir, ids, reps):
    """What each of the process settings buys, each set of runs alternated on the same
    data: the server reading by pread, by mmap with decoding, or by mmap sending stored
    IEEE traces without a copy (the default), its CPU per byte from /proc; the C++ client
    with gRPC's tcp_read_chunks experiment on (GRPC_EXPERIMENTS=tcp_read_chunks, which
    client/grpc_tuning.h leaves alone), with glibc's per-thread malloc arenas
    (MALLOC_ARENA_MAX=16, glibc's default for 2 cores, likewise left alone) or with the
    client's defaults, its CPU per byte from rusage; the Python native client without
    and with shotstream.tune() (a fresh process each)."""
    runs = {k: [] for k in ("pread", "mmap_decode", "zero_copy", "chunks_on", "arenas",
                            "client_default", "py_untuned", "py_tuned")}
    files = f"--dataset=ieee={ieee_dir}/*.sgy"
    with harness.Server([files, "--io=pread"]) as pread, \
            harness.Server([files, "--io=mmap", "--zero_copy=false"]) as decode, \
            harness.Server([files, "--io=mmap"]) as zero:
        for server in (pread, decode, zero):
            cpp_bench(server.target, "ieee")  # first touches out of the figures
        for _ in reps:
            for name, server in (("pread", pread), ("mmap_decode", decode), ("zero_copy", zero)):
                s0 = cpu_seconds(server.proc.pid)
                r = cpp_bench(server.target, "ieee", repeat=CPP_PASSES)
                runs[name].append({"gbps": r["gbps"],
                                   "ns": (cpu_seconds(server.proc.pid) - s0) / r["bytes"] * 1e9})
            for name, env in (("chunks_on", {"GRPC_EXPERIMENTS": "tcp_read_chunks"}),
                              ("arenas", {"MALLOC_ARENA_MAX": "16"}),
                              ("client_default", None)):
                c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                r = cpp_bench(zero.target, "ieee", env=env, repeat=CPP_PASSES)
                c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime
                runs[name].append({"gbps": r["gbps"], "ns": cpu / r["bytes"] * 1e9})
            for name, tune in (("py_untuned", False), ("py_tuned", True)):
                runs[name].append({"gbps": py_bench_fresh(zero.target, "ieee", ids, 1,
                                                          tune=tune)[0]})
    return {name: {key: summary([r[key] for r in rs]) for key in rs[0]}
            for name, rs in runs.items()}


def grpc_alone(server, ids, reps, traces, samples):
    """Where the time goes, against gRPC alone: `grpc_ceiling serve` (one shot in memory,
    sent as a slice over it: no file, no decode, no copy; and a second one holding as many
    distinct shots as the dataset, whose bytes come from memory as the server's page cache
    gives them, not from the CPU's cache; and a third whose traces lie as in a SEG-Y file,
    a header's room before each, sent as the server sends them: to a client that takes
    trace gaps, as `receive --copy` does, a chunk's traces and the headers between as one
    slice) and
    `grpc_ceiling receive`
    (drops every message; with --copy, copies the samples out with their CRC-32 as the
    client does), crossed with the shotstream server and `shotstream bench`. Runs
    alternated; the servers' CPU per byte from /proc, the clients' from rusage (the
    whole process, its start included) and as each client reports it over its timed
    passes (its start, connection and warm-up shots left out)."""
    tool = harness.runfile("grpc_ceiling")

    def serve(*extra):
        return subprocess.Popen([tool, "serve", "--listen=127.0.0.1:0", f"--n_traces={traces}",
                                 f"--n_samples={samples}"] + list(extra),
                                stdout=subprocess.PIPE, text=True)

    in_memory = f"--shots_in_memory={len(ids)}"
    ceiling, memory, layout = serve(), serve(in_memory), serve(in_memory, "--trace_gap=240")
    try:
        target, memory_target, layout_target = (p.stdout.readline().split()[-1]
                                                for p in (ceiling, memory, layout))
        shots = ",".join(str(i) for i in ids)
        passes = [f"--repeat={CPP_PASSES}", f"--warmup_shots={WARM_SHOTS}"]

        def receive(t, *extra):
            out = subprocess.run([tool, "receive", f"--target={t}", "--dataset=ieee",
                                  f"--shots={len(ids)}"] + passes + list(extra),
                                 capture_output=True, text=True, check=True, timeout=300)
            return json.loads(out.stdout.strip().splitlines()[-1])

        # Each pair the headline compares runs back to back (gRPC alone and shotstream;
        # both servers to `receive --copy`; both clients from `grpc_ceiling serve`), and
        # every other round in the reverse order, so that a ratio of one round's pair
        # sees one machine state and no side always goes first.
        cases = (("grpc_alone", ceiling.pid, lambda: receive(target)),
                 ("shotstream", server.proc.pid,
                  lambda: cpp_bench(server.target, "ieee", repeat=CPP_PASSES,
                                    warmup_shots=WARM_SHOTS)),
                 ("server_to_copy", server.proc.pid, lambda: receive(server.target, "--copy")),
                 ("ceiling_to_copy", ceiling.pid, lambda: receive(target, "--copy")),
                 ("ceiling_to_client", ceiling.pid,
                  lambda: cpp_bench(target, "ieee", shots=shots, repeat=CPP_PASSES,
                                    warmup_shots=WARM_SHOTS)),
                 ("memory_alone", memory.pid, lambda: receive(memory_target)),
                 ("memory_to_copy", memory.pid, lambda: receive(memory_target, "--copy")),
                 ("layout_to_copy", layout.pid, lambda: receive(layout_target, "--copy")))
        for _, _, run in cases:
            run()  # connections and first touches out of the figures
        runs = {name: [] for name, _, _ in cases}
        for k in reps:
            for name, pid, run in (cases if k % 2 == 0 else cases[::-1]):
                s0 = cpu_seconds(pid)
                c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                r = run()
                c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                client = c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime
                runs[name].append({"gbps": r["gbps"],
                                   "server_ns": (cpu_seconds(pid) - s0) / r["bytes"] * 1e9,
                                   "client_ns": client / r["bytes"] * 1e9,
                                   "client_timed_ns": r["cpu_seconds"] / r["bytes"] * 1e9})
        return {name: {key: summary([r[key] for r in rs]) for key in rs[0]}
                for name, rs in runs.items()}
    finally:
        for p in (ceiling, memory, layout):
            p.terminate()
            p.wait()


warm_page_cache = harness.warm_page_cache
cpu_seconds = harness.cpu_seconds


def cpp_cpu_per_byte(server, dataset, reps):
    """CPU nanoseconds per byte delivered, of the server and of `shotstream bench` (five
    passes over the shots, so that the client's start-up weighs little)."""
    srv, cli = [], []
    for _ in reps:
        s0 = cpu_seconds(server.proc.pid)
        c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        n = cpp_bench(server.target, dataset, repeat=5)["bytes"]
        c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        srv.append((cpu_seconds(server.proc.pid) - s0) / n * 1e9)
        cli.append((c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime) / n * 1e9)
    return {"server": summary(srv), "client": summary(cli)}


def py_cpu_per_byte(target, dataset, ids, max_chunk_bytes, native):
    """CPU nanoseconds per byte of this process (the Python client) for one stream."""
    t0 = os.times()
    with shotstream.Client(target, native=native) as c:
        n = sum(s.samples.nbytes
                for s in c.stream(dataset, ids, max_chunk_bytes=max_chunk_bytes))
    t1 = os.times()
    return (t1.user + t1.system - t0.user - t0.system) / n * 1e9


def segyio_attributes(paths):
    import segyio
    t = time.perf_counter()
    n = 0
    for p in paths:
        with segyio.open(p, ignore_geometry=True) as f:
            n += len(f.attributes(segyio.TraceField.FieldRecord)[:])
    return n / (time.perf_counter() - t)


def index_only(data_dir):
    """Traces/s of the catalog build, as the server reports it (process start excluded)."""
    res = harness.cli_server("--index_only", f"--dataset=d={data_dir}/*.sgy")
    line = res.stdout.strip()
    traces = int(line.split("traces ")[1].split()[0])
    seconds = float(line.split("seconds ")[1].split()[0])
    return traces / max(seconds, 1e-6)


def gather_reads(data_dir, reps):
    """Coalesced vs one pread per trace vs segyio, for shot and receiver gathers, next to
    the page-cache read rate of the same files."""
    import segyio
    out = {}
    paths = [os.path.join(data_dir, f) for f in sorted(os.listdir(data_dir))]
    # The limit: reading the files' bytes from the page cache in 16 MiB reads.
    t = time.perf_counter()
    total = 0
    for p in paths:
        with open(p, "rb", buffering=0) as f:
            while True:
                b = f.read(16 << 20)
                if not b:
                    break
                total += len(b)
    out["page_cache_gbps"] = total / (time.perf_counter() - t) / 1e9
    tool = harness.runfile("server/bench/gather_read_bench")
    for gather in ("shot", "receiver"):
        for mode in ("coalesced", "per_trace"):
            res = subprocess.run([tool, f"--files={data_dir}/*.sgy", f"--gather={gather}",
                                  f"--mode={mode}", f"--reps={reps}"], capture_output=True,
                                 text=True, check=True)
            out[f"{gather}_{mode}"] = json.loads(res.stdout.strip().splitlines()[-1])
        # segyio: the same gathers, as a user would read them.
        best = 1e300
        nbytes = 0
        for _ in range(reps):
            nbytes = 0
            t = time.perf_counter()
            for p in paths:
                with segyio.open(p, ignore_geometry=True) as f:
                    f.mmap()
                    keys = f.attributes(segyio.TraceField.FieldRecord)[:]
                    bounds = np.flatnonzero(np.diff(keys)) + 1
                    starts = np.concatenate([[0], bounds])
                    ends = np.concatenate([bounds, [f.tracecount]])
                    if gather == "shot":
                        for a, b in zip(starts, ends):
                            nbytes += f.trace.raw[int(a):int(b)].nbytes
                    else:
                        for r in range(int(min(ends - starts))):
                            g = np.stack([f.trace.raw[int(a) + r] for a in starts])
                            nbytes += g.nbytes
            best = min(best, time.perf_counter() - t)
        out[f"{gather}_segyio"] = {"gbps": nbytes / best / 1e9, "seconds": best}
    return out


import bench_report  # noqa: E402

ARTIFACTS = bench_report.ARTIFACTS  # benchmarks/, beside BENCHMARKS.md


def slow_storage(work, data_dir, delay_us=200):
    """Catalog build vs segyio attributes() when every read costs a round trip: both run
    under tools/io_shim.c (LD_PRELOAD), which delays each pread/fread on a file."""
    env = harness.preload_env(harness.runfile("libio_shim.so"), SLOW_IO_US=delay_us)
    res = subprocess.run([harness.runfile(harness.SERVER), "--index_only",
                          f"--dataset=d={data_dir}/*.sgy"], capture_output=True, text=True,
                         env=env, check=True)
    line = res.stdout.strip()
    ours = float(line.split("seconds ")[1].split()[0])
    traces = int(line.split("traces ")[1].split()[0])
    code = ("import glob, segyio, time\n"
            "t = time.perf_counter()\n"
            f"for p in sorted(glob.glob({data_dir!r} + '/*.sgy')):\n"
            "    with segyio.open(p, ignore_geometry=True) as f:\n"
            "        f.attributes(segyio.TraceField.FieldRecord)[:]\n"
            "print(time.perf_counter() - t)\n")
    res = subprocess.run(["/usr/bin/python3", "-c", code], capture_output=True, text=True,
                         env=env, check=True)
    theirs = float(res.stdout.strip().splitlines()[-1])
    return {"delay_us": delay_us, "traces": traces, "shotstream_seconds": ours,
            "segyio_seconds": theirs}


def catalog_1m(work):
    """Build, save and load a catalog of 1 M traces; segyio attributes() on the same files."""
    d = os.path.join(work, "million")
    synth.write_survey(d, n_shots=2000, traces_per_shot=500, n_samples=50, n_files=4, fmt=5)
    cat = os.path.join(work, "catalogs")
    out = {}
    for label in ("build", "load"):
        res = harness.cli_server("--index_only", f"--dataset=m={d}/*.sgy", f"--catalog_dir={cat}")
        line = res.stdout.strip()
        out[f"{label}_seconds"] = float(line.split("seconds ")[1].split()[0])
        out[f"{label}_origin"] = line.split("catalog ")[1]
        out["traces"] = int(line.split("traces ")[1].split()[0])
    paths = [os.path.join(d, f) for f in sorted(os.listdir(d))]
    out["segyio_attributes_seconds"] = out["traces"] / segyio_attributes(paths)
    shutil.rmtree(d, ignore_errors=True)
    return out


def reliability(work, load_seconds):
    """The load generator's figures (testing/load.py, which //tests:faults_test runs
    for 20 s): 32 clients, random orders, cancels, reconnects, every shot verified."""
    d = os.path.join(work, "load")
    synth.write_survey(d, n_shots=24, traces_per_shot=60, n_samples=1000, n_files=3, fmt=1)
    with harness.Server([f"--dataset=d={d}/*.sgy", "--log_streams=false",
                         "--max_queue_depth=4"]) as server:
        with shotstream.Client(server.target) as c:
            ref = {s.shot_id: s.samples.copy() for s in c.stream("d", list(range(1, 25)))}
        r = load.run_load(server, "d", ref, clients=32, seconds=load_seconds)
    bound_mb = 32 * 4 * 60 * 1000 * 4 * 1.5 / 1e6 + 64
    ok = not r["errors"] and r["alive"] and r["rss_growth_mb"] <= bound_mb
    return {"load": {"ok": ok, "line": "load: " + load.describe(r, bound_mb)}}


def decode_per_core():
    """Google Benchmark's figures for decoding one 7.68 MB shot to float32 on one core,
    next to a memcpy of the same bytes (the limit)."""
    return {name: b["bytes_per_second"] / 1e9
            for name, b in google_benchmark("segy/sample_format_benchmark", 5).items()}


def google_benchmark(tool, repetitions):
    """The median of each benchmark of a Google Benchmark binary, by name without BM_."""
    res = subprocess.run([harness.runfile(tool), "--benchmark_format=json",
                          f"--benchmark_repetitions={repetitions}",
                          "--benchmark_report_aggregates_only=true"],
                         capture_output=True, text=True, check=True)
    return {b["run_name"].replace("BM_", ""): b for b in json.loads(res.stdout)["benchmarks"]
            if b.get("aggregate_name") == "median"}


def main():
    shotstream.tune()  # as the README tells a program that streams to do, first
    p = argparse.ArgumentParser()
    p.add_argument("--shots", type=int, default=40)
    p.add_argument("--traces", type=int, default=480)
    p.add_argument("--samples", type=int, default=4000)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--workdir", default=None)
    p.add_argument("--load_seconds", type=int, default=60)
    p.add_argument("--skip_reliability", action="store_true")
    p.add_argument("--only", choices=["link", "encodings", "jobs", "sources", "writes",
                                          "consumers", "zarr", "scale", "huge", "binding",
                                          "fwi", "xarray", "headline"],
                   default=None,
                   help="measure only this section and merge it into the saved bench.json "
                        "(headline: the top figures, before the sections of their own)")
    p.add_argument("--link_rate", default="10gbit", help="the emulated link's rate (tbf)")
    p.add_argument("--baseline", default=None,
                   help="--only=huge: a directory with the shotstream_server and shotstream "
                        "binaries of the version before, for ordinary shots against it")
    p.add_argument("--link_python", default=None,
                   help="an interpreter whose own shotstream the link section uses (a venv "
                        "with a pip install); default: Bazel's package")
    p.add_argument("--out", default=None, help="directory for BENCHMARKS.md (and "
                   f"{ARTIFACTS}/: bench.json and the plots) "
                   "(default: the workspace under bazel run, else .)")
    args = p.parse_args()
    out_dir = args.out or os.environ.get("BUILD_WORKSPACE_DIRECTORY") or "."
    os.makedirs(os.path.join(out_dir, ARTIFACTS), exist_ok=True)
    work = args.workdir or tempfile.mkdtemp(prefix="shotstream-bench-")
    ieee_dir, ibm_dir = os.path.join(work, "ieee"), os.path.join(work, "ibm")
    if args.only is not None:
        return section_only(args, out_dir, work, ieee_dir)
    results = run_header(args)
    try:
        measure_headline(args, work, ieee_dir, ibm_dir, results)
        print("emulated link ...", flush=True)
        results["link"] = measure_link(args, ieee_dir)
        print("windows, conditions and encodings on emulated links ...", flush=True)
        results["encodings"] = measure_encodings(work, args.reps)
        print("jobs against a static split ...", flush=True)
        results["jobs"] = measure_jobs(work, args.reps)
        print("stalled and slow consumers ...", flush=True)
        results["consumers"] = measure_consumers(work, args.reps)
        if not args.skip_reliability:
            print("reliability (32-client load) ...", flush=True)
            results["reliability"] = reliability(work, args.load_seconds)
    finally:
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)

    commit = head_commit()  # the tree every figure of this run was measured on
    results["commit"] = commit
    for section in results.values():
        if isinstance(section, dict) and "date" in section:
            section["commit"] = commit
    with open(os.path.join(out_dir, ARTIFACTS, "bench.json"), "w") as f:
        json.dump(results, f, indent=1)
    # Reporting is bench_report's: the same as `bazel run //:bench_report` afterwards.
    print(bench_report.write(results, out_dir))


def run_header(args):
    """What the headline figures were measured on and with: the machine, the date, the data."""
    return {"machine": {"nproc": os.cpu_count(), "platform": platform.platform(),
                        "cpu": cpu_name()},
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "data": {"shots": args.shots, "traces_per_shot": args.traces,
                     "samples": args.samples,
                     "shot_mb": args.traces * args.samples * 4 / 1e6},
            "reps": args.reps,
            "settings": {"cpp_passes": CPP_PASSES, "warm_shots": WARM_SHOTS}}


def measure_headline(args, work, ieee_dir, ibm_dir, results):
    """The headline figures (against iperf3, gRPC alone, the Python baseline server, the
    clients, queue depths and settings, catalogs, gather reads, decode), into `results`'
    top level: what a full run measures before the sections of their own."""
    print("writing data ...", flush=True)
    synth.write_survey(ieee_dir, args.shots, args.traces, args.samples, n_files=4, fmt=5)
    synth.write_survey(ibm_dir, args.shots, args.traces, args.samples, n_files=4, fmt=1)
    warm_page_cache(ieee_dir, ibm_dir)
    ids = list(range(1, args.shots + 1))
    reps = range(args.reps)

    cpu = {}
    results["cpu_ns_per_byte"] = cpu

    with harness.Server([f"--dataset=ieee={ieee_dir}/*.sgy",
                         f"--dataset=ibm={ibm_dir}/*.sgy"]) as server:
        t = server.target
        warm_page_cache(ieee_dir, ibm_dir)
        cpp_bench(t, "ieee")  # warm the channel path once
        cpp_bench(t, "ibm")
        print("iperf3 and shotstream -> C++ ...", flush=True)
        # Each run: one `shotstream bench` process streaming every shot CPP_PASSES times
        # (its start-up, connection and first touches amortised as in a long job; the
        # baseline server is measured the same way), right after an iperf3 run, so that
        # the ratio of the two compares runs that saw the same machine. A pause between
        # them: on this VM a run right after iperf3's burst was 10-30% slower than the
        # next one (1.39-1.87 against 1.90-2.13 GB/s), and alike after 3 s; measured
        # four times as `iperf3 -c 127.0.0.1 -l 1M -t 3` then two `shotstream bench
        # --repeat=5 --warmup_shots=8` back to back, and again with `sleep 3` first.
        iperf_runs, cpp_runs = [], []
        for _ in reps:
            if shutil.which("iperf3"):
                iperf_runs.append(iperf3())
                time.sleep(SETTLE_SECONDS)
            cpp_runs.append(cpp_bench(t, "ieee", repeat=CPP_PASSES,
                                      warmup_shots=WARM_SHOTS)["gbps"])
            time.sleep(SETTLE_SECONDS)
        results["cpp_ieee_gbps"] = summary(cpp_runs)
        results["iperf3_gbps"] = summary([r["gbps"] for r in iperf_runs]) \
            if iperf_runs else None
        if iperf_runs:
            cpu["iperf3_sender"] = summary([r["sender_ns_per_byte"] for r in iperf_runs])
            cpu["iperf3_receiver"] = summary([r["receiver_ns_per_byte"]
                                              for r in iperf_runs])
        results["cpp_ibm_gbps"] = summary([cpp_bench(t, "ibm", repeat=CPP_PASSES,
                                                     warmup_shots=WARM_SHOTS)["gbps"]
                                           for _ in reps])
        # Pool vs a new buffer per shot, alternated so that both see the same noise.
        print("receive buffers: pool vs plain ...", flush=True)
        pool_runs, plain_runs = [], []
        for _ in reps:
            pool_runs.append(cpp_bench(t, "ieee", repeat=2, buffers="pool"))
            plain_runs.append(cpp_bench(t, "ieee", repeat=2, buffers="plain"))
        results["buffers"] = {
            "pool_gbps": summary([r["gbps"] for r in pool_runs]),
            "plain_gbps": summary([r["gbps"] for r in plain_runs]),
            "pinned": pool_runs[0]["pinned"],
            "pool_allocations": pool_runs[0]["buffer_allocations"],
            "plain_allocations": plain_runs[0]["buffer_allocations"],
            "shots": pool_runs[0]["shots"]}
        print("shotstream -> Python ...", flush=True)
        # The package's default (native extension where built) and grpcio alone,
        # alternated.
        py_native, py_grpcio = [], []
        for _ in reps:
            py_native.append(py_bench(t, "ieee", ids))
            py_grpcio.append(py_bench(t, "ieee", ids, native=False))
        with shotstream.Client(t) as c:
            results["py_native"] = c.native
        results["py_ieee_gbps"] = summary(py_native)
        results["py_grpcio_ieee_gbps"] = summary(py_grpcio)
        print("CPU per byte ...", flush=True)
        cpp_cpu = cpp_cpu_per_byte(server, "ieee", reps)
        cpu["server"], cpu["cpp_client"] = cpp_cpu["server"], cpp_cpu["client"]
        if results["py_native"]:
            cpu["python_client_native"] = summary(
                [py_cpu_per_byte(t, "ieee", ids, None, None) for _ in reps])
        for chunk in (256 << 10, 1 << 20, 4 << 20, 64 << 20):
            cpu[f"python_client_{chunk >> 10}k"] = summary(
                [py_cpu_per_byte(t, "ieee", ids, chunk, False) for _ in reps])
        print("gRPC alone ...", flush=True)
        results["grpc_alone"] = grpc_alone(server, ids, reps, args.traces, args.samples)
        print("clients and queue depths ...", flush=True)
        results["clients"] = {}
        for n in (1, 2, 4, 8, 16):
            runs = [cpp_bench(t, "ieee", streams=n) for _ in range(max(1, args.reps // 2))]
            best = max(runs, key=lambda r: r["gbps"])
            results["clients"][n] = {
                "aggregate_gbps": summary([r["gbps"] for r in runs]),
                "slowest_over_fastest": best["fastest_stream_seconds"]
                / best["slowest_stream_seconds"]}
        results["queue_depth"] = {
            q: summary([cpp_bench(t, "ieee", queue_depth=q)["gbps"]
                        for _ in range(max(1, args.reps // 2))]) for q in (1, 2, 4, 8)}

    print("what each setting buys ...", flush=True)
    warm_page_cache(ieee_dir)
    results["settings"] = settings_ab(ieee_dir, ids, reps)

    print("Python grpcio + segyio server ...", flush=True)
    port = free_port()
    # What a user would write: plain grpcio, glibc's malloc as it comes.
    env = dict(os.environ, PYTHONPATH=package_dir(), SHOTSTREAM_NATIVE="0")
    base = subprocess.Popen(["/usr/bin/python3", os.path.join(HERE, "baseline_server.py"),
                             f"--port={port}", f"--files={ieee_dir}/*.sgy"], env=env,
                            stdout=subprocess.PIPE, text=True)
    try:
        base.stdout.readline()
        bt = f"127.0.0.1:{port}"
        warm_page_cache(ieee_dir)  # as for shotstream (this machine reclaims idle pages)
        cpp_bench(bt, "ieee")  # warm its path once, as for shotstream
        results["baseline_cpp_gbps"] = summary(
            [cpp_bench(bt, "ieee", repeat=CPP_PASSES, warmup_shots=WARM_SHOTS)["gbps"]
             for _ in reps])
        # Its client: the package through grpcio alone, in a fresh process untouched
        # by the native extension's tuning.
        results["baseline_py_gbps"] = summary(py_bench_fresh(bt, "ieee", ids, len(reps),
                                                             SHOTSTREAM_NATIVE="0"))
    finally:
        base.terminate()
        base.wait()

    print("catalog build ...", flush=True)
    paths = [os.path.join(ieee_dir, f) for f in sorted(os.listdir(ieee_dir))]
    results["catalog_traces_per_s"] = summary([index_only(ieee_dir) for _ in reps])
    results["segyio_attributes_traces_per_s"] = summary([segyio_attributes(paths)
                                                         for _ in reps])
    print("gather reads ...", flush=True)
    results["gathers"] = gather_reads(ieee_dir, max(1, args.reps // 2))
    print("catalog build on slow storage ...", flush=True)
    results["slow_storage"] = slow_storage(work, ieee_dir)
    print("decode per core ...", flush=True)
    results["decode_gbps"] = decode_per_core()
    print("catalog of 1 M traces ...", flush=True)
    results["catalog_1m"] = catalog_1m(work)


def measure_link(args, ieee_dir):
    out = link_bench.measure(harness.runfile(harness.SERVER), harness.runfile(harness.CLI),
                             f"{ieee_dir}/*.sgy", package_dir(), reps=max(1, args.reps // 2 + 1),
                             rate=args.link_rate, python=args.link_python)
    for key, runs in out.pop("runs", {}).items():
        out[key + "_gbps"] = summary(runs)
    return out


def codec_per_core():
    """Google Benchmark's figures for the encodings' codecs on one core (GB/s of float32
    and ratio), with Zstd and LZ4 alone beside c-blosc's settings."""
    return {name: {"gbps": b["bytes_per_second"] / 1e9, "ratio": b.get("ratio")}
            for name, b in google_benchmark("wire/sample_encoding_benchmark", 3).items()}


def measure_encodings(work, reps):
    """Windows, conditions and encodings on emulated 10 and 1 Gbit/s links (root only),
    and the codecs per core."""
    dirs = {}
    for name, fmt, sixteen in (("a", 3, False), ("b", 5, True), ("c", 5, False)):
        d = os.path.join(work, f"enc_{name}")
        synth.write_survey(d, 16, 480, 2000, n_files=2, fmt=fmt, sixteen_bit=sixteen)
        dirs[name] = f"{d}/*.sgy"
        warm_page_cache(d)
    out = link_bench.measure_encodings(harness.runfile(harness.SERVER),
                                       harness.runfile(harness.CLI), dirs,
                                       reps=max(3, reps // 2))
    if "skipped" not in out:
        for row in out.values():
            row["iperf3_gbps"] = summary(row.pop("iperf3"))
            for c in row["configs"].values():
                for k in ("shots_per_s", "wire_ratio", "server_cpu_ms", "client_cpu_ms"):
                    c[k] = summary(c[k])
    return {"links": out, "codecs": codec_per_core(),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}


def measure_jobs(work, reps):
    """A job's epoch against a static split, 4 consumers of which one is 4x slower, and
    the job's server CPU per shot; resume's time to the first shot and commits' cost."""
    env = dict(os.environ, PYTHONPATH=package_dir())
    out = job_bench.measure(work, env, reps=max(3, reps // 2))
    out["job_s"], out["static_s"] = summary(out["job_s"]), summary(out["static_s"])
    resume = job_bench.measure_resume(work, env, reps=max(3, reps // 2))
    resume["same_server_s"] = summary(resume["same_server_s"])
    resume["restarted_s"] = summary(resume["restarted_s"])
    out["resume"] = resume
    commits = job_bench.measure_commits(work, env, reps=max(3, reps // 2))
    for case in commits["cases"]:
        case["commits_s"], case["plain_s"] = summary(case["commits_s"]), summary(case["plain_s"])
    out["commits"] = commits
    out["date"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return out


def measure_fwi(work):
    """The FWI example's default run (`bazel run //:fwi`), once: its misfit and model
    error by iteration, the io wait of its streamed loop beside the one-request-per-shot
    figure, and its wall time. Parsed from what it prints."""
    import re
    workdir = os.path.join(work, "fwi")
    start = time.perf_counter()
    res = subprocess.run([harness.runfile("examples/fwi/fwi"), f"--workdir={workdir}",
                          "--fresh"], capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - start
    if res.returncode != 0:
        raise RuntimeError(f"fwi failed: {res.stdout[-2000:]}{res.stderr[-2000:]}")
    out = res.stdout
    its = [(int(i), float(m), float(e)) for i, m, e in re.findall(
        r"^iteration (\d+)/\d+: misfit (\S+) .*model rms error ([\d.]+) m/s", out, re.M)]
    io = re.search(r"^io wait ([\d.]+) s of ([\d.]+) s of the ranks' loops, ([\d.]+)% "
                   r".*would have waited ([\d.]+) s, ([\d.]+)%", out, re.M)
    final = re.search(r"model rms error ([\d.]+) -> ([\d.]+) m/s", out)
    return {"iterations": [{"iteration": i, "misfit": m, "model_rms_error": e}
                           for i, m, e in its],
            "misfit_ratio": its[-1][1] / its[0][1],
            "rms_start": float(final.group(1)), "rms_final": float(final.group(2)),
            "io_wait_s": float(io.group(1)), "loop_s": float(io.group(2)),
            "io_wait_pct": float(io.group(3)), "blocking_wait_s": float(io.group(4)),
            "blocking_pct": float(io.group(5)), "wall_s": wall,
            "commit": head_commit(),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}


def measure_xarray(work, reps):
    """A per-shot reduction through shotstream.xarray on a two-worker LocalCluster against
    one process streaming (tools/xarray_bench.py), and a 100,000-shot dataset's graph."""
    out = xarray_bench.measure(work, reps=max(3, reps))
    for k in ("stream_shots_per_s", "dask_shots_per_s", "threads_shots_per_s", "graph_s",
              "reduction_graph_s"):
        out[k] = summary(out[k])
    out["commit"] = head_commit()
    out["date"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return out


def measure_binding(work, reps):
    """The Python client on the C++ client (tools/binding_bench.py): its rate against the
    C++ client's, stream_job against stream, and the binding's cost per shot."""
    out = binding_bench.measure(work, dict(os.environ, PYTHONPATH=package_dir()),
                                reps=max(3, reps))
    for k in ("cpp_gbps", "py_gbps", "stream_gbps", "job_gbps", "forked_gbps",
              "forked_start_s", "tiny_cpp_us", "tiny_py_us", "tiny_cpp_cpu_us",
              "tiny_py_cpu_us"):
        out[k] = summary(out[k])
    out["date"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return out


def measure_consumers(work, reps):
    """A consumer alone and beside forty stalled streams; eight sharing a small budget."""
    out = consumer_bench.measure(work, reps=max(3, reps // 2))
    alone = summary(out["alone_gbps"])
    for k in ("alone_gbps", "given_back_gbps", "never_gbps", "inflight_mb_given_back",
              "inflight_mb_never", "fair_slowest_over_fastest", "fair_gbps",
              "fair_alone_gbps"):
        out[k] = summary(out[k])
    out["given_back_over_alone"] = out["given_back_gbps"]["median"] / alone["median"]
    out["never_over_alone"] = out["never_gbps"]["median"] / alone["median"]
    out["date"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return out


def measure_sources(work, reps):
    """.npy against little-endian SEG-Y through the server; gzip HDF5 against h5py."""
    out = source_bench.measure(work, reps=max(3, reps))
    for k in ("npy_gbps", "segy_gbps", "h5_server_gb_per_cpu_s", "h5py_gb_per_cpu_s"):
        out[k] = summary(out[k])
    out["date"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return out


def measure_zarr(work, reps):
    """A Blosc-compressed Zarr store through the server against zarr-python, random shots."""
    out = zarr_bench.measure(work, reps=max(3, reps))
    for k in ("server_shots_per_s", "zarr_shots_per_s", "window_shots_per_s",
              "server_cpu_ms_per_shot"):
        out[k] = summary(out[k])
    out["date"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return out


def measure_scale(work):
    """Catalog memory per trace (shot-ordered and scattered) and 100,000 files under a
    descriptor limit of 1024 (tools/scale_bench.py); one run each: memory and descriptor
    counts, not rates, are the figures."""
    out = scale_bench.measure(work)
    out["date"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return out


def measure_huge(work, reps, baseline=None):
    """Huge shots in pieces (tools/huge_bench.py): the server's memory under three streams
    of a 0.96 GB shot, with pieces and whole; huge shots' rates against the same data as
    ordinary shots."""
    out = huge_bench.measure(work, reps=max(3, reps), baseline=baseline)
    for k in ("ibm_gbps", "ibm_small_gbps", "ieee_first_gbps", "ieee_second_gbps",
              "ieee_small_first_gbps", "ieee_small_second_gbps"):
        out[k] = summary(out[k])
    for name in ("float32", "ibm"):
        if name in out.get("ordinary", {}):
            out["ordinary"][name] = {k: summary(v) for k, v in out["ordinary"][name].items()}
    out["date"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return out


def measure_writes(work, reps):
    """WriteShots from the C++ client (shotstream put) against streaming the shots back."""
    out = write_bench.measure(work, reps=max(3, reps))
    for k in ("write_gbps", "read_gbps", "anon_before_mb", "anon_peak_mb",
              "server_user_s_per_gb", "server_system_s_per_gb", "client_s_per_gb"):
        out[k] = summary(out[k])
    out["date"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return out


def measure_link_section(args, ieee_dir):
    """The link section on a survey written for it."""
    synth.write_survey(ieee_dir, args.shots, args.traces, args.samples, n_files=4, fmt=5)
    warm_page_cache(ieee_dir)
    out = measure_link(args, ieee_dir)
    out["date"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return out


def head_commit():
    """The short hash of the tree measured (a section's figures name it), else ""."""
    res = subprocess.run(["git", "-C", os.path.dirname(os.path.realpath(__file__)),
                          "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return res.stdout.strip() if res.returncode == 0 else ""


def section_only(args, out_dir, work, ieee_dir):
    """--only=SECTION: that section, measured now, into the saved figures."""
    measure = {
        "link": lambda: measure_link_section(args, ieee_dir),
        "encodings": lambda: measure_encodings(work, args.reps),
        "jobs": lambda: measure_jobs(work, args.reps),
        "sources": lambda: measure_sources(work, args.reps),
        "writes": lambda: measure_writes(work, args.reps),
        "consumers": lambda: measure_consumers(work, args.reps),
        "zarr": lambda: measure_zarr(work, args.reps),
        "scale": lambda: measure_scale(work),
        "huge": lambda: measure_huge(work, args.reps, args.baseline),
        "binding": lambda: measure_binding(work, args.reps),
        "fwi": lambda: measure_fwi(work),
        "xarray": lambda: measure_xarray(work, args.reps),
        "headline": None,
    }[args.only]
    path = os.path.join(out_dir, ARTIFACTS, "bench.json")
    with open(path) as f:
        results = json.load(f)
    try:
        if args.only == "headline":  # the top level's figures, its date and commit
            results.update(run_header(args))
            measure_headline(args, work, ieee_dir, os.path.join(work, "ibm"), results)
            results["commit"] = head_commit()
        else:
            results[args.only] = measure()
            results[args.only]["commit"] = head_commit()
    finally:
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    with open(path, "w") as f:
        json.dump(results, f, indent=1)
    print(bench_report.write(results, out_dir))


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


if __name__ == "__main__":
    main()

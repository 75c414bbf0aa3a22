"""shotstream demo: the main job on an embedded default.

Writes a synthetic IBM-float survey (several files, shots spanning files), starts a real
shotstream_server on it, and runs an FWI-like loop (ask for a shot, then a fixed compute
per shot) twice: blocking (one request per shot) and prefetched (one stream, the server
reading ahead and the client receiving ahead). Prints the time spent waiting on I/O, the
compute time and the total of each, the speed-up, and the streaming throughput.

Without a GPU the per-shot compute is the host waiting a fixed time, as it does while a
GPU kernel runs; the data is still touched (a reduction over every sample).
"""

import argparse
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "testing"))

import numpy as np  # noqa: E402

import harness  # noqa: E402
import synth  # noqa: E402


def find_gpu():
    """A torch CUDA device and a stager, when PyTorch and a GPU are there; else None."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    from shotstream.torch import DeviceStager
    return DeviceStager("cuda")


def fwi_loop(client, dataset, shot_ids, compute_s, prefetch, queue_depth, stager=None):
    """Returns (total, io_wait, compute, bytes, waits: each shot's io_wait). With a stager,
    each shot is copied to the GPU on a side stream and reduced there; the fixed compute
    time is then GPU time."""
    io_wait = compute = 0.0
    waits = []
    nbytes = 0
    start = time.perf_counter()
    stream = client.stream(dataset, shot_ids, queue_depth=queue_depth) if prefetch else None
    for sid in shot_ids:
        t0 = time.perf_counter()
        if prefetch:
            shot = next(stream)
        else:
            shot = next(iter(client.stream(dataset, [sid], queue_depth=1)))
        t1 = time.perf_counter()
        io_wait += t1 - t0
        waits.append(t1 - t0)
        nbytes += shot.samples.nbytes
        # The compute of one shot: touch every sample, then the fixed device time.
        if stager is not None:
            dev = stager.stage(shot.samples)  # pinned buffer, non_blocking copy, side stream
            dev.sum()
        else:
            shot.samples.sum(dtype=np.float64)
        remaining = compute_s - (time.perf_counter() - t1)
        if remaining > 0:
            time.sleep(remaining)
        compute += time.perf_counter() - t1
    if stream is not None:
        stream.close()
    return time.perf_counter() - start, io_wait, compute, nbytes, waits


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shots", type=int, default=40)
    p.add_argument("--traces", type=int, default=480, help="traces per shot")
    p.add_argument("--samples", type=int, default=2500, help="samples per trace")
    p.add_argument("--files", type=int, default=4)
    p.add_argument("--compute_ms", type=float, default=40.0, help="compute per shot")
    p.add_argument("--queue_depth", type=int, default=4)
    p.add_argument("--workdir", default=None, help="where the survey is written (temp)")
    p.add_argument("--io_wait_detail", action="store_true",
                   help="also say where the prefetched io_wait goes (first shot, the rest)")
    args = p.parse_args()

    shotstream = harness.import_shotstream()
    work = args.workdir or tempfile.mkdtemp(prefix="shotstream-demo-")
    data_dir = os.path.join(work, "survey")
    try:
        t = time.perf_counter()
        paths, nbytes = synth.write_survey(data_dir, n_shots=args.shots,
                                           traces_per_shot=args.traces,
                                           n_samples=args.samples, n_files=args.files, fmt=1)
        size = sum(os.path.getsize(x) for x in paths)
        print(f"survey: {len(paths)} files, {args.shots} shots x {args.traces} traces x "
              f"{args.samples} samples, IBM float, {size / 1e6:.0f} MB "
              f"(written in {time.perf_counter() - t:.1f} s)")
        stager = find_gpu()
        if stager is None:
            print("GPU: none found (needs PyTorch with CUDA); the per-shot compute is a fixed "
                  "host wait standing in for a device kernel, and shots stay in host memory")
        else:
            print("GPU: found; each shot is staged through pinned buffers on a side stream "
                  "and reduced on the device")
        with harness.Server([f"--dataset=demo={data_dir}/*.sgy"]) as server:
            print(f"server: {server.target}")
            with shotstream.Client(server.target) as client:
                info = client.dataset("demo")
                ids = [int(s) for s in info.shot_ids]
                rng = np.random.default_rng(0)
                order = [ids[k] for k in rng.permutation(len(ids))]  # a new order, as FWI does
                compute_s = args.compute_ms / 1000.0
                # Warm the page cache and the connection once, outside the timings.
                for _ in client.stream("demo", ids[:2]):
                    pass
                results = {}
                for mode, prefetch in (("blocking", False), ("prefetch", True)):
                    total, io, comp, _, waits = fwi_loop(client, "demo", order, compute_s,
                                                         prefetch, args.queue_depth, stager)
                    results[mode] = (total, io, comp)
                    print(f"[{mode:9s}] total {total * 1e3:8.0f} ms  io_wait {io * 1e3:7.0f} ms"
                          f"  compute {comp * 1e3:7.0f} ms")
                    if prefetch and args.io_wait_detail:
                        rest = sorted(waits[1:])
                        print(f"  prefetched io_wait: first shot {waits[0] * 1e3:.1f} ms (its "
                              f"request and read: nothing before it to overlap with); the "
                              f"other {len(rest)}: {sum(rest) * 1e3:.1f} ms, median "
                              f"{rest[len(rest) // 2] * 1e3:.2f} ms, largest "
                              f"{rest[-1] * 1e3:.2f} ms")
                t0 = time.perf_counter()
                streamed = sum(s.samples.nbytes
                               for s in client.stream("demo", order, queue_depth=args.queue_depth))
                stream_s = time.perf_counter() - t0
            b, f = results["blocking"], results["prefetch"]
            print(f"speed-up: {b[0] / f[0]:.2f}x (prefetched io_wait is "
                  f"{100.0 * f[1] / max(b[1], 1e-9):.1f}% of blocking io_wait)")
            print(f"streaming: {streamed / stream_s / 1e9:.2f} GB/s "
                  f"({streamed / 1e6:.0f} MB in {stream_s:.2f} s, checksums verified)")
            rc = server.stop()
            print(f"server stopped cleanly (exit {rc})")
    finally:
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

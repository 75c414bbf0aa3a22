"""shotstream FWI example: a 2-D acoustic full-waveform inversion that streams its shots.

    bazel run //:fwi                      # the default: 16 shots, 200 x 100 cells, 10 iterations
    bazel run //:fwi -- --help

1. Forward modelling writes the data: the true model's shots are modelled (wave.py) and
   written to a running shotstream server with Client.write, with source and receiver
   coordinates and offsets in the trace headers and the sample interval.
2. Inversion streams it: `--ranks` processes (torch.distributed, gloo) take each
   iteration's shots through a job (Client.stream_job, epoch = iteration), each
   computing the L2 misfit and its gradient by autograd for the shots it is handed while
   the stream reads ahead; the gradients are all-reduced and the model updated.
3. Each iteration checkpoints the model, the optimizer and the job's token; run the same
   command again after a crash (or `--crash_rank`) and it resumes from the checkpoint.
4. Results go back to the server as datasets (the inverted model, the last iteration's
   synthetic gathers) and into pictures (PNG) whose paths are printed.

Everything lands in --workdir (default: ./fwi_out where `bazel run` was called). On a
machine with CUDA, torch runs the propagator there and the shots land on the GPU
through shotstream.torch.DeviceStager.
"""

import argparse
import json
import os
import secrets
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "testing"))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

import harness  # noqa: E402

from model import smooth, true_model  # noqa: E402
from wave import Propagator  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--workdir", default=None,
                   help="outputs, checkpoint and the server's files (default ./fwi_out)")
    p.add_argument("--target", default=None,
                   help="a running server HOST:PORT with --write_dir and --job_dir "
                        "(default: start one in the workdir)")
    p.add_argument("--shots", type=int, default=16)
    p.add_argument("--receivers", type=int, default=100)
    p.add_argument("--nz", type=int, default=100)
    p.add_argument("--nx", type=int, default=200)
    p.add_argument("--dx", type=float, default=10.0, help="cell size, m")
    p.add_argument("--nt", type=int, default=1000, help="samples (time steps) per trace")
    p.add_argument("--dt_ms", type=float, default=1.0)
    p.add_argument("--freq", type=float, default=5.0, help="Ricker peak frequency, Hz")
    p.add_argument("--sigma", type=float, default=16.0,
                   help="the starting model: the true one smoothed by a Gaussian of this many cells")
    p.add_argument("--iterations", type=int, default=10)
    p.add_argument("--step", type=float, default=150.0,
                   help="the largest velocity change of the first iteration, m/s")
    p.add_argument("--decay", type=float, default=0.9,
                   help="each iteration's largest change is the last one's times this")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--queue_depth", type=int, default=2, help="shots the stream reads ahead")
    p.add_argument("--fresh", action="store_true",
                   help="start over (the workdir is cleared); without it a run stopped "
                        "midway resumes, and a finished one starts over")
    p.add_argument("--crash_rank", type=int, default=-1,
                   help="testing: this rank dies (os._exit) at --crash_at")
    p.add_argument("--crash_at", default="2:1",
                   help="testing: ITERATION:SHOTS, counted from 1: after that many shots of it")
    return p.parse_args(argv)


class Geometry:
    """Where the sources and receivers are (cells) and how the data is named."""

    def __init__(self, a, run):
        self.a = a
        self.run = run
        self.shot_ids = list(range(1, a.shots + 1))
        margin = max(2, a.nx // 40)
        self.source_x = np.linspace(margin, a.nx - 1 - margin, a.shots).round().astype(int)
        self.receiver_x = np.linspace(0, a.nx - 1, a.receivers).round().astype(int)
        self.observed = f"{run}-observed"
        self.model = f"{run}-model"
        self.synthetic = f"{run}-synthetic"

    def propagator(self, device="cpu"):
        a = self.a
        return Propagator(a.nz, a.nx, a.dx, a.nt, a.dt_ms / 1000.0, a.freq, device=device)

    def headers(self, k):
        """Trace headers of shot k (0-based): integer metres, as SEG-Y keeps them exactly."""
        sx = float(self.source_x[k] * self.a.dx)
        gx = self.receiver_x.astype(np.float64) * self.a.dx
        n = len(gx)
        return {"source_x": np.full(n, sx), "source_y": np.zeros(n), "group_x": gx,
                "group_y": np.zeros(n), "offset": gx - sx}


def model_shots(args):
    """Worker: the observed data of shots `ks` (0-based), float32 [receivers, nt] each."""
    a, run, ks = args
    torch.set_num_threads(1)
    g = Geometry(a, run)
    prop = g.propagator()
    v = true_model(a.nz, a.nx)
    with torch.no_grad():
        return {int(k): prop.shot(v, g.source_x[k], g.receiver_x).numpy() for k in ks}


def rms(a, b):
    return float(torch.sqrt(torch.mean((a - b) ** 2)))


def save_atomically(obj, path):
    torch.save(obj, path + ".tmp")
    os.replace(path + ".tmp", path)


def rank_main(rank, a, run, target, init_file):
    """One rank of the inversion: iterations from the checkpoint on (see the module doc)."""
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank,
                            world_size=a.ranks)
    shotstream = harness.import_shotstream()
    c = shotstream.Client(target)
    g = Geometry(a, run)
    # The GPU where torch has one (a device each rank), else the CPU; the stager lands
    # each shot there through pinned buffers on a side stream (a copy on the CPU).
    device = f"cuda:{rank % torch.cuda.device_count()}" if torch.cuda.is_available() else "cpu"
    from shotstream.torch import DeviceStager
    stager = DeviceStager(device)
    prop = g.propagator(device)
    v_true = true_model(a.nz, a.nx)
    checkpoint = os.path.join(a.workdir, "checkpoint.pt")
    state = torch.load(checkpoint) if os.path.exists(checkpoint) else None
    v = (state["v"] if state else smooth(v_true, a.sigma)).clone().to(device).requires_grad_(True)
    # Deeper cells see weaker waves (geometric spreading): the gradient is scaled by
    # depth^1.5 before the step, a cheap stand-in for the Hessian's diagonal.
    # Near the sources and receivers the gradient is their imprint, not the model: it is
    # muted down to 40 m and tapered to 80 m.
    z_m = torch.arange(a.nz, dtype=torch.float32)[:, None] * a.dx
    depth_scale = ((z_m + a.dx) / (a.nz * a.dx)) ** 1.5 * ((z_m - 40) / 40).clamp(0, 1)
    history = list(state["history"]) if state else []
    first_it = state["iteration"] if state else 0
    token = state["token"] if state else None
    index = {sid: k for k, sid in enumerate(g.shot_ids)}
    crash_it, crash_after = (int(x) for x in a.crash_at.split(":"))
    n = len(g.shot_ids)
    synthetic = None
    for it in range(first_it, a.iterations):
        # The iteration's shots, as a job whose epoch is the iteration. A resumed
        # iteration rolls the job back to its start (every shot handed out again).
        # Otherwise, once the job runs (this rank holds its first shot), rank 0 records
        # the iteration's start, no shot trained, and the checkpoint keeps that token:
        # a rank that dies mid-iteration costs the iteration, never a shot.
        resume = token if (state is not None and it == first_it) else None
        stream = c.stream_job(g.observed, run, g.shot_ids, epoch=it, takeover=False,
                              queue_depth=a.queue_depth, headers=["source_x", "group_x"],
                              resume=resume)
        start = time.perf_counter()
        shots = iter(stream)
        pending = next(shots, None)  # held, not done: done is asking for the next one
        io_wait = time.perf_counter() - start
        if resume is None and rank == 0:
            token = c.commit_job(g.observed, run, g.shot_ids, step=it, trained=[], epoch=it)
        dist.barrier()
        if rank == 0:
            save_atomically({"iteration": it, "v": v.detach().cpu().clone(),
                             "history": history, "token": token}, checkpoint)
        dist.barrier()  # no rank marks a shot done before the checkpoint is on disk
        grads = torch.zeros(n, a.nz, a.nx)
        misfits = torch.zeros(n)
        last = it == a.iterations - 1
        syn_all = torch.zeros(n, a.receivers, a.nt) if last else None
        done = 0
        while pending is not None:
            shot = pending
            k = index[shot.shot_id]
            obs = stager.stage(shot.samples)
            sx = int(round(shot.headers["source_x"][0] / a.dx))
            rx = np.rint(shot.headers["group_x"] / a.dx).astype(int)
            syn = prop.shot(v, sx, rx)
            loss = 0.5 * torch.sum((syn - obs) ** 2)
            (grad,) = torch.autograd.grad(loss, v)
            grads[k] = grad.cpu()
            misfits[k] = loss.detach().cpu()
            if last:
                syn_all[k] = syn.detach().cpu()
            done += 1
            if rank == a.crash_rank and it + 1 == crash_it and done == crash_after:
                print(f"rank {rank}: dying in iteration {it + 1} after {done} shots "
                      f"(--crash_rank)", flush=True)
                os._exit(3)
            t0 = time.perf_counter()
            pending = next(shots, None)
            io_wait += time.perf_counter() - t0
        loop = time.perf_counter() - start
        # Summed in shot order on every rank, whichever rank had which shot: the update
        # does not depend on how the job split the shots.
        dist.all_reduce(grads)
        dist.all_reduce(misfits)
        times = torch.tensor([io_wait, loop, float(done)], dtype=torch.float64)
        dist.all_reduce(times)
        if last:
            dist.all_reduce(syn_all)
            synthetic = syn_all
        grad = grads.sum(0) * depth_scale
        misfit = float(misfits.sum())
        error = rms(v.detach().cpu(), v_true)
        # Steepest descent, the largest change `step` m/s, smaller each iteration.
        step = a.step * a.decay ** it
        with torch.no_grad():
            v -= (step * grad / grad.abs().max().clamp_min(1e-30)).to(device)
            v.clamp_(1400.0, 4500.0)
        history.append({"iteration": it + 1, "misfit": misfit, "model_rms_error": error,
                        "model_rms_error_after": rms(v.detach().cpu(), v_true),
                        "io_wait_s": float(times[0]), "loop_s": float(times[1]),
                        "shots": int(times[2])})
        if rank == 0:
            h0 = history[0]
            print(f"iteration {it + 1}/{a.iterations}: misfit {misfit:.6g} "
                  f"({misfit / h0['misfit']:.3f} of the first), model rms error "
                  f"{error:.1f} m/s, {int(times[2])} shots, io wait {float(times[0]):.2f} s "
                  f"of {float(times[1]):.1f} s, {100 * float(times[0]) / float(times[1]):.1f}%",
                  flush=True)
    if rank == 0:
        final = {"iteration": a.iterations, "v": v.detach().cpu().clone(),
                 "history": history, "token": token}
        save_atomically(final, checkpoint)
        np.save(os.path.join(a.workdir, "model_final.npy"), v.detach().cpu().numpy())
        if synthetic is not None:
            np.save(os.path.join(a.workdir, "synthetic.npy"), synthetic.numpy())
    dist.barrier()
    c.close()
    dist.destroy_process_group()


def start_server(a):
    server_dir = os.path.join(a.workdir, "server")
    os.makedirs(server_dir, exist_ok=True)
    return harness.Server([f"--write_dir={server_dir}/written", f"--job_dir={server_dir}/jobs",
                           "--log_streams=false"])


def model_and_write(c, a, g):
    """Models the observed data (--ranks processes) and writes it as dataset g.observed."""
    ks = list(range(a.shots))
    parts = [(a, g.run, ks[r::a.ranks]) for r in range(a.ranks)]
    t0 = time.perf_counter()
    with mp.get_context("spawn").Pool(a.ranks) as pool:
        data = {}
        for part in pool.map(model_shots, parts):
            data.update(part)
    modelled = time.perf_counter() - t0
    np.save(os.path.join(a.workdir, "observed.npy"), np.stack([data[k] for k in ks]))
    t0 = time.perf_counter()
    info = c.write(g.observed, ((g.shot_ids[k], data[k], g.headers(k)) for k in ks),
                   sample_interval_us=a.dt_ms * 1000)
    print(f"modelled {a.shots} shots x {a.receivers} receivers x {a.nt} samples in "
          f"{modelled:.1f} s; wrote dataset {g.observed} in {time.perf_counter() - t0:.2f} s "
          f"(largest header error {info.write_max_header_error:g})", flush=True)


def blocking_wait(c, g, history):
    """What io wait would have been with one request per shot and no read-ahead: each
    shot fetched alone, timed, over the loop's time per rank."""
    start = time.perf_counter()
    for sid in g.shot_ids:
        next(iter(c.stream(g.observed, [sid], queue_depth=1, headers=["source_x", "group_x"])))
    per_shot = (time.perf_counter() - start) / len(g.shot_ids)
    shots = sum(h["shots"] for h in history)
    loop = sum(h["loop_s"] for h in history)
    wait = per_shot * shots
    return wait, 100 * wait / (loop + wait)


def write_back(c, a, g, names):
    """The inverted model and the last synthetic gathers as datasets (once)."""
    model_np = np.load(os.path.join(a.workdir, "model_final.npy"))
    xs = np.arange(a.nx, dtype=np.float64) * a.dx
    if g.model not in names:
        # One "shot" of nx traces, each a depth column (sample interval: dz in um).
        c.write(g.model, [(1, model_np.T, {"cdp_x": xs, "group_x": xs})],
                sample_interval_us=a.dx * 1000)
    syn_path = os.path.join(a.workdir, "synthetic.npy")
    if g.synthetic not in names and os.path.exists(syn_path):
        syn = np.load(syn_path)
        c.write(g.synthetic, ((g.shot_ids[k], syn[k], g.headers(k)) for k in range(a.shots)),
                sample_interval_us=a.dt_ms * 1000)
    print(f"wrote datasets {g.model} (the inverted model: one gather of a trace per x, "
          f"depth down the samples) and {g.synthetic} (the last iteration's synthetic "
          f"gathers); draw them with: shotstream plot --target=HOST:PORT --dataset={g.synthetic} "
          f"--out=DIR/ (a server with --write_dir={os.path.join(a.workdir, 'server', 'written')} "
          f"serves them)", flush=True)


def pictures(c, a, g, history):
    """models.png, gathers.png, misfit.png in the workdir; returns their paths."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    v_true = true_model(a.nz, a.nx).numpy()
    v_start = smooth(true_model(a.nz, a.nx), a.sigma).numpy()
    v_final = np.load(os.path.join(a.workdir, "model_final.npy"))
    extent = [0, a.nx * a.dx / 1000, a.nz * a.dx / 1000, 0]
    paths = []
    fig, axes = plt.subplots(3, 1, figsize=(8, 9), constrained_layout=True)
    lo, hi = v_true.min(), v_true.max()
    for ax, v, title in zip(axes, (v_true, v_start, v_final),
                            ("true model", "starting model", f"inverted, {len(history)} "
                             "iterations")):
        im = ax.imshow(v, extent=extent, vmin=lo, vmax=hi, cmap="viridis", aspect="auto")
        ax.set_title(f"{title}: rms error {np.sqrt(np.mean((v - v_true) ** 2)):.0f} m/s")
        ax.set_ylabel("depth, km")
        ax.plot(g.source_x * a.dx / 1000, np.zeros(a.shots) + 0.01, "r*", markersize=6)
    axes[-1].set_xlabel("x, km")
    fig.colorbar(im, ax=axes, label="velocity, m/s", shrink=0.8)
    paths.append(os.path.join(a.workdir, "models.png"))
    fig.savefig(paths[-1], dpi=100)
    plt.close(fig)

    mid = len(g.shot_ids) // 2
    obs = next(iter(c.stream(g.observed, [g.shot_ids[mid]]))).samples
    syn_path = os.path.join(a.workdir, "synthetic.npy")
    syn = np.load(syn_path)[mid] if os.path.exists(syn_path) else np.zeros_like(obs)
    clip = np.percentile(np.abs(obs), 98)
    fig, axes = plt.subplots(1, 2, figsize=(10, 6), sharey=True, constrained_layout=True)
    t_end = a.nt * a.dt_ms / 1000
    for ax, d, title in zip(axes, (obs, syn), ("observed (streamed from the server)",
                                               "synthetic, last iteration")):
        ax.imshow(d.T, aspect="auto", cmap="gray", vmin=-clip, vmax=clip,
                  extent=[g.receiver_x[0] * a.dx / 1000, g.receiver_x[-1] * a.dx / 1000,
                          t_end, 0])
        ax.set_title(f"shot {g.shot_ids[mid]}: {title}")
        ax.set_xlabel("receiver x, km")
    axes[0].set_ylabel("time, s")
    paths.append(os.path.join(a.workdir, "gathers.png"))
    fig.savefig(paths[-1], dpi=100)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 4), constrained_layout=True)
    its = [h["iteration"] for h in history]
    ax.semilogy(its, [h["misfit"] / history[0]["misfit"] for h in history], "o-", label="misfit")
    ax.semilogy(its, [h["model_rms_error"] / history[0]["model_rms_error"] for h in history],
                "s--", label="model rms error")
    ax.set_xlabel("iteration")
    ax.set_ylabel("relative to the first iteration")
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    paths.append(os.path.join(a.workdir, "misfit.png"))
    fig.savefig(paths[-1], dpi=100)
    plt.close(fig)
    return paths


def main(argv=None):
    a = parse_args(argv)
    if a.workdir is None:
        a.workdir = os.path.join(os.environ.get("BUILD_WORKING_DIRECTORY", os.getcwd()), "fwi_out")
    a.workdir = os.path.abspath(a.workdir)
    checkpoint = os.path.join(a.workdir, "checkpoint.pt")
    finished = os.path.exists(checkpoint) and \
        torch.load(checkpoint)["iteration"] >= a.iterations
    if finished and not a.fresh:
        print(f"the run in {a.workdir} had finished: starting a new one", flush=True)
    if (a.fresh or finished) and os.path.isdir(a.workdir):
        import shutil
        shutil.rmtree(a.workdir)
    os.makedirs(a.workdir, exist_ok=True)
    run_file = os.path.join(a.workdir, "run.json")
    if os.path.exists(run_file):
        with open(run_file) as f:
            run = json.load(f)["run"]
        print(f"resuming run {run} in {a.workdir}", flush=True)
    else:
        run = f"fwi-{secrets.token_hex(3)}"
        with open(run_file, "w") as f:
            json.dump({"run": run, "args": vars(a)}, f, indent=1)
    shotstream = harness.import_shotstream()
    server = start_server(a) if a.target is None else None
    target = a.target or server.target
    try:
        with shotstream.Client(target) as c:
            g = Geometry(a, run)
            names = {d.name for d in c.list_datasets()}
            if g.observed not in names:
                model_and_write(c, a, g)
            init_file = os.path.join(a.workdir, f"gloo.{os.getpid()}")
            try:
                mp.spawn(rank_main, args=(a, run, target, init_file), nprocs=a.ranks, join=True)
            except Exception as e:  # a rank died: its exit is the message
                print(f"the inversion stopped: {e}; run the same command again to resume from "
                      f"{os.path.join(a.workdir, 'checkpoint.pt')}", flush=True)
                return 1
            finally:
                if os.path.exists(init_file):
                    os.remove(init_file)
            history = torch.load(os.path.join(a.workdir, "checkpoint.pt"))["history"]
            io = sum(h["io_wait_s"] for h in history)
            loop = sum(h["loop_s"] for h in history)
            blocking, share_b = blocking_wait(c, g, history)
            print(f"io wait {io:.2f} s of {loop:.1f} s of the ranks' loops, "
                  f"{100 * io / loop:.1f}% (streamed, {a.queue_depth} shots ahead); fetched one "
                  f"request per shot they would have waited {blocking:.2f} s, {share_b:.1f}%",
                  flush=True)
            h0, hn = history[0], history[-1]
            print(f"misfit {hn['misfit']:.6g} after {len(history)} iterations: "
                  f"{hn['misfit'] / h0['misfit']:.3f} of the first; model rms error "
                  f"{h0['model_rms_error']:.1f} -> {hn['model_rms_error_after']:.1f} m/s "
                  f"({hn['model_rms_error_after'] / h0['model_rms_error']:.3f})", flush=True)
            write_back(c, a, g, names)
            for path in pictures(c, a, g, history):
                print(f"picture: {path}", flush=True)
    finally:
        if server is not None:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

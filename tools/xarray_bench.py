"""A per-shot reduction over a survey through shotstream.xarray on a dask.distributed
LocalCluster of two worker processes, against one Python process streaming the same shots
with Client.stream and computing the same reduction; and the graph of a 100,000-shot
dataset. Used by tools/bench.py (`bazel run -c opt //:bench -- --only=xarray`).

The survey: SHOTS shots of 480 traces x 4000 float32 samples (7.68 MB), SEG-Y written by
testing/synth.py, page cache warm. The reduction: each shot's RMS, one numpy
function both ways (map_blocks over the Dask chunks). The ways alternate, REPS
runs each (and Dask's threaded scheduler, two threads in this process, for scale); the cluster is started once, before the runs (a processing job keeps its
cluster), and each run opens the dataset anew. The graph figures: open_dataset of a
100,000-shot NumPy dataset with its samples' graph materialized (what compute hands the
scheduler), then the reduction's graph over it (Dask's own map_blocks), one process."""

import os
import statistics
import time

import numpy as np

import harness  # the test harness: a real server process
import synth

SHOTS, TRACES, SAMPLES = 40, 480, 4000  # 7.68 MB shots, 307 MB in all
GRAPH_SHOTS = 100_000


def rms(samples, axis):
    """The reduction, the same function both ways: each shot's RMS, in float64."""
    return np.sqrt(np.mean(np.square(samples, dtype=np.float64), axis=axis))


def _rms_stream(target, ids):
    import shotstream
    with shotstream.Client(target) as c:
        return [float(rms(s.samples, None)) for s in c.stream("survey", ids, queue_depth=2)]


def _per_shot(ds):
    """The reduction over the lazy Dataset: rms of each chunk's shots, one task a chunk."""
    return ds.samples.data.map_blocks(rms, axis=(1, 2), drop_axis=(1, 2), dtype="f8")


def _rms_dask(target, scheduler=None):
    """On the active distributed cluster, or Dask's threaded scheduler ("threads", 2)."""
    import shotstream.xarray as ssx
    per_shot = _per_shot(ssx.open_dataset(target, "survey", shots_per_chunk=1))
    if scheduler is None:
        return per_shot.compute()
    return per_shot.compute(scheduler=scheduler, num_workers=2)


def measure(work, reps=5):
    import distributed
    import shotstream.xarray as ssx
    d = os.path.join(work, "xarray_survey")
    synth.write_survey(d, n_shots=SHOTS, traces_per_shot=TRACES, n_samples=SAMPLES,
                       n_files=4, fmt=5)
    files = sorted(os.path.join(d, f) for f in os.listdir(d))
    harness.warm_page_cache(*files)
    many = os.path.join(work, "many_shots.npy")
    np.save(many, np.zeros((GRAPH_SHOTS, 2, 4), dtype="<f4"))
    out = {"shots": SHOTS, "traces": TRACES, "samples": SAMPLES, "reps": reps,
           "workers": 2, "threads_per_worker": 1, "stream_shots_per_s": [],
           "dask_shots_per_s": [], "threads_shots_per_s": [], "stream_cpu_ms_per_shot": [],
           "dask_cpu_ms_per_shot": [], "graph_shots": GRAPH_SHOTS, "graph_s": [],
           "reduction_graph_s": []}
    with harness.Server([f"--dataset=survey={d}/*.sgy", f"--dataset=many={many}",
                         "--sample_interval_us=2000"]) as server:
        import shotstream
        ids = [int(i) for i in shotstream.Client(server.target).dataset("survey").shot_ids]
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as cluster, \
                distributed.Client(cluster) as client:
            want = _rms_stream(server.target, ids)  # untimed: connections, workers' imports
            np.testing.assert_allclose(_rms_dask(server.target), want, rtol=1e-12)
            workers = list(client.run(os.getpid).values())

            def cpu():  # seconds: the server, this process (the scheduler's too), workers
                return (harness.cpu_seconds(server.proc.pid), time.process_time(),
                        sum(harness.cpu_seconds(w) for w in workers))

            def per_shot_ms(c0, c1):
                return [(b - a) / SHOTS * 1e3 for a, b in zip(c0, c1)]
            for _ in range(reps):
                c0, t0 = cpu(), time.perf_counter()
                _rms_stream(server.target, ids)
                out["stream_shots_per_s"].append(SHOTS / (time.perf_counter() - t0))
                out["stream_cpu_ms_per_shot"].append(per_shot_ms(c0, cpu()))
                c0, t0 = cpu(), time.perf_counter()
                got = _rms_dask(server.target)
                out["dask_shots_per_s"].append(SHOTS / (time.perf_counter() - t0))
                out["dask_cpu_ms_per_shot"].append(per_shot_ms(c0, cpu()))
                np.testing.assert_allclose(got, want, rtol=1e-12)
                t0 = time.perf_counter()
                got = _rms_dask(server.target, "threads")
                out["threads_shots_per_s"].append(SHOTS / (time.perf_counter() - t0))
                np.testing.assert_allclose(got, want, rtol=1e-12)
        for _ in range(3):
            t0 = time.perf_counter()
            ds = ssx.open_dataset(server.target, "many", shots_per_chunk=1)
            n_tasks = len(dict(ds.samples.data.__dask_graph__()))
            t1 = time.perf_counter()
            n_reduction = len(dict(_per_shot(ds).__dask_graph__()))
            out["graph_s"].append(t1 - t0)
            out["reduction_graph_s"].append(time.perf_counter() - t1)
        out["graph_tasks"], out["reduction_graph_tasks"] = n_tasks, n_reduction
    med = statistics.median
    out["dask_over_stream"] = med(out["dask_shots_per_s"]) / med(out["stream_shots_per_s"])
    out["threads_over_stream"] = (med(out["threads_shots_per_s"]) /
                                  med(out["stream_shots_per_s"]))
    for k in ("stream_cpu_ms_per_shot", "dask_cpu_ms_per_shot"):  # [server, driver, workers]
        out[k] = [med(v[i] for v in out[k]) for i in range(3)]
    return out

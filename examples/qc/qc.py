"""Survey QC on a Dask cluster: each shot's RMS and amplitude spectrum over a whole survey,
the gathers balanced by their RMS written back as a dataset, and the pictures.

    bazel run //:qc                                   # a synthetic survey on a server it starts
    bazel run //:qc -- --target=seis1:50051 --dataset=line1 --out=/tmp/qc

Opens the dataset with shotstream.xarray.open_dataset (lazy: nothing is read until a task
needs its chunk), computes on a dask.distributed LocalCluster of --workers processes,
writes `<dataset>_balanced` with to_shotstream (one write per chunk, committed as one
dataset) and draws rms.png, spectra.png and gathers.png into --out (docs/xarray.md).
"""

import argparse
import os
import tempfile
import time

import numpy as np

import harness  # noqa: E402  (starts a server for the synthetic survey)
import synth  # noqa: E402


def amplitude_spectrum(samples, axis=-1):
    """The mean amplitude spectrum of each shot's traces (NaN traces, the padding, left
    out): (..., trace, sample) -> (..., freq)."""
    spec = np.abs(np.fft.rfft(np.nan_to_num(samples), axis=axis))
    live = ~np.all(np.isnan(samples), axis=axis)
    return (spec * live[..., None]).sum(axis=-2) / np.maximum(live.sum(axis=-1), 1)[..., None]


def qc(target, dataset, out, workers=2, shots_per_chunk=4):
    import distributed
    import xarray as xr
    import shotstream.xarray as ssx
    with distributed.LocalCluster(n_workers=workers, threads_per_worker=1,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        t0 = time.perf_counter()
        ds = ssx.open_dataset(target, dataset, headers=["offset"],
                              shots_per_chunk=shots_per_chunk)
        print(f"opened {ds.attrs['source']}: {ds.sizes['shot']} shots, up to "
              f"{ds.sizes['trace']} traces of {ds.sizes['sample']} samples "
              f"({ds.attrs['format']}, {ds.attrs['sample_interval_us']:g} us); nothing read yet")
        rms = np.sqrt((ds.samples.astype("f8") ** 2).mean(("trace", "sample")))
        freq = np.fft.rfftfreq(ds.sizes["sample"], ds.attrs["sample_interval_us"] * 1e-6)
        spectra = xr.apply_ufunc(amplitude_spectrum, ds.samples,
                                 input_core_dims=[["trace", "sample"]],
                                 output_core_dims=[["freq"]], dask="parallelized",
                                 output_dtypes=[np.float64],
                                 dask_gufunc_kwargs={"output_sizes": {"freq": len(freq)}})
        spectra = spectra.assign_coords(freq=freq)
        computed = xr.Dataset({"rms": rms, "spectra": spectra}).compute()  # one pass
        rms, spectra = computed.rms, computed.spectra
        print(f"computed rms and spectra of {rms.sizes['shot']} shots on {workers} workers "
              f"in {time.perf_counter() - t0:.1f} s")
        balanced = ds.assign(samples=(ds.samples / rms).astype("f4"))
        name = f"{dataset}_balanced"
        info = ssx.to_shotstream(balanced, target, name)
        print(f"wrote {name}: {info.n_shots} shots, {info.n_traces} traces "
              f"({info.written_bytes / 1e6:.1f} MB) as one dataset")
        back = ssx.open_dataset(target, name, headers=["offset"])
        first = int(ds.shot[0])
        shown = (ds.samples.sel(shot=first).compute(), back.samples.sel(shot=first).compute())
    draw(out, ds, rms, spectra, shown, first)
    return rms, spectra


def draw(out, ds, rms, spectra, shown, first):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(out, exist_ok=True)
    fig, ax = plt.subplots(figsize=(7, 3))
    ax.plot(rms.shot, rms, "o-")
    ax.set(xlabel="shot", ylabel="RMS amplitude", title="RMS per shot")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "rms.png"), dpi=90)
    fig, ax = plt.subplots(figsize=(7, 3.5))
    db = 20 * np.log10(spectra / spectra.max() + 1e-12)
    ax.pcolormesh(spectra.freq, spectra.shot, db, vmin=-60, vmax=0, shading="auto")
    ax.set(xlabel="frequency (Hz)", ylabel="shot", title="Mean amplitude spectrum (dB)",
           xlim=(0, float(spectra.freq.max()) / 2))
    fig.tight_layout()
    fig.savefig(os.path.join(out, "spectra.png"), dpi=90)
    fig, axes = plt.subplots(1, 2, figsize=(8, 4), sharey=True)
    t = ds.time.values
    for ax, gather, title in zip(axes, shown, ("as stored", "balanced (written back)")):
        g = gather.values
        clip = np.nanpercentile(np.abs(g), 98)
        ax.imshow(g.T, aspect="auto", cmap="gray", vmin=-clip, vmax=clip,
                  extent=(0, g.shape[0], t[-1], t[0]))
        ax.set(xlabel="trace", title=f"shot {first}, {title}")
    axes[0].set_ylabel("time (ms)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "gathers.png"), dpi=90)
    print(f"pictures: {out}/rms.png, {out}/spectra.png, {out}/gathers.png")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--target", default=None, help="HOST:PORT of a server (default: start "
                   "one on a synthetic survey written here)")
    p.add_argument("--dataset", default="survey")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--shots_per_chunk", type=int, default=4)
    p.add_argument("--out", default=None, help="where the pictures go (default: qc_out in "
                   "the workspace under bazel run, else ./qc_out)")
    a = p.parse_args(argv)
    out = a.out or os.path.join(os.environ.get("BUILD_WORKSPACE_DIRECTORY", "."), "qc_out")
    harness.import_shotstream()
    if a.target:
        return qc(a.target, a.dataset, out, a.workers, a.shots_per_chunk)
    work = tempfile.mkdtemp(prefix="shotstream-qc-")
    synth.write_survey(f"{work}/survey", n_shots=24, traces_per_shot=96, n_samples=1000,
                       n_files=2, fmt=5)
    with harness.Server([f"--dataset={a.dataset}={work}/survey/*.sgy",
                         f"--write_dir={work}/written", "--log_streams=false"]) as server:
        return qc(server.target, a.dataset, out, a.workers, a.shots_per_chunk)


if __name__ == "__main__":
    main()

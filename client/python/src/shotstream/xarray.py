"""shotstream datasets as lazy xarray Datasets, computed by Dask (docs/xarray.md).

    import shotstream.xarray as ssx
    ds = ssx.open_dataset("seis1:50051", "line1", headers=["offset"], shots_per_chunk=4)
    rms = np.sqrt((ds.samples ** 2).mean(("trace", "sample")))   # lazy
    rms.compute()            # each chunk streamed from the servers when a task needs it

    xr.open_dataset("shotstream://seis1:50051/line1", engine="shotstream", headers=["offset"])

A Dataset of `samples` (shot, trace, sample) float32, one Dask chunk per shots_per_chunk
shots; shots with fewer traces than the largest (or traces dropped by `where`) padded
with NaN, `trace_mask` (shot, trace) True where a trace is; the asked-for headers as
(shot, trace) coordinates (NaN where no trace); `shot` (the ids), `trace` and `time` (ms,
from the sample interval and the window) coordinates. Nothing is read before compute. A
task carries the targets and the selection, never a channel: each process (a Dask
worker's, or this one under the threaded scheduler) makes one Client per set of options
and keeps it. to_shotstream writes a (shot, trace, sample) array back as a dataset, one
write per chunk, committed at once.

Needs xarray and dask (the `xarray` extra); `import shotstream` does not.
"""

from __future__ import annotations

import os
import threading
import uuid
from typing import Dict, Iterable, Optional, Sequence, Tuple, Union

import grpc
import numpy as np
import xarray as xr
from xarray.backends import BackendArray, BackendEntrypoint
from xarray.core import indexing

from shotstream.client import Client
from shotstream.errors import ShotstreamError

__all__ = ["open_dataset", "to_shotstream", "ShotstreamBackendEntrypoint", "client_for"]

_URL = "shotstream://"

# One Client per (process, options): made on first use in each process, kept for its life.
_clients: Dict[tuple, Client] = {}
_clients_lock = threading.Lock()


def client_for(options: dict) -> Client:
    """This process's Client for `options` (Client's keyword arguments and `targets`),
    made once and kept: what every task of a worker process streams through."""
    key = (os.getpid(), repr(sorted(options.items())))
    with _clients_lock:
        c = _clients.get(key)
        if c is None:
            c = _clients[key] = Client(**options)
        return c


def _client_options(targets, token, tls, retries, connect_timeout, native) -> dict:
    if isinstance(targets, str):
        targets = [targets]
    opts = dict(targets=list(targets), retries=int(retries),
                connect_timeout=float(connect_timeout))
    if token is not None:
        opts["token"] = token
    if tls is not None:
        opts["tls"] = tls
    if native is not None:
        opts["native"] = bool(native)
    return opts


class _Selection:
    """What every chunk streams: the dataset, its shot ids and the selection, with the
    shape of the result. Picklable (a task's argument); no connection in it."""

    def __init__(self, client_options, dataset, shot_ids, n_traces, window, n_samples,
                 headers, where, encoding, tolerance, queue_depth):
        self.client_options = client_options
        self.dataset = dataset
        self.shot_ids = np.asarray(shot_ids, dtype=np.int64)
        self.n_traces = int(n_traces)
        self.window = window  # (start, stop) within the stored traces
        self.n_samples = int(n_samples)
        self.headers = list(headers)
        self.where = dict(where or {})
        self.encoding = encoding
        self.tolerance = tolerance
        self.queue_depth = int(queue_depth)
        self.token = uuid.uuid4().hex  # names this open in the header-pass cache

    def stream(self, positions: slice, window: Tuple[int, int], headers: Sequence[str]):
        ids = self.shot_ids[positions]
        return client_for(self.client_options).stream(
            self.dataset, ids.tolist(), queue_depth=self.queue_depth, headers=list(headers),
            window=window, where=self.where or None, encoding=self.encoding,
            tolerance=self.tolerance)


def _basic(key, n: int) -> Tuple[slice, bool]:
    """An integer or a slice of one axis as a step-1 slice over what to read, and
    whether the axis is dropped (an integer)."""
    if isinstance(key, (int, np.integer)):
        k = int(key) + (n if key < 0 else 0)
        return slice(k, k + 1), True
    start, stop, step = key.indices(n)
    if step != 1:
        raise IndexError("shotstream arrays take step-1 slices (xarray reads the rest "
                         "from what they return)")
    return slice(start, max(start, stop)), False


class _SamplesArray(BackendArray):
    """samples (shot, trace, sample): a block of shots read by one stream of those shots,
    asking the servers for the samples the block needs only (a narrower window)."""

    def __init__(self, sel: _Selection):
        self.sel = sel
        self.shape = (len(sel.shot_ids), sel.n_traces, sel.n_samples)
        self.dtype = np.dtype(np.float32)

    def __getitem__(self, key):
        return indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.BASIC, self._read)

    def _read(self, key):
        (shots, drop_shot), (traces, drop_trace), (samples, drop_sample) = (
            _basic(k, n) for k, n in zip(key, self.shape))
        shape = (shots.stop - shots.start, traces.stop - traces.start,
                 samples.stop - samples.start)
        out = None
        if 0 not in shape:
            w0 = self.sel.window[0]
            window = (w0 + samples.start, w0 + samples.stop)
            out = np.empty(shape, dtype=np.float32)
            got = 0
            for shot in self.sel.stream(shots, window, ()):
                part = shot.samples[traces]
                got += 1
                if shape[0] == 1 and part.shape[0] == shape[1]:
                    out = part[None]  # the shot's own buffer (read-only), no copy
                    break
                out[got - 1, :part.shape[0]] = part
                out[got - 1, part.shape[0]:] = np.nan  # padding: no trace there
            if got != shape[0]:  # the client raises first; never hand out unfilled rows
                raise ShotstreamError(grpc.StatusCode.DATA_LOSS,
                                      f"{got} of {shape[0]} shots came for a chunk")
        if out is None:
            out = np.empty(shape, dtype=np.float32)
        return out[tuple(0 if d else slice(None)
                         for d in (drop_shot, drop_trace, drop_sample))]


# The header pass of a block (trace_mask and the headers, read with a one-sample window),
# kept a while per process so that the mask and every header of a block share one stream.
_header_blocks: Dict[tuple, dict] = {}
_header_lock = threading.Lock()
_HEADER_BLOCKS_KEPT = 64


def _header_block(sel: _Selection, shots: slice) -> dict:
    key = (sel.token, shots.start, shots.stop)
    with _header_lock:
        hit = _header_blocks.get(key)
    if hit is not None:
        return hit
    n = shots.stop - shots.start
    block = {"trace_mask": np.zeros((n, sel.n_traces), dtype=bool)}
    for h in sel.headers:
        block[h] = np.full((n, sel.n_traces), np.nan)
    if n:
        w0 = sel.window[0]
        for i, shot in enumerate(sel.stream(shots, (w0, w0 + 1), sel.headers)):
            k = shot.samples.shape[0]
            block["trace_mask"][i, :k] = True
            for h in sel.headers:
                block[h][i, :k] = shot.headers[h]
    with _header_lock:
        if len(_header_blocks) >= _HEADER_BLOCKS_KEPT:
            _header_blocks.pop(next(iter(_header_blocks)))
        _header_blocks[key] = block
    return block


class _TraceArray(BackendArray):
    """trace_mask or a header (shot, trace): from the block's header pass; trace_mask
    from the catalog's trace counts alone (no stream) when no `where` drops traces."""

    def __init__(self, sel: _Selection, name: str, counts: np.ndarray):
        self.sel = sel
        self.name = name
        self.counts = counts
        self.shape = (len(sel.shot_ids), sel.n_traces)
        self.dtype = np.dtype(bool) if name == "trace_mask" else np.dtype(np.float64)

    def __getitem__(self, key):
        return indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.BASIC, self._read)

    def _read(self, key):
        (shots, drop_shot), (traces, drop_trace) = (
            _basic(k, n) for k, n in zip(key, self.shape))
        if self.name == "trace_mask" and not self.sel.where:
            block = np.arange(self.sel.n_traces)[None, :] < self.counts[shots, None]
        else:
            block = _header_block(self.sel, shots)[self.name]
        out = block[:, traces]
        return out[tuple(0 if d else slice(None) for d in (drop_shot, drop_trace))]


def _backend_dataset(targets, dataset, shot_ids, headers, window, where, encoding, tolerance,
                     queue_depth, token, tls, retries, connect_timeout, native,
                     drop_variables=()) -> xr.Dataset:
    """The Dataset of BackendArrays (nothing read yet); the selection checked by the
    servers with a stream of no shot."""
    options = _client_options(targets, token, tls, retries, connect_timeout, native)
    client = client_for(options)
    info = client.dataset(dataset)
    if info.state != "READY":
        raise ShotstreamError(grpc.StatusCode.FAILED_PRECONDITION if info.state == "FAILED"
                              else grpc.StatusCode.UNAVAILABLE,
                              f"dataset '{dataset}' is {info.state}: {info.error}")
    known = info.shot_ids  # ascending (GetDataset's order)
    ids = known if shot_ids is None else np.asarray(list(shot_ids), dtype=np.int64)
    at = np.minimum(np.searchsorted(known, ids), max(len(known) - 1, 0))
    missing = ids[(known[at] != ids) if len(known) else slice(None)]
    if len(missing):
        raise ShotstreamError(grpc.StatusCode.NOT_FOUND,
                              f"dataset '{dataset}' has no shot {int(missing[0])}"
                              + (f" (and {len(missing) - 1} more ids)" if len(missing) > 1
                                 else ""))
    counts = info.shot_trace_counts[at].astype(np.int64)
    start, stop = (0, None) if window is None else window
    stop = info.n_samples if stop in (None, 0) else int(stop)
    # The servers check the rest (headers, window, where, encoding, tolerance) now, before
    # any compute: a stream of no shot reads nothing.
    for _ in client.stream(dataset, [], headers=list(headers), window=(int(start), stop),
                           where=where, encoding=encoding, tolerance=tolerance):
        pass
    sel = _Selection(options, dataset, ids, counts.max(initial=0), (int(start), stop),
                     stop - int(start), headers, where, encoding, tolerance, queue_depth)
    dt_ms = info.sample_interval_us / 1000.0
    coords = {
        "shot": ("shot", ids),
        "trace": ("trace", np.arange(sel.n_traces)),
        "time": ("sample", (int(start) + np.arange(sel.n_samples)) * dt_ms, {"units": "ms"}),
    }
    for h in headers:
        coords[h] = (("shot", "trace"), indexing.LazilyIndexedArray(_TraceArray(sel, h, counts)))
    variables = {
        "samples": (("shot", "trace", "sample"), indexing.LazilyIndexedArray(_SamplesArray(sel))),
        "trace_mask": (("shot", "trace"),
                       indexing.LazilyIndexedArray(_TraceArray(sel, "trace_mask", counts))),
    }
    ds = xr.Dataset({k: v for k, v in variables.items() if k not in drop_variables},
                    coords={k: v for k, v in coords.items() if k not in drop_variables})
    ds.attrs = {
        "source": _URL + ",".join(options["targets"]) + "/" + dataset,
        "dataset": dataset,
        "format": info.format,
        "sample_interval_us": info.sample_interval_us,
        "sample_format": info.sample_format,
        "shot_key": info.shot_key,
        "encoding": encoding,
        "window": [int(start), int(stop)],
    }
    if tolerance is not None:
        ds.attrs["tolerance"] = float(tolerance)
    return ds


def open_dataset(targets: Union[str, Sequence[str]], dataset: str, *,
                 shot_ids: Optional[Sequence[int]] = None, headers: Sequence[str] = (),
                 window: Optional[Tuple[int, Optional[int]]] = None,
                 where: Optional[Dict[str, Tuple[float, float]]] = None,
                 encoding: str = "float32", tolerance: Optional[float] = None,
                 shots_per_chunk: int = 1, queue_depth: int = 2,
                 token: Optional[str] = None, tls=None, retries: int = 3,
                 connect_timeout: float = 5.0, native: Optional[bool] = None) -> xr.Dataset:
    """A lazy xarray.Dataset of `dataset` on `targets` (as Client takes them): samples
    (shot, trace, sample) in Dask chunks of shots_per_chunk shots, each streamed with
    Client.stream's selection (window, where, encoding, tolerance) when a task needs it;
    trace_mask; the headers as coordinates; shot, trace and time coordinates; the dataset's
    attributes. Errors are ShotstreamError with the server's code: a dataset, shot id or
    selection the servers refuse fails here, before any compute."""
    if int(shots_per_chunk) < 1:
        raise ValueError(f"shots_per_chunk={shots_per_chunk}: at least 1")
    ds = _backend_dataset(targets, dataset, shot_ids, tuple(headers), window, where, encoding,
                          tolerance, queue_depth, token, tls, retries, connect_timeout, native)
    return _chunked(ds, int(shots_per_chunk))


def _read_block(backend, start: int, stop: int) -> np.ndarray:
    """A Dask task: shots [start, stop) of a backend array, every other axis whole."""
    return backend._read((slice(start, stop),) + (slice(None),) * (len(backend.shape) - 1))


def _chunked(ds: xr.Dataset, shots_per_chunk: int) -> xr.Dataset:
    """Each lazy variable as a Dask array of shots_per_chunk shots a chunk (its other axes
    whole): one task a chunk, its key named after this open (a chunk is computed once
    however many results use it). The graph is written out directly (100,000 shots in a
    fraction of a second; dask.array.from_array takes seconds)."""
    import dask.array as da
    from dask.highlevelgraph import HighLevelGraph
    out = ds.copy()
    for name, var in list(ds.variables.items()):
        if not isinstance(var._data, indexing.LazilyIndexedArray):
            continue
        backend = var._data.array
        n = backend.shape[0]
        key = f"shotstream-{name}-{backend.sel.token}"
        tail = (0,) * (len(backend.shape) - 1)
        layer = {(key, i) + tail: (_read_block, f"{key}-array", start,
                                   min(n, start + shots_per_chunk))
                 for i, start in enumerate(range(0, n, shots_per_chunk))}
        layer[f"{key}-array"] = backend
        sizes = [shots_per_chunk] * (n // shots_per_chunk)
        if n % shots_per_chunk or n == 0:  # no shot: one empty chunk
            sizes.append(n % shots_per_chunk)
        if n == 0:
            layer[(key, 0) + tail] = (_read_block, f"{key}-array", 0, 0)
        chunks = (tuple(sizes),) + tuple((d,) for d in backend.shape[1:])
        data = da.Array(HighLevelGraph.from_collections(key, layer, dependencies=()), key,
                        chunks, dtype=backend.dtype,
                        meta=np.empty((0,) * len(backend.shape), dtype=backend.dtype))
        if name in ds.data_vars:
            out[name] = (var.dims, data, var.attrs)
        else:
            out = out.assign_coords({name: (var.dims, data, var.attrs)})
    return out


def _parse_url(url: str) -> Tuple[list, str]:
    """shotstream://HOST:PORT[,HOST:PORT...]/DATASET -> (targets, dataset)."""
    if not url.startswith(_URL):
        raise ValueError(f"{url!r}: a shotstream URL is shotstream://HOST:PORT/DATASET")
    rest = url[len(_URL):]
    hosts, sep, dataset = rest.rpartition("/")
    if not sep or not hosts or not dataset:
        raise ValueError(f"{url!r}: a shotstream URL is shotstream://HOST:PORT/DATASET")
    return hosts.split(","), dataset


class ShotstreamBackendEntrypoint(BackendEntrypoint):
    """xr.open_dataset("shotstream://HOST:PORT/DATASET", engine="shotstream", ...): the
    same Dataset as shotstream.xarray.open_dataset, its keywords passed through (chunks=
    None keeps shots_per_chunk's chunks)."""

    description = "Stream seismic shot gathers from shotstream servers"
    url = "https://github.com/shotstream/shotstream/blob/main/docs/xarray.md"
    open_dataset_parameters = ("filename_or_obj", "drop_variables", "shot_ids", "headers",
                               "window", "where", "encoding", "tolerance", "shots_per_chunk",
                               "queue_depth", "token", "tls", "retries", "connect_timeout",
                               "native")

    def open_dataset(self, filename_or_obj, *, drop_variables=None, shot_ids=None,
                     headers=(), window=None, where=None, encoding="float32",
                     tolerance=None, shots_per_chunk=1, queue_depth=2, token=None, tls=None,
                     retries=3, connect_timeout=5.0, native=None):
        targets, dataset = _parse_url(str(filename_or_obj))
        ds = _backend_dataset(targets, dataset, shot_ids, tuple(headers), window, where,
                              encoding, tolerance, queue_depth, token, tls, retries,
                              connect_timeout, native, tuple(drop_variables or ()))
        # xarray wraps what a backend returns in lazy arrays of its own; with chunks={} it
        # makes them Dask arrays of these chunks (shots_per_chunk shots, the rest whole).
        for var in ds.variables.values():
            if var.ndim and var.dims[0] == "shot" and var.dims != ("shot",):
                var.encoding["preferred_chunks"] = {"shot": int(shots_per_chunk)}
        return ds

    def guess_can_open(self, filename_or_obj) -> bool:
        return isinstance(filename_or_obj, str) and filename_or_obj.startswith(_URL)


def to_shotstream(data: Union[xr.Dataset, xr.DataArray], targets: Union[str, Sequence[str]],
                  name: str, *, sample_interval_us: Optional[float] = None,
                  sample_format: int = 5, headers: Optional[Sequence[str]] = None,
                  token: Optional[str] = None, tls=None, retries: int = 3,
                  connect_timeout: float = 5.0, native: Optional[bool] = None):
    """Writes a (shot, trace, sample) array, or a Dataset's `samples`, as the new dataset
    `name` on the (first) target: each shot its traces where trace_mask (a coordinate or
    the Dataset's variable; else the traces not all NaN), headers from the (shot, trace)
    coordinates named in `headers` (None: every one the array has). Shot ids from the
    `shot` coordinate (else 0, 1, ...). Dask-backed: one write per chunk of shots, run by
    the chunk's task, kept aside by the server until every part is in, then committed as
    one dataset at once (Client.commit_parts). The sample interval from the argument, else
    the `sample_interval_us` attribute, else the `time` coordinate. Returns the new
    dataset's DatasetInfo."""
    if isinstance(data, xr.Dataset):
        arr = data["samples"]
        mask = data["trace_mask"] if "trace_mask" in data.variables else None
        attrs = dict(data.attrs, **arr.attrs)
    else:
        arr = data
        mask = arr.coords["trace_mask"] if "trace_mask" in arr.coords else None
        attrs = dict(arr.attrs)
    if arr.ndim != 3:
        raise ValueError(f"to_shotstream: samples of dims {arr.dims}; expected (shot, trace, "
                         "sample)")
    arr = arr.transpose(*arr.dims)  # (shot, trace, sample) in that order, as given
    interval = sample_interval_us if sample_interval_us is not None else \
        attrs.get("sample_interval_us")
    if interval is None and "time" in arr.coords and arr.sizes[arr.dims[2]] > 1:
        t = np.asarray(arr.coords["time"].values, dtype=float)
        interval = float(t[1] - t[0]) * 1000.0
    if interval is None:
        raise ValueError("to_shotstream: give sample_interval_us (no sample_interval_us "
                         "attribute or time coordinate to take it from)")
    shot_dim, trace_dim = arr.dims[0], arr.dims[1]
    ids = np.asarray(arr.coords[shot_dim].values if shot_dim in arr.coords
                     else np.arange(arr.sizes[shot_dim]), dtype=np.int64)
    if headers is None:
        headers = [str(c) for c, v in arr.coords.items()
                   if v.dims == (shot_dim, trace_dim) and c != "trace_mask"]
    header_arrays = {h: arr.coords[h].data for h in headers}
    mask_data = None if mask is None else mask.data
    options = _client_options(targets, token, tls, retries, connect_timeout, native)
    data_ = arr.data
    write = dict(options=options, name=name, interval=float(interval),
                 sample_format=int(sample_format))
    try:
        import dask.array as da
        lazy = isinstance(data_, da.Array)
    except ImportError:  # pragma: no cover - xarray without dask
        lazy = False
    if not lazy:
        return client_for(options).write(
            name, _shots_of(ids, np.asarray(data_), _np_or_none(mask_data),
                            {h: np.asarray(v) for h, v in header_arrays.items()}),
            sample_interval_us=float(interval), sample_format=int(sample_format))
    return _write_in_parts(write, ids, data_, mask_data, header_arrays)


def _np_or_none(a):
    return None if a is None else np.asarray(a)


def _shots_of(ids, samples, mask, headers) -> Iterable[tuple]:
    """Client.write's (shot_id, samples, headers) of a block of shots."""
    for i, sid in enumerate(ids):
        keep = mask[i].astype(bool) if mask is not None else \
            ~np.all(np.isnan(samples[i]), axis=1)
        if not keep.any():
            raise ShotstreamError(grpc.StatusCode.INVALID_ARGUMENT, f"shot {int(sid)}: no trace to write "
                                  "(trace_mask is False, or the samples NaN, everywhere)")
        yield int(sid), samples[i][keep], {h: np.asarray(v[i])[keep] for h, v in headers.items()}


def _write_part(block, ids, part, mask, *header_blocks, write, headers, count):
    """One chunk's task: its shots (`ids`) written as part part[0] of `count` of the
    write write["write_id"]. A (1, 1, 1) array of its shot count, for the graph."""
    info = client_for(write["options"]).write(
        write["name"], _shots_of(ids, block, mask, dict(zip(headers, header_blocks))),
        sample_interval_us=write["interval"], sample_format=write["sample_format"],
        part=(write["write_id"], int(part[0]), count))
    return np.full((1, 1, 1), info.written_shots, dtype=np.int64)


def _write_in_parts(write, ids, data, mask, headers):
    import dask
    import dask.array as da
    data = data.rechunk({1: -1, 2: -1})  # whole shots a chunk
    shot_chunks = data.chunks[0]
    count = len(shot_chunks)
    write = dict(write, write_id=uuid.uuid4().hex)
    part_of_shot = np.repeat(np.arange(count), shot_chunks)
    args = [data, "ijk", da.from_array(ids, chunks=(shot_chunks,)), "i",
            da.from_array(part_of_shot, chunks=(shot_chunks,)), "i"]
    for extra in [mask] + list(headers.values()):
        if extra is None:
            args += [None, None]
        else:
            args += [da.asarray(extra).rechunk((shot_chunks, -1)), "ij"]
    written = da.blockwise(
        _write_part, "ijk", *args, write=write, headers=list(headers), count=count,
        dtype=np.int64, adjust_chunks={"i": 1, "j": 1, "k": 1}, concatenate=True,
        meta=np.empty((0, 0, 0), dtype=np.int64))
    shots = int(dask.compute(written.sum())[0])
    if shots != len(ids):
        raise ShotstreamError(grpc.StatusCode.DATA_LOSS, f"to_shotstream: the parts hold "
                              f"{shots} shots of the {len(ids)} given")
    return client_for(write["options"]).commit_parts(
        write["name"], write["write_id"], count, sample_interval_us=write["interval"],
        sample_format=write["sample_format"])

"""The shotstream Client: a thin Python layer over the C++ client.

With the native extension (`shotstream._native`, the C++ client bound with pybind11: built
by Bazel and by `pip install` where a compiler and the C++ libraries are there) every call
goes through the C++ `shotstream::client::Client`: streams, jobs, writes and the metadata
calls. Where it is not (an install without compilers, SHOTSTREAM_NATIVE=0,
Client(native=False)), the slower grpcio fallback
(shotstream.fallback) serves them. Process-wide tuning is shotstream.tune(), never an
import's side effect.
"""

from __future__ import annotations

import functools
import os
from typing import Dict, Iterator, List, Optional, Sequence, Tuple, Union

import grpc
import numpy as np

from shotstream.errors import ShotstreamError
from shotstream.routing import check_target, expand_targets
from shotstream.types import DatasetInfo, Shot
from shotstream.wire import decoder_missing, encoding_number


def _load_native():
    """The native extension, or None where it is not built (an install without compilers,
    sanitizer builds) or SHOTSTREAM_NATIVE=0 turns it off."""
    if os.environ.get("SHOTSTREAM_NATIVE", "1") == "0":
        return None
    try:
        from shotstream import _native
    except ImportError:
        return None
    return _native


_native = _load_native()


def tune() -> bool:
    """Sets what the C++ tools set for streaming large shots, for the whole process: glibc
    malloc keeps large buffers and one arena (no mmap/munmap and page faults per shot),
    and gRPC reads the socket into one large slice (its tcp_read_chunks experiment off).
    A MALLOC_ARENA_MAX, GLIBC_TUNABLES or GRPC_EXPERIMENTS already set is left as it is.
    The first native Client calls it unless SHOTSTREAM_TUNE=0 (importing the package sets
    nothing); call it yourself to have it before anything else. After the first native
    Client, gRPC has read its settings: a warning says they apply from the next process.
    On the native path it roughly doubles Python's rate (BENCHMARKS.md, "What each
    setting buys"). Returns False (and does nothing) without the native extension."""
    if _native is None:
        return False
    if _started["native"] is not None:
        import warnings
        warnings.warn("shotstream.tune() after the first native Client: gRPC read its "
                      "settings when that client started them; they apply from the next "
                      "process (call tune() first, or let the first Client do it)",
                      RuntimeWarning, stacklevel=2)
    _native.tune()
    return True


def _say_native_missing_once():
    """A pip install that could not build the extension left a note saying why; the first
    Client says it once (a warning), unless SHOTSTREAM_NATIVE=0 asked for grpcio."""
    global _said_native_missing
    if _native is not None or _said_native_missing or \
            os.environ.get("SHOTSTREAM_NATIVE", "1") == "0":
        return
    _said_native_missing = True
    note = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_native_missing.txt")
    if os.path.isfile(note):
        import warnings
        with open(note) as f:
            warnings.warn(f.read().strip(), RuntimeWarning, stacklevel=3)


_said_native_missing = False

# The process that started each gRPC core (the extension's libgrpc, grpcio's own). A
# process forked after its parent started either (a DataLoader worker under "fork") must
# not run gRPC itself: the parent's gRPC threads did not come along and may have held
# locks (Abseil's, which the two cores share) at the fork, which nothing will release. Its
# Client runs in a helper process started by exec instead (shotstream._bridge).
_started = {"native": None, "grpcio": None}


def _forked_after_grpc() -> bool:
    """Whether this process was forked from one that had started a gRPC core."""
    return any(pid is not None and pid != os.getpid() for pid in _started.values())


def _bridged(method):
    """A public Client method that, in a process forked after its parent started gRPC,
    runs in the helper process (the same call on the Client there)."""
    name = method.__name__

    @functools.wraps(method)
    def call(self, *args, **kwargs):
        if self._bridge is None:
            return method(self, *args, **kwargs)
        self._check_open()
        return self._bridge.call(0, name, args, kwargs)
    return call


class _Selection:
    """stream()'s and stream_job()'s selection (headers, window, where, encoding,
    tolerance, message size, raw trace headers, trace gaps), checked, and as the request's
    ShotSelection has it."""

    def __init__(self, window, where, encoding, tolerance, headers=(), max_chunk_bytes=None,
                 trace_headers=False, trace_gaps=True):
        self.window = None
        if window is not None:
            start, stop = window
            self.window = (int(start), 0 if stop is None else int(stop))
        self.where = []
        for header, bounds in (where or {}).items():
            lo, hi = bounds
            self.where.append((str(header), float(lo), float(hi)))
        encoding_number(encoding)  # INVALID_ARGUMENT for an unknown name
        self.encoding = encoding
        self.tolerance = 0.0 if tolerance is None else float(tolerance)
        self.headers = [str(h) for h in headers]
        self.max_chunk_bytes = int(max_chunk_bytes or 0)
        self.trace_headers = bool(trace_headers)
        self.trace_gaps = bool(trace_gaps)  # the native client's; grpcio never asks

    def message(self):
        """The request's shotstream.v1.ShotSelection (the grpcio fallback)."""
        from shotstream.v1 import shotstream_pb2 as pb
        sel = pb.ShotSelection(headers=self.headers, max_chunk_bytes=self.max_chunk_bytes,
                               raw_trace_headers=self.trace_headers,
                               encoding=encoding_number(self.encoding),
                               tolerance=self.tolerance)
        if self.window is not None:
            sel.window.start, sel.window.stop = self.window
        for header, lo, hi in self.where:
            sel.where.add(header=header, low=lo, high=hi)
        return sel

    def native(self, queue_depth) -> dict:
        """The native extension's keyword arguments for this selection."""
        return dict(queue_depth=max(1, int(queue_depth)), headers=self.headers,
                    max_chunk_bytes=self.max_chunk_bytes, trace_headers=self.trace_headers,
                    window=self.window, where=self.where, encoding=self.encoding,
                    tolerance=self.tolerance, trace_gaps=self.trace_gaps)

    def limit_to_grpcio(self) -> None:
        """Through grpcio: an encoding this path cannot decode says which package it needs
        (FAILED_PRECONDITION); auto keeps to what it can decode."""
        if self.encoding != "auto":
            missing = decoder_missing(self.encoding)
            if missing:
                raise ShotstreamError(grpc.StatusCode.FAILED_PRECONDITION, missing)
        elif decoder_missing("lossless"):
            self.encoding = "native"



def _shots_to_write(shots):
    """(shot_id, float32 C-order [n_traces, n_samples], {header: float64 values}) for each
    item of Client.write's iterable, as it is iterated."""
    for item in shots:
        if isinstance(item, Shot):
            sid, samples, headers = item.shot_id, item.samples, item.headers
        elif len(item) == 2:
            (sid, samples), headers = item, {}
        else:
            sid, samples, headers = item
        a = np.ascontiguousarray(samples, dtype="<f4")
        if a.ndim != 2:
            raise ValueError(f"shot {sid}: samples of shape {a.shape}; expected "
                             "[n_traces, n_samples]")
        yield int(sid), a, {str(h): np.ascontiguousarray(v, dtype="<f8").ravel()
                            for h, v in (headers or {}).items()}


class Client:
    """A connection to one or several shotstream servers.

    targets: "HOST:PORT" or a list of them; "dns:///NAME:PORT" stands for every address
    NAME resolves to. With several, each shot is fetched from a server that holds it
    (learned from GetDataset); shots held by several servers are spread between them.
    token: bearer token sent as `authorization: Bearer <token>`.
    tls: None (plaintext), True (system roots), PEM bytes / a path of the root CA, or a
    dict {"root": ..., "cert": ..., "key": ...} (each PEM bytes or a path) for mTLS.
    token: None takes $SHOTSTREAM_TOKEN when it is set (as the CLI does).
    retries: a broken stream (UNAVAILABLE, or CANCELLED by a server going away) is resumed
    at the first shot not yet delivered: on another target that holds the shots where
    there is one, at once; else on the same one once it is back (each attempt waits up to
    reconnect_timeout seconds), after a backoff. `retries` bounds the failures in a row:
    each delivered shot resets the count (the C++ client's rule).
    connect_timeout: a target that cannot be connected to within this many seconds fails
    the call or stream that needs it (UNAVAILABLE naming the target), retries or not.
    timeout: the longest a metadata call (list_datasets, dataset, dataset_pages) waits
    for its answer, in seconds (DEADLINE_EXCEEDED); None: no limit. Streams, jobs and
    writes have none.
    native: None runs every call through the native extension (the C++ client) where the
    package has it, whatever the options (TLS with system roots or a CA, mTLS); False
    always through grpcio, the fallback for installs without the extension; True
    requires the extension. `self.native` says which.
    In a process forked after its parent started gRPC (a DataLoader worker under
    "fork"), the client runs in a helper process started by exec, whatever the options:
    gRPC cannot run safely in such a process (docs/epochs.md).
    """


    def __init__(self, targets: Union[str, Sequence[str]], token: Optional[str] = None,
                 tls: Union[None, bool, bytes, str, Dict[str, Union[bytes, str]]] = None,
                 retries: int = 0, timeout: Optional[float] = None,
                 reconnect_timeout: float = 10.0, native: Optional[bool] = None,
                 connect_timeout: float = 5.0) -> None:
        self._closed = False
        self._bridge = None
        if _forked_after_grpc():
            from shotstream._bridge import BridgeClient
            self._bridge = BridgeClient((targets,), dict(
                token=token, tls=tls, retries=retries, timeout=timeout,
                reconnect_timeout=reconnect_timeout, native=native,
                connect_timeout=connect_timeout))
            self.native = self._bridge.native  # the helper's path
            self._core = self._fallback = None
            return
        _say_native_missing_once()
        if timeout is not None and float(timeout) <= 0:
            raise ValueError(f"timeout={timeout}: seconds > 0, or None")
        if isinstance(targets, str):
            targets = [targets]
        if not targets:
            raise ValueError("no target")
        if token is None:
            token = os.environ.get("SHOTSTREAM_TOKEN") or None
        for t in targets:
            check_target(t)
        targets = expand_targets(list(targets))
        creds = None
        root_pem = cert_pem = key_pem = b""
        native_ok = _native is not None
        if tls:
            def pem(x):
                if x is None or isinstance(x, (bytes, bytearray)):
                    return bytes(x) if x is not None else None
                with open(x, "rb") as f:
                    return f.read()
            parts = tls if isinstance(tls, dict) else {"root": None if tls is True else tls}
            root_pem = pem(parts.get("root"))  # None: the system's roots
            cert_pem, key_pem = pem(parts.get("cert")), pem(parts.get("key"))
            if (cert_pem is None) != (key_pem is None):
                raise ValueError("tls: mutual TLS takes both 'cert' and 'key'")
            creds = grpc.ssl_channel_credentials(root_certificates=root_pem,
                                                 private_key=key_pem,
                                                 certificate_chain=cert_pem)
        if native and not native_ok:
            raise ValueError("native=True: the shotstream._native extension is not in this "
                             "package (or SHOTSTREAM_NATIVE=0)")
        self.native = native_ok if native is None else bool(native)
        if self.native and _started["native"] is None and \
                os.environ.get("SHOTSTREAM_TUNE", "1") != "0":
            _native.tune()  # before the core starts: tune()'s settings, by default
        _started["native" if self.native else "grpcio"] = os.getpid()
        self._reconnects = 0  # native streams' (the fallback counts its own)
        self._wire_bytes = 0
        if self.native:
            self._fallback = None
            self._core = _native.Client(targets, token=token or "", tls_root_pem=root_pem or b"",
                                        tls=bool(tls), tls_cert_pem=cert_pem or b"",
                                        tls_key_pem=key_pem or b"",
                                        retries=int(retries),
                                        reconnect_timeout=float(reconnect_timeout),
                                        connect_timeout=float(connect_timeout),
                                        call_timeout=None if timeout is None else float(timeout))
        else:
            from shotstream.fallback import GrpcioClient
            metadata = [("authorization", f"Bearer {token}")] if token else []
            self._core = None
            self._fallback = GrpcioClient(targets, metadata, creds, int(retries), timeout,
                                          reconnect_timeout, float(connect_timeout))

    @property
    def reconnects(self) -> int:
        """Streams resumed after a break, over this client's life."""
        if self._bridge is not None:
            return self._bridge.attribute(0, "reconnects")
        return self._fallback.reconnects if self._fallback else self._reconnects

    @property
    def wire_bytes(self) -> int:
        """Sample bytes received as they travelled (encoded), over this client's life."""
        if self._bridge is not None:
            return self._bridge.attribute(0, "wire_bytes")
        return self._fallback.wire_bytes if self._fallback else self._wire_bytes

    def _check_open(self) -> None:
        if self._closed:
            raise ShotstreamError(grpc.StatusCode.FAILED_PRECONDITION, "the client is closed")

    @_bridged
    def stream(self, name: str, shot_ids: Sequence[int], queue_depth: int = 2,
               headers: Sequence[str] = (), max_chunk_bytes: Optional[int] = None,
               trace_headers: bool = False, window: Optional[Tuple[int, int]] = None,
               where: Optional[Dict[str, Tuple[float, float]]] = None,
               encoding: str = "float32", tolerance: Optional[float] = None,
               pieces: bool = False, trace_gaps: bool = True) -> Iterator[Shot]:
        """Yields Shot objects in the order of shot_ids (repeats allowed).

        Asking for less: window=(start, stop) gives samples [start, stop) of every trace
        (stop None: to the end); where={"offset": (lo, hi), ...} only the traces whose
        header values (scalars applied) are within every range, and the asked-for headers
        of those traces only (a shot may come with 0 traces). The server reads only the
        window's bytes of each trace (where its gap rule allows) and sends only the traces
        kept.

        Sending less: encoding="native" sends integer and IBM samples as stored (int16:
        half the bytes of float32), "lossless" float32 compressed with c-blosc (bit-exact),
        "int16" each trace scaled to int16 (error <= max|trace| / 32767), "quantized"
        (fast) and "zfp" within tolerance x the shot's RMS (None: 1e-3), "auto" what the
        server finds fastest for this link (shot.encoding says what it picked; a lossy one,
        quantized or int16, only where a tolerance is given, and then within it). Samples always arrive as float32 (n_traces,
        n_samples). Through grpcio, "lossless" and "quantized" need python3-blosc and "zfp"
        python3-zfpy ("auto" then keeps to native and float32); the native client decodes
        all.

        trace_headers=True: each shot also carries its traces' raw 240-byte headers
        (shot.trace_headers), e.g. to write them out unchanged.

        Receiving runs ahead on a background thread (queue_depth shots), so the caller's
        compute overlaps the network. Raises ShotstreamError on errors.

        pieces=True: each shot comes in parts as its messages arrive, each checked by its
        own CRC-32 before it is yielded: Shot objects of the part's traces, shot.first_trace
        .. shot.first_trace + len(shot.samples) of shot.shot_traces, the headers with the
        first part, shot.last_piece on the last. For gathers of gigabytes (DAS, ocean
        bottom nodes) that the consumer takes a part at a time: the client then holds
        parts (queue_depth of them), not shots. A stream resumed after a break yields no
        part twice.

        shot.samples is read-only: copy it (np.array(shot.samples)) to change it in place.
        Natively (self.native), samples land in the C++ client's buffer pool in one copy
        from gRPC's buffers and numpy views them there; the buffer goes back to the pool
        when the last view of it is gone.

        Shots arrive in messages of at most max_chunk_bytes of samples (capped by the
        server; None: the server's default, 1 MiB). Through grpcio, where one Python
        thread's CPU is the limit, 1 MiB messages took 0.75-0.85 ns of client CPU per byte
        against 1.0-1.1 for 256 KiB, on loopback and on an emulated 10 Gbit/s link alike
        (docs/clients.md). A shot that fits one message is a view of the received bytes,
        without a copy; larger shots are reassembled with one copy.

        trace_gaps=True (natively): the server may send a chunk of a file's traces as the
        range they lie in, the stored headers between them skipped here (ShotChunk
        .trace_gap): less of the server's CPU a byte for up to 1/32 more bytes on the link.
        False where the link, not the server, is the limit (docs/server.md, "Zero copy").
        Through grpcio the samples come alone.
        """
        shot_ids, sel = self._request(shot_ids, window, where, encoding, tolerance, headers,
                                      max_chunk_bytes, trace_headers, trace_gaps)
        if not self.native:
            return self._fallback.stream(name, shot_ids, queue_depth, sel, bool(pieces))
        return self._shots(lambda: self._core.stream(name, shot_ids, pieces=bool(pieces),
                                                     **sel.native(queue_depth)))

    @_bridged
    def stream_job(self, dataset: str, job: str, shot_ids: Sequence[int], epoch: int = 0,
                   seed: int = 0, queue_depth: int = 2, headers: Sequence[str] = (),
                   window: Optional[Tuple[int, int]] = None,
                   where: Optional[Dict[str, Tuple[float, float]]] = None,
                   encoding: str = "float32", tolerance: Optional[float] = None,
                   max_chunk_bytes: Optional[int] = None,
                   trace_headers: bool = False,
                   resume: Optional[bytes] = None, takeover: bool = True,
                   trace_gaps: bool = True) -> "JobStream":
        """Yields shots of a job shared by every consumer that names the same (dataset,
        job, epoch): the epoch's permutation of shot_ids (shotstream.epoch_permutation of
        the ids and seed), each shot handed to one consumer at a time, faster consumers
        taking more. A shot counts as done once this consumer asks for the next one (or
        ends normally); a consumer that stops early, is cancelled or dies gives back what
        it held to the others (at-least-once; duplicates bounded by queue_depth + 1). The
        stream ends when every shot of the job is done, by whichever consumer. With several
        targets, each server runs the job for the shots it holds and this takes from all.
        Consumers that disagree on shot_ids or seed get FAILED_PRECONDITION naming the
        job; unknown ids NOT_FOUND, before any data. Each consumer must iterate on its own
        (a process or thread): near the end one waits for shots the others hold. The shots
        are selected and encoded as stream() does with the same headers, window, where,
        encoding, tolerance, max_chunk_bytes and trace_headers.

        Returns a JobStream: iterate it for the shots; it.commit(step) -> bytes records at
        the servers that every shot it has yielded so far is trained as of `step` (a
        checkpoint: every consumer commits the same step) and returns, once durable, a
        token of at most 256 bytes to store with the checkpoint. resume=token rolls the
        job back to that step: the shots committed at steps <= it stay done, every other
        shot is handed out again, once, among however many consumers resume with the same
        token (docs/epochs.md). A token for another dataset, job, epoch, seed or set of
        ids is INVALID_ARGUMENT, a step the server has no record of FAILED_PRECONDITION,
        before any data; consumers from before a rollback end ABORTED.

        takeover=False: this consumer never waits for shots the others hold; it ends once
        it is done with what it was handed and none is left to hand out. For consumers
        that must not wait on their peers: ranks that step in lockstep (DDP: a rank
        waiting for shots another rank has prefetched while that rank waits for it in a
        collective hangs both) and a DataLoader's workers (its main process takes their
        results in order). shotstream.torch.JobDataset sets it. trace_gaps: as stream's."""
        shot_ids, sel = self._request(shot_ids, window, where, encoding, tolerance, headers,
                                      max_chunk_bytes, trace_headers, trace_gaps)
        job_key = dict(dataset=dataset, job=job, shot_ids=shot_ids, epoch=int(epoch),
                       seed=int(seed) % (1 << 64), resume=bytes(resume or b""))
        _check_resume(**job_key)
        if not self.native:
            return JobStream(self, job_key, self._fallback.stream_job(
                dataset, job, shot_ids, epoch, seed, queue_depth, sel, job_key["resume"],
                bool(takeover)))
        reader = []

        def start():
            reader.append(self._core.stream_job(
                dataset, job, shot_ids, epoch=job_key["epoch"], seed=job_key["seed"],
                resume=job_key["resume"], takeover=bool(takeover),
                **sel.native(queue_depth)))
            return reader[0]
        return JobStream(self, job_key, self._shots(start), reader)

    @_bridged
    def commit_job(self, dataset: str, job: str, shot_ids: Sequence[int], step: int,
                   trained: Sequence[int], epoch: int = 0, seed: int = 0,
                   resume: Optional[bytes] = None) -> bytes:
        """JobStream.commit for shots trained on in this process but streamed by others
        (a DataLoader's workers): `trained`, the ids of the job (`shot_ids`, all of them,
        as stream_job was given) trained on since the last commit, recorded as of `step`
        on every server that runs part of the job; the token. `resume`: the token the
        job's consumers resumed from."""
        self._check_open()
        key = dict(dataset=dataset, job=job, shot_ids=[int(s) for s in shot_ids],
                   epoch=int(epoch), seed=int(seed) % (1 << 64), resume=bytes(resume or b""))
        _check_resume(**key)
        trained = [int(s) for s in trained]
        if not self.native:
            self._fallback.commit_job(dataset, job, key["shot_ids"], int(step), trained,
                                      key["epoch"], key["seed"], key["resume"])
            return _token(key, step)
        return self._core.commit_job(dataset, job, key["shot_ids"], int(step), trained,
                                     epoch=key["epoch"], seed=key["seed"],
                                     resume=key["resume"])

    def _request(self, shot_ids, window, where, encoding, tolerance, headers, max_chunk_bytes,
                 trace_headers, trace_gaps=True):
        """A stream's or job's shot ids and checked selection (kept, on the fallback, to
        what it can decode)."""
        self._check_open()
        sel = _Selection(window, where, encoding, tolerance, headers, max_chunk_bytes,
                         trace_headers, trace_gaps)
        if not self.native:
            sel.limit_to_grpcio()
        return [int(s) for s in shot_ids], sel

    def _shots(self, start) -> Iterator[Shot]:
        """The Shots of a native reader, started at the first next() (as a generator is),
        cancelled when the iteration stops early; the client's counters follow it."""
        reader = start()
        reconnects, wire = self._reconnects, self._wire_bytes
        try:
            for shot in reader:
                self._reconnects = reconnects + reader.reconnects
                self._wire_bytes = wire + reader.wire_bytes
                yield shot
        finally:
            self._reconnects = reconnects + reader.reconnects
            self._wire_bytes = wire + reader.wire_bytes
            reader.cancel()

    @_bridged
    def write(self, name: str, shots, sample_interval_us: float, sample_format: int = 5,
              max_chunk_bytes: int = 1 << 20,
              part: Optional[Tuple[str, int, int]] = None) -> DatasetInfo:
        """Creates dataset `name` on the (first) server from `shots`: an iterable of `Shot`s
        or of (shot_id, samples) / (shot_id, samples, {header: values}) tuples, samples
        [n_traces, n_samples] (any real dtype, sent as float32). It is streamed as it is
        iterated (a generator of modelled shots is never held whole), each shot in messages
        of at most max_chunk_bytes with its CRC-32, and written by the server as SEG-Y
        (sample_format 5 IEEE float32, 1 IBM, 3 int16) into its write_dir. Nothing is
        visible until the last shot is in; returns the new dataset's DatasetInfo (its
        write_max_error says what the format cost, write_max_header_error and
        write_max_header_error_at what the headers' SEG-Y integers and scalars cost, and
        where: docs/writing.md). Errors raise ShotstreamError:
        ALREADY_EXISTS, INVALID_ARGUMENT (a bad name, a shot with another sample count),
        PERMISSION_DENIED, FAILED_PRECONDITION (writing not enabled), DATA_LOSS,
        RESOURCE_EXHAUSTED (the server's disk is full); the server then keeps nothing. An
        exception raised by the iterable cancels the write and is raised again.

        part=(write_id, index, count): one part of a dataset written by several calls (one
        per Dask chunk: shotstream.xarray.to_shotstream), kept aside on the server, not
        visible; a part written again replaces the earlier one. commit_parts() then joins
        the parts into the dataset at once. Returns a DatasetInfo of the name only, with
        the part's written_shots and write errors."""
        self._check_open()
        items = _shots_to_write(shots)
        parts = None
        if part is not None:
            write_id, index, count = part
            parts = dict(write_id=str(write_id), index=int(index), count=int(count),
                         commit=False)
        return self._write(name, items, sample_interval_us, sample_format, max_chunk_bytes,
                           parts)

    @_bridged
    def commit_parts(self, name: str, write_id: str, count: int, sample_interval_us: float,
                     sample_format: int = 5) -> DatasetInfo:
        """Joins the `count` parts of multi-part write `write_id` (Client.write(...,
        part=)) into dataset `name`, at once: parts in index order, each part's shots in
        the order written. FAILED_PRECONDITION names the parts not written (a server
        restart removes parts); INVALID_ARGUMENT for a shot id in two parts or parts
        written with another sample count, interval or format. The new DatasetInfo."""
        self._check_open()
        return self._write(name, iter(()), sample_interval_us, sample_format, 1 << 20,
                           dict(write_id=str(write_id), index=0, count=int(count),
                                commit=True))

    def _write(self, name, items, sample_interval_us, sample_format, max_chunk_bytes, parts):
        if not self.native:
            return self._fallback.write(name, items, sample_interval_us, sample_format,
                                        max_chunk_bytes, parts)
        extra = {} if parts is None else dict(
            parts_write_id=parts["write_id"], parts_count=parts["count"],
            part_index=parts["index"], commit_parts=parts["commit"])
        return _info(self._core.write(name, items, sample_interval_us=float(sample_interval_us),
                                      sample_format=int(sample_format),
                                      max_chunk_bytes=int(max_chunk_bytes), **extra))

    @_bridged
    def list_datasets(self) -> List[DatasetInfo]:
        """Every dataset of every target (by name, first target first)."""
        self._check_open()
        if not self.native:
            return self._fallback.list_datasets()
        return [_info(d) for d in self._core.list_datasets()]

    @_bridged
    def dataset(self, name: str) -> DatasetInfo:
        """The dataset's info; with several targets, the union of their shots."""
        self._check_open()
        if not self.native:
            return self._fallback.dataset(name)
        return _info(self._core.dataset(name))

    @_bridged
    def dataset_pages(self, name: str, page_size: int = 100_000) -> Iterator[DatasetInfo]:
        """The dataset's info a page at a time, for datasets too large to hold every shot
        id at once: each page's shot_ids and shot_trace_counts are up to `page_size` of its
        shots (the other fields are the dataset's). With several targets, each target's
        pages in turn (a shot several targets hold comes once per target)."""
        self._check_open()
        if not self.native:
            yield from self._fallback.dataset_pages(name, page_size)
            return
        token = ""
        while True:
            page, token = self._core.dataset_page(name, max(1, int(page_size)), token)
            yield _info(page)
            if not token:
                return

    def close(self) -> None:
        """Closes the connections (streams still running keep theirs until they end; shots
        still held keep their buffers)."""
        if self._bridge is not None:
            if not self._closed:
                self._bridge.close()
            self._closed = True
            return
        self._closed = True
        if self._fallback is not None:
            self._fallback.close()
        if self._core is not None:
            self._core.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class JobStream:
    """One consumer's stream of a job (Client.stream_job): an iterator of Shots with
    commit(step). For the thread that iterates it."""

    def __init__(self, client: Client, key: dict, shots, native_reader=None) -> None:
        self._client = client
        self._key = key
        self._shots = shots
        self._native = native_reader  # [reader] once started (native path)
        self._uncommitted: List[int] = []  # yielded, not yet committed (grpcio path)
        self.resume = key["resume"]

    def __iter__(self) -> "JobStream":
        return self

    def __next__(self) -> Shot:
        shot = next(self._shots)
        if self._native is None:
            self._uncommitted.append(shot.shot_id)
        return shot

    def commit(self, step: int) -> bytes:
        """Records that every shot this stream has yielded so far is trained as of
        `step`; returns once durable, with the token to store with the checkpoint. Works
        after the stream ended. Raises ShotstreamError: ABORTED when the job was resumed
        since from another checkpoint; FAILED_PRECONDITION when the server no longer has
        the job or the step is before one committed; UNAVAILABLE (nothing lost: the
        shots stay to be committed by the next commit)."""
        if self._native is not None:
            if self._native:
                return self._native[0].commit(int(step))
            return self._client.commit_job(step=step, trained=[], **self._key)
        token = self._client.commit_job(step=step, trained=self._uncommitted, **self._key)
        self._uncommitted = []
        return token

    def close(self) -> None:
        """Stops the stream: the shots it held and had not committed go back to the job."""
        close = getattr(self._shots, "close", None)
        if close is not None:
            close()


def _token(key: dict, step: int) -> bytes:
    from shotstream.wire import encode_job_token, job_fingerprint
    try:
        return encode_job_token(key["dataset"], key["job"], key["epoch"], int(step),
                                key["seed"], job_fingerprint(key["shot_ids"]))
    except ValueError as e:
        raise ShotstreamError(grpc.StatusCode.INVALID_ARGUMENT, str(e)) from None


def _check_resume(dataset, job, shot_ids, epoch, seed, resume) -> None:
    """INVALID_ARGUMENT unless `resume` (if any) is a token of this job."""
    if not resume:
        return
    from shotstream.wire import decode_job_token, job_fingerprint
    try:
        t = decode_job_token(resume)
    except ValueError as e:
        raise ShotstreamError(grpc.StatusCode.INVALID_ARGUMENT, str(e)) from None
    for field, here in (("dataset", dataset), ("job", job), ("epoch", epoch), ("seed", seed)):
        if t[field] != here:
            raise ShotstreamError(grpc.StatusCode.INVALID_ARGUMENT,
                                  f"resume: the token is for {field} {t[field]!r}, this job "
                                  f"is {here!r}")
    if t["fingerprint"] != job_fingerprint(shot_ids):
        raise ShotstreamError(grpc.StatusCode.INVALID_ARGUMENT,
                              f"resume: the token is for another set of shot ids than the "
                              f"{len(shot_ids)} given (its fingerprint differs)")


def _info(d: dict) -> DatasetInfo:
    """DatasetInfo of the native extension's summary (a dict of its fields)."""
    return DatasetInfo(**d)

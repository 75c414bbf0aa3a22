"""The shotstream Client: generated gRPC stubs under a small API.

Needs only grpcio, protobuf and numpy. Where the package carries its native extension
(`shotstream._native`, built by Bazel: the C++ client), Client.stream uses it, which
streams at the C++ client's rate; everything else, and streams where the extension is
absent or not wanted (SHOTSTREAM_NATIVE=0, Client(native=False)), goes through grpcio.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from typing import Dict, Iterator, List, Optional, Sequence, Tuple, Union

import grpc
import numpy as np

from shotstream import routing
from shotstream.errors import ShotstreamError
from shotstream.routing import RetryBudget, check_target, expand_targets
from shotstream.types import DatasetInfo, Shot
from shotstream.v1 import shotstream_pb2 as pb
from shotstream.v1 import shotstream_pb2_grpc as pb_grpc
from shotstream.wire import Assembler, crc32, decoder_missing, encoding_number

_CHANNEL_OPTIONS = [
    ("grpc.max_receive_message_length", -1),
    ("grpc.max_send_message_length", 16 * 1024 * 1024),
    ("grpc.http2.max_frame_size", 16 * 1024 * 1024 - 1),
    ("grpc.http2.lookahead_bytes", 64 * 1024 * 1024),
]

# Transient: a server restarting, shutting down (its streams are cut) or out of reach.
_RETRYABLE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED)


def _load_native():
    """The native extension, or None where it is not built (pip install, sanitizer builds)
    or SHOTSTREAM_NATIVE=0 turns it off."""
    if os.environ.get("SHOTSTREAM_NATIVE", "1") == "0":
        return None
    try:
        from shotstream import _native
    except ImportError:
        return None
    return _native


_native = _load_native()


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
_CODES = {c.value[0]: c for c in grpc.StatusCode}


def _error(exc: BaseException) -> ShotstreamError:
    if isinstance(exc, ShotstreamError):
        return exc
    if isinstance(exc, grpc.RpcError):
        return ShotstreamError(exc.code(), exc.details())
    if _native is not None and isinstance(exc, _native.NativeError):
        code, message = exc.args
        return ShotstreamError(_CODES.get(code, grpc.StatusCode.UNKNOWN), message)
    return ShotstreamError(grpc.StatusCode.UNKNOWN, str(exc))


def _put_unless_stopped(q: "queue.Queue", item, stop: threading.Event) -> bool:
    """Puts `item` into the bounded queue `q`, waiting for room unless `stop` is set
    (then False)."""
    while not stop.is_set():
        try:
            q.put(item, timeout=0.1)
            return True
        except queue.Full:
            continue
    return False


class _Selection:
    """stream()'s and stream_job()'s selection (headers, window, where, encoding,
    tolerance, message size, raw trace headers), checked, and as the request's
    ShotSelection has it."""

    def __init__(self, window, where, encoding, tolerance, headers=(), max_chunk_bytes=None,
                 trace_headers=False):
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

    def message(self) -> "pb.ShotSelection":
        sel = pb.ShotSelection(headers=self.headers, max_chunk_bytes=self.max_chunk_bytes,
                               raw_trace_headers=self.trace_headers,
                               encoding=encoding_number(self.encoding),
                               tolerance=self.tolerance)
        if self.window is not None:
            sel.window.start, sel.window.stop = self.window
        for header, lo, hi in self.where:
            sel.where.add(header=header, low=lo, high=hi)
        return sel

    def limit_to_grpcio(self) -> None:
        """Through grpcio: an encoding this path cannot decode says which package it needs
        (FAILED_PRECONDITION); auto keeps to what it can decode."""
        if self.encoding != "auto":
            missing = decoder_missing(self.encoding)
            if missing:
                raise ShotstreamError(grpc.StatusCode.FAILED_PRECONDITION, missing)
        elif decoder_missing("lossless"):
            self.encoding = "native"


class _Rerouted(Exception):
    """Internal: the remaining shots moved to other targets; stream again."""


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
    native: None streams through the native extension where the package has it and the
    options allow (plaintext, or TLS with a root CA given; not system roots or mTLS);
    False always through grpcio; True requires the extension. `self.native` says which.
    """

    def __init__(self, targets: Union[str, Sequence[str]], token: Optional[str] = None,
                 tls: Union[None, bool, bytes, str, Dict[str, Union[bytes, str]]] = None,
                 retries: int = 0, timeout: Optional[float] = None,
                 reconnect_timeout: float = 10.0, native: Optional[bool] = None,
                 connect_timeout: float = 5.0) -> None:
        _say_native_missing_once()
        if isinstance(targets, str):
            targets = [targets]
        if not targets:
            raise ValueError("no target")
        if token is None:
            token = os.environ.get("SHOTSTREAM_TOKEN") or None
        for t in targets:
            check_target(t)
        self._targets = expand_targets(list(targets))
        self._connect_timeout = float(connect_timeout)
        self._reached = set()  # target indices whose channel has connected
        self._token = token or ""
        self._metadata = [("authorization", f"Bearer {token}")] if token else []
        self._retries = int(retries)
        self._timeout = timeout
        self._reconnect_timeout = reconnect_timeout
        self.reconnects = 0  # streams resumed after a break, over this client's life
        self.wire_bytes = 0  # sample bytes received as they travelled (encoded), its life
        creds = None
        root_pem = b""
        native_ok = _native is not None
        if tls:
            def pem(x):
                if x is None or isinstance(x, (bytes, bytearray)):
                    return bytes(x) if x is not None else None
                with open(x, "rb") as f:
                    return f.read()
            parts = tls if isinstance(tls, dict) else {"root": None if tls is True else tls}
            root_pem = pem(parts.get("root"))
            # The C++ client takes a root CA only: system roots and mTLS stay on grpcio.
            native_ok = native_ok and root_pem is not None and not parts.get("cert") \
                and not parts.get("key")
            creds = grpc.ssl_channel_credentials(root_certificates=root_pem,
                                                 private_key=pem(parts.get("key")),
                                                 certificate_chain=pem(parts.get("cert")))
        if native and not native_ok:
            raise ValueError("native=True: " + (
                "the shotstream._native extension is not in this package (or "
                "SHOTSTREAM_NATIVE=0)" if _native is None else
                "the native client takes plaintext or tls with a root CA only"))
        self.native = native_ok if native is None else bool(native)
        self._root_pem = root_pem or b""
        self._native_client = None  # made at the first native stream
        self._closed = False
        self._channels = []
        for t in self._targets:
            if creds is None:
                ch = grpc.insecure_channel(t, options=_CHANNEL_OPTIONS)
            else:
                ch = grpc.secure_channel(t, creds, options=_CHANNEL_OPTIONS)
            self._channels.append(ch)
        self._stubs = [pb_grpc.ShotStreamStub(ch) for ch in self._channels]
        # StreamShots with raw responses: chunks are split by wire.split_chunk, not parsed
        # whole.
        self._raw_stream = [ch.unary_stream("/shotstream.v1.ShotStream/StreamShots",
                                            request_serializer=pb.StreamShotsRequest.SerializeToString,
                                            response_deserializer=None)
                            for ch in self._channels]
        self._raw_job = [ch.stream_stream("/shotstream.v1.ShotStream/StreamJob",
                                          request_serializer=pb.JobRequest.SerializeToString,
                                          response_deserializer=None)
                         for ch in self._channels]

    def stream_job(self, dataset: str, job: str, shot_ids: Sequence[int], epoch: int = 0,
                   seed: int = 0, queue_depth: int = 2, headers: Sequence[str] = (),
                   window: Optional[Tuple[int, int]] = None,
                   where: Optional[Dict[str, Tuple[float, float]]] = None,
                   encoding: str = "float32", tolerance: Optional[float] = None,
                   max_chunk_bytes: Optional[int] = None,
                   trace_headers: bool = False) -> Iterator[Shot]:
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
        encoding, tolerance, max_chunk_bytes and trace_headers. Through grpcio (the native
        client does not run jobs yet)."""
        if self._closed:
            raise ShotstreamError(grpc.StatusCode.FAILED_PRECONDITION, "the client is closed")
        shot_ids = [int(s) for s in shot_ids]
        sel = _Selection(window, where, encoding, tolerance, headers, max_chunk_bytes,
                         trace_headers)
        sel.limit_to_grpcio()
        per_target: Dict[int, List[int]] = {}
        if len(self._stubs) == 1:
            per_target[0] = shot_ids
        else:  # each shot to the first target that holds it (as the C++ client does)
            held = [set() if i is None else set(int(x) for x in i.shot_ids)
                    for i in self._dataset_per_target(dataset)]
            for sid in shot_ids:
                t = next((k for k, h in enumerate(held) if sid in h), None)
                if t is None:
                    raise ShotstreamError(grpc.StatusCode.NOT_FOUND,
                                          f"no target holds shot {sid} of {dataset!r}")
                per_target.setdefault(t, []).append(sid)
        out = queue.Queue(maxsize=max(1, int(queue_depth)))
        stop = threading.Event()
        requests = {t: queue.Queue() for t in per_target}
        calls = {}
        _END = object()

        def put(item):
            return _put_unless_stopped(out, item, stop)

        def messages(t):
            # Done counts are cumulative: of the acks waiting, only the newest is sent.
            while True:
                m = requests[t].get()
                while m is not None and m.HasField("progress") and not requests[t].empty():
                    nxt = requests[t].get()
                    m = nxt if nxt is None or nxt.HasField("progress") else m
                if m is None:
                    return
                yield m

        def receive(t):
            try:
                self._reach(t)
                requests[t].put(pb.JobRequest(start=pb.JobStart(
                    dataset=dataset, job=job, shot_ids=per_target[t], epoch=int(epoch),
                    seed=int(seed) % (1 << 64), queue_depth=int(queue_depth),
                    selection=sel.message())))
                call = self._raw_job[t](messages(t), metadata=self._metadata)
                calls[t] = call
                asm = Assembler()
                for chunk in call:
                    before = asm.wire_bytes
                    shot = asm.add(chunk)
                    self.wire_bytes += asm.wire_bytes - before
                    if shot is not None and not put((t, shot)):
                        return
                put((t, _END))
            except BaseException as e:  # handed to the consumer
                if not stop.is_set():
                    put((t, _error(e)))
            finally:
                requests[t].put(None)

        threads = [threading.Thread(target=receive, args=(t,), name="shotstream-job",
                                    daemon=True) for t in per_target]
        for th in threads:
            th.start()
        taken = {t: 0 for t in per_target}
        active = set(per_target)
        last = None
        index = 0
        try:
            while active:
                if last is not None:  # asking for the next: done with the last one
                    taken[last] += 1
                    requests[last].put(pb.JobRequest(progress=pb.JobProgress(done=taken[last])))
                    last = None
                t, item = out.get()
                if item is _END:
                    active.discard(t)
                    continue
                if isinstance(item, ShotstreamError):
                    raise item
                item.index = index
                index += 1
                last = t
                yield item
        finally:
            stop.set()
            for t, call in list(calls.items()):
                if t in active:
                    call.cancel()
            for th in threads:
                th.join()

    def _reach(self, t):
        """Returns once target t's channel is connected (at most connect_timeout seconds);
        else raises UNAVAILABLE naming the target."""
        if t in self._reached:
            return
        ready = grpc.channel_ready_future(self._channels[t])
        try:
            ready.result(timeout=self._connect_timeout)
        except grpc.FutureTimeoutError:
            raise ShotstreamError(
                grpc.StatusCode.UNAVAILABLE,
                f"{self._targets[t]}: cannot connect within {self._connect_timeout:g}s "
                "(is a server running there?)") from None
        finally:
            ready.cancel()
        self._reached.add(t)

    def close(self) -> None:
        self._closed = True
        for ch in self._channels:
            ch.close()
        if self._native_client is not None:
            self._native_client.close()  # shots still held keep its buffer pool alive
            self._native_client = None

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def list_datasets(self) -> List[DatasetInfo]:
        """Every dataset of every target (by name, first target first)."""
        seen = {}
        for t, stub in enumerate(self._stubs):
            self._reach(t)
            try:
                resp = stub.ListDatasets(pb.ListDatasetsRequest(), metadata=self._metadata,
                                         timeout=self._timeout)
            except grpc.RpcError as e:
                raise _error(e) from None
            for d in resp.datasets:
                seen.setdefault(d.name, DatasetInfo.from_message(d))
        return list(seen.values())

    _PAGE = 250_000  # shots per GetDataset page

    def _get_dataset(self, stub, name):
        """All pages of GetDataset, merged into one DatasetInfo message."""
        info = stub.GetDataset(pb.GetDatasetRequest(name=name, page_size=self._PAGE),
                               metadata=self._metadata, timeout=self._timeout)
        while info.next_page_token:
            page = stub.GetDataset(pb.GetDatasetRequest(name=name, page_size=self._PAGE,
                                                        page_token=info.next_page_token),
                                   metadata=self._metadata, timeout=self._timeout)
            info.shot_ids.extend(page.shot_ids)
            info.shot_trace_counts.extend(page.shot_trace_counts)
            info.source_positions.extend(page.source_positions)
            info.next_page_token = page.next_page_token
        return info

    def _dataset_per_target(self, name):
        infos = []
        last = None
        for t, stub in enumerate(self._stubs):
            try:
                self._reach(t)
                infos.append(self._get_dataset(stub, name))
            except (grpc.RpcError, ShotstreamError) as e:
                infos.append(None)
                if last is None or last.code() == grpc.StatusCode.NOT_FOUND:
                    last = e  # a target's real reason wins over another's NOT_FOUND
        if all(i is None for i in infos):
            raise _error(last)
        return infos

    def dataset(self, name: str) -> DatasetInfo:
        """The dataset's info; with several targets, the union of their shots."""
        infos = self._dataset_per_target(name)
        present = [i for i in infos if i is not None]
        if len(present) == 1:
            return DatasetInfo.from_message(present[0])
        merged = pb.DatasetInfo()
        merged.CopyFrom(present[0])
        counts = {}
        for i in present:
            for sid, n in zip(i.shot_ids, i.shot_trace_counts):
                counts[sid] = counts.get(sid, 0) + n
        del merged.shot_ids[:]
        del merged.shot_trace_counts[:]
        for sid in sorted(counts):
            merged.shot_ids.append(sid)
            merged.shot_trace_counts.append(counts[sid])
        merged.n_shots = len(counts)
        merged.n_traces = sum(i.n_traces for i in present)
        return DatasetInfo.from_message(merged)

    def dataset_pages(self, name: str, page_size: int = 100_000) -> Iterator[DatasetInfo]:
        """The dataset's info a page at a time, for datasets too large to hold every shot
        id at once: each page's shot_ids and shot_trace_counts are up to `page_size` of its
        shots (the other fields are the dataset's). With several targets, each target's
        pages in turn (a shot several targets hold comes once per target)."""
        found = False
        for t, stub in enumerate(self._stubs):
            self._reach(t)
            token = ""
            while True:
                try:
                    page = stub.GetDataset(pb.GetDatasetRequest(name=name, page_size=max(1, page_size),
                                                                page_token=token),
                                           metadata=self._metadata, timeout=self._timeout)
                except grpc.RpcError as e:
                    if e.code() == grpc.StatusCode.NOT_FOUND:
                        break  # not on this target
                    raise _error(e) from None
                found = True
                token = page.next_page_token
                yield DatasetInfo.from_message(page)
                if not token:
                    break
        if not found:
            raise ShotstreamError(grpc.StatusCode.NOT_FOUND, f"no server has dataset '{name}'")

    def _route(self, name, shot_ids):
        """See routing.route; one target holds everything."""
        if len(self._stubs) == 1:
            return [0] * len(shot_ids), {}
        infos = self._dataset_per_target(name)
        return routing.route(name, shot_ids,
                             [None if i is None else i.shot_ids for i in infos])

    def write(self, name: str, shots, sample_interval_us: float, sample_format: int = 5,
              max_chunk_bytes: int = 1 << 20) -> DatasetInfo:
        """Creates dataset `name` on the (first) server from `shots`: an iterable of `Shot`s
        or of (shot_id, samples) / (shot_id, samples, {header: values}) tuples, samples
        [n_traces, n_samples] (any real dtype, sent as float32). It is streamed as it is
        iterated (a generator of modelled shots is never held whole), each shot in messages
        of at most max_chunk_bytes with its CRC-32, and written by the server as SEG-Y
        (sample_format 5 IEEE float32, 1 IBM, 3 int16) into its write_dir. Nothing is
        visible until the last shot is in; returns the new dataset's DatasetInfo (its
        write_max_error says what the format cost). Errors raise ShotstreamError:
        ALREADY_EXISTS, INVALID_ARGUMENT (a bad name, a shot with another sample count),
        PERMISSION_DENIED, FAILED_PRECONDITION (writing not enabled), DATA_LOSS,
        RESOURCE_EXHAUSTED (the server's disk is full); the server then keeps nothing. An
        exception raised by the iterable cancels the write and is raised again."""
        if self.native:
            return self._write_native(name, _shots_to_write(shots), sample_interval_us,
                                      sample_format, max_chunk_bytes)
        failure = []

        def messages():
            yield pb.WriteShotsRequest(start=pb.WriteStart(
                dataset=name, sample_interval_us=float(sample_interval_us),
                sample_format=int(sample_format)))
            try:
                for sid, a, headers in _shots_to_write(shots):
                    n_traces, n_samples = a.shape
                    per = max(1, max_chunk_bytes // max(1, n_samples * 4))
                    crc = 0
                    first = True
                    for t in range(0, max(n_traces, 1), per):
                        part = a[t:t + per].tobytes()
                        crc = crc32(part, crc)
                        m = pb.WriteShotsRequest(shot=pb.ShotPart(samples=part))
                        if first:
                            m.shot.shot_id, m.shot.n_traces, m.shot.n_samples = \
                                sid, n_traces, n_samples
                            for h, col in headers.items():
                                m.shot.headers.add(name=h, values=col.tolist())
                            first = False
                        if t + per >= n_traces:
                            m.shot.shot_end, m.shot.crc32 = True, crc
                        yield m
            except GeneratorExit:  # grpcio closes us: the call already ended
                raise
            except BaseException as e:  # the call is cancelled: the server keeps nothing
                failure.append(e)
                return
            yield pb.WriteShotsRequest(finish=pb.WriteFinish())

        self._reach(0)
        call = self._stubs[0].WriteShots.future(messages(), metadata=self._metadata)
        try:
            response = call.result()
        except grpc.RpcError as e:
            if failure:
                raise failure[0] from None
            raise _error(e) from None
        if failure:  # the iterable failed after the server had everything: not reached
            raise failure[0]
        return DatasetInfo.from_message(response.dataset, written=response)

    def _native(self):
        """The C++ client of the native extension, made at its first use."""
        if self._native_client is None:
            try:
                self._native_client = _native.NativeClient(
                    self._targets, self._token, self._root_pem, self._retries,
                    float(self._reconnect_timeout), self._connect_timeout)
            except _native.NativeError as e:
                raise _error(e) from None
        return self._native_client

    def _write_native(self, name, items, sample_interval_us, sample_format, max_chunk_bytes):
        """Client.write through the C++ client (Client::Write): it asks for each shot."""
        def next_shot():
            item = next(items, None)
            if item is None:
                return None
            sid, a, headers = item
            return sid, a, a.shape[0], a.shape[1], list(headers.items())
        try:
            d = self._native().write(name, next_shot, float(sample_interval_us),
                                     int(sample_format), int(max_chunk_bytes))
        except _native.NativeError as e:
            raise _error(e) from None
        d["shot_ids"] = np.frombuffer(d["shot_ids"], dtype=np.int64)
        d["shot_trace_counts"] = np.frombuffer(d["shot_trace_counts"], dtype=np.uint32) \
            .astype(np.int64)
        return DatasetInfo(**d)

    def stream(self, name: str, shot_ids: Sequence[int], queue_depth: int = 2,
               headers: Sequence[str] = (), max_chunk_bytes: Optional[int] = None,
               trace_headers: bool = False, window: Optional[Tuple[int, int]] = None,
               where: Optional[Dict[str, Tuple[float, float]]] = None,
               encoding: str = "float32", tolerance: Optional[float] = None,
               pieces: bool = False) -> Iterator[Shot]:
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
        """
        if self._closed:
            raise ShotstreamError(grpc.StatusCode.FAILED_PRECONDITION, "the client is closed")
        shot_ids = [int(s) for s in shot_ids]
        sel = _Selection(window, where, encoding, tolerance, headers, max_chunk_bytes,
                         trace_headers)
        if self.native:
            return self._stream_native(name, shot_ids, queue_depth, sel, bool(pieces))
        sel.limit_to_grpcio()
        return self._stream_grpcio(name, shot_ids, queue_depth, sel, bool(pieces))

    def _stream_native(self, name, shot_ids, queue_depth, sel, pieces):
        stream = self._native().stream(
            name, shot_ids, max(1, int(queue_depth)), sel.headers, sel.max_chunk_bytes,
            sel.trace_headers, sel.window is not None, *(sel.window or (0, 0)), sel.where,
            sel.encoding, sel.tolerance, pieces)
        base = self.reconnects
        base_wire = self.wire_bytes
        try:
            while True:
                try:
                    item = stream.next()
                except _native.NativeError as e:
                    raise _error(e) from None
                finally:
                    self.reconnects = base + stream.reconnects
                if item is None:
                    return
                (index, shot_id, interval, n_traces, n_samples, samples, header_columns,
                 raw, encoding, first_trace, shot_traces, last_piece) = item
                samples = np.frombuffer(samples, dtype="<f4").reshape(n_traces, n_samples)
                headers_out = {h: np.frombuffer(v, dtype=np.float64) for h, v in header_columns}
                raw = None if raw is None else \
                    np.frombuffer(raw, dtype=np.uint8).reshape(shot_traces, 240)
                self.wire_bytes = base_wire + stream.wire_bytes
                yield Shot(index, shot_id, samples, headers_out, interval, raw, encoding,
                           first_trace, shot_traces, last_piece)
        finally:
            stream.cancel()

    def _stream_grpcio(self, name, shot_ids, queue_depth, sel, pieces):
        route, holders = self._route(name, shot_ids)
        out = queue.Queue(maxsize=max(1, int(queue_depth)))
        stop = threading.Event()
        state = {"call": None}
        _END = object()

        def put(item):
            return _put_unless_stopped(out, item, stop)

        def runs(start):
            # Maximal runs of consecutive shots on one target, in request order.
            k = start
            while k < len(shot_ids):
                t = route[k]
                j = k
                while j < len(shot_ids) and route[j] == t:
                    j += 1
                yield t, k, j
                k = j

        def receive():
            delivered = 0
            parts = 0  # pieces: traces of the shot at `delivered` yielded (0 between shots)
            budget = RetryBudget(self._retries)
            given_up = set()
            try:
                while delivered < len(shot_ids) and not stop.is_set():
                    t = route[delivered]
                    try:
                        for t, k, j in runs(delivered):
                            try:
                                self._reach(t)
                            except ShotstreamError:
                                # Never reached: another holder, or the error.
                                if routing.reroute(route, holders, shot_ids, delivered, t,
                                                   given_up):
                                    raise _Rerouted() from None
                                raise
                            req = pb.StreamShotsRequest(dataset=name, shot_ids=shot_ids[k:j],
                                                        queue_depth=int(queue_depth),
                                                        selection=sel.message())
                            call = self._raw_stream[t](req, metadata=self._metadata)
                            state["call"] = call
                            asm = Assembler(pieces)
                            for chunk in call:
                                before = asm.wire_bytes
                                shot = asm.add(chunk)
                                self.wire_bytes += asm.wire_bytes - before
                                if shot is None:
                                    continue
                                shot.index = delivered
                                end = shot.first_trace + len(shot.samples)
                                if pieces and shot.first_trace < parts:
                                    # Resumed inside a shot: what came before is not again.
                                    if end <= parts and not shot.last_piece:
                                        continue
                                    keep = parts - shot.first_trace
                                    shot.samples = shot.samples[keep:]
                                    shot.first_trace = parts
                                    shot.headers, shot.trace_headers = {}, None
                                if not put(shot):
                                    call.cancel()
                                    return
                                parts = 0 if shot.last_piece else end
                                if shot.last_piece:
                                    delivered += 1
                                budget.delivered()
                            if stop.is_set():
                                return
                            if delivered < j:
                                raise ShotstreamError(
                                    grpc.StatusCode.DATA_LOSS,
                                    f"stream ended after {delivered - k} of {j - k} shots")
                    except _Rerouted:
                        self.reconnects += 1
                        continue
                    except grpc.RpcError as e:
                        if stop.is_set():
                            return
                        if e.code() in _RETRYABLE and routing.reroute(
                                route, holders, shot_ids, delivered, t, given_up):
                            self.reconnects += 1  # another server holds the shots
                            continue
                        backoff = budget.failed() if e.code() in _RETRYABLE else None
                        if backoff is not None:
                            self.reconnects += 1
                            # Back off, then wait (bounded) for the target to come back.
                            time.sleep(backoff)
                            ready = grpc.channel_ready_future(self._channels[route[delivered]])
                            try:
                                ready.result(timeout=self._reconnect_timeout)
                            except grpc.FutureTimeoutError:
                                pass
                            finally:
                                ready.cancel()
                            continue
                        raise
                put(_END)
            except BaseException as e:  # handed to the consumer
                put(_error(e))

        thread = threading.Thread(target=receive, name="shotstream-receive", daemon=True)
        thread.start()
        try:
            while True:
                item = out.get()
                if item is _END:
                    return
                if isinstance(item, ShotstreamError):
                    raise item
                yield item
        finally:
            stop.set()
            call = state["call"]
            if call is not None:
                call.cancel()
            thread.join()

"""The shotstream Python client: generated gRPC stubs under a small API.

Needs only grpcio, protobuf and numpy. Where the package carries its native extension
(`shotstream._native`, built by Bazel: the C++ client), Client.stream uses it, which
streams at the C++ client's rate; everything else, and streams where the extension is
absent or not wanted (SHOTSTREAM_NATIVE=0, Client(native=False)), goes through grpcio.
"""

import ctypes
import ctypes.util
import os
import queue
import threading
import time
import zlib

import grpc
import numpy as np

from shotstream.v1 import shotstream_pb2 as pb
from shotstream.v1 import shotstream_pb2_grpc as pb_grpc

_CHANNEL_OPTIONS = [
    ("grpc.max_receive_message_length", -1),
    ("grpc.max_send_message_length", 16 * 1024 * 1024),
    ("grpc.http2.max_frame_size", 16 * 1024 * 1024 - 1),
    ("grpc.http2.lookahead_bytes", 64 * 1024 * 1024),
]

# Transient: a server restarting, shutting down (its streams are cut) or out of reach.
_RETRYABLE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED)


def _find_crc32():
    """CRC-32 of a buffer, continuing a previous value: ISA-L's kernel when libisal is on
    the machine (same CRC, over 10x zlib's speed: //common:crc32_benchmark; Debian:
    libisal2), else zlib.crc32."""
    for name in ("libisal.so.2", ctypes.util.find_library("isal")):
        if not name:
            continue
        try:
            fn = ctypes.CDLL(name).crc32_gzip_refl  # CDLL calls release the GIL
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_uint32
        fn.argtypes = [ctypes.c_uint32, ctypes.c_void_p, ctypes.c_uint64]

        def isal_crc32(data, crc=0):
            a = np.frombuffer(data, dtype=np.uint8)
            return fn(crc, a.ctypes.data, a.nbytes) if a.nbytes else crc

        isal_crc32.implementation = "isa-l"
        return isal_crc32

    def zlib_crc32(data, crc=0):
        return zlib.crc32(data, crc)

    zlib_crc32.implementation = "zlib"
    return zlib_crc32


_crc32 = _find_crc32()


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
_CODES = {c.value[0]: c for c in grpc.StatusCode}


class ShotstreamError(Exception):
    """An error from the server or the stream, with the gRPC status code.

    Picklable, and rebuilt from its text alone (ShotstreamError("NOT_FOUND: ...")), as
    PyTorch's DataLoader does with errors raised in its worker processes: the code is
    found in the text, so `.code()` survives the worker boundary."""

    def __init__(self, code, message=None):
        if message is None and isinstance(code, str):
            code, message = _code_from_text(code)
        super().__init__(f"{code.name}: {message}")
        self._code = code
        self._message = message

    def __reduce__(self):
        return (ShotstreamError, (self._code, self._message))

    def code(self):
        """The grpc.StatusCode."""
        return self._code

    def details(self):
        """The server's message."""
        return self._message


def _code_from_text(text):
    """(grpc.StatusCode, message) of an error's text: "CODE: message", or a traceback
    whose last 'ShotstreamError: CODE: message' line says it; UNKNOWN otherwise."""
    candidates = [text]
    marker = "ShotstreamError: "
    if marker in text:
        candidates.insert(0, text[text.rindex(marker) + len(marker):])
    for c in candidates:
        name, sep, rest = c.partition(": ")
        code = getattr(grpc.StatusCode, name.strip(), None)
        if sep and isinstance(code, grpc.StatusCode):
            return code, rest.strip()
    return grpc.StatusCode.UNKNOWN, text


class DatasetInfo:
    """What the server says of one dataset (shot_ids only from Client.dataset)."""

    def __init__(self, msg):
        self.name = msg.name
        self.state = msg.state
        self.error = msg.error
        self.n_traces = msg.n_traces
        self.n_shots = msg.n_shots
        self.n_samples = msg.n_samples
        self.sample_interval_us = msg.sample_interval_us
        self.sample_format = msg.sample_format
        self.shot_key = msg.shot_key
        self.n_files = msg.n_files
        self.shot_ids = np.array(msg.shot_ids, dtype=np.int64)
        self.shot_trace_counts = np.array(msg.shot_trace_counts, dtype=np.int64)
        self.header_fields = list(msg.header_fields)
        # source_xy datasets: {shot id: (x, y)} of each shot's source; else empty.
        self.source_positions = {p.shot_id: (p.x, p.y) for p in msg.source_positions}

    def __repr__(self):
        return (f"DatasetInfo(name={self.name!r}, state={self.state}, n_shots={self.n_shots}, "
                f"n_traces={self.n_traces}, n_samples={self.n_samples}, "
                f"sample_interval_us={self.sample_interval_us})")


class Shot:
    """One shot gather: samples float32 (n_traces, n_samples), headers name -> array;
    trace_headers: with stream(..., trace_headers=True) each trace's raw 240-byte header,
    uint8 (n_traces, 240), big-endian as SEG-Y stores it; else None."""

    __slots__ = ("index", "shot_id", "samples", "headers", "sample_interval_us",
                 "trace_headers")

    def __init__(self, index, shot_id, samples, headers, sample_interval_us,
                 trace_headers=None):
        self.index = index
        self.shot_id = shot_id
        self.samples = samples
        self.headers = headers
        self.sample_interval_us = sample_interval_us
        self.trace_headers = trace_headers

    def __repr__(self):
        return f"Shot(shot_id={self.shot_id}, samples={self.samples.shape})"


def _check_target(target):
    """ValueError unless target is HOST:PORT with a port number, [IPv6]:PORT,
    dns:///NAME:PORT or unix:PATH (a target without a port is not port 0)."""
    if isinstance(target, str) and target.startswith("unix:"):
        return
    host, sep, port = str(target).rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536 or \
            (host.startswith("[") and not host.endswith("]")):
        raise ValueError(f"target {target!r}: expected HOST:PORT with a port number "
                         "(e.g. 127.0.0.1:50051, [::1]:50051, dns:///storage-1:50051)")


def expand_targets(targets, resolve=None):
    """Targets as given, except that "dns:///NAME:PORT" becomes one target per address
    NAME resolves to (e.g. a Kubernetes headless Service in front of one server per
    storage node)."""
    import socket
    resolve = resolve or socket.getaddrinfo
    out = []
    for t in targets:
        if not t.startswith("dns:///"):
            out.append(t)
            continue
        hostport = t[len("dns:///"):]
        host, _, port = hostport.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"target {t!r}: expected dns:///NAME:PORT")
        addrs = []
        for family, _, _, _, sockaddr in resolve(host.strip("[]"), int(port),
                                                 type=socket.SOCK_STREAM):
            a = f"[{sockaddr[0]}]:{port}" if family == socket.AF_INET6 else f"{sockaddr[0]}:{port}"
            if a not in addrs:
                addrs.append(a)
        if not addrs:
            raise ValueError(f"target {t!r}: {host} resolves to no address")
        out.extend(addrs)
    return out


def _error(exc):
    if isinstance(exc, ShotstreamError):
        return exc
    if isinstance(exc, grpc.RpcError):
        return ShotstreamError(exc.code(), exc.details())
    if _native is not None and isinstance(exc, _native.NativeError):
        code, message = exc.args
        return ShotstreamError(_CODES.get(code, grpc.StatusCode.UNKNOWN), message)
    return ShotstreamError(grpc.StatusCode.UNKNOWN, str(exc))


_SAMPLES_TAG = (15 << 3) | 2  # ShotChunk.samples


def _varint(b, pos):
    v = shift = 0
    while True:
        byte = b[pos]
        pos += 1
        v |= (byte & 0x7F) << shift
        if byte < 0x80:
            return v, pos
        shift += 7


def _split_chunk(raw):
    """Raw ShotChunk bytes -> (metadata message without samples, memoryview of the samples).
    The samples are not copied (protobuf's parser would copy them once more)."""
    view = memoryview(raw)
    meta_parts = []
    samples = view[0:0]
    pos, n = 0, len(raw)
    while pos < n:
        start = pos
        tag, pos = _varint(raw, pos)
        wire = tag & 7
        if wire == 0:
            _, pos = _varint(raw, pos)
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        elif wire == 2:
            length, pos = _varint(raw, pos)
            if tag == _SAMPLES_TAG:
                samples = view[pos:pos + length]
                pos += length
                continue
            pos += length
        else:
            raise ShotstreamError(grpc.StatusCode.DATA_LOSS, "malformed ShotChunk")
        if pos > n:
            raise ShotstreamError(grpc.StatusCode.DATA_LOSS, "truncated ShotChunk")
        meta_parts.append(view[start:pos])
    return pb.ShotChunk.FromString(b"".join(meta_parts)), samples


def _check_crc(shot_id, received, sent):
    if received != sent:
        raise ShotstreamError(grpc.StatusCode.DATA_LOSS,
                              f"shot {shot_id}: checksum mismatch (CRC-32 "
                              f"{received:#010x} received, {sent:#010x} sent)")


def _trace_headers(chunk):
    """The first chunk's raw trace headers as uint8 (n_traces, 240), or None."""
    if not chunk.trace_headers:
        return None
    if len(chunk.trace_headers) != 240 * chunk.n_traces:
        raise ShotstreamError(grpc.StatusCode.DATA_LOSS,
                              f"shot {chunk.shot_id}: {len(chunk.trace_headers)} bytes of "
                              f"trace headers for {chunk.n_traces} traces")
    return np.frombuffer(chunk.trace_headers, dtype=np.uint8).reshape(chunk.n_traces, 240)


def _dtype(chunk):
    """The samples' dtype on the wire: little-endian float32 unless the chunk says
    big_endian (sent as stored, only to requests that set accept_big_endian)."""
    return ">f4" if chunk.big_endian else "<f4"


class _Assembler:
    """Reassembles chunks into shots with one copy, and verifies each shot's CRC-32."""

    def __init__(self):
        self._buf = None
        self._crc = 0
        self._first = None

    def add(self, raw):
        """Returns a Shot when the raw chunk completes one, else None."""
        chunk, data = _split_chunk(raw)
        if self._buf is None and chunk.last and chunk.offset == 0 and \
                len(data) == chunk.total_bytes == 4 * chunk.n_traces * chunk.n_samples:
            # The whole shot in one message: the samples are viewed where gRPC put them.
            _check_crc(chunk.shot_id, _crc32(data), chunk.crc32)
            headers = {c.name: np.array(c.values, dtype=np.float64) for c in chunk.headers}
            samples = np.frombuffer(data, dtype=_dtype(chunk)).reshape(chunk.n_traces,
                                                                       chunk.n_samples)
            if chunk.big_endian:
                samples = samples.astype("<f4")
                samples.flags.writeable = False
            return Shot(chunk.index, chunk.shot_id, samples, headers, chunk.sample_interval_us,
                        _trace_headers(chunk))
        if self._buf is None:
            n = chunk.n_traces * chunk.n_samples
            if chunk.total_bytes != 4 * n:
                raise ShotstreamError(grpc.StatusCode.DATA_LOSS,
                                      f"shot {chunk.shot_id}: total_bytes {chunk.total_bytes} "
                                      f"!= 4 * {chunk.n_traces} * {chunk.n_samples}")
            self._buf = np.empty(n, dtype="<f4")
            self._crc = 0
            self._first = chunk
        start = chunk.offset
        if start % 4 or len(data) % 4 or start + len(data) > self._buf.nbytes:
            raise ShotstreamError(grpc.StatusCode.DATA_LOSS,
                                  f"shot {chunk.shot_id}: chunk at byte {start} overruns the shot")
        self._buf[start // 4:(start + len(data)) // 4] = np.frombuffer(data, dtype=_dtype(chunk))
        self._crc = _crc32(data, self._crc)
        if not chunk.last:
            return None
        first = self._first
        _check_crc(first.shot_id, self._crc, chunk.crc32)
        headers = {c.name: np.array(c.values, dtype=np.float64) for c in first.headers}
        samples = self._buf.reshape(first.n_traces, first.n_samples)
        samples.flags.writeable = False  # as in the one-message case: the same contract
        shot = Shot(first.index, first.shot_id, samples, headers, first.sample_interval_us,
                    _trace_headers(first))
        self._buf = None
        self._first = None
        return shot


class _Rerouted(Exception):
    """Internal: the remaining shots moved to other targets; stream again."""


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

    def __init__(self, targets, token=None, tls=None, retries=0, timeout=None,
                 reconnect_timeout=10.0, native=None, connect_timeout=5.0):
        if isinstance(targets, str):
            targets = [targets]
        if not targets:
            raise ValueError("no target")
        if token is None:
            token = os.environ.get("SHOTSTREAM_TOKEN") or None
        for t in targets:
            _check_target(t)
        self._targets = expand_targets(list(targets))
        self._connect_timeout = float(connect_timeout)
        self._reached = set()  # target indices whose channel has connected
        self._token = token or ""
        self._metadata = [("authorization", f"Bearer {token}")] if token else []
        self._retries = int(retries)
        self._timeout = timeout
        self._reconnect_timeout = reconnect_timeout
        self.reconnects = 0  # streams resumed after a break, over this client's life
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
        # StreamShots with raw responses: chunks are split by _split_chunk, not parsed whole.
        self._raw_stream = [ch.unary_stream("/shotstream.v1.ShotStream/StreamShots",
                                            request_serializer=pb.StreamShotsRequest.SerializeToString,
                                            response_deserializer=None)
                            for ch in self._channels]

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

    def close(self):
        self._closed = True
        for ch in self._channels:
            ch.close()
        if self._native_client is not None:
            self._native_client.close()  # shots still held keep its buffer pool alive
            self._native_client = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def list_datasets(self):
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
                seen.setdefault(d.name, DatasetInfo(d))
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

    def dataset(self, name):
        """The dataset's info; with several targets, the union of their shots."""
        infos = self._dataset_per_target(name)
        present = [i for i in infos if i is not None]
        if len(present) == 1:
            return DatasetInfo(present[0])
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
        return DatasetInfo(merged)

    def _route(self, name, shot_ids):
        """(target index per shot: a server that holds it, spreading shots held by several;
        shot id -> every target holding it, empty with one target)."""
        if len(self._stubs) == 1:
            return [0] * len(shot_ids), {}
        holders = {}
        for t, info in enumerate(self._dataset_per_target(name)):
            if info is None:
                continue
            for sid in info.shot_ids:
                holders.setdefault(sid, []).append(t)
        route = []
        for k, sid in enumerate(shot_ids):
            h = holders.get(int(sid))
            if not h:
                raise ShotstreamError(grpc.StatusCode.NOT_FOUND,
                                      f"dataset '{name}' has no shot {int(sid)} on any target")
            route.append(h[k % len(h)])
        return route, holders

    @staticmethod
    def _reroute(route, holders, shot_ids, start, failed, given_up):
        """Moves shots from `start` on that were routed to target `failed` to another
        target that holds them, where there is one; True if any moved."""
        given_up.add(failed)
        moved = False
        for k in range(start, len(route)):
            if route[k] != failed:
                continue
            others = [t for t in holders.get(shot_ids[k], ()) if t not in given_up]
            if others:
                route[k] = others[k % len(others)]
                moved = True
        return moved

    def stream(self, name, shot_ids, queue_depth=2, headers=(), max_chunk_bytes=None,
               trace_headers=False):
        """Yields Shot objects in the order of shot_ids (repeats allowed).

        trace_headers=True: each shot also carries its traces' raw 240-byte headers
        (shot.trace_headers), e.g. to write them out unchanged.

        Receiving runs ahead on a background thread (queue_depth shots), so the caller's
        compute overlaps the network. Raises ShotstreamError on errors.

        shot.samples is read-only: copy it (np.array(shot.samples)) to change it in place.
        Natively (self.native), samples land in the C++ client's buffer pool in one copy
        from gRPC's buffers and numpy views them there; the buffer goes back to the pool
        when the last view of it is gone.

        Shots arrive in messages of at most max_chunk_bytes of samples (capped by the
        server; None: the server's default natively, 256 KiB through grpcio). grpcio
        builds each message's bytes object by growing a bytearray and copying it once
        more; in paired runs 256 KiB took less CPU per byte than 4 MiB messages or whole
        shots (`bazel run -c opt //:bench` measures all three). Through grpcio a shot that
        fits one message is a view of the received bytes, without a copy; larger shots
        are reassembled with one copy.
        """
        if self._closed:
            raise ShotstreamError(grpc.StatusCode.FAILED_PRECONDITION, "the client is closed")
        shot_ids = [int(s) for s in shot_ids]
        if self.native:
            return self._stream_native(name, shot_ids, queue_depth, headers,
                                       max_chunk_bytes or 0, bool(trace_headers))
        return self._stream_grpcio(name, shot_ids, queue_depth, headers,
                                   256 << 10 if max_chunk_bytes is None else max_chunk_bytes,
                                   bool(trace_headers))

    def _stream_native(self, name, shot_ids, queue_depth, headers, max_chunk_bytes,
                       trace_headers):
        if self._native_client is None:
            try:
                self._native_client = _native.NativeClient(
                    self._targets, self._token, self._root_pem, self._retries,
                    float(self._reconnect_timeout), self._connect_timeout)
            except _native.NativeError as e:
                raise _error(e) from None
        stream = self._native_client.stream(name, shot_ids, max(1, int(queue_depth)),
                                            [str(h) for h in headers], int(max_chunk_bytes),
                                            trace_headers)
        base = self.reconnects
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
                 raw) = item
                samples = np.frombuffer(samples, dtype="<f4").reshape(n_traces, n_samples)
                headers_out = {h: np.frombuffer(v, dtype=np.float64) for h, v in header_columns}
                raw = None if raw is None else \
                    np.frombuffer(raw, dtype=np.uint8).reshape(n_traces, 240)
                yield Shot(index, shot_id, samples, headers_out, interval, raw)
        finally:
            stream.cancel()

    def _stream_grpcio(self, name, shot_ids, queue_depth, headers, max_chunk_bytes,
                       trace_headers):
        route, holders = self._route(name, shot_ids)
        out = queue.Queue(maxsize=max(1, int(queue_depth)))
        stop = threading.Event()
        state = {"call": None}
        _END = object()

        def put(item):
            while not stop.is_set():
                try:
                    out.put(item, timeout=0.1)
                    return True
                except queue.Full:
                    continue
            return False

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
            attempts = 0
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
                                if self._reroute(route, holders, shot_ids, delivered, t,
                                                 given_up):
                                    raise _Rerouted() from None
                                raise
                            req = pb.StreamShotsRequest(dataset=name, shot_ids=shot_ids[k:j],
                                                        queue_depth=int(queue_depth),
                                                        headers=list(headers),
                                                        max_chunk_bytes=int(max_chunk_bytes),
                                                        raw_trace_headers=trace_headers)
                            call = self._raw_stream[t](req, metadata=self._metadata)
                            state["call"] = call
                            asm = _Assembler()
                            for chunk in call:
                                shot = asm.add(chunk)
                                if shot is None:
                                    continue
                                shot.index = delivered
                                if not put(shot):
                                    call.cancel()
                                    return
                                delivered += 1
                                attempts = 0
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
                        if e.code() in _RETRYABLE and self._reroute(
                                route, holders, shot_ids, delivered, t, given_up):
                            self.reconnects += 1  # another server holds the shots
                            continue
                        if e.code() in _RETRYABLE and attempts < self._retries:
                            attempts += 1
                            self.reconnects += 1
                            # Back off, then wait (bounded) for the target to come back.
                            time.sleep(min(2.0, 0.05 * 2 ** attempts))
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

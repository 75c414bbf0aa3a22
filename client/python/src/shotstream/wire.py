"""The ShotChunk wire format on the grpcio fallback's side: raw chunk bytes split into
metadata and samples without copying the samples, shots reassembled with one copy, every
chunk's (or shot's) CRC-32 verified, the encodings decoded. It mirrors the C++ shot
protocol (wire/chunk_plan.h, client/shot_assembler.h); the golden chunk stream in
client/testdata/ pins both (//client:golden_chunks_test, client/python/wire_test.py)."""

from __future__ import annotations

import ctypes
import ctypes.util
import struct
import zlib
from typing import Callable, Optional, Tuple

import grpc
import numpy as np

from shotstream.errors import ShotstreamError
from shotstream.types import Shot
from shotstream.v1 import shotstream_pb2 as pb


def _find_crc32() -> Callable:
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


crc32 = _find_crc32()


_SAMPLES_TAG = (15 << 3) | 2  # ShotChunk.samples


def _varint(b, pos: int) -> Tuple[int, int]:
    v = shift = 0
    while True:
        byte = b[pos]
        pos += 1
        v |= (byte & 0x7F) << shift
        if byte < 0x80:
            return v, pos
        shift += 7


def split_chunk(raw: bytes) -> Tuple["pb.ShotChunk", memoryview]:
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
                if pos + length > n:
                    raise ShotstreamError(grpc.StatusCode.DATA_LOSS,
                                          "truncated ShotChunk (samples past the end)")
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


def _check_crc(shot_id: int, received: int, sent: int) -> None:
    if received != sent:
        raise ShotstreamError(grpc.StatusCode.DATA_LOSS,
                              f"shot {shot_id}: checksum mismatch (CRC-32 "
                              f"{received:#010x} received, {sent:#010x} sent)")


def _trace_headers(chunk) -> Optional[np.ndarray]:
    """The first chunk's raw trace headers as uint8 (n_traces, 240), or None."""
    if not chunk.trace_headers:
        return None
    if len(chunk.trace_headers) != 240 * chunk.n_traces:
        raise ShotstreamError(grpc.StatusCode.DATA_LOSS,
                              f"shot {chunk.shot_id}: {len(chunk.trace_headers)} bytes of "
                              f"trace headers for {chunk.n_traces} traces")
    return np.frombuffer(chunk.trace_headers, dtype=np.uint8).reshape(chunk.n_traces, 240)


ENCODINGS = {"float32": pb.ENCODING_FLOAT32, "native": pb.ENCODING_NATIVE,
             "lossless": pb.ENCODING_LOSSLESS, "int16": pb.ENCODING_INT16,
             "zfp": pb.ENCODING_ZFP, "quantized": pb.ENCODING_QUANTIZED,
             "auto": pb.ENCODING_AUTO}
ENCODING_NAMES = {v: k for k, v in ENCODINGS.items()}

# What decodes LOSSLESS, QUANTIZED and ZFP chunks on this path: Debian's python3-blosc and
# python3-zfpy (the native client decodes them itself).
_DECODER_PACKAGES = {"lossless": ("blosc", "python3-blosc"), "zfp": ("zfpy", "python3-zfpy"),
                     "quantized": ("blosc", "python3-blosc")}
_LOSSY = (pb.ENCODING_INT16, pb.ENCODING_ZFP, pb.ENCODING_QUANTIZED)


def encoding_number(name: str) -> int:
    """The proto's Encoding for a name; INVALID_ARGUMENT naming the choices."""
    if name not in ENCODINGS:
        raise ShotstreamError(grpc.StatusCode.INVALID_ARGUMENT,
                              f"encoding {name!r} is not one of {', '.join(ENCODINGS)}")
    return ENCODINGS[name]


def decoder_missing(name: str) -> Optional[str]:
    """Why chunks of `name` cannot be decoded here (the package to install), or None."""
    if name not in _DECODER_PACKAGES:
        return None
    module, package = _DECODER_PACKAGES[name]
    try:
        __import__(module)
    except ImportError:
        return (f"encoding {name!r} through grpcio needs the {module} module (Debian: "
                f"apt install {package}); or use the native client (pip install with the "
                f"C++ build dependencies), which decodes it itself")
    return None


def _ibm_to_float(words: np.ndarray) -> np.ndarray:
    """IBM System/360 single-precision words (uint32) to float32."""
    sign = np.where(words >> 31, -1.0, 1.0)
    exponent = ((words >> 24) & 0x7F).astype(np.int32) - 64
    fraction = (words & 0x00FFFFFF).astype(np.float64) / float(1 << 24)
    return (sign * fraction * np.power(16.0, exponent)).astype(np.float32)


def _native_samples(data, fmt: int, big: bool, n: int) -> np.ndarray:
    """NATIVE samples (SEG-Y format `fmt`, n of them) as float32."""
    e = ">" if big else "<"
    if fmt == 1:
        return _ibm_to_float(np.frombuffer(data, dtype=e + "u4", count=n).astype(np.uint32))
    simple = {2: "i4", 3: "i2", 8: "i1", 10: "u4", 11: "u2", 16: "u1"}
    if fmt in simple:
        return np.frombuffer(data, dtype=e + simple[fmt], count=n).astype(np.float32)
    if fmt in (7, 15):  # 24-bit integers
        b = np.frombuffer(data, dtype=np.uint8, count=3 * n).reshape(n, 3).astype(np.int32)
        v = (b[:, 0] << 16 | b[:, 1] << 8 | b[:, 2]) if big else (b[:, 2] << 16 | b[:, 1] << 8 | b[:, 0])
        if fmt == 7:
            v = np.where(v & 0x800000, v - (1 << 24), v)
        return v.astype(np.float32)
    raise ShotstreamError(grpc.StatusCode.DATA_LOSS, f"native chunk of sample format {fmt}")


def _dequantize(data, n: int) -> np.ndarray:
    """A QUANTIZED payload (the proto's layout: float32 step, width, three zero bytes, then
    a blosc buffer of zigzag integers) as n float32, computed as the C++ client does."""
    if len(data) < 8:
        raise ValueError(f"{len(data)} bytes: shorter than its headers")
    step = np.frombuffer(data, dtype="<f4", count=1)[0]
    width = data[4]
    if width not in (1, 2, 4) or any(data[5:8]) or not (np.isfinite(step) and step > 0):
        raise ValueError(f"a header of step {step} and width {width}")
    import blosc
    raw = blosc.decompress(bytes(data[8:]))
    if len(raw) != width * n:
        raise ValueError(f"{len(raw)} bytes where {width * n} were sent")
    z = np.frombuffer(raw, dtype={1: "u1", 2: "<u2", 4: "<u4"}[width]).astype(np.int32)
    q = (z >> 1) ^ -(z & 1)
    return q.astype(np.float32) * np.float32(step)


def decode_chunk(chunk, data, n_samples: int) -> np.ndarray:
    """An encoded chunk's samples as float32 (chunk_traces, n_samples); DATA_LOSS when the
    payload does not hold them."""
    n_traces = chunk.chunk_traces
    n = n_traces * n_samples
    name = ENCODING_NAMES.get(chunk.encoding, str(chunk.encoding))
    try:
        if chunk.encoding == pb.ENCODING_NATIVE:
            width = {1: 4, 2: 4, 3: 2, 7: 3, 8: 1, 10: 4, 11: 2, 15: 3, 16: 1}.get(
                chunk.sample_format, 0)
            if width == 0 or len(data) != n * width:
                raise ValueError(f"{len(data)} bytes for {n} samples of format "
                                 f"{chunk.sample_format}")
            out = _native_samples(data, chunk.sample_format, chunk.big_endian, n)
        elif chunk.encoding == pb.ENCODING_INT16:
            if len(data) != 4 * n_traces + 2 * n:
                raise ValueError(f"{len(data)} bytes for {n_traces} traces of {n_samples}")
            scales = np.frombuffer(data, dtype="<f4", count=n_traces)
            q = np.frombuffer(data, dtype="<i2", count=n, offset=4 * n_traces)
            out = (q.reshape(n_traces, n_samples) * scales[:, None]).astype(np.float32)
        elif chunk.encoding == pb.ENCODING_LOSSLESS:
            import blosc
            raw = blosc.decompress(bytes(data))
            if len(raw) != 4 * n:
                raise ValueError(f"{len(raw)} bytes where {4 * n} were sent")
            out = np.frombuffer(raw, dtype="<f4")
        elif chunk.encoding == pb.ENCODING_QUANTIZED:
            out = _dequantize(data, n)
        elif chunk.encoding == pb.ENCODING_ZFP:
            if n == 0:
                return np.empty((0, n_samples), dtype=np.float32)
            import zfpy
            out = zfpy.decompress_numpy(bytes(data))
            if out.dtype != np.float32 or out.shape != (n_traces, n_samples):
                raise ValueError(f"a {out.dtype} field of shape {out.shape}")
        else:
            raise ValueError("unknown encoding")
    except ImportError:
        raise ShotstreamError(grpc.StatusCode.FAILED_PRECONDITION, decoder_missing(name)) from None
    except Exception as e:  # noqa: BLE001 - whatever a decoder says of bad bytes
        raise ShotstreamError(grpc.StatusCode.DATA_LOSS,
                              f"shot {chunk.shot_id}: {name} chunk: {e}") from None
    return np.asarray(out, dtype=np.float32).reshape(n_traces, n_samples)


def _without_gaps(chunk, data) -> bytes:
    """The samples of a FLOAT32 chunk sent with the stored header between each two of its
    traces (ShotChunk.trace_gap, to requests that set accept_trace_gaps), without them."""
    t, g = 4 * chunk.n_samples, chunk.trace_gap
    if chunk.encoding != pb.ENCODING_FLOAT32 or t == 0 or (len(data) + g) % (t + g):
        raise ShotstreamError(grpc.StatusCode.DATA_LOSS,
                              f"shot {chunk.shot_id}: chunk at byte {chunk.offset}: trace_gap "
                              f"{g} does not fit its {len(data)} bytes")
    k = (len(data) + g) // (t + g)
    a = np.frombuffer(data, dtype=np.uint8)
    return np.lib.stride_tricks.as_strided(a, shape=(k, t), strides=(t + g, 1),
                                           writeable=False).tobytes()


def _dtype(chunk) -> str:
    """The samples' dtype on the wire: little-endian float32 unless the chunk says
    big_endian (sent as stored, only to requests that set accept_big_endian)."""
    return ">f4" if chunk.big_endian else "<f4"


class Assembler:
    """Reassembles chunks into shots with one copy and verifies them: each chunk by its own
    CRC-32 where the server sent one (ShotChunk.chunk_crc32: every chunk checked, in
    order, covering the shot, verifies the shot), else each shot by its CRC-32. With
    pieces=True, a shot whose chunks carry their CRC-32 comes a part at a time: a Shot of
    each chunk's traces (first_trace, shot_traces, last_piece), delivered once checked."""

    def __init__(self, pieces: bool = False) -> None:
        self._buf: Optional[np.ndarray] = None
        self._crc = 0
        self._first = None
        self._lossy = []  # (chunk, payload) of a lossy shot, decoded once verified
        self._pieces = pieces
        self._checked = False  # the shot's chunks carry their own CRC-32s
        self._next = 0  # byte offset (as float32) the next chunk must start at
        self.wire_bytes = 0  # sample bytes received as they travelled

    def _start(self, chunk) -> None:
        n = chunk.n_traces * chunk.n_samples
        if chunk.total_bytes != 4 * n:
            raise ShotstreamError(grpc.StatusCode.DATA_LOSS,
                                  f"shot {chunk.shot_id}: total_bytes {chunk.total_bytes} "
                                  f"!= 4 * {chunk.n_traces} * {chunk.n_samples}")
        self._checked = chunk.HasField("chunk_crc32")
        self._buf = None if (self._pieces and self._checked) else np.empty(n, dtype="<f4")
        self._crc = 0
        self._next = 0
        self._first = chunk
        self._lossy = []

    def _place(self, chunk, out_bytes: int) -> None:
        """Before anything of the chunk is decoded or kept: it starts where the shot's
        previous chunk ended and fits in the shot."""
        if chunk.offset % 4 or chunk.offset != self._next or \
                chunk.offset + out_bytes > self._first.total_bytes:
            raise ShotstreamError(grpc.StatusCode.DATA_LOSS,
                                  f"shot {chunk.shot_id}: chunk at byte {chunk.offset} "
                                  f"where byte {self._next} was due, or past the shot")
        self._next += out_bytes

    def _check(self, chunk, data, out_bytes: int) -> None:
        """Checks a chunk's CRC-32 over `data` (checked shots), or continues the shot's
        CRC-32 with it."""
        first = self._first
        if not self._checked:
            self._crc = crc32(data, self._crc)
            return
        got = crc32(data)
        if not chunk.HasField("chunk_crc32") or got != chunk.chunk_crc32:
            ns = max(first.n_samples, 1)
            a, b = chunk.offset // 4 // ns, (chunk.offset + out_bytes) // 4 // ns
            sent = f"{chunk.chunk_crc32:#010x}" if chunk.HasField("chunk_crc32") else "none"
            raise ShotstreamError(grpc.StatusCode.DATA_LOSS,
                                  f"shot {chunk.shot_id}: traces [{a}, {b}) (the chunk at "
                                  f"byte {chunk.offset}): checksum mismatch (CRC-32 "
                                  f"{got:#010x} received, {sent} sent)")

    def _verified(self, chunk) -> None:
        """At a shot's last chunk: every byte came, and its CRC-32 (or every chunk's) matched."""
        if self._next != self._first.total_bytes:
            raise ShotstreamError(grpc.StatusCode.DATA_LOSS,
                                  f"shot {chunk.shot_id}: {self._next} of "
                                  f"{self._first.total_bytes} bytes came")
        if not self._checked:
            _check_crc(chunk.shot_id, self._crc, chunk.crc32)

    def _part(self, chunk, samples: np.ndarray) -> Shot:
        """A checked chunk as a part of its shot (pieces=True)."""
        first = self._first
        ns = first.n_samples
        samples = samples.reshape(-1, ns) if ns else samples.reshape(0, 0)
        samples.flags.writeable = False
        begin = chunk.offset == 0
        headers = {c.name: np.array(c.values, dtype=np.float64) for c in first.headers} \
            if begin else {}
        part = Shot(first.index, first.shot_id, samples, headers, first.sample_interval_us,
                    _trace_headers(first) if begin else None,
                    ENCODING_NAMES.get(chunk.encoding, "float32"),
                    first_trace=chunk.offset // 4 // max(ns, 1), shot_traces=first.n_traces,
                    last_piece=chunk.last)
        if chunk.last:
            self._verified(chunk)
            self._first = None
        return part

    def _finish(self, chunk) -> Shot:
        first = self._first
        self._verified(chunk)
        ns = first.n_samples
        for c, payload in self._lossy:  # verified: now decoded
            start = c.offset // 4
            self._buf[start:start + c.chunk_traces * ns] = decode_chunk(c, payload, ns).ravel()
        headers = {c.name: np.array(c.values, dtype=np.float64) for c in first.headers}
        samples = self._buf.reshape(first.n_traces, ns)
        samples.flags.writeable = False  # as in the one-message case: the same contract
        shot = Shot(first.index, first.shot_id, samples, headers, first.sample_interval_us,
                    _trace_headers(first), ENCODING_NAMES.get(chunk.encoding, "float32"))
        self._buf = None
        self._first = None
        self._lossy = []
        return shot

    def _add_encoded(self, chunk, data) -> Optional[Shot]:
        if self._first is None:
            self._start(chunk)
        ns = self._first.n_samples
        out_bytes = 4 * chunk.chunk_traces * ns
        self._place(chunk, out_bytes)
        if chunk.encoding in _LOSSY:
            # Lossy: the CRC-32 covers the encoded bytes; nothing is decoded before it
            # matched (the chunk's own, or the shot's).
            payload = bytes(data)
            self._check(chunk, payload, out_bytes)
            if self._checked:
                out = decode_chunk(chunk, payload, ns)
            else:
                self._lossy.append((chunk, payload))
                out = None
        else:
            out = np.ascontiguousarray(decode_chunk(chunk, data, ns))
            self._check(chunk, out, out_bytes)
        if self._buf is None:  # pieces: this chunk is a part
            return self._part(chunk, out)
        if out is not None:
            start = chunk.offset // 4
            self._buf[start:start + out.size] = out.ravel()
        return self._finish(chunk) if chunk.last else None

    def add(self, raw: bytes) -> Optional[Shot]:
        """Returns a Shot (or, with pieces, a part of one) when the raw chunk completes
        one, else None."""
        chunk, data = split_chunk(raw)
        self.wire_bytes += len(data)
        if chunk.trace_gap:
            data = _without_gaps(chunk, data)
        if chunk.encoding != pb.ENCODING_FLOAT32:
            return self._add_encoded(chunk, data)
        if self._first is None and chunk.last and chunk.offset == 0 and \
                len(data) == chunk.total_bytes == 4 * chunk.n_traces * chunk.n_samples:
            # The whole shot in one message: the samples are viewed where gRPC put them.
            _check_crc(chunk.shot_id, crc32(data), chunk.crc32)
            headers = {c.name: np.array(c.values, dtype=np.float64) for c in chunk.headers}
            samples = np.frombuffer(data, dtype=_dtype(chunk)).reshape(chunk.n_traces,
                                                                       chunk.n_samples)
            if chunk.big_endian:
                samples = samples.astype("<f4")
                samples.flags.writeable = False
            return Shot(chunk.index, chunk.shot_id, samples, headers, chunk.sample_interval_us,
                        _trace_headers(chunk), first_trace=0, shot_traces=chunk.n_traces)
        if self._first is None:
            self._start(chunk)
        if len(data) % 4:
            raise ShotstreamError(grpc.StatusCode.DATA_LOSS,
                                  f"shot {chunk.shot_id}: chunk at byte {chunk.offset} "
                                  "overruns the shot")
        self._place(chunk, len(data))
        self._check(chunk, data, len(data))
        samples = np.frombuffer(data, dtype=_dtype(chunk))
        if self._buf is None:  # pieces: this chunk is a part
            return self._part(chunk, samples.astype("<f4") if chunk.big_endian
                              else samples.copy())
        start = chunk.offset
        self._buf[start // 4:(start + len(data)) // 4] = samples
        if not chunk.last:
            return None
        return self._finish(chunk)


# Job tokens (wire/job_token.h has the layout; the same bytes as the C++ client's).
_TOKEN_MAGIC = b"SSJT"
_TOKEN_VERSION = 1
MAX_JOB_TOKEN_BYTES = 256
_FNV_OFFSET, _FNV_PRIME, _M64 = 1469598103934665603, 1099511628211, (1 << 64) - 1


def job_fingerprint(shot_ids) -> int:
    """FNV-1a over the sorted ids' little-endian 8-byte forms (wire::JobFingerprint)."""
    h = _FNV_OFFSET
    for i in sorted(int(s) for s in shot_ids):
        for b in (i & _M64).to_bytes(8, "little"):
            h = ((h ^ b) * _FNV_PRIME) & _M64
    return h


def encode_job_token(dataset: str, job: str, epoch: int, step: int, seed: int,
                     fingerprint: int) -> bytes:
    """A job token (wire::EncodeJobToken); ValueError when the names do not fit."""
    d, j = dataset.encode(), job.encode()
    body = (_TOKEN_MAGIC + bytes([_TOKEN_VERSION]) +
            struct.pack("<QqQQ", int(epoch) & _M64, int(step), int(seed) & _M64,
                        int(fingerprint) & _M64) +
            bytes([len(d)]) + d + bytes([len(j)]) + j)
    if len(d) > 255 or len(j) > 255 or len(body) + 4 > MAX_JOB_TOKEN_BYTES:
        raise ValueError(f"a job token holds at most {MAX_JOB_TOKEN_BYTES} bytes: dataset "
                         f"{dataset!r} and job {job!r} together are too long")
    return body + struct.pack("<I", zlib.crc32(body))


def decode_job_token(token: bytes) -> dict:
    """The fields of a job token (wire::DecodeJobToken); ValueError saying what is wrong."""
    b = bytes(token)
    if b[:4] != _TOKEN_MAGIC:
        raise ValueError(f"resume: not a job token ({len(b)} bytes; a token is what "
                         'commit() returned, starting b"SSJT")')
    if len(b) < 5 or b[4] != _TOKEN_VERSION:
        raise ValueError("resume: a job token of another version")
    if len(b) > MAX_JOB_TOKEN_BYTES or len(b) < 43:
        raise ValueError(f"resume: a job token of {len(b)} bytes is cut or padded")
    dl = b[37]
    ja = 38 + dl
    if ja >= len(b) - 4 or ja + 1 + b[ja] != len(b) - 4:
        raise ValueError(f"resume: a job token of {len(b)} bytes is cut or padded")
    if zlib.crc32(b[:-4]) != struct.unpack("<I", b[-4:])[0]:
        raise ValueError("resume: the job token was altered (its CRC-32 does not match "
                         "its bytes)")
    epoch, step, seed, fingerprint = struct.unpack("<QqQQ", b[5:37])
    return dict(dataset=b[38:38 + dl].decode(), job=b[ja + 1:ja + 1 + b[ja]].decode(),
                epoch=epoch, step=step, seed=seed, fingerprint=fingerprint)

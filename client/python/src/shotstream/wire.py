"""The ShotChunk wire format on the Python side: raw chunk bytes split into metadata and
samples without copying the samples, shots reassembled with one copy, every shot's CRC-32
verified. The C++ codec is wire/chunk_codec; both read exactly a serialized ShotChunk."""

from __future__ import annotations

import ctypes
import ctypes.util
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


def _dtype(chunk) -> str:
    """The samples' dtype on the wire: little-endian float32 unless the chunk says
    big_endian (sent as stored, only to requests that set accept_big_endian)."""
    return ">f4" if chunk.big_endian else "<f4"


class Assembler:
    """Reassembles chunks into shots with one copy, and verifies each shot's CRC-32."""

    def __init__(self) -> None:
        self._buf: Optional[np.ndarray] = None
        self._crc = 0
        self._first = None

    def add(self, raw: bytes) -> Optional[Shot]:
        """Returns a Shot when the raw chunk completes one, else None."""
        chunk, data = split_chunk(raw)
        if self._buf is None and chunk.last and chunk.offset == 0 and \
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
        self._crc = crc32(data, self._crc)
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

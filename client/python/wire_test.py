"""shotstream.wire against protobuf's own serialization: chunks split without parsing the
samples, shots reassembled from several chunks (either byte order), CRC-32 checked."""

import os
import struct
import unittest
import zlib

import grpc
import numpy as np

from shotstream import ShotstreamError
from shotstream import wire
from shotstream.v1 import shotstream_pb2 as pb


def chunks(samples, per_chunk, big_endian=False, crc=None, shot_id=7):
    """Serialized ShotChunks of `samples` (n_traces, n_samples), `per_chunk` traces each."""
    raw = samples.astype(">f4" if big_endian else "<f4").tobytes()
    n_traces, n_samples = samples.shape
    step = per_chunk * n_samples * 4
    out = []
    for k, off in enumerate(range(0, len(raw), step)):
        last = off + step >= len(raw)
        c = pb.ShotChunk(index=0, shot_id=shot_id, n_traces=n_traces, n_samples=n_samples,
                         sample_interval_us=2000, offset=off, total_bytes=len(raw), last=last,
                         big_endian=big_endian, samples=raw[off:off + step])
        if k == 0:
            c.headers.add(name="offset", values=list(range(n_traces)))
        if last:
            c.crc32 = zlib.crc32(raw) if crc is None else crc
        out.append(c.SerializeToString())
    return out


class WireTest(unittest.TestCase):
    def setUp(self):
        self.samples = np.arange(5 * 33, dtype=np.float32).reshape(5, 33) - 40.5

    def test_split_leaves_the_samples_out_of_the_metadata(self):
        raw = chunks(self.samples, 5)[0]
        meta, data = wire.split_chunk(raw)
        self.assertEqual(meta.shot_id, 7)
        self.assertEqual(meta.samples, b"")
        self.assertEqual(bytes(data), self.samples.tobytes())
        self.assertEqual(list(meta.headers[0].values), [0, 1, 2, 3, 4])

    def test_shots_of_one_or_several_chunks_either_byte_order(self):
        for per_chunk in (5, 2, 1):
            for big in (False, True):
                asm = wire.Assembler()
                got = [asm.add(c) for c in chunks(self.samples, per_chunk, big)]
                self.assertTrue(all(g is None for g in got[:-1]))
                shot = got[-1]
                np.testing.assert_array_equal(shot.samples, self.samples)
                self.assertEqual(shot.samples.dtype, np.dtype("<f4"))
                self.assertFalse(shot.samples.flags.writeable)
                np.testing.assert_array_equal(shot.headers["offset"], np.arange(5))

    def test_a_checksum_mismatch_is_data_loss(self):
        asm = wire.Assembler()
        with self.assertRaises(ShotstreamError) as e:
            for c in chunks(self.samples, 2, crc=12345):
                asm.add(c)
        self.assertEqual(e.exception.code(), grpc.StatusCode.DATA_LOSS)
        self.assertIn("checksum mismatch", e.exception.details())

    def test_truncated_bytes_are_data_loss(self):
        raw = chunks(self.samples, 5)[0]
        with self.assertRaises(ShotstreamError) as e:
            wire.split_chunk(raw[:-10])
        self.assertEqual(e.exception.code(), grpc.StatusCode.DATA_LOSS)

    def test_chunks_sent_with_the_gaps_between_traces_come_without_them(self):
        # As the server sends a file's traces to a request with accept_trace_gaps: each
        # chunk's samples with the (stored) bytes between two traces, skipped here; the
        # CRC-32s are of the samples alone.
        for big in (False, True):
            raw = self.samples.astype(">f4" if big else "<f4").tobytes()
            ts, gap = 33 * 4, 12
            out = []
            for k, first in enumerate(range(0, 5, 2)):
                traces = [raw[t * ts:(t + 1) * ts] for t in range(first, min(first + 2, 5))]
                data = (b"\xee" * gap).join(traces)
                c = pb.ShotChunk(shot_id=7, n_traces=5, n_samples=33, offset=first * ts,
                                 total_bytes=len(raw), last=first + 2 >= 5, big_endian=big,
                                 trace_gap=gap if len(traces) > 1 else 0, samples=data,
                                 chunk_crc32=zlib.crc32(b"".join(traces)))
                if c.last:
                    c.crc32 = zlib.crc32(raw)
                out.append(c.SerializeToString())
            asm = wire.Assembler()
            shot = [asm.add(c) for c in out][-1]
            np.testing.assert_array_equal(shot.samples, self.samples)
            self.assertEqual(asm.wire_bytes, len(raw) + 2 * gap)
        # A gap that does not fit the chunk's bytes.
        bad = pb.ShotChunk(shot_id=7, n_traces=2, n_samples=33, total_bytes=264, last=True,
                           trace_gap=5, samples=b"\0" * 264)
        with self.assertRaises(ShotstreamError) as e:
            wire.Assembler().add(bad.SerializeToString())
        self.assertEqual(e.exception.code(), grpc.StatusCode.DATA_LOSS)
        self.assertIn("trace_gap", e.exception.details())

    def test_the_crc_is_zlibs(self):
        data = np.random.default_rng(1).integers(0, 255, 100_001, dtype=np.uint8).tobytes()
        self.assertEqual(wire.crc32(data), zlib.crc32(data))
        self.assertEqual(wire.crc32(data[50:], wire.crc32(data[:50])), zlib.crc32(data))


class NativeDecodeTest(unittest.TestCase):
    """The numpy decoders of NATIVE chunks against values written by hand."""

    def decode(self, fmt, big, data, n):
        c = pb.ShotChunk(shot_id=1, n_traces=1, n_samples=n, encoding=pb.ENCODING_NATIVE,
                         sample_format=fmt, big_endian=big, chunk_traces=1)
        return wire.decode_chunk(c, data, n).ravel()

    def test_integers_of_every_width_and_order(self):
        v = np.array([0, 1, -1, 127, -128, 100], dtype=np.int64)
        for fmt, dtype in [(2, "i4"), (3, "i2"), (8, "i1")]:
            for big in (True, False):
                raw = v.astype((">" if big else "<") + dtype).tobytes()
                np.testing.assert_array_equal(self.decode(fmt, big, raw, len(v)), v)
        u = np.array([0, 1, 255, 200], dtype=np.int64)
        for fmt, dtype in [(10, "u4"), (11, "u2"), (16, "u1")]:
            np.testing.assert_array_equal(self.decode(fmt, True, u.astype(">" + dtype).tobytes(),
                                                      len(u)), u)

    def test_int24_both_orders_and_signs(self):
        v = [0, 1, -1, 8388607, -8388608, 1234567]
        be = b"".join((x & 0xFFFFFF).to_bytes(3, "big") for x in v)
        le = b"".join((x & 0xFFFFFF).to_bytes(3, "little") for x in v)
        np.testing.assert_array_equal(self.decode(7, True, be, len(v)), v)
        np.testing.assert_array_equal(self.decode(7, False, le, len(v)), v)
        np.testing.assert_array_equal(self.decode(15, True, (8388608).to_bytes(3, "big"), 1),
                                      [8388608])  # unsigned

    def test_ibm(self):
        # The IBM words of 100.0, -1.0, 0.5 and 0.
        words = np.array([0x42640000, 0xC1100000, 0x40800000, 0], dtype=">u4").tobytes()
        np.testing.assert_array_equal(self.decode(1, True, words, 4), [100.0, -1.0, 0.5, 0.0])

    def test_wrong_size_is_data_loss(self):
        with self.assertRaises(ShotstreamError) as cm:
            self.decode(3, True, b"\x00" * 5, 4)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.DATA_LOSS)


class QuantizedDecodeTest(unittest.TestCase):
    """The grpcio path's QUANTIZED decoder against payloads built from the proto's layout
    alone (step, width, three zero bytes, then a c-blosc frame of zigzag integers)."""

    def payload(self, q, width, step):
        import blosc
        import struct
        z = (np.asarray(q, dtype=np.int64) << 1) ^ (np.asarray(q, dtype=np.int64) >> 63)
        raw = z.astype({1: "u1", 2: "<u2", 4: "<u4"}[width]).tobytes()
        return struct.pack("<fB3x", step, width) + blosc.compress(
            raw, typesize=width, cname="lz4", shuffle=blosc.BITSHUFFLE, clevel=5)

    def decode(self, data, n_traces, n_samples):
        c = pb.ShotChunk(shot_id=3, n_traces=n_traces, n_samples=n_samples,
                         encoding=pb.ENCODING_QUANTIZED, chunk_traces=n_traces)
        return wire.decode_chunk(c, data, n_samples)

    def test_every_width_and_sign(self):
        for width, q in [(1, [0, 1, -1, 63, -64, 5]), (2, [0, 300, -300, 32767, -32768, 7]),
                         (4, [0, 1 << 20, -(1 << 20), 123456, -654321, 9])]:
            got = self.decode(self.payload(q, width, 0.25), 2, 3)
            self.assertEqual(got.dtype, np.float32)
            np.testing.assert_array_equal(got.ravel(), np.float32(q) * np.float32(0.25))

    def test_bad_headers_and_sizes_are_data_loss(self):
        good = self.payload([1, 2, 3, 4], 2, 0.5)
        bad = [good[:4] + b"\x03" + good[5:],             # width 3
               good[:5] + b"\x01" + good[6:],             # a pad byte set
               b"\x00\x00\x00\x00" + good[4:],            # step 0
               good[:8],                                 # no frame
               self.payload([1, 2, 3], 2, 0.5)]          # 3 samples for 4
        for data in bad:
            with self.assertRaises(ShotstreamError) as cm:
                self.decode(data, 2, 2)
            self.assertEqual(cm.exception.code(), grpc.StatusCode.DATA_LOSS)
            self.assertIn("quantized chunk", str(cm.exception))


def golden_path(name):
    root = os.environ.get("TEST_SRCDIR", "")
    return os.path.join(root, os.environ.get("TEST_WORKSPACE", "shotstream"), "client",
                        "testdata", name)


def golden_chunks():
    """client/testdata/golden_chunks.bin: each chunk's bytes (a uint32 LE length first)."""
    with open(golden_path("golden_chunks.bin"), "rb") as f:
        data = f.read()
    out, at = [], 0
    while at < len(data):
        (n,) = struct.unpack_from("<I", data, at)
        out.append(data[at + 4:at + 4 + n])
        at += 4 + n
    return out


def golden_shots():
    """golden_chunks.txt: (shot_id, encoding, n_traces, n_samples, divisor, bound) a shot."""
    with open(golden_path("golden_chunks.txt")) as f:
        rows = [line.split() for line in f if line.strip() and not line.startswith("#")]
    return [(int(a), e, int(t), int(s), int(d), float(b)) for a, e, t, s, d, b in rows]


def golden_original(shot_id, n_traces, n_samples, divisor):
    t = np.arange(n_traces, dtype=np.int64)[:, None]
    s = np.arange(n_samples, dtype=np.int64)[None, :]
    k = (t * 131 + s * 17 + shot_id * 7) % 2001 - 1000
    return k.astype(np.float32) / np.float32(divisor)


class GoldenChunksTest(unittest.TestCase):
    """The golden chunk stream the C++ assembler also reads (//client:golden_chunks_test):
    the Python fallback's mirror of the protocol, pinned."""

    def assemble(self, chunks, pieces=False):
        asm = wire.Assembler(pieces)
        return [s for s in (asm.add(c) for c in chunks) if s is not None]

    def test_every_shot_assembles_to_its_originals(self):
        shots = self.assemble(golden_chunks())
        want = golden_shots()
        self.assertEqual(len(shots), len(want))
        for shot, (sid, encoding, n_traces, n_samples, divisor, bound) in zip(shots, want):
            with self.subTest(shot=sid, encoding=encoding):
                self.assertEqual(shot.shot_id, sid)
                self.assertEqual(shot.samples.shape, (n_traces, n_samples))
                self.assertEqual(shot.samples.dtype, np.float32)
                self.assertEqual(shot.encoding, encoding)
                np.testing.assert_array_equal(shot.headers["offset"],
                                              100 + 12.5 * np.arange(n_traces))
                if n_traces == 0:  # no bytes of trace headers: None, as the native path
                    self.assertIsNone(shot.trace_headers)
                else:
                    self.assertEqual(shot.trace_headers.shape, (n_traces, 240))
                    np.testing.assert_array_equal(shot.trace_headers.ravel(),
                                                  np.arange(n_traces * 240) % 251)
                err = np.abs(shot.samples.astype(np.float64) -
                             golden_original(sid, n_traces, n_samples, divisor))
                worst = float(err.max()) if err.size else 0.0
                self.assertLessEqual(worst, bound)
                if bound == 0:
                    self.assertEqual(worst, 0.0)

    def test_parts_of_a_pieces_stream_equal_the_whole_shots(self):
        chunks = golden_chunks()
        whole = self.assemble(chunks)
        parts = self.assemble(chunks, pieces=True)
        self.assertEqual(len(parts), len(chunks))  # every golden chunk carries its CRC-32
        it = iter(parts)
        for shot in whole:
            got = []
            while True:
                part = next(it)
                self.assertEqual((part.shot_id, part.first_trace, part.shot_traces),
                                 (shot.shot_id, sum(len(p) for p in got), len(shot.samples)))
                got.append(part.samples)
                if part.last_piece:
                    break
            np.testing.assert_array_equal(np.concatenate(got).reshape(shot.samples.shape),
                                          shot.samples)

    def test_a_flipped_byte_is_data_loss_naming_the_shot(self):
        chunks = golden_chunks()
        for k, c in enumerate(chunks):
            meta, data = wire.split_chunk(c)
            if not len(data):
                continue
            bad = list(chunks)
            bad[k] = c[:-1] + bytes([c[-1] ^ 1])
            with self.subTest(chunk=k, shot=meta.shot_id):
                with self.assertRaises(ShotstreamError) as e:
                    self.assemble(bad)
                self.assertEqual(e.exception.code(), grpc.StatusCode.DATA_LOSS)
                self.assertIn(f"shot {meta.shot_id}", e.exception.details())


if __name__ == "__main__":
    unittest.main()

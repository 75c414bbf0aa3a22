"""Real files through the real server, with default settings.

1. Every one of segyio's 90 public test files (../shared/testdata/segyio) served as its own
   dataset: trace and sample counts, sample interval and format as golden.json says, and
   every sample of every trace bit for bit against an independent numpy decoder of the raw
   bytes (itself checked against golden.json's sums and first samples); the files golden.json
   says must fail answer FAILED_PRECONDITION with their reason. Fails when the files are
   missing.
2. Real-world header quirks, each in a file written by segyio and patched with numpy:
   trace-header sample counts that disagree with the binary header, revision words that
   are no revision, a binary sample interval of 0, two-digit years, ASCII and EBCDIC
   textual headers, a stray trailing byte and a truncated last trace, and files that
   start with a trace header (PASSCAL, SU named .sgy).
"""

import math
import os
import shutil
import struct
import sys
import tempfile
import unittest

import grpc
import numpy as np
import segyio

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
import harness  # noqa: E402
import shotstream  # noqa: E402
import testdata_dir  # noqa: E402

GOLDEN_DIR = testdata_dir.SEGYIO_TESTDATA_DIR

# SEG-Y sample format code -> numpy dtype of the stored value (big-endian form).
_DTYPES = {1: ">u4", 2: ">i4", 3: ">i2", 4: ">u4", 5: ">f4", 6: ">f8", 8: ">i1", 9: ">i8",
           10: ">u4", 11: ">u2", 12: ">u8", 16: ">u1"}


def decode(raw, fmt, endian):
    """float64 values and their float32 form of one trace's sample bytes, by the SEG-Y
    rules alone (no shotstream code): IBM and format 4 arithmetically, integers cast."""
    e = ">" if endian == "big" else "<"
    if fmt in (7, 15):
        b = np.frombuffer(raw, np.uint8).reshape(-1, 3).astype(np.int64)
        v = (b[:, 0] << 16 | b[:, 1] << 8 | b[:, 2]) if e == ">" else \
            (b[:, 2] << 16 | b[:, 1] << 8 | b[:, 0])
        if fmt == 7:
            v = np.where(v >= 1 << 23, v - (1 << 24), v)
        v = v.astype(np.int32)
        return v.astype(np.float64), v.astype(np.float32)
    w = np.frombuffer(raw, _DTYPES[fmt].replace(">", e))
    if fmt == 1:
        w = w.astype(np.int64)
        sign = np.where(w >> 31 & 1, -1.0, 1.0)
        exp = (w >> 24 & 0x7F) - 64
        v = sign * np.ldexp((w & 0xFFFFFF).astype(np.float64), 4 * exp - 24)
        return v, v.astype(np.float32)
    if fmt == 4:
        w = w.astype(np.int64)
        mantissa = (w & 0xFFFF).astype(np.uint16).view(np.int16).astype(np.float64)
        v = np.ldexp(mantissa, -(w >> 16 & 0xFF))
        return v, v.astype(np.float32)
    return w.astype(np.float64), w.astype(np.float32)


def read_raw(path, g):
    """(float64 samples, float32 samples, FieldRecord, offset) of every trace of a golden
    file, decoded from its bytes with the layout golden.json gives."""
    with open(path, "rb") as f:
        data = f.read()
    su = path.endswith(".su")
    first = 0 if su else g.get("first_trace_offset") or 3600 + 3200 * (g["ext_headers"] or 0)
    headers = 240 * (g.get("trace_headers_per_trace") or 1)
    fmt, ns, n = g["format"], g["samples"], g["traces"]
    bps = {1: 4, 2: 4, 3: 2, 4: 4, 5: 4, 6: 8, 7: 3, 8: 1, 9: 8, 10: 4, 11: 2, 12: 8, 15: 3,
           16: 1}[fmt]
    e = ">" if g["endian"] == "big" else "<"
    f64 = np.zeros((n, ns))
    f32 = np.zeros((n, ns), np.float32)
    ffid = np.zeros(n, np.int64)
    offset = np.zeros(n, np.int64)
    for t in range(n):
        at = first + t * (headers + ns * bps)
        ffid[t], = struct.unpack_from(e + "i", data, at + 8)
        offset[t], = struct.unpack_from(e + "i", data, at + 36)
        f64[t], f32[t] = decode(data[at + headers:at + headers + ns * bps], fmt, g["endian"])
    return f64, f32, ffid, offset


def dataset_name(i):
    return f"g{i:02d}"


class SegyioCorpusTest(unittest.TestCase):
    """segyio's public test files through the server binary, with default settings."""

    @classmethod
    def setUpClass(cls):
        if not GOLDEN_DIR or not os.path.isfile(os.path.join(GOLDEN_DIR, "golden.json")):
            raise AssertionError("../shared/testdata/segyio is missing: this test needs "
                                 "segyio's public test files beside the checkout")
        import json
        with open(os.path.join(GOLDEN_DIR, "golden.json")) as f:
            cls.golden = json.load(f)
        args = [f"--dataset={dataset_name(i)}={os.path.join(GOLDEN_DIR, g['file'])}"
                for i, g in enumerate(cls.golden)]
        cls.server = harness.Server(args)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def test_golden_file_count(self):
        self.assertEqual(len(self.golden), 90)

    def test_every_file_reads_to_its_golden_values_or_fails_with_a_reason(self):
        read = refused = 0
        for native in harness.client_paths():
            with shotstream.Client(self.server.target, native=native) as c:
                states = {d.name: d for d in c.list_datasets()}
                self.assertEqual(len(states), 90)
                for i, g in enumerate(self.golden):
                    with self.subTest(file=g["file"], native=native):
                        read_now = self.check_file(c, states[dataset_name(i)], g)
                        read += read_now
                        refused += not read_now
        paths = len(harness.client_paths())
        self.assertEqual(read + refused, 90 * paths)
        self.assertEqual(refused, 2 * paths)  # broken.sgy and mapping-empty.sgy, each path

    def check_file(self, c, summary, g):
        name, path = summary.name, os.path.join(GOLDEN_DIR, g["file"])
        if g["expect_error"]:
            self.assertEqual(summary.state, "FAILED")
            self.assertIn(g["file"].split("/")[-1], summary.error)
            with self.assertRaises(shotstream.ShotstreamError) as e:
                c.dataset(name)
            self.assertEqual(e.exception.code(), grpc.StatusCode.FAILED_PRECONDITION)
            self.assertIn("byte", e.exception.details())
            with self.assertRaises(shotstream.ShotstreamError) as e:
                list(c.stream(name, [0]))
            self.assertEqual(e.exception.code(), grpc.StatusCode.FAILED_PRECONDITION)
            return False
        self.assertEqual(summary.state, "READY", summary.error)
        info = c.dataset(name)
        self.assertEqual(info.n_traces, g["traces"])
        self.assertEqual(info.n_samples, g["samples"])
        self.assertEqual(info.sample_interval_us, g["dt_us"])
        self.assertEqual(info.sample_format, g["format"])
        if g["traces"] == 0:  # text.sgy: the header alone
            self.assertEqual(list(info.shot_ids), [])
            return True
        f64, f32, ffid, offset = read_raw(path, g)
        # The decoder agrees with golden.json: the values every sample is held against.
        self.assertLessEqual(abs(math.fsum(f64.ravel()) - g["sum"]),
                             max(1e-6, abs(g["sum"]) * 1e-9))
        np.testing.assert_allclose(f64[0, :len(g["first_samples"])], g["first_samples"],
                                   rtol=1e-9)
        self.assertEqual(sorted(set(ffid.tolist())), list(info.shot_ids))
        got = {}
        for shot in c.stream(name, info.shot_ids, headers=["field_record", "offset"]):
            got[shot.shot_id] = shot
        for sid in info.shot_ids:
            rows = np.flatnonzero(ffid == sid)  # traces of a shot in file order
            shot = got[int(sid)]
            self.assertEqual(shot.samples.shape, (len(rows), g["samples"]))
            np.testing.assert_array_equal(shot.samples.view(np.uint32),
                                          f32[rows].view(np.uint32), err_msg=str(sid))
            np.testing.assert_array_equal(shot.headers["field_record"], ffid[rows])
            np.testing.assert_array_equal(shot.headers["offset"], offset[rows])
        return True


def write_segy(path, n_traces=6, ns=40, dt=2000, fmt=5, shots=2, textual=None):
    """A big-endian SEG-Y file written by segyio: FieldRecord 1..shots, offsets, samples
    exact in every format used here; returns the samples."""
    rng = np.random.default_rng(7)
    samples = np.round(rng.standard_normal((n_traces, ns)) * 1000).astype(np.float32)
    spec = segyio.spec()
    spec.format = fmt
    spec.samples = np.arange(ns) * dt / 1000.0
    spec.tracecount = n_traces
    spec.sorting = None
    with segyio.create(path, spec) as f:
        f.bin.update(hdt=dt, hns=ns, format=fmt)
        if textual is not None:
            f.text[0] = textual
        for t in range(n_traces):
            f.header[t] = {segyio.TraceField.FieldRecord: 1 + t * shots // n_traces,
                           segyio.TraceField.offset: 100 * t,
                           segyio.TraceField.TRACE_SAMPLE_COUNT: ns,
                           segyio.TraceField.TRACE_SAMPLE_INTERVAL: dt}
            f.trace[t] = samples[t]
    return samples


def patch(path, at, fmt, *values):
    with open(path, "r+b") as f:
        f.seek(at)
        f.write(struct.pack(fmt, *values))


class RealWorldHeadersTest(unittest.TestCase):
    """Files with the header quirks of real recordings, written here, read by the server."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        cls.expect = {}   # dataset -> samples it must serve
        cls.refuse = {}   # dataset -> what its error must say
        cls.interval = {}
        ns, trace = 40, 240 + 40 * 4

        def add(name, **kw):
            path = os.path.join(cls.tmp, name + ".sgy")
            cls.expect[name] = write_segy(path, ns=ns, **kw)
            return path

        # Trace-header sample counts (115-116) that disagree with the binary header.
        for name, count in (("trace_ns_zero", 0), ("trace_ns_larger", 75),
                            ("trace_ns_smaller", 7)):
            p = add(name)
            for t in range(6):
                patch(p, 3600 + t * trace + 114, ">H", count)
        # The binary header's count is wrong, the trace headers' right.
        p = add("binary_ns_wrong")
        patch(p, 3220, ">H", 41)
        # Revision words that are no revision: decimal 100 ("1.00"), garbage.
        for name, word in (("revision_100", 100), ("revision_garbage", 0xABCD)):
            p = add(name)
            patch(p, 3500, ">H", word)
            patch(p, 3506, ">h", 12)  # rev 2's additional trace headers: ignored
        # A binary sample interval of 0, the trace headers' set.
        p = add("binary_dt_zero", dt=500)
        patch(p, 3216, ">h", 0)
        cls.interval["binary_dt_zero"] = 500
        # Two-digit years in the trace headers (bytes 157-158).
        p = add("two_digit_years")
        for t in range(6):
            patch(p, 3600 + t * trace + 156, ">h", 98 + t % 3)
        # ASCII and EBCDIC textual headers (segyio writes EBCDIC; ASCII patched in).
        add("textual_ebcdic", textual=b"C 1 SURVEY WRITTEN BY SEGYIO".ljust(3200))
        p = add("textual_ascii")
        with open(p, "r+b") as f:
            f.write(b"C 1 ASCII TEXTUAL HEADER, AS MANY MODERN WRITERS PRODUCE".ljust(3200))
        # A stray trailing byte; a truncated last trace.
        p = os.path.join(cls.tmp, "stray_byte.sgy")
        write_segy(p, ns=ns)
        with open(p, "ab") as f:
            f.write(b"\0")
        cls.refuse["stray_byte"] = f"byte {3600 + 6 * trace}: "
        p = os.path.join(cls.tmp, "truncated.sgy")
        write_segy(p, ns=ns)
        os.truncate(p, 3600 + 6 * trace - 100)
        cls.refuse["truncated"] = f"byte {3600 + 5 * trace}: "
        # Files that start with a trace header: PASSCAL single-trace, SU named .sgy.
        p = os.path.join(cls.tmp, "passcal.sgy")
        h = bytearray(240)
        struct.pack_into(">H", h, 114, 2000)
        struct.pack_into(">h", h, 204, 0)
        with open(p, "wb") as f:
            f.write(bytes(h) + np.arange(2000, dtype=">i2").tobytes())
        cls.refuse["passcal"] = "looks like a PASSCAL single-trace SEG-Y file"
        su = os.path.join(cls.tmp, "seismic_unix.sgy")
        write_segy(os.path.join(cls.tmp, "for_su.sgy.tmp"), ns=ns)
        with open(os.path.join(cls.tmp, "for_su.sgy.tmp"), "rb") as f, open(su, "wb") as out:
            out.write(f.read()[3600:])
        cls.refuse["seismic_unix"] = "looks like a Seismic Unix file"

        args = [f"--dataset={n}={cls.tmp}/{n}.sgy" for n in list(cls.expect) + list(cls.refuse)]
        cls.server = harness.Server(args)
        cls.client = shotstream.Client(cls.server.target)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.server.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_quirky_headers_read_exactly(self):
        for name, samples in self.expect.items():
            with self.subTest(dataset=name):
                info = self.client.dataset(name)
                self.assertEqual(info.n_traces, 6)
                self.assertEqual(info.n_samples, 40)
                self.assertEqual(info.sample_interval_us, self.interval.get(name, 2000))
                got = np.concatenate([s.samples for s in self.client.stream(name, [1, 2])])
                np.testing.assert_array_equal(got, samples)

    def test_bad_files_fail_with_file_byte_and_reason_and_the_rest_is_served(self):
        states = {d.name: d for d in self.client.list_datasets()}
        for name, says in self.refuse.items():
            with self.subTest(dataset=name):
                self.assertEqual(states[name].state, "FAILED")
                self.assertIn(f"{name}.sgy", states[name].error)
                self.assertIn(says, states[name].error)
                with self.assertRaises(shotstream.ShotstreamError) as e:
                    self.client.dataset(name)
                self.assertEqual(e.exception.code(), grpc.StatusCode.FAILED_PRECONDITION)
                self.assertIn(says, e.exception.details())
        for name in self.expect:
            self.assertEqual(states[name].state, "READY", states[name].error)

    def test_disagreements_are_said_once_per_dataset_on_stderr(self):
        for name in ("trace_ns_larger", "trace_ns_smaller", "binary_ns_wrong", "revision_100",
                     "revision_garbage"):
            log = self.server.said(f"dataset {name}: note:")
        for name in ("trace_ns_larger", "trace_ns_smaller"):
            lines = [l for l in log.splitlines() if l.startswith(f"dataset {name}: note:")]
            self.assertEqual(len(lines), 1, log)
            self.assertIn("6 of 6 trace headers give another sample count", lines[0])
        self.assertNotIn("dataset trace_ns_zero: note:", log)
        self.assertIn("dataset binary_ns_wrong: note:", log)
        self.assertIn("40 from the first trace header (bytes 115-116)", log)
        for name in ("revision_100", "revision_garbage"):
            self.assertIn(f"dataset {name}: note:", log)
            self.assertIn("read as rev 1", log)

    def test_strict_mode_refuses_disagreeing_trace_headers(self):
        with harness.Server([f"--dataset=d={self.tmp}/trace_ns_larger.sgy",
                             f"--dataset=zero={self.tmp}/trace_ns_zero.sgy",
                             "--check_trace_lengths"]) as server, \
                shotstream.Client(server.target) as c:
            with self.assertRaises(shotstream.ShotstreamError) as e:
                c.dataset("d")
            self.assertEqual(e.exception.code(), grpc.StatusCode.FAILED_PRECONDITION)
            self.assertIn("its header says 75 samples", e.exception.details())
            self.assertEqual(c.dataset("zero").n_traces, 6)


if __name__ == "__main__":
    unittest.main()

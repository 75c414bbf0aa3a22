"""Windows, trace conditions and encodings through the real server: every encoding x
window x condition on IBM, int16, int8 and IEEE big- and little-endian surveys, through
both Python paths and the C++ client (its CLI), against slicing the float32 stream
(itself checked against segyio and numpy): exact encodings bit for bit, lossy ones
within their bounds, sample by sample. NaN, infinity, denormals and silent traces keep
their contracts; the AVX2 and the portable (forced) codec paths give the same bytes. Bad
requests fail before any data; a corrupted compressed chunk is DATA_LOSS; a stream with a
window and an encoding resumes across a server restart."""

import json
import os
import random
import shutil
import sys
import tempfile
import unittest

import grpc
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
import harness  # noqa: E402
import synth  # noqa: E402

import shotstream  # noqa: E402
from shotstream.errors import ShotstreamError  # noqa: E402
from shotstream.v1 import shotstream_pb2 as pb  # noqa: E402
from shotstream.v1 import shotstream_pb2_grpc as pb_grpc  # noqa: E402

ENCODINGS = ["float32", "native", "lossless", "int16", "zfp", "quantized", "auto"]
SHOTS = [11, 12, 13]
NT, NS = 24, 120
WINDOWS = [None, (17, 77)]
# offset runs from -1000 by 25 per trace: this keeps traces 4..11 of each shot.
WHERES = [None, {"offset": (-900.0, -725.0)}]
TOLERANCE = 1e-3


def write_le_survey(path, shots, traces_per_shot, n_samples, seed):
    """IEEE float32 little-endian SEG-Y (synth.write_le_segy); offset runs from -1000 by 25
    per trace, as harness.write_survey has it."""
    rng = np.random.default_rng(seed)
    data = (rng.standard_normal((len(shots), traces_per_shot, n_samples)) * 100).astype("<f4")
    offsets = np.array([r * 25 - 1000 for r in range(traces_per_shot)], dtype=np.float64)
    synth.write_le_segy(path, data, shots, offsets)
    return {s: (data[k].astype(np.float32), {"offset": offsets}) for k, s in enumerate(shots)}


def select(samples, headers, window, where):
    """What a window and conditions leave of a shot: (samples, offsets)."""
    keep = np.ones(samples.shape[0], dtype=bool)
    for name, (lo, hi) in (where or {}).items():
        keep &= (headers[name] >= lo) & (headers[name] <= hi)
    out = samples[keep]
    if window is not None:
        out = out[:, window[0]:window[1]]
    return out, headers["offset"][keep]


def check_values(test, got, want, encoding, what):
    """`encoding`: how the shot travelled; "auto" (the CLI, which does not say) is held to
    what auto with TOLERANCE promises: within TOLERANCE x RMS."""
    test.assertEqual(got.dtype, np.float32, what)
    test.assertEqual(got.shape, want.shape, what)
    if got.size == 0:
        return
    if encoding == "auto":
        encoding = "quantized"
    if encoding == "int16":
        peak = np.abs(want).max(axis=1, keepdims=True)
        # Traces below 32767 x FLT_MIN go as zeros (the proto's INT16).
        bound = np.where(peak < 32767 * np.finfo(np.float32).tiny, peak,
                         peak / 32767 * (1 + 1e-6))
        test.assertTrue(np.all(np.abs(got - want) <= bound), what)
    elif encoding in ("zfp", "quantized"):
        rms = float(np.sqrt(np.mean(want.astype(np.float64) ** 2)))
        test.assertLessEqual(float(np.abs(got - want).max()), TOLERANCE * rms * (1 + 1e-6), what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


class EncodingTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        cls.expected = {}
        for name, fmt in [("ibm", 1), ("int16", 3), ("int8", 8), ("ieee_be", 5)]:
            path = os.path.join(cls.tmp, f"{name}.sgy")
            harness.write_survey(path, fmt, SHOTS, NT, NS, seed=fmt)
            cls.expected[name] = harness.segyio_shots([path])
        cls.expected["ieee_le"] = write_le_survey(os.path.join(cls.tmp, "ieee_le.sgy"), SHOTS, NT,
                                                  NS, seed=7)
        cls.server = harness.Server([f"--dataset={n}={cls.tmp}/{n}.sgy" for n in cls.expected])
        cls.client = {native: shotstream.Client(cls.server.target, native=native)
                      for native in harness.client_paths()}
        # The reference: the float32 stream, itself checked against the independent reading.
        cls.float32 = {}
        for name, shots in cls.expected.items():
            got = list(cls.client[harness.client_paths()[0]].stream(name, SHOTS,
                                                                     headers=["offset"]))
            for shot in got:
                samples, headers = shots[shot.shot_id]
                np.testing.assert_array_equal(shot.samples, samples, err_msg=name)
                np.testing.assert_array_equal(shot.headers["offset"], headers["offset"])
            cls.float32[name] = {s.shot_id: (np.array(s.samples), dict(s.headers)) for s in got}

    @classmethod
    def tearDownClass(cls):
        for c in cls.client.values():
            c.close()
        cls.server.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_every_combination_through_both_python_paths(self):
        for native, client in self.client.items():
            for name, ref in self.float32.items():
                for encoding in ENCODINGS:
                    for window in WINDOWS:
                        for where in WHERES:
                            what = f"{'native' if native else 'grpcio'} {name} {encoding} " \
                                   f"window={window} where={where}"
                            shots = list(client.stream(name, SHOTS, headers=["offset"],
                                                       window=window, where=where,
                                                       encoding=encoding, tolerance=TOLERANCE))
                            self.assertEqual([s.shot_id for s in shots], SHOTS, what)
                            for s in shots:
                                want, offsets = select(*ref[s.shot_id], window, where)
                                # auto with a tolerance: exact if it sent an exact encoding,
                                # else within the tolerance (INT16 picked by auto is too).
                                held_to = s.encoding
                                if encoding == "auto" and s.encoding in ("int16", "zfp"):
                                    held_to = "quantized"
                                check_values(self, s.samples, want, held_to, what)
                                np.testing.assert_array_equal(s.headers["offset"], offsets)
                                if encoding not in ("auto", "native"):
                                    self.assertEqual(s.encoding, encoding, what)

    def test_native_sends_integers_as_stored_and_says_so(self):
        for native, client in self.client.items():
            before = client.wire_bytes
            shots = list(client.stream("int16", SHOTS, encoding="native"))
            self.assertTrue(all(s.encoding == "native" for s in shots))
            self.assertEqual(client.wire_bytes - before, len(SHOTS) * NT * NS * 2)  # 2 bytes
            before = client.wire_bytes
            shots = list(client.stream("ieee_be", SHOTS, encoding="native"))
            self.assertTrue(all(s.encoding == "float32" for s in shots))  # IEEE goes as is
            self.assertEqual(client.wire_bytes - before, len(SHOTS) * NT * NS * 4)

    def test_shots_that_lose_every_trace(self):
        for native, client in self.client.items():
            for encoding in ENCODINGS:
                shots = list(client.stream("ibm", SHOTS, headers=["offset"],
                                           where={"offset": (1e6, 2e6)}, encoding=encoding,
                                           window=(3, 9)))
                self.assertEqual([s.shot_id for s in shots], SHOTS)
                for s in shots:
                    self.assertEqual(s.samples.shape, (0, 6), encoding)
                    self.assertEqual(len(s.headers["offset"]), 0)

    def test_cpp_client_every_combination(self):
        target = self.server.target
        os.makedirs(os.path.join(self.tmp, "cpp"), exist_ok=True)
        for name, ref in self.float32.items():
            for encoding in ENCODINGS:
                for window in WINDOWS:
                    for where in WHERES:
                        what = f"C++ {name} {encoding} window={window} where={where}"
                        out = os.path.join(self.tmp, "cpp", f"{name}_{encoding}_{window}_{where}")
                        args = ["fetch", f"--target={target}", f"--dataset={name}",
                                f"--out={out}", "--headers=offset", f"--encoding={encoding}",
                                f"--tolerance={TOLERANCE}", "--progress=false"]
                        if window:
                            args.append(f"--window={window[0]}:{window[1]}")
                        for h, (lo, hi) in (where or {}).items():
                            args.append(f"--where={h}:{lo}:{hi}")
                        harness.cli(*args)
                        for sid in SHOTS:
                            want, offsets = select(*ref[sid], window, where)
                            check_values(self, np.load(f"{out}/shot_{sid}.npy"), want,
                                         encoding, what)
                            np.testing.assert_array_equal(
                                np.load(f"{out}/shot_{sid}.offset.npy"), offsets)

    def test_cpp_bench_reports_wire_bytes(self):
        res = harness.cli("bench", f"--target={self.server.target}", "--dataset=int16",
                          "--encoding=native", "--window=0:60")
        line = json.loads(res.stdout.strip().splitlines()[-1])
        self.assertEqual(line["bytes"], len(SHOTS) * NT * 60 * 4)
        self.assertEqual(line["wire_bytes"], len(SHOTS) * NT * 60 * 2)
        self.assertEqual(line["encoding"], "native")

    def test_bad_requests_fail_before_any_data(self):
        stub = pb_grpc.ShotStreamStub(grpc.insecure_channel(self.server.target))
        cases = [
            (dict(window=pb.SampleWindow(start=50, stop=40)), "window"),
            (dict(window=pb.SampleWindow(start=0, stop=NS + 1)), "window"),
            (dict(where=[pb.TraceCondition(header="no_such_field", low=0, high=1)]),
             "where[0].header"),
            (dict(where=[pb.TraceCondition(header="offset", low=5, high=1)]), "where[0]"),
            (dict(encoding=99), "encoding"),
            (dict(tolerance=-1), "tolerance"),
        ]
        for fields, named in cases:
            req = pb.StreamShotsRequest(dataset="ibm", shot_ids=SHOTS,
                                        selection=pb.ShotSelection(**fields))
            chunks = []
            with self.assertRaises(grpc.RpcError) as cm:
                for chunk in stub.StreamShots(req):
                    chunks.append(chunk)
            self.assertEqual(cm.exception.code(), grpc.StatusCode.INVALID_ARGUMENT, fields)
            self.assertIn(named, cm.exception.details())
            self.assertEqual(chunks, [], fields)
        for native, client in self.client.items():
            with self.assertRaises(ShotstreamError) as cm:
                list(client.stream("ibm", SHOTS, encoding="gzip"))
            self.assertEqual(cm.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)

    def test_grpcio_path_names_the_package_it_lacks(self):
        from shotstream import wire
        saved = sys.modules.get("blosc")
        sys.modules["blosc"] = None  # import blosc now fails, as where it is not installed
        try:
            with shotstream.Client(self.server.target, native=False) as c:
                with self.assertRaises(ShotstreamError) as cm:
                    list(c.stream("ibm", SHOTS, encoding="lossless"))
                self.assertEqual(cm.exception.code(), grpc.StatusCode.FAILED_PRECONDITION)
                self.assertIn("python3-blosc", str(cm.exception))
                self.assertIsNotNone(wire.decoder_missing("lossless"))
                # auto keeps to what this path decodes.
                shots = list(c.stream("ibm", SHOTS, encoding="auto"))
                self.assertTrue(all(s.encoding != "lossless" for s in shots))
        finally:
            if saved is None:
                del sys.modules["blosc"]
            else:
                sys.modules["blosc"] = saved

    def test_corrupted_compressed_chunk_is_data_loss(self):
        path = os.path.join(self.tmp, "ibm.sgy")
        with harness.Server([f"--dataset=d={path}", "--testing_corrupt_shot=12"]) as server:
            for native in harness.client_paths():
                for encoding in ("lossless", "zfp", "int16", "quantized", "native"):
                    with shotstream.Client(server.target, native=native) as c:
                        with self.assertRaises(ShotstreamError) as cm:
                            list(c.stream("d", SHOTS, encoding=encoding))
                        self.assertEqual(cm.exception.code(), grpc.StatusCode.DATA_LOSS,
                                         f"{encoding} native={native}")
            res = harness.cli("fetch", f"--target={server.target}", "--dataset=d",
                              f"--out={self.tmp}/corrupt", "--encoding=lossless",
                              "--progress=false", check=False)
            self.assertNotEqual(res.returncode, 0)
            self.assertIn("DATA_LOSS", res.stderr)

    def test_nan_infinity_denormals_and_silent_traces(self):
        """Shots holding NaN or infinity go lossless (bit for bit, NaN included) under every
        lossy encoding; denormals and all-zero traces stay within the bounds."""
        rng = np.random.default_rng(3)
        data = (rng.standard_normal((4, NT, NS)) * 100).astype("<f4")
        data[0, 5, 7] = np.nan
        data[1, NT - 1, NS - 1] = -np.inf  # the last sample of the shot
        data[2, 3, :] = np.float32(1e-42)  # denormals, a trace of them
        data[2, 4, ::2] = -np.float32(1e-45)
        data[3, :, :] = 0
        data[2, 9, :] = 0
        ids = [1, 2, 3, 4]
        path = os.path.join(self.tmp, "special.sgy")
        synth.write_le_segy(path, data, ids, np.zeros(NT))
        with harness.Server([f"--dataset=s={path}"]) as server:
            for native in harness.client_paths():
                with shotstream.Client(server.target, native=native) as c:
                    for encoding in ("int16", "zfp", "quantized", "lossless"):
                        what = f"{encoding} native={native}"
                        got = {s.shot_id: s for s in c.stream("s", ids, encoding=encoding,
                                                              tolerance=TOLERANCE)}
                        for k in (0, 1):  # non-finite: sent lossless, exact
                            self.assertEqual(got[ids[k]].encoding, "lossless", what)
                            self.assertEqual(got[ids[k]].samples.tobytes(), data[k].tobytes(),
                                             what)
                        self.assertEqual(got[3].encoding, encoding, what)
                        check_values(self, got[3].samples, data[2], encoding, what)
                        if encoding != "zfp":  # a transform coder: within its bound only
                            np.testing.assert_array_equal(got[3].samples[9], 0, err_msg=what)
                        np.testing.assert_array_equal(got[4].samples, 0, err_msg=what)

    def test_portable_and_vector_codecs_agree(self):
        """SHOTSTREAM_SIMD=portable on the server and in the CLI: the same samples as the
        default (AVX2 where the CPU has it), bit for bit, for the encodings whose inner
        loops have both paths."""
        path = os.path.join(self.tmp, "ieee_le.sgy")
        portable = dict(os.environ, SHOTSTREAM_SIMD="portable")
        with harness.Server([f"--dataset=d={path}"], env=portable) as slow, \
                harness.Server([f"--dataset=d={path}"]) as fast:
            for encoding in ("int16", "quantized"):
                outs = []
                for server, env in ((slow, {"SHOTSTREAM_SIMD": "portable"}), (fast, None)):
                    out = os.path.join(self.tmp, f"simd_{encoding}_{len(outs)}")
                    harness.cli("fetch", f"--target={server.target}", "--dataset=d",
                                f"--out={out}", f"--encoding={encoding}",
                                f"--tolerance={TOLERANCE}", "--progress=false", env=env)
                    outs.append([np.load(f"{out}/shot_{sid}.npy") for sid in SHOTS])
                for a, b in zip(*outs):
                    self.assertEqual(a.tobytes(), b.tobytes(), encoding)
                for a, sid in zip(outs[0], SHOTS):
                    check_values(self, a, self.float32["ieee_le"][sid][0], encoding, encoding)

    def test_resume_after_server_restart_with_window_and_encoding(self):
        d = os.path.join(self.tmp, "big")
        synth.write_survey(d, n_shots=30, traces_per_shot=250, n_samples=2000, n_files=2, fmt=5)
        port = harness.free_port()
        args = [f"--dataset=d={d}/*.sgy", f"--listen=127.0.0.1:{port}"]
        order = list(range(1, 31)) * 40
        random.Random(5).shuffle(order)
        rc, out, err = harness.bench_across_a_restart(
            args, port, "d", order, "--queue_depth=1", "--retries=5", "--window=100:1700",
            "--encoding=lossless")
        self.assertEqual(rc, 0, err)
        line = json.loads(out.strip().splitlines()[-1])
        self.assertGreaterEqual(line["reconnects"], 1)
        self.assertTrue(line["in_order"])
        self.assertEqual(line["shots"], len(order))
        self.assertEqual(line["checksums_verified"], len(order))
        self.assertEqual(line["bytes"], len(order) * 250 * 1600 * 4)  # none lost, none twice
        self.assertEqual(line["encoding"], "lossless")


if __name__ == "__main__":
    unittest.main()

"""The Python client against real server processes: formats, checksums, resume after a
server restart, and routing over several servers.

Run twice (tests/BUILD.bazel): streaming through the native extension, the package's
default, and with --grpcio through the generated grpcio stubs alone."""

import glob
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import grpc
import numpy as np

if "--grpcio" in sys.argv:
    sys.argv.remove("--grpcio")
    os.environ["SHOTSTREAM_NATIVE"] = "0"  # read at import; inherited by subprocesses
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
import harness  # noqa: E402
import shotstream  # noqa: E402
import synth  # noqa: E402
from shotstream.v1 import shotstream_pb2 as pb  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PythonClientTest(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_the_first_native_client_tunes_unless_told_not_to(self):
        # A fresh interpreter: importing the package leaves the process's gRPC and malloc
        # settings alone; the first native Client sets tune()'s (SHOTSTREAM_TUNE=0: not);
        # tune() after it warns that gRPC already read them. (The C environment, which
        # setenv changes and os.environ does not see.)
        code = ("import ctypes, warnings, shotstream\n"
                "libc = ctypes.CDLL(None); libc.getenv.restype = ctypes.c_char_p\n"
                "env = lambda: (libc.getenv(b'GRPC_EXPERIMENTS') or b'None').decode()\n"
                "print(env())\n"
                "c = shotstream.Client('127.0.0.1:1'); c.close()\n"
                "print(env())\n"
                "with warnings.catch_warnings(record=True) as w:\n"
                "    warnings.simplefilter('always')\n"
                "    print(shotstream.tune(), len(w), w and str(w[0].message)[:40])\n")
        env = {k: v for k, v in os.environ.items() if k != "GRPC_EXPERIMENTS"}
        env["PYTHONPATH"] = os.pathsep.join(sys.path)
        native = shotstream.client._native is not None
        for off in (False, True):
            res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                 env=dict(env, SHOTSTREAM_TUNE="0") if off else env,
                                 timeout=60)
            self.assertEqual(res.returncode, 0, res.stderr)
            imported, client, late = res.stdout.splitlines()
            self.assertEqual(imported, "None")
            self.assertEqual(client, "-tcp_read_chunks" if native and not off else "None")
            if native:
                self.assertEqual(late, "True 1 shotstream.tune() after the first native")
            else:
                self.assertEqual(late, "False 0 []")

    def test_a_metadata_call_that_gets_no_answer_ends_at_its_timeout(self):
        # A gRPC server that takes ListDatasets and GetDataset and answers neither until
        # the test ends: timeout= bounds the wait (DEADLINE_EXCEEDED), on either path.
        from concurrent import futures
        release = threading.Event()

        def never(request, context):
            release.wait()
            return pb.ListDatasetsResponse()

        handlers = {m: grpc.unary_unary_rpc_method_handler(
            never, request_deserializer=lambda b: b, response_serializer=lambda m: b"")
            for m in ("ListDatasets", "GetDataset")}
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler("shotstream.v1.ShotStream", handlers),))
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        try:
            with shotstream.Client(f"127.0.0.1:{port}", timeout=0.5) as c:
                for call in (c.list_datasets, lambda: c.dataset("d"),
                             lambda: next(c.dataset_pages("d"))):
                    with self.assertRaises(shotstream.ShotstreamError) as e:
                        call()
                    self.assertEqual(e.exception.code(), grpc.StatusCode.DEADLINE_EXCEEDED)
            with self.assertRaisesRegex(ValueError, "timeout"):
                shotstream.Client(f"127.0.0.1:{port}", timeout=0)
        finally:
            release.set()
            server.stop(None)

    def test_the_binding_takes_keywords_and_raises_shotstream_errors(self):
        native = shotstream.client._native
        if native is None:
            self.skipTest("no native extension on this path")
        harness.write_survey(os.path.join(self.tmp, "b.sgy"), 5, [3, 4], 5, 40)
        oracle = harness.segyio_shots([os.path.join(self.tmp, "b.sgy")])
        with harness.Server([f"--dataset=d={self.tmp}/b.sgy"]) as server:
            c = native.Client([server.target], connect_timeout=5.0)
            shots = list(c.stream("d", [4, 3], queue_depth=1, window=(2, 30),
                                  headers=["offset"], where=[("offset", -1e9, 1e9)]))
            self.assertEqual([s.shot_id for s in shots], [4, 3])
            for s in shots:
                np.testing.assert_array_equal(s.samples, oracle[s.shot_id][0][:, 2:30])
                self.assertFalse(s.samples.flags.writeable)
                self.assertIsInstance(s, shotstream.Shot)
            job = list(c.stream_job("d", "j", [3, 4], seed=7, queue_depth=1))
            self.assertEqual(sorted(s.shot_id for s in job), [3, 4])
            self.assertEqual(c.dataset("d")["n_shots"], 2)
            with self.assertRaises(shotstream.ShotstreamError) as e:
                c.dataset("nope")
            self.assertEqual(e.exception.code(), grpc.StatusCode.NOT_FOUND)
            with self.assertRaises(TypeError):  # keyword-only options
                c.stream("d", [3], 1)
            c.close()
            with self.assertRaises(shotstream.ShotstreamError) as e:
                c.dataset("d")
            self.assertEqual(e.exception.code(), grpc.StatusCode.FAILED_PRECONDITION)

    def test_streams_take_the_path_this_run_asks_for(self):
        pkg = os.path.dirname(shotstream.__file__)
        # Sanitizer builds ship an empty _native.so (python3 cannot load their objects); a
        # pip install names it _native.cpython-*.so, or leaves it out and says why.
        built = any(os.path.getsize(f) > 0 for f in glob.glob(os.path.join(pkg, "_native*.so")))
        want = built and os.environ.get("SHOTSTREAM_NATIVE") != "0"
        with shotstream.Client("127.0.0.1:1") as c:
            self.assertEqual(c.native, want)
        with shotstream.Client("127.0.0.1:1", native=False) as c:
            self.assertFalse(c.native)
        if want:
            # The C++ client takes every TLS form: system roots and mTLS stay native.
            with shotstream.Client("127.0.0.1:1", tls=True) as c:
                self.assertTrue(c.native)
            with shotstream.Client("127.0.0.1:1", tls={"cert": b"x", "key": b"y"}) as c:
                self.assertTrue(c.native)
        else:
            with self.assertRaisesRegex(ValueError, "native=True"):
                shotstream.Client("127.0.0.1:1", native=True)

    def test_shots_outlive_their_stream_and_client_and_are_read_only(self):
        harness.write_survey(os.path.join(self.tmp, "k.sgy"), 5, list(range(1, 7)), 12, 300)
        oracle = harness.segyio_shots([os.path.join(self.tmp, "k.sgy")])
        with harness.Server([f"--dataset=d={self.tmp}/k.sgy"]) as server:
            c = shotstream.Client(server.target)
            # Leaving a stream early (break) cancels it; the next stream is unaffected.
            for shot in c.stream("d", [1, 2, 3, 4, 5, 6], queue_depth=3):
                if shot.shot_id == 2:
                    break
            kept = list(c.stream("d", [6, 5, 4, 3, 2, 1, 6], headers=["offset"]))
            c.close()
            with self.assertRaises(shotstream.ShotstreamError) as e:
                c.stream("d", [1])
            self.assertEqual(e.exception.code(), grpc.StatusCode.FAILED_PRECONDITION)
            del c
            import gc
            gc.collect()
            self.assertEqual([s.shot_id for s in kept], [6, 5, 4, 3, 2, 1, 6])
            self.assertEqual([s.index for s in kept], list(range(7)))
            for s in kept:
                np.testing.assert_array_equal(s.samples, oracle[s.shot_id][0])
                np.testing.assert_array_equal(s.headers["offset"],
                                              oracle[s.shot_id][1]["offset"])
                self.assertEqual(s.samples.dtype, np.float32)
                self.assertFalse(s.samples.flags.writeable)
                with self.assertRaises(ValueError):
                    s.samples[0, 0] = 1.0
                s.headers["offset"][0] = -1.0  # headers are the caller's
            with shotstream.Client(server.target) as c2:
                with self.assertRaises(shotstream.ShotstreamError) as e:
                    list(c2.stream("nope", [1]))
                self.assertEqual(e.exception.code(), grpc.StatusCode.NOT_FOUND)
                self.assertIn("nope", e.exception.details())
                with self.assertRaises(shotstream.ShotstreamError) as e:
                    list(c2.stream("d", [1, 77]))
                self.assertEqual(e.exception.code(), grpc.StatusCode.NOT_FOUND)
                self.assertIn("77", e.exception.details())
                self.assertEqual(list(c2.stream("d", [])), [])

    def test_formats_exact_against_segyio(self):
        # segyio 1.8.3 is trustworthy for big-endian formats 1, 2, 3, 5 and 8.
        for fmt in (1, 2, 3, 5, 8):
            with self.subTest(format=fmt):
                d = os.path.join(self.tmp, f"f{fmt}")
                os.makedirs(d)
                # numpy writes (segyio 1.8.3 writes formats 3 and 8 wrongly); segyio reads.
                synth.write_survey(d, n_shots=3, traces_per_shot=11, n_samples=123,
                                   n_files=2, fmt=fmt, seed=fmt)
                oracle = harness.segyio_shots(glob.glob(os.path.join(d, "*.sgy")))
                self.assertEqual(sorted(oracle), [1, 2, 3])
                with harness.Server([f"--dataset=d={d}/*.sgy"]) as server, \
                        shotstream.Client(server.target) as c:
                    self.assertEqual(c.dataset("d").sample_format, fmt)
                    for shot in c.stream("d", [3, 1, 2, 3], headers=["offset", "group_x"]):
                        samples, headers = oracle[shot.shot_id]
                        np.testing.assert_array_equal(shot.samples, samples)
                        np.testing.assert_array_equal(shot.headers["offset"], headers["offset"])
                        np.testing.assert_array_equal(shot.headers["group_x"],
                                                      headers["group_x"])

    def test_checksum_mismatch_is_detected_and_names_the_shot(self):
        harness.write_survey(os.path.join(self.tmp, "c.sgy"), 5, [1, 2, 3], 8, 64)
        with harness.Server([f"--dataset=d={self.tmp}/c.sgy", "--testing_corrupt_shot=2"]) \
                as server, shotstream.Client(server.target) as c:
            # Shots in one message and in 1 KiB chunks: both paths check.
            for chunk in (64 << 20, 1024):
                got = []
                with self.assertRaises(shotstream.ShotstreamError) as e:
                    for shot in c.stream("d", [1, 2, 3], max_chunk_bytes=chunk):
                        got.append(shot.shot_id)
                self.assertEqual(e.exception.code(), grpc.StatusCode.DATA_LOSS)
                self.assertIn("shot 2", e.exception.details())
                self.assertIn("checksum mismatch", e.exception.details())
                self.assertEqual(got, [1])
            res = harness.cli("bench", f"--target={server.target}", "--dataset=d",
                              "--shots=1,2", check=False)
            self.assertNotEqual(res.returncode, 0)
            self.assertIn("checksum mismatch", res.stderr)

    def test_resume_after_server_restart_delivers_every_shot_once_in_order(self):
        d = os.path.join(self.tmp, "big")
        # ~120 MB: more than the transport buffers, so the kill lands mid-stream.
        synth.write_survey(d, n_shots=60, traces_per_shot=250, n_samples=2000, n_files=2,
                           fmt=5)
        port = free_port()
        args = [f"--dataset=d={d}/*.sgy", f"--listen=127.0.0.1:{port}"]
        server = harness.Server(args)
        order = list(range(1, 61))
        random.Random(1).shuffle(order)
        restarted = []
        try:
            with shotstream.Client(server.target, retries=5) as c:
                got = []
                for shot in c.stream("d", order, queue_depth=1):
                    got.append((shot.shot_id, float(shot.samples.sum(dtype=np.float64)),
                                shot.samples.shape))
                    if len(got) == 3 and not restarted:
                        server.stop(signal.SIGKILL)
                        server = harness.Server(args)
                        restarted.append(True)
                self.assertGreaterEqual(c.reconnects, 1)
        finally:
            server.stop()
        self.assertEqual([g[0] for g in got], order)
        # Bit-exact against a fresh read of every shot after the fact.
        with harness.Server([f"--dataset=d={d}/*.sgy"]) as s2, shotstream.Client(s2.target) as c2:
            ref = {s.shot_id: float(s.samples.sum(dtype=np.float64))
                   for s in c2.stream("d", list(range(1, 61)))}
        for sid, total, shape in got:
            self.assertEqual(total, ref[sid])
            self.assertEqual(shape, (250, 2000))

    def test_several_targets_with_disjoint_files(self):
        dirs = []
        all_paths = []
        for k in range(3):
            d = os.path.join(self.tmp, f"node{k}")
            os.makedirs(d)
            shots = [10 * k + 1, 10 * k + 2, 10 * k + 3]
            p = os.path.join(d, f"part{k}.sgy")
            harness.write_survey(p, 1, shots, 9, 77, seed=k)
            dirs.append(d)
            all_paths.append(p)
        oracle = harness.segyio_shots(all_paths)
        servers = [harness.Server([f"--dataset=line={d}/*.sgy"]) for d in dirs]
        try:
            with shotstream.Client([s.target for s in servers]) as c:
                info = c.dataset("line")
                self.assertEqual(sorted(info.shot_ids), sorted(oracle))
                self.assertEqual(info.n_traces, 81)
                # The listing says the same union as dataset(), not the first target's.
                listed = {d.name: d for d in c.list_datasets()}
                self.assertEqual((listed["line"].n_shots, listed["line"].n_traces), (9, 81))
                order = sorted(oracle) * 2
                random.Random(2).shuffle(order)
                got = list(c.stream("line", order, headers=["group_x"]))
                self.assertEqual([s.shot_id for s in got], order)
                for s in got:
                    np.testing.assert_array_equal(s.samples, oracle[s.shot_id][0])
                    np.testing.assert_array_equal(s.headers["group_x"],
                                                  oracle[s.shot_id][1]["group_x"])
                with self.assertRaises(shotstream.ShotstreamError) as e:
                    list(c.stream("line", [1, 999]))
                self.assertEqual(e.exception.code(), grpc.StatusCode.NOT_FOUND)
        finally:
            for s in servers:
                s.stop()

    def test_dns_target_expands_to_every_address(self):
        import socket

        def fake(host, port, type=None):
            self.assertEqual(host, "shotstream.storage.svc")
            return [(socket.AF_INET, type, 6, "", ("10.0.0.1", port)),
                    (socket.AF_INET, type, 6, "", ("10.0.0.2", port)),
                    (socket.AF_INET, type, 6, "", ("10.0.0.1", port)),
                    (socket.AF_INET6, type, 6, "", ("fd00::3", port, 0, 0))]
        self.assertEqual(
            shotstream.expand_targets(["dns:///shotstream.storage.svc:50051", "h:1"], fake),
            ["10.0.0.1:50051", "10.0.0.2:50051", "[fd00::3]:50051", "h:1"])
        # A real resolution of a loopback name, used for streaming.
        harness.write_survey(os.path.join(self.tmp, "n.sgy"), 5, [1, 2], 4, 16)
        with harness.Server([f"--dataset=d={self.tmp}/n.sgy"]) as server:
            port = server.target.rsplit(":", 1)[1]
            with shotstream.Client(f"dns:///127.0.0.1:{port}") as c:
                self.assertEqual([s.shot_id for s in c.stream("d", [2, 1])], [2, 1])

    def test_torch_is_optional_and_imported_lazily(self):
        res = subprocess.run([sys.executable, "-c",
                              "import sys, shotstream; print('torch' in sys.modules)"],
                             capture_output=True, text=True, env=self.env())
        self.assertEqual(res.stdout.strip(), "False", res.stderr)
        # Without torch (hidden where it is installed): a clear ImportError.
        res = subprocess.run([sys.executable, "-c",
                              "import sys; sys.modules['torch'] = None; import shotstream.torch"],
                             capture_output=True, text=True, env=self.env())
        self.assertNotEqual(res.returncode, 0)
        self.assertIn("shotstream.torch needs PyTorch", res.stderr)

    def test_torch_dataset_over_two_workers_and_cpu_stager(self):
        try:
            import torch
        except ImportError:
            self.skipTest("torch is not installed (Debian: python3-torch)")
        from shotstream.torch import DeviceStager, ShotDataset
        d = os.path.join(self.tmp, "t")
        os.makedirs(d)
        synth.write_survey(d, n_shots=6, traces_per_shot=9, n_samples=77, n_files=2, fmt=1)
        oracle = harness.segyio_shots(glob.glob(os.path.join(d, "*.sgy")))
        ids = [1, 2, 3, 4, 5, 6, 2]
        with harness.Server([f"--dataset=d={d}/*.sgy"]) as server:
            ds = ShotDataset(server.target, "d", ids, queue_depth=2, headers=["offset"])
            # Each worker process streams its share; spawn keeps gRPC out of a fork.
            loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2,
                                                 multiprocessing_context="spawn")
            stager = DeviceStager("cpu")
            got = []
            for shot in loader:
                got.append(shot.shot_id)
                samples, headers = oracle[shot.shot_id]
                np.testing.assert_array_equal(shot.samples, samples)
                np.testing.assert_array_equal(shot.headers["offset"], headers["offset"])
                x = stager.stage(shot.samples)
                self.assertIsInstance(x, torch.Tensor)
                self.assertEqual(tuple(x.shape), samples.shape)
                np.testing.assert_array_equal(x.numpy(), samples)
                x.mul_(2.0)  # the staged tensor is the caller's to change
                np.testing.assert_array_equal(shot.samples, samples)
        self.assertEqual(sorted(got), sorted(ids))

    def test_torch_cuda_stager_on_a_cpu_torch_batches_and_worker_errors(self):
        try:
            import torch
        except ImportError:
            self.skipTest("torch is not installed (Debian: python3-torch)")
        if torch.cuda.is_available():
            self.skipTest("a GPU is here: the CPU fallback is not what runs")
        from shotstream.torch import DeviceStager, ShotBatch, ShotDataset
        d = os.path.join(self.tmp, "b")
        os.makedirs(d)
        synth.write_survey(d, n_shots=4, traces_per_shot=6, n_samples=40, n_files=1, fmt=5)
        oracle = harness.segyio_shots(glob.glob(os.path.join(d, "*.sgy")))
        with harness.Server([f"--dataset=d={d}/*.sgy"]) as server:
            # The README's DeviceStager("cuda") on a CPU-only torch: CPU copies.
            stager = DeviceStager("cuda")
            shot = next(iter(shotstream.Client(server.target).stream("d", [2])))
            x = stager.stage(shot.samples)
            self.assertEqual(x.device.type, "cpu")
            np.testing.assert_array_equal(x.numpy(), oracle[2][0])
            # len() and batches of equal-shaped shots through DataLoader's own collation.
            ds = ShotDataset(server.target, "d", [1, 2, 3, 4], headers=["offset"])
            self.assertEqual(len(ds), 4)
            loader = torch.utils.data.DataLoader(ds, batch_size=2, num_workers=2,
                                                 multiprocessing_context="spawn")
            batches = list(loader)
            self.assertEqual(len(batches), 2)
            seen = []
            for b in batches:
                self.assertIsInstance(b, ShotBatch)
                self.assertEqual(tuple(b.samples.shape), (2, 6, 40))
                for i, sid in enumerate(b.shot_ids.tolist()):
                    seen.append(sid)
                    np.testing.assert_array_equal(b.samples[i].numpy(), oracle[sid][0])
                    np.testing.assert_array_equal(b.headers["offset"][i].numpy(),
                                                  oracle[sid][1]["offset"])
            self.assertEqual(sorted(seen), [1, 2, 3, 4])
            # An error in a worker keeps its type and code.
            bad = ShotDataset(server.target, "d", [1, 99])
            with self.assertRaises(shotstream.ShotstreamError) as e:
                list(torch.utils.data.DataLoader(bad, batch_size=None, num_workers=1,
                                                 multiprocessing_context="spawn"))
            self.assertEqual(e.exception.code(), grpc.StatusCode.NOT_FOUND)
            self.assertIn("99", e.exception.details())

    def test_token_from_the_environment(self):
        tokens = os.path.join(self.tmp, "tokens")
        with open(tokens, "w") as f:
            f.write("s3cret\n")
        harness.write_survey(os.path.join(self.tmp, "e.sgy"), 5, [1], 2, 8)
        with harness.Server([f"--dataset=d={self.tmp}/e.sgy",
                             f"--auth_token_file={tokens}"]) as server:
            os.environ["SHOTSTREAM_TOKEN"] = "s3cret"
            try:
                with shotstream.Client(server.target) as c:
                    self.assertEqual(len(list(c.stream("d", [1]))), 1)
            finally:
                del os.environ["SHOTSTREAM_TOKEN"]
            with shotstream.Client(server.target) as c:
                with self.assertRaises(shotstream.ShotstreamError) as e:
                    c.list_datasets()
                self.assertEqual(e.exception.code(), grpc.StatusCode.UNAUTHENTICATED)

    def test_setup_py_builds_an_importable_package(self):
        src = os.path.dirname(harness.runfile("client/python/setup.py"))
        build = os.path.join(self.tmp, "build")
        # The stubs and the sources (the extension's build is //tests:pip_install_test's).
        res = subprocess.run([sys.executable, "setup.py", "-q", "build", "--build-base", build],
                             cwd=src, capture_output=True, text=True,
                             env=dict(os.environ, SHOTSTREAM_BUILD_NATIVE="0"))
        if res.returncode != 0 and "setuptools" in res.stderr:
            self.skipTest("python3-setuptools not installed")
        self.assertEqual(res.returncode, 0, res.stderr)
        res = subprocess.run([sys.executable, "-c", "import shotstream.v1.shotstream_pb2_grpc, "
                              "shotstream; print(shotstream.Client.__name__)"],
                             capture_output=True, text=True, cwd=self.tmp,
                             # build/lib, or build/lib.PLATFORM for a package with extensions
                             env=dict(os.environ, PYTHONPATH=glob.glob(os.path.join(build, "lib*"))[0]))
        self.assertEqual(res.stdout.strip(), "Client", res.stderr)

    def test_example_fwi_loop(self):
        synth.write_survey(os.path.join(self.tmp, "ex"), n_shots=5, traces_per_shot=10,
                           n_samples=50, n_files=1, fmt=5)
        with harness.Server([f"--dataset=d={self.tmp}/ex/*.sgy"]) as server:
            res = subprocess.run(
                [sys.executable, harness.runfile("client/python/examples/fwi_loop.py"),
                 f"--target={server.target}", "--dataset=d", "--iterations=2"],
                capture_output=True, text=True, env=self.env(), timeout=120)
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(res.stdout.count("5 shots"), 2)

    def env(self):
        pkg = os.path.dirname(os.path.dirname(shotstream.__file__))
        return dict(os.environ, PYTHONPATH=pkg)

    def test_caller_pausing_between_shots_gets_every_shot_in_order(self):
        # The receive thread goes on while the caller holds a shot (computes); the pause
        # must not lose or reorder anything.
        harness.write_survey(os.path.join(self.tmp, "o.sgy"), 5, list(range(1, 9)), 8, 64)
        with harness.Server([f"--dataset=d={self.tmp}/o.sgy"]) as server, \
                shotstream.Client(server.target) as c:
            gen = c.stream("d", list(range(1, 9)), queue_depth=4)
            first = next(gen)
            time.sleep(0.5)  # the caller's compute on `first`
            rest = list(gen)
            self.assertEqual([first.shot_id] + [s.shot_id for s in rest], list(range(1, 9)))


    def test_checksum_agrees_with_zlib_on_any_length_and_split(self):
        import zlib
        from shotstream import wire
        crc32 = wire.crc32
        # This machine has libisal2 (tools/install_deps.sh), so the fast kernel is in use.
        self.assertEqual(crc32.implementation, "isa-l")
        data = np.random.default_rng(3).integers(0, 256, 1 << 20, dtype=np.uint8).tobytes()
        view = memoryview(data)
        for n in (0, 1, 15, 64, 4097, len(data)):
            want = zlib.crc32(data[:n])
            self.assertEqual(crc32(view[:n]), want, n)
            third = n // 3
            self.assertEqual(crc32(view[third:n], crc32(view[:third])), want, n)
        self.assertEqual(crc32(b"123456789"), 0xCBF43926)


if __name__ == "__main__":
    unittest.main()

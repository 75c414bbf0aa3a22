"""Writing shots back (WriteShots) through the real server: round trips exact for every
format offered, through both Python client objects and the C++ client (`shotstream put`),
read back through the server and by segyio from the written file; every error of the
contract; a writer SIGKILLed mid-write and a server SIGKILLed mid-write leave nothing
visible (the server removes its temporaries at the next start); concurrent writes, and a
write racing a read of another dataset; metrics."""

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import grpc
import numpy as np
import segyio

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
import harness  # noqa: E402
from harness import wait_for  # noqa: E402

import shotstream  # noqa: E402
from shotstream.v1 import shotstream_pb2 as pb  # noqa: E402
from shotstream.v1 import shotstream_pb2_grpc as pb_grpc  # noqa: E402

NS = 64


def modelled(ids, n_traces=9, seed=0, scale=100.0):
    """(shot_id, samples, headers) tuples as a modelling code would yield them."""
    rng = np.random.default_rng(seed)
    for sid in ids:
        samples = (rng.standard_normal((n_traces, NS)) * scale).astype(np.float32)
        headers = {"offset": np.arange(n_traces) * 25.0 - 100.0,
                   "source_x": np.full(n_traces, 1000.5 + sid),
                   "group_x": 1000.25 + np.arange(n_traces) * 12.5}
        yield sid, samples, headers


def temporaries(d):
    return [f for f in os.listdir(d) if ".partial-" in f]


class WriteTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        cls.out = os.path.join(cls.tmp, "written")
        cls.field = os.path.join(cls.tmp, "field.sgy")
        harness.write_survey(cls.field, 5, [1, 2, 3], 12, NS, seed=3)
        cfg = os.path.join(cls.tmp, "server.yaml")
        with open(cfg, "w") as f:
            f.write(f"write_dir: {cls.out}\nmetrics_listen: 127.0.0.1:0\n"
                    f"datasets: [{{name: field, files: {cls.field}}}]\n")
        cls.server, cls.clients = harness.server_with_clients([f"--config={cfg}"])

    @classmethod
    def tearDownClass(cls):
        harness.stop_all(cls.server, cls.clients, cls.tmp)

    def read_back(self, c, name, ids):
        return {s.shot_id: s for s in c.stream(name, ids, headers=["offset", "source_x",
                                                                    "group_x"])}

    def test_round_trip_exact_for_every_format_through_both_python_paths(self):
        for native, c in self.clients.items():
            for fmt in (5, 1, 3):
                name = f"model_f{fmt}_{'native' if native else 'grpcio'}"
                shots = list(modelled([11, 12, 14], seed=fmt))
                info = c.write(name, iter(shots), sample_interval_us=4000, sample_format=fmt)
                self.assertEqual((info.name, info.state, info.n_shots, info.n_samples),
                                 (name, "READY", 3, NS))
                self.assertEqual((info.sample_format, info.sample_interval_us), (fmt, 4000))
                self.assertEqual(info.written_shots, 3)
                self.assertEqual(info.written_bytes, 3 * 9 * NS * 4)
                # The new dataset's ids: what stream() can be asked for at once.
                self.assertEqual(list(info.shot_ids), [11, 12, 14])
                self.assertEqual(list(info.shot_trace_counts), [9, 9, 9])
                self.assertEqual(info.format, "segy")
                self.assertEqual([s.shot_id for s in c.stream(name, info.shot_ids)],
                                 [11, 12, 14])
                self.assertIn(name, [d.name for d in c.list_datasets()])
                path = os.path.join(self.out, f"{name}.sgy")
                oracle = harness.segyio_shots([path])  # an independent reader of the file
                got = self.read_back(c, name, [11, 12, 14])
                worst = 0.0
                for sid, samples, headers in shots:
                    what = f"{name} shot {sid}"
                    if fmt == 5:
                        want = samples
                    elif fmt == 3:
                        want = np.clip(np.rint(samples), -32767, 32767)
                    else:
                        want = oracle[sid][0]
                    np.testing.assert_array_equal(got[sid].samples, want, err_msg=what)
                    np.testing.assert_array_equal(oracle[sid][0], want, err_msg=what)
                    worst = max(worst, float(np.abs(want.astype(np.float64) - samples).max()))
                    for h in ("offset", "source_x", "group_x"):
                        np.testing.assert_array_equal(got[sid].headers[h], headers[h], what + h)
                        np.testing.assert_array_equal(oracle[sid][1][h], headers[h], what + h)
                self.assertAlmostEqual(info.write_max_error, worst, places=4)
                if fmt == 5:
                    self.assertEqual(info.write_max_error, 0)
                with segyio.open(path, ignore_geometry=True) as f:
                    self.assertIn("WRITTEN BY SHOTSTREAM", f.text[0].decode("ascii", "replace"))

    def test_a_multi_part_write_is_one_dataset_once_committed_through_both_python_paths(self):
        for native, c in self.clients.items():
            name = f"parts_{'native' if native else 'grpcio'}"
            wid = f"w-{name}"
            shots = {sid: (sid, s, h) for sid, s, h in modelled([10, 11, 20, 21, 30], seed=7)}
            parts = [[10, 11], [20, 21], [30]]

            def write(index, ids, count=3, write_id=wid):
                return c.write(name, [shots[i] for i in ids], sample_interval_us=4000,
                               part=(write_id, index, count))

            info = write(1, parts[1])
            self.assertEqual((info.name, info.written_shots), (name, 2))
            write(0, parts[0])
            # Not a dataset until committed.
            self.assertNotIn(name, [d.name for d in c.list_datasets()])
            with self.assertRaises(shotstream.ShotstreamError) as e:
                c.dataset(name)
            self.assertEqual(e.exception.code(), grpc.StatusCode.NOT_FOUND)
            with self.assertRaises(shotstream.ShotstreamError) as e:
                c.commit_parts(name, wid, 3, sample_interval_us=4000)
            self.assertEqual(e.exception.code(), grpc.StatusCode.FAILED_PRECONDITION)
            self.assertIn("1 of its 3 parts are not written (parts 2 missing)",
                          e.exception.details())
            write(2, [21])  # a shot in two parts: refused at the commit
            with self.assertRaises(shotstream.ShotstreamError) as e:
                c.commit_parts(name, wid, 3, sample_interval_us=4000)
            self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
            self.assertIn("shot 21 is in parts 1 and 2", e.exception.details())
            write(2, parts[2])  # written again (a retried task): replaces the earlier part
            with self.assertRaises(shotstream.ShotstreamError) as e:  # another interval
                c.commit_parts(name, wid, 3, sample_interval_us=2000)
            self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
            info = c.commit_parts(name, wid, 3, sample_interval_us=4000)
            self.assertEqual((info.state, info.n_shots, info.written_shots),
                             ("READY", 5, 5))
            self.assertEqual(list(info.shot_ids), [10, 11, 20, 21, 30])
            path = os.path.join(self.out, f"{name}.sgy")
            with segyio.open(path, ignore_geometry=True) as f:  # parts in index order
                self.assertEqual(list(f.attributes(segyio.TraceField.FieldRecord)[::9]),
                                 [10, 11, 20, 21, 30])
            oracle = harness.segyio_shots([path])
            got = self.read_back(c, name, [10, 11, 20, 21, 30])
            for sid, samples, headers in shots.values():
                np.testing.assert_array_equal(oracle[sid][0], samples)
                np.testing.assert_array_equal(got[sid].samples, samples)
                np.testing.assert_array_equal(got[sid].headers["group_x"], headers["group_x"])
            self.assertEqual([f for f in os.listdir(self.out) if ".parts-" in f], [])
            self.assertEqual(temporaries(self.out), [])
            with self.assertRaises(shotstream.ShotstreamError) as e:  # the name is taken
                write(0, parts[0], write_id="another")
            self.assertEqual(e.exception.code(), grpc.StatusCode.ALREADY_EXISTS)
            with self.assertRaises(shotstream.ShotstreamError) as e:
                c.write(name + "x", [shots[10]], sample_interval_us=4000, part=(wid, 3, 3))
            self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)

    def test_coordinates_stored_exactly_or_with_the_error_reported_never_wrapped(self):
        """Each trace's coordinates get the SEG-Y scalar that stores them exactly (UTM
        halves /10, eighths /1000, a value past 4 bytes x100); where none does (0.125
        beside 6.7e6 in one trace) the least error is stored and reported with its place;
        a value no field holds is refused by shot, trace and name."""
        ones = np.ones((2, NS), np.float32)
        shots = [
            (1, ones, {"source_x": np.full(2, 512345.5), "group_y": np.full(2, 6712345.5),
                       "source_elevation": np.array([12.25, -3.0]),
                       "offset": np.array([100.0, 200.0])}),
            (2, ones, {"source_x": np.full(2, 0.125), "group_y": np.array([2.5, 6.75])}),
            (3, ones, {"source_x": np.full(2, 0.125), "group_y": np.full(2, 6.7e6)}),
            (4, ones, {"source_x": np.array([67e9, 1.0]), "group_y": np.array([1e9, 2.0])}),
        ]
        names = ("source_x", "group_y", "source_elevation", "offset")
        for native, c in self.clients.items():
            name = f"coords_{'native' if native else 'grpcio'}"
            info = c.write(name, iter(shots), sample_interval_us=1000)
            self.assertAlmostEqual(info.write_max_header_error, 0.005, places=9)
            self.assertIn("shot 3, trace 1, source_x 0.125 stored as 0.12",
                          info.write_max_header_error_at)
            got = {s.shot_id: s for s in c.stream(name, [1, 2, 3, 4], headers=list(names))}
            oracle = harness.segyio_shots([os.path.join(self.out, f"{name}.sgy")])
            for sid, _, headers in shots:
                for h, want in headers.items():
                    what = f"{name} shot {sid} {h}"
                    tolerance = 0.005 + 1e-12 if (sid, h) == (3, "source_x") else 0
                    np.testing.assert_allclose(got[sid].headers[h], want, rtol=0,
                                               atol=tolerance, err_msg=what)
                    np.testing.assert_allclose(oracle[sid][1][h], want, rtol=0,
                                               atol=tolerance, err_msg=what + " (segyio)")
            np.testing.assert_array_equal(got[3].headers["group_y"], [6.7e6, 6.7e6])
            # Past any scalar (3e13 > 2^31 x 10000), and an offset past 4 bytes: refused.
            for bad, says in (({"group_x": np.array([1.0, 3e13])},
                               "shot 9, trace 2: header group_x is 3e+13"),
                              ({"offset": np.array([3e9, 1.0])},
                               "shot 9, trace 1: header offset is 3e+09")):
                with self.assertRaises(shotstream.ShotstreamError) as cm:
                    c.write(name + "_bad", iter([(9, ones, bad)]), sample_interval_us=1000)
                self.assertEqual(cm.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
                self.assertIn(says, cm.exception.details())
                self.assertNotIn(name + "_bad", [d.name for d in c.list_datasets()])

    def test_shot_objects_and_large_shots_in_many_chunks(self):
        c = self.clients[harness.client_paths()[-1]]
        src = list(c.stream("field", [1, 2, 3], headers=["offset"]))
        info = c.write("copy_of_field", src, sample_interval_us=src[0].sample_interval_us,
                       max_chunk_bytes=NS * 4 * 5)  # 5 traces a message
        self.assertEqual(info.n_traces, 36)
        self.assertEqual(harness.health(self.server.target, "shotstream.v1.ShotStream/copy_of_field"),
                         harness.SERVING)
        for a, b in zip(src, c.stream("copy_of_field", [1, 2, 3], headers=["offset"])):
            np.testing.assert_array_equal(a.samples, b.samples)
            np.testing.assert_array_equal(a.headers["offset"], b.headers["offset"])

    def test_cpp_put_round_trips_what_fetch_wrote(self):
        d = os.path.join(self.tmp, "fetched")
        harness.cli("fetch", f"--target={self.server.target}", "--dataset=field", f"--out={d}",
                    "--headers=offset,group_x")
        res = harness.cli("put", f"--target={self.server.target}", "--dataset=from_cli",
                          f"--from={d}", "--sample_interval_us=2000")
        self.assertIn("put 3 shots", res.stdout)
        self.assertIn("3/3 shots", res.stderr)  # the progress bar
        # Without the interval it is refused, naming the flag (it used to write 0).
        res = harness.cli("put", f"--target={self.server.target}", "--dataset=no_interval",
                          f"--from={d}/", check=False)
        self.assertNotEqual(res.returncode, 0)
        self.assertIn("--sample_interval_us", res.stderr)
        self.assertNotIn("no_interval", [x.name for x in self.clients[harness.client_paths()[-1]]
                                         .list_datasets()])
        want = harness.segyio_shots([self.field])
        got = harness.segyio_shots([os.path.join(self.out, "from_cli.sgy")])
        for sid in (1, 2, 3):
            np.testing.assert_array_equal(got[sid][0], want[sid][0])
            for h in ("offset", "group_x"):
                np.testing.assert_array_equal(got[sid][1][h], want[sid][1][h])

    def test_errors_leave_nothing_and_say_why(self):
        c = self.clients[harness.client_paths()[-1]]
        before = sorted(os.listdir(self.out))

        def expect(code, text, name, shots, **kw):
            existed = name in [d.name for d in c.list_datasets()]
            kw.setdefault("sample_interval_us", 1000)
            with self.assertRaises(shotstream.ShotstreamError) as e:
                c.write(name, shots, **kw)
            self.assertEqual(e.exception.code(), code, name)
            self.assertIn(text, e.exception.details(), name)
            self.assertEqual(name in [d.name for d in c.list_datasets()], existed, name)
        one = list(modelled([1]))
        expect(grpc.StatusCode.INVALID_ARGUMENT, "may hold only", "a/b", one)
        expect(grpc.StatusCode.INVALID_ARGUMENT, "may not start with '.'", "..", one)
        expect(grpc.StatusCode.ALREADY_EXISTS, "exists", "field", one)
        c.write("taken", one, sample_interval_us=1000)
        before.append("taken.sgy")
        expect(grpc.StatusCode.ALREADY_EXISTS, "exists", "taken", one)
        mixed = [(1, np.zeros((3, NS), np.float32)), (2, np.zeros((3, NS + 1), np.float32))]
        expect(grpc.StatusCode.INVALID_ARGUMENT, "shot 2 has 65 samples", "mixed", mixed)
        expect(grpc.StatusCode.INVALID_ARGUMENT, "ofset", "badheader",
               [(1, np.zeros((2, NS), np.float32), {"ofset": [1, 2]})])
        expect(grpc.StatusCode.INVALID_ARGUMENT, "sample_format 2", "fmt", one, sample_format=2)
        # IBM float and int16 hold no NaN or infinity: refused, naming where (IEEE keeps them).
        odd = np.ones((3, NS), np.float32)
        odd[1, 7] = np.nan
        odd[2, 9] = np.inf
        for fmt in (1, 3):
            expect(grpc.StatusCode.INVALID_ARGUMENT, "shot 4, trace 2, sample 7 is nan",
                   f"nan_{fmt}", [(4, odd)], sample_format=fmt)
        kept = c.write("nan_ieee", [(4, odd)], sample_interval_us=1000)
        before.append("nan_ieee.sgy")
        self.assertEqual(kept.write_max_error, 0)
        got = next(iter(c.stream("nan_ieee", [4]))).samples
        self.assertTrue(np.isnan(got[1, 7]) and np.isinf(got[2, 9]))
        # A missing interval is refused by the server too (Client.write sends what it has).
        expect(grpc.StatusCode.INVALID_ARGUMENT, "sample_interval_us", "zero_dt", one,
               sample_interval_us=0)

        def failing():
            yield from modelled([1, 2])
            raise RuntimeError("the modelling code failed")
        with self.assertRaises(RuntimeError):
            c.write("failing", failing(), sample_interval_us=1000)
        self.assertNotIn("failing", [d.name for d in c.list_datasets()])
        # A checksum that does not match: DATA_LOSS naming the shot.
        stub = pb_grpc.ShotStreamStub(grpc.insecure_channel(self.server.target))
        msgs = [pb.WriteShotsRequest(start=pb.WriteStart(dataset="corrupt",
                                                         sample_interval_us=1000)),
                pb.WriteShotsRequest(shot=pb.ShotPart(shot_id=5, n_traces=1, n_samples=4,
                                                      samples=np.ones(4, "<f4").tobytes(),
                                                      shot_end=True, crc32=1)),
                pb.WriteShotsRequest(finish=pb.WriteFinish())]
        with self.assertRaises(grpc.RpcError) as e:
            stub.WriteShots(iter(msgs))
        self.assertEqual(e.exception.code(), grpc.StatusCode.DATA_LOSS)
        self.assertIn("shot 5", e.exception.details())
        # A stream half-closed without `finish` is a protocol error and creates nothing
        # (CANCELLED stays for a client that really cancels).
        with self.assertRaises(grpc.RpcError) as e:
            stub.WriteShots(iter(msgs[:1]))
        self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("finish", e.exception.details())
        wait_for(lambda: not temporaries(self.out), what="temporaries removed")
        self.assertEqual(sorted(f for f in os.listdir(self.out)), sorted(before))

    def test_both_python_paths_say_the_servers_errors_and_raise_the_iterables(self):
        for native, c in self.clients.items():
            tag = "native" if native else "grpcio"
            with self.assertRaises(shotstream.ShotstreamError) as e:
                c.write("field", modelled([1]), sample_interval_us=1000)
            self.assertEqual(e.exception.code(), grpc.StatusCode.ALREADY_EXISTS, tag)
            mixed = [(1, np.zeros((3, NS), np.float32)), (2, np.zeros((3, NS + 1), np.float32))]
            with self.assertRaises(shotstream.ShotstreamError) as e:
                c.write(f"mixed_{tag}", mixed, sample_interval_us=1000)
            self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT, tag)
            self.assertIn("shot 2", e.exception.details(), tag)

            def failing():
                yield from modelled([1, 2])
                raise KeyError("the modelling code failed")
            with self.assertRaises(KeyError):
                c.write(f"failing_{tag}", failing(), sample_interval_us=1000)
            names = [d.name for d in c.list_datasets()]
            self.assertNotIn(f"failing_{tag}", names)
            self.assertNotIn(f"mixed_{tag}", names)
        wait_for(lambda: not temporaries(self.out), what="temporaries removed")

    def test_full_disk_is_resource_exhausted_and_leaves_nothing(self):
        d = os.path.join(self.tmp, "small_disk")
        shim = harness.runfile("libio_shim.so")
        env = harness.preload_env(shim, FULL_DISK_PATH=d, FULL_DISK_BYTES=200000)
        with harness.Server([f"--write_dir={d}", f"--dataset=field={self.field}"],
                            env=env) as server, shotstream.Client(server.target) as c:
            c.write("fits", modelled([1]), sample_interval_us=1000)
            with self.assertRaises(shotstream.ShotstreamError) as e:
                c.write("too_big", modelled(range(1, 200), n_traces=50),
                        sample_interval_us=1000)
            self.assertEqual(e.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
            self.assertIn("No space left on device", e.exception.details())
            self.assertNotIn("too_big", [x.name for x in c.list_datasets()])
            self.assertEqual(sorted(os.listdir(d)), ["fits.sgy"])

    def test_writing_off_and_permissions(self):
        with harness.Server([f"--dataset=field={self.field}"]) as server, \
                shotstream.Client(server.target) as c:
            with self.assertRaises(shotstream.ShotstreamError) as e:
                c.write("x", modelled([1]), sample_interval_us=1000)
            self.assertEqual(e.exception.code(), grpc.StatusCode.FAILED_PRECONDITION)
            self.assertIn("--write_dir", e.exception.details())
        tokens = os.path.join(self.tmp, "tokens")
        with open(tokens, "w") as f:
            f.write("alice s3cret-a\nbob s3cret-b\n")
        d = os.path.join(self.tmp, "auth_out")
        for writers, ok in (("alice", {"alice": True, "bob": False}), ("", {"alice": False})):
            args = [f"--write_dir={d}_{writers}", f"--dataset=field={self.field}",
                    f"--auth_token_file={tokens}"] + ([f"--auth_writers={writers}"] if writers else [])
            with harness.Server(args) as server:
                for who, allowed in ok.items():
                    with shotstream.Client(server.target, token=f"s3cret-{who[0]}") as c:
                        name = f"by_{who}"
                        if allowed:
                            self.assertEqual(c.write(name, modelled([1]),
                                                     sample_interval_us=1000).state, "READY")
                            continue
                        with self.assertRaises(shotstream.ShotstreamError) as e:
                            c.write(name, modelled([1]), sample_interval_us=1000)
                        self.assertEqual(e.exception.code(), grpc.StatusCode.PERMISSION_DENIED)
                        self.assertIn("auth.writers", e.exception.details())
                        self.assertFalse(os.path.exists(f"{d}_{writers}/{name}.sgy"))
        bad = subprocess.run([harness.runfile(harness.SERVER), "--listen=127.0.0.1:0",
                              f"--dataset=field={self.field}", f"--auth_token_file={tokens}",
                              "--auth_writers=alcie", "--check_config"],
                             capture_output=True, text=True, timeout=60)
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("alcie", bad.stderr)

    def test_a_writer_killed_mid_write_leaves_nothing(self):
        code = (f"import sys, time, numpy as np, shotstream\n"
                f"c = shotstream.Client({self.server.target!r})\n"
                f"def shots():\n"
                f"    for i in range(1, 4):\n"
                f"        yield i, np.ones((4, {NS}), np.float32)\n"
                f"    print('sent', flush=True)\n"
                f"    time.sleep(600)\n"
                f"c.write('killed', shots(), sample_interval_us=1000)\n")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                             env=env)
        self.assertEqual(p.stdout.readline().strip(), "sent")
        wait_for(lambda: temporaries(self.out), what="the write's temporary")
        p.send_signal(signal.SIGKILL)
        p.wait()
        p.stdout.close()
        wait_for(lambda: not temporaries(self.out), what="the temporary removed")
        c = self.clients[harness.client_paths()[-1]]
        self.assertNotIn("killed", [d.name for d in c.list_datasets()])
        self.assertFalse(os.path.exists(os.path.join(self.out, "killed.sgy")))

    def test_a_server_killed_mid_write_leaves_nothing_and_cleans_up_at_start(self):
        d = os.path.join(self.tmp, "restart_out")
        port = harness.free_port()
        args = [f"--write_dir={d}", f"--dataset=field={self.field}"]
        server = harness.Server(args + [f"--listen=127.0.0.1:{port}"])
        c = shotstream.Client(server.target)
        c.write("before", modelled([1, 2]), sample_interval_us=1000)
        started = threading.Event()

        def slow():
            yield from modelled([1])
            started.set()
            threading.Event().wait(60)  # never finishes; the server dies first
        errors = []
        t = threading.Thread(target=lambda: errors.append(
            self.assertRaises(shotstream.ShotstreamError,
                              lambda: c.write("during", slow(), sample_interval_us=1000))),
            daemon=True)
        t.start()
        self.assertTrue(started.wait(30))
        wait_for(lambda: temporaries(d), what="the write's temporary")
        server.stop(signal.SIGKILL)
        self.assertEqual(len(temporaries(d)), 1)
        self.assertFalse(os.path.exists(os.path.join(d, "during.sgy")))
        c.close()
        with harness.Server(args) as again, shotstream.Client(again.target) as c2:
            self.assertEqual(temporaries(d), [])
            again.said("left by a write that did not finish")
            names = [x.name for x in c2.list_datasets()]
            self.assertIn("before", names)  # written datasets are served again
            self.assertNotIn("during", names)
            self.assertEqual(len(list(c2.stream("before", [1, 2]))), 2)

    def test_concurrent_writes_and_a_write_racing_a_read(self):
        c = self.clients[harness.client_paths()[-1]]
        results, errors = {}, []

        def write(i):
            try:
                results[i] = c.write(f"parallel_{i}", modelled(range(1, 6), seed=i),
                                     sample_interval_us=1000)
            except Exception as e:  # reported below
                errors.append(e)
        threads = [threading.Thread(target=write, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        reads = 0
        while any(t.is_alive() for t in threads) or reads < 3:
            got = list(c.stream("field", [1, 2, 3]))
            self.assertEqual([s.shot_id for s in got], [1, 2, 3])
            reads += 1
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        for i in range(4):
            want = {sid: s for sid, s, _ in modelled(range(1, 6), seed=i)}
            for shot in c.stream(f"parallel_{i}", [1, 2, 3, 4, 5]):
                np.testing.assert_array_equal(shot.samples, want[shot.shot_id])

    def test_commits_under_load_leave_other_rpcs_answering(self):
        # 2 GB committed by four writes at once (file and directory fsynced, the file
        # renamed, its catalog scanned): none of it runs on gRPC's threads, so ListDatasets
        # and a running stream keep answering. (gRPC's callback pool has a few threads: one
        # commit on one of them stalled nothing, four at once stalled ListDatasets for 1.2 s,
        # p99 1228 ms, when the commits ran there; on the disk executor p99 was 5 ms.)
        n_traces, n_samples, n_shots, writers = 2000, 1000, 64, 4
        shot = np.random.default_rng(1).standard_normal((n_traces, n_samples)).astype("<f4")
        finished, committed, latencies, arrivals = [], [], [], []
        stop = threading.Event()

        def list_datasets():
            stub = pb_grpc.ShotStreamStub(grpc.insecure_channel(self.server.target))
            while not stop.is_set():
                t0 = time.monotonic()
                stub.ListDatasets(pb.ListDatasetsRequest())
                latencies.append((t0, time.monotonic() - t0))
                time.sleep(0.005)

        def stream():
            with shotstream.Client(self.server.target) as c:
                while not stop.is_set():
                    for _ in c.stream("field", [1, 2, 3] * 20, queue_depth=2):
                        arrivals.append(time.monotonic())

        def write(k):
            def shots():
                for i in range(n_shots):
                    yield i + 1, shot
                finished.append(time.monotonic())  # the last message: the commit begins
            with shotstream.Client(self.server.target, native=False) as c:
                c.write(f"load_{k}", shots(), sample_interval_us=2000)
            committed.append(time.monotonic())

        helpers = [threading.Thread(target=list_datasets), threading.Thread(target=stream)]
        for t in helpers:
            t.start()
        try:
            ws = [threading.Thread(target=write, args=(k,)) for k in range(writers)]
            for w in ws:
                w.start()
            for w in ws:
                w.join()
        finally:
            stop.set()
            for t in helpers:
                t.join()
        self.assertEqual(len(committed), writers)
        begin, end = min(finished), max(committed)
        during = sorted(l for t, l in latencies if begin <= t <= end)
        p99 = during[min(len(during) - 1, int(0.99 * len(during)))]
        print(f"commits: {writers} x {n_shots * shot.nbytes / 1e9:.2f} GB in {end - begin:.2f} s;"
              f" ListDatasets during them: {len(during)} calls, p99 {p99 * 1e3:.1f} ms, max "
              f"{during[-1] * 1e3:.1f} ms; {sum(begin <= t <= end for t in arrivals)} shots "
              "streamed meanwhile", flush=True)
        self.assertGreater(len(during), 20)
        # Against the commits' own span, not a fixed time (a loaded CI machine stretches
        # both): commits on gRPC's threads held ListDatasets for about the whole span.
        self.assertLess(p99, 0.25 * (end - begin))
        self.assertGreater(sum(begin <= t <= end for t in arrivals), 0)
        for k in range(writers):
            os.remove(os.path.join(self.out, f"load_{k}.sgy"))

    def test_metrics_count_writes(self):
        c = self.clients[harness.client_paths()[-1]]
        c.write("counted", modelled([1, 2]), sample_interval_us=1000)
        with self.assertRaises(shotstream.ShotstreamError):
            c.write("counted", modelled([1]), sample_interval_us=1000)
        m = self.server.metrics()
        self.assertGreaterEqual(m['shotstream_writes_failed_total{code="ALREADY_EXISTS"}'], 1)
        self.assertGreaterEqual(m["shotstream_shots_written_total"], 2)
        self.assertGreaterEqual(m["shotstream_writes_total"], 1)


if __name__ == "__main__":
    unittest.main()

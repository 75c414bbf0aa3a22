"""Running a server, against the real binary: YAML config, listening, health, start-up
checks, flags, SIGTERM's drain and cut, memory after refused requests, logs and metrics."""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

import grpc
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
import harness  # noqa: E402
from harness import run_server  # noqa: E402
import shotstream  # noqa: E402
import synth  # noqa: E402
from harness import NOT_SERVING, SERVING, health, wait_for  # noqa: E402


class ServerConfigTest(harness.ConfigSurveyTest):

    def test_yaml_config_health_metrics_and_logs(self):
        cfg = self.write_config(f"""
listen: 127.0.0.1:1          # overridden by the harness' --listen flag
catalog_dir: {self.tmp}/catalogs
metrics_listen: 127.0.0.1:0
limits: {{max_queue_depth: 4}}
datasets:
  - name: line1
    files: {self.data}/*.sgy
    io: mmap
  - name: broken
    files: [{self.tmp}/bad/*.sgy]
""")
        with harness.Server([f"--config={cfg}"]) as server:
            with shotstream.Client(server.target) as c:
                states = {d.name: d for d in c.list_datasets()}
                self.assertEqual(states["line1"].state, "READY")
                self.assertEqual(states["broken"].state, "FAILED")
                self.assertIn("x.sgy", states["broken"].error)
                shots = list(c.stream("line1", [3, 1, 2], queue_depth=4))
                self.assertEqual([s.shot_id for s in shots], [3, 1, 2])
                with self.assertRaises(shotstream.ShotstreamError) as e:
                    list(c.stream("line1", [1], queue_depth=5))
                self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
                self.assertIn("max_queue_depth", e.exception.details())
            self.assertEqual(health(server.target), SERVING)
            self.assertEqual(health(server.target, "shotstream.v1.ShotStream"), SERVING)
            body = urllib.request.urlopen(
                f"http://127.0.0.1:{server.metrics_port()}/metrics", timeout=5).read()
            text = body.decode()
            self.assertIn("shotstream_shots_sent_total 3\n", text)
            self.assertIn('shotstream_streams_rejected_by_code_total{code="INVALID_ARGUMENT"} 1', text)
            self.assertIn('shotstream_streams_finished_total{code="INVALID_ARGUMENT"} 0', text)
            self.assertIn('shotstream_dataset_ready{dataset="broken"} 0', text)
            self.assertIn("shotstream_shot_read_seconds_count 3", text)
            self.assertIn("shotstream_bytes_read_total", text)
            server.stop()
            log = "".join(server.stderr_lines)
            self.assertIn("stream 1: peer", log)
            self.assertIn("stream 1: OK, 3 of 3 shots", log)

    def test_config_errors_name_the_key(self):
        cfg = self.write_config("datasets:\n  - name: a\n    files: x\n    shot_key: nope\n")
        res = subprocess.run([harness.runfile(harness.SERVER), f"--config={cfg}"],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(res.returncode, 2)
        self.assertIn("datasets[0] (a).shot_key", res.stderr)
        cfg = self.write_config("limits: {max_queue_dept: 3}\n")
        res = subprocess.run([harness.runfile(harness.SERVER), f"--config={cfg}"],
                             capture_output=True, text=True, timeout=60)
        self.assertIn("limits.max_queue_dept: unknown key", res.stderr)

    def test_sigterm_drains_running_streams_then_exits_zero(self):
        server = harness.Server([f"--dataset=d={self.data}/*.sgy", "--grace_period=20s",
                                 "--drain_delay=2s"])
        got = []
        errors = []
        with shotstream.Client(server.target) as c:
            gen = c.stream("d", list(range(1, 13)) * 10, queue_depth=1)
            got.append(next(gen))
            server.proc.send_signal(signal.SIGTERM)
            # Draining: health says NOT_SERVING while the running stream goes on.
            deadline = time.time() + 10
            status = None
            while time.time() < deadline:
                try:
                    status = health(server.target)
                except grpc.RpcError:
                    status = None
                if status == NOT_SERVING:
                    break
                time.sleep(0.05)
            self.assertEqual(status, NOT_SERVING)
            with self.assertRaises(shotstream.ShotstreamError) as e:
                list(c.stream("d", [1]))
            self.assertEqual(e.exception.code(), grpc.StatusCode.UNAVAILABLE)
            try:
                for shot in gen:
                    got.append(shot)
            except shotstream.ShotstreamError as err:
                errors.append(err)
        self.assertEqual(errors, [])
        self.assertEqual(len(got), 120)
        self.assertEqual(server.proc.wait(timeout=30), 0)
        server.stop()


class StartupAndShutdownTest(harness.SmallSurveyTest):
    def test_a_port_in_use_is_an_error_not_a_shared_listener(self):
        with harness.Server([f"--dataset=d={self.data}/*.sgy"]) as first:
            res = run_server(f"--listen={first.target}", f"--dataset=d={self.data}/*.sgy")
            self.assertNotEqual(res.returncode, 0)
            self.assertIn(f"{first.target}: address in use", res.stderr)
            self.assertNotIn("listening", res.stdout)
            with shotstream.Client(first.target) as c:  # the first one still serves
                self.assertEqual(len(list(c.stream("d", [1, 2]))), 2)

    def test_health_is_not_serving_while_no_dataset_is_ready(self):
        with harness.Server([f"--dataset=broken={self.bad}/*.sgy"]) as server:
            self.assertEqual(health(server.target), NOT_SERVING)
            self.assertEqual(health(server.target, "shotstream.v1.ShotStream"), NOT_SERVING)
            self.assertEqual(health(server.target, "shotstream.v1.ShotStream/broken"),
                             NOT_SERVING)
        with harness.Server([f"--dataset=broken={self.bad}/*.sgy",
                             f"--dataset=good={self.data}/*.sgy"]) as server:
            self.assertEqual(health(server.target), SERVING)
            self.assertEqual(health(server.target, "shotstream.v1.ShotStream"), SERVING)
            self.assertEqual(health(server.target, "shotstream.v1.ShotStream/good"), SERVING)
            self.assertEqual(health(server.target, "shotstream.v1.ShotStream/broken"),
                             NOT_SERVING)

    def test_it_listens_while_its_datasets_load_and_says_they_are_loading(self):
        # A dataset whose saved catalog is a FIFO: its load blocks in open() until a
        # writer opens it, so the server is caught loading, deterministically (a data file
        # that is a FIFO is refused before any open: not a regular file). The datasets
        # load one after another, so the one after it is LOADING too.
        catalogs = os.path.join(self.tmp, "loading_catalogs")
        os.makedirs(catalogs, exist_ok=True)
        fifo = os.path.join(catalogs, "slow.catalog")
        if os.path.exists(fifo):
            os.remove(fifo)
        os.mkfifo(fifo)
        cfg = self.write("loading.yaml", f"""
catalog_dir: {catalogs}
datasets:
  - {{name: slow, files: "{self.data}/*.sgy"}}
  - {{name: good, files: "{self.data}/*.sgy"}}
""")
        def release():  # the open for writing returns once the server opens it to read
            os.close(os.open(fifo, os.O_WRONLY))
        server = harness.Server([f"--config={cfg}"], loaded=False)
        try:
            for native in harness.client_paths():
                with shotstream.Client(server.target, native=native) as c:
                    infos = {d.name: d for d in c.list_datasets()}
                    self.assertEqual((infos["slow"].state, infos["good"].state),
                                     ("LOADING", "LOADING"))
                    self.assertIn("is loading", infos["good"].error)
                    with self.assertRaises(shotstream.ShotstreamError) as e:
                        next(iter(c.stream("good", [1])))
                    self.assertEqual(e.exception.code(), grpc.StatusCode.UNAVAILABLE)
                    self.assertIn("dataset 'good' is loading", e.exception.details())
            self.assertEqual(health(server.target), NOT_SERVING)
            self.assertEqual(health(server.target, "shotstream.v1.ShotStream/good"),
                             NOT_SERVING)
            # SIGHUP before the first loads end changes nothing and says why.
            server.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: any("still loading" in l for l in server.stderr_lines),
                     what="the SIGHUP line")
            threading.Thread(target=release, daemon=True).start()
            # The FIFO is no catalog: the slow one is built again, saved over it.
            self.assertEqual(server.loaded_line(), "shotstream datasets loaded: 2 READY, 0 FAILED")
            with shotstream.Client(server.target) as c:
                infos = {d.name: d for d in c.list_datasets()}
                self.assertEqual((infos["slow"].state, infos["good"].state),
                                 ("READY", "READY"))
                self.assertEqual(len(list(c.stream("slow", [1, 2]))), 2)
                self.assertEqual(len(list(c.stream("good", [1, 2]))), 2)
            self.assertTrue(os.path.isfile(fifo))
            self.assertEqual(health(server.target), SERVING)
        finally:
            if server.proc.poll() is None and server._loaded is None:
                threading.Thread(target=release, daemon=True).start()
            server.stop()

    def test_a_write_only_server_starts_serving_and_shows_what_it_is_sent(self):
        # A server that only receives modelled gathers at first: no dataset, a write_dir.
        out = os.path.join(self.tmp, "write_only")
        for args in ([f"--write_dir={out}"], ["--config=" + self.write("w.yaml",
                                                                      f"write_dir: {out}\n")]):
            res = run_server(*args, "--check_config")
            self.assertEqual(res.returncode, 0, res.stderr)
            self.assertIn("0 datasets", res.stdout)
        with harness.Server([f"--write_dir={out}"]) as server, \
                shotstream.Client(server.target) as c:
            # Taking writes is serving: overall and service health say so.
            self.assertEqual(health(server.target), SERVING)
            self.assertEqual(health(server.target, "shotstream.v1.ShotStream"), SERVING)
            self.assertEqual(c.list_datasets(), [])
            samples = np.arange(40, dtype="<f4").reshape(4, 10)
            info = c.write("modelled", [(7, samples)], sample_interval_us=1000)
            self.assertEqual(list(info.shot_ids), [7])
            self.assertEqual([d.name for d in c.list_datasets()], ["modelled"])
            self.assertEqual(health(server.target, "shotstream.v1.ShotStream/modelled"), SERVING)
            np.testing.assert_array_equal(next(iter(c.stream("modelled", [7]))).samples, samples)
        # At the next start the written dataset is served again.
        with harness.Server([f"--write_dir={out}"]) as server, \
                shotstream.Client(server.target) as c:
            self.assertEqual([d.name for d in c.list_datasets()], ["modelled"])

    def test_a_write_dir_that_is_a_file_is_refused_at_start_and_by_check_config(self):
        path = os.path.join(self.tmp, "not_a_dir")
        with open(path, "w") as f:
            f.write("x")
        for extra in (["--check_config"], ["--listen=127.0.0.1:0"]):
            res = run_server(f"--write_dir={path}", *extra)
            self.assertNotEqual(res.returncode, 0, res.stdout)
            self.assertIn(f"write_dir {path}: not a directory", res.stderr)

    def test_check_config_opens_the_files(self):
        empty = os.path.join(self.tmp, "empty")
        os.makedirs(empty, exist_ok=True)
        for files, says in ((f"{empty}/*.sgy", "no file matches"),
                            (f"{self.bad}/*.sgy", "x.sgy")):
            cfg = self.write("check.yaml", f"""
datasets:
  - {{name: good, files: {self.data}/*.sgy}}
  - {{name: d, files: [{self.data}/*.sgy, '{files}']}}
""")
            res = run_server(f"--config={cfg}", "--check_config")
            self.assertNotEqual(res.returncode, 0, res.stdout)
            self.assertIn("dataset 'd'", res.stderr)
            self.assertIn(says, res.stderr)
        cfg = self.write("check_ok.yaml", f"datasets: [{{name: d, files: {self.data}/*.sgy}}]\n")
        res = run_server(f"--config={cfg}", "--check_config")
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertIn("config OK", res.stdout)


    def big_survey(self):
        """8 shots of 200 traces x 2000 IEEE samples (1.6 MB a shot), written once."""
        big = os.path.join(self.tmp, "big")
        if not os.path.isdir(big):
            synth.write_survey(big, n_shots=8, traces_per_shot=200, n_samples=2000, n_files=1,
                               fmt=5)
        return big

    def test_sigterm_cuts_streams_after_the_grace_period_saying_why_and_exits(self):
        big = self.big_survey()
        for native in harness.client_paths():
            # 2 s: the streams are cut at 1.5 s and the process lingers 0.5 s for the
            # status to be read (with 1 s, 0.25 s: a loaded CI machine once read the
            # queued chunks slower than that and saw the connection reset).
            server = harness.Server([f"--dataset=d={big}/*.sgy", "--grace_period=2s"])
            try:
                with shotstream.Client(server.target, native=native) as c:
                    # 12.8 GB: longer than the grace period at any speed here; read as fast
                    # as it comes, so that the status reaches the client before the server
                    # exits (a client that stops reading cannot be told anything).
                    it = iter(c.stream("d", list(range(1, 9)) * 1000, queue_depth=1))
                    next(it)
                    start = time.time()
                    server.proc.terminate()
                    with self.assertRaises(shotstream.ShotstreamError) as e:
                        for _ in it:
                            pass
                    self.assertEqual(e.exception.code(), grpc.StatusCode.UNAVAILABLE)
                    self.assertIn("the server is shutting down", e.exception.details())
                    server.proc.wait(timeout=30)
                    if not harness.server_is_asan():  # ASan builds run every destructor
                        self.assertLess(time.time() - start, 2 + 1 + 0.5)  # grace + 1 s
                    self.assertEqual(server.proc.returncode, 0)
            finally:
                server.stop()

    def test_sigterm_with_a_consumer_that_stopped_reading_exits_at_the_grace_periods_end(self):
        # A consumer far behind (here: reading nothing until the server is gone) cannot be
        # sent a status after the chunks queued for it; the server exits when the grace
        # period ends all the same, and the client says in our words what happened.
        big = self.big_survey()
        for native in harness.client_paths():
            server = harness.Server([f"--dataset=d={big}/*.sgy", "--grace_period=1s",
                                     "--metrics_listen=127.0.0.1:0"])  # civetweb stops too
            try:
                with shotstream.Client(server.target, native=native) as c:
                    it = iter(c.stream("d", list(range(1, 9)) * 100, queue_depth=2))
                    next(it)
                    start = time.time()
                    server.proc.terminate()
                    server.proc.wait(timeout=30)
                    exited = time.time() - start
                    with self.assertRaises(shotstream.ShotstreamError) as e:
                        for _ in it:
                            pass
                    self.assertEqual(e.exception.code(), grpc.StatusCode.UNAVAILABLE)
                    # The cancellation, or the reset of a server that exited with bytes of
                    # this client's unread (it can overtake the cancellation on a loaded
                    # machine): both in our words.
                    self.assertRegex(e.exception.details(),
                                     "^(the server is shutting down|the connection to the "
                                     "server was reset: the server exited)")
                    self.assertIn("resume on another server", e.exception.details())
                    if not harness.server_is_asan():
                        # grace + 0.2 s for the cancellations + teardown under load; it was
                        # grace + 2 s while civetweb waited out its poll
                        self.assertLess(exited, 1 + 0.9, native)
                    self.assertEqual(server.proc.returncode, 0)
            finally:
                server.stop()

    def test_refused_oversized_requests_leave_no_memory_behind(self):
        if harness.server_is_asan():
            self.skipTest("ASan's allocator and quarantine are not the server's memory")
        from shotstream.v1 import shotstream_pb2 as pb

        def rss_mb(pid):
            return harness.rss_kb(pid) / 1024

        with harness.Server([f"--dataset=d={self.data}/*.sgy"]) as server:
            ch = grpc.insecure_channel(server.target,
                                       options=[("grpc.max_send_message_length", -1)])
            call = ch.unary_stream("/shotstream.v1.ShotStream/StreamShots",
                                   request_serializer=pb.StreamShotsRequest.SerializeToString,
                                   response_deserializer=None)
            self.assertEqual(len(list(call(pb.StreamShotsRequest(dataset="d", shot_ids=[1])))),
                             1)
            before = rss_mb(server.proc.pid)
            huge = pb.StreamShotsRequest(dataset="d", shot_ids=range(1, 10_000_001))
            for _ in range(3):
                with self.assertRaises(grpc.RpcError) as e:
                    list(call(huge))
                self.assertEqual(e.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
            # Freed memory goes back while the server is idle (checked every second).
            try:
                wait_for(lambda: rss_mb(server.proc.pid) < before + 16, timeout=10,
                         what="the server's memory to return")
            finally:
                after = rss_mb(server.proc.pid)
            self.assertLess(after, before + 16, f"RSS {before:.0f} -> {after:.0f} MB")
            ch.close()


class FlagsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        cls.data = os.path.join(cls.tmp, "data")
        synth.write_survey(cls.data, n_shots=3, traces_per_shot=4, n_samples=20, n_files=1,
                           fmt=5)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_server_help_lists_its_flags_and_which_are_per_dataset(self):
        res = run_server("--help")
        text = res.stdout + res.stderr
        self.assertNotIn("No flags matched", text)
        for flag in ("--listen", "--dataset=NAME=GLOB", "--grace_period", "--io",
                     "--check_trace_lengths", "--auth_token_file"):
            self.assertIn(flag, text)
        self.assertIn("apply to every --dataset flag", text)

    def test_a_per_dataset_flag_between_datasets_is_refused(self):
        res = run_server(f"--dataset=a={self.data}/*.sgy", "--io=pread",
                         f"--dataset=b={self.data}/*.sgy", "--listen=127.0.0.1:0")
        self.assertNotEqual(res.returncode, 0)
        self.assertIn("--io=pread stands between --dataset flags", res.stderr)
        # Before or after them all, it applies to every one.
        res = run_server("--io=pread", f"--dataset=a={self.data}/*.sgy",
                         f"--dataset=b={self.data}/*.sgy", "--check_config")
        self.assertEqual(res.returncode, 0, res.stderr)


class LogsAndMetricsTest(unittest.TestCase):

    def test_refusals_are_logged_and_counted_and_the_counts_add_up(self):
        tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        try:
            data = os.path.join(tmp, "data")
            synth.write_survey(data, n_shots=3, traces_per_shot=4, n_samples=20, n_files=1,
                               fmt=5)
            tokens = os.path.join(tmp, "tokens")
            with open(tokens, "w") as f:
                f.write("bob b0b\nadmin 4dmin\n")
            cfg = os.path.join(tmp, "c.yaml")
            with open(cfg, "w") as f:
                f.write(f"""
metrics_listen: 127.0.0.1:0
datasets:
  - {{name: line1, files: {data}/*.sgy}}
  - {{name: secret, files: {data}/*.sgy}}
auth: {{token_file: {tokens}, allow: {{bob: [line1]}}}}
""")
            with harness.Server([f"--config={cfg}"]) as server:
                with shotstream.Client(server.target, token="b0b") as bob:
                    self.assertEqual(len(list(bob.stream("line1", [1, 2]))), 2)
                    refusals = [("lin1", {}, grpc.StatusCode.NOT_FOUND),
                                ("line1", {"headers": ["ofset"]},
                                 grpc.StatusCode.INVALID_ARGUMENT),
                                ("secret", {}, grpc.StatusCode.PERMISSION_DENIED),
                                ("line1", {"shot_ids": [77]}, grpc.StatusCode.NOT_FOUND)]
                    for name, kw, code in refusals:
                        with self.assertRaises(shotstream.ShotstreamError) as e:
                            list(bob.stream(name, kw.pop("shot_ids", [1]), **kw))
                        self.assertEqual(e.exception.code(), code)
                        if name == "lin1":
                            # Only what bob may see, and the closest name.
                            self.assertIn("did you mean 'line1'?", e.exception.details())
                            self.assertIn("(datasets here: line1)", e.exception.details())
                        if kw.get("headers"):
                            self.assertIn("did you mean 'offset'?", e.exception.details())
                    self.assertEqual(len(list(bob.stream("line1", [3]))), 1)
                with shotstream.Client(server.target, token="wrong") as nobody:
                    with self.assertRaises(shotstream.ShotstreamError):
                        list(nobody.stream("line1", [1]))
                wait_for(lambda: server.metrics()["shotstream_active_streams"] == 0,
                         what="the streams to finish")
                m = server.metrics()
                finished = sum(v for k, v in m.items()
                               if k.startswith("shotstream_streams_finished_total{"))
                self.assertEqual(m["shotstream_streams_started_total"], 2)
                self.assertEqual(finished, 2)
                self.assertEqual(m["shotstream_streams_rejected_total"], 5)
                rejected = {k.split('"')[1]: v for k, v in m.items()
                            if k.startswith("shotstream_streams_rejected_by_code_total{") and v}
                self.assertEqual(rejected, {"NOT_FOUND": 2, "INVALID_ARGUMENT": 1,
                                            "PERMISSION_DENIED": 1, "UNAUTHENTICATED": 1})
                log = "".join(server.stderr_lines)
                for code in ("NOT_FOUND", "INVALID_ARGUMENT", "PERMISSION_DENIED",
                             "UNAUTHENTICATED"):
                    self.assertIn(f": {code}: ", log)
                self.assertIn("stream refused: peer ", log)
                self.assertIn("dataset lin1: NOT_FOUND: unknown dataset 'lin1'", log)
                self.assertIn(": OK, 2 of 2 shots", log)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()

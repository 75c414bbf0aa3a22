"""What a newcomer hit in a day, each against the real server binary or CLI: a port taken
twice, an ACL typo that opened everything, health that said SERVING with nothing to
serve, a config check that passed on globs matching nothing."""

import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

import grpc
import numpy as np
import segyio

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
import harness  # noqa: E402
import shotstream  # noqa: E402
import synth  # noqa: E402
from harness import NOT_SERVING, SERVING, health, wait_for  # noqa: E402


def run_server(*args, timeout=60):
    return subprocess.run([harness.runfile(harness.SERVER)] + list(args), capture_output=True,
                          text=True, timeout=timeout)


class NewcomerTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        cls.data = os.path.join(cls.tmp, "data")
        synth.write_survey(cls.data, n_shots=4, traces_per_shot=10, n_samples=50, n_files=1,
                           fmt=5)
        cls.bad = os.path.join(cls.tmp, "bad")
        os.makedirs(cls.bad)
        with open(os.path.join(cls.bad, "x.sgy"), "wb") as f:
            f.write(b"\x01" * 3700)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    # --- serving the wrong data or to the wrong people -------------------------------

    def test_a_port_in_use_is_an_error_not_a_shared_listener(self):
        with harness.Server([f"--dataset=d={self.data}/*.sgy"]) as first:
            res = run_server(f"--listen={first.target}", f"--dataset=d={self.data}/*.sgy")
            self.assertNotEqual(res.returncode, 0)
            self.assertIn(f"{first.target}: address in use", res.stderr)
            self.assertNotIn("listening", res.stdout)
            with shotstream.Client(first.target) as c:  # the first one still serves
                self.assertEqual(len(list(c.stream("d", [1, 2]))), 2)

    def test_an_allow_list_name_not_in_the_token_file_is_a_startup_error(self):
        tokens = self.write("tokens_typo", "bob b0b-secret\nalice a1ice-secret\n")
        cfg = self.write("typo.yaml", f"""
datasets:
  - {{name: part1only, files: {self.data}/*.sgy}}
  - {{name: other, files: {self.data}/*.sgy}}
auth: {{token_file: {tokens}, allow: {{bobb: [part1only]}}}}
""")
        for extra in ([], ["--check_config"]):
            res = run_server(f"--config={cfg}", "--listen=127.0.0.1:0", *extra)
            self.assertNotEqual(res.returncode, 0, res.stdout)
            self.assertIn("no token is named 'bobb'", res.stderr)
            self.assertNotIn("config OK", res.stdout)

    def test_sighup_reload_that_loses_an_allowed_name_keeps_the_old_tokens(self):
        tokens = self.write("tokens_reload", "bob b0b-secret\n")
        cfg = self.write("reload.yaml", f"""
datasets:
  - {{name: part1only, files: {self.data}/*.sgy}}
  - {{name: other, files: {self.data}/*.sgy}}
auth: {{token_file: {tokens}, allow: {{bob: [part1only]}}}}
""")
        with harness.Server([f"--config={cfg}"]) as server:
            self.write("tokens_reload", "robert b0b-secret\n")
            server.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: any("token file not reloaded" in l for l in server.stderr_lines),
                     what="the reload's refusal")
            self.assertIn("no token is named 'bob'", "".join(server.stderr_lines))
            with shotstream.Client(server.target, token="b0b-secret") as bob:
                self.assertEqual(len(list(bob.stream("part1only", [1]))), 1)
                with self.assertRaises(shotstream.ShotstreamError) as e:
                    list(bob.stream("other", [1]))
                self.assertEqual(e.exception.code(), grpc.StatusCode.PERMISSION_DENIED)

    def test_auth_default_deny(self):
        tokens = self.write("tokens_deny", "bob b0b-secret\ncarol c4rol-secret\nanon-secret\n")
        cfg = self.write("deny.yaml", f"""
datasets:
  - {{name: part1only, files: {self.data}/*.sgy}}
  - {{name: other, files: {self.data}/*.sgy}}
auth: {{token_file: {tokens}, allow: {{bob: [part1only]}}, default: deny}}
""")
        with harness.Server([f"--config={cfg}"]) as server:
            with shotstream.Client(server.target, token="b0b-secret") as bob:
                self.assertEqual([d.name for d in bob.list_datasets()], ["part1only"])
                self.assertEqual(len(list(bob.stream("part1only", [1]))), 1)
            for token in ("c4rol-secret", "anon-secret"):
                with shotstream.Client(server.target, token=token) as c:
                    self.assertEqual(c.list_datasets(), [])
                    for call in (lambda: c.dataset("other"),
                                 lambda: list(c.stream("part1only", [1]))):
                        with self.assertRaises(shotstream.ShotstreamError) as e:
                            call()
                        self.assertEqual(e.exception.code(), grpc.StatusCode.PERMISSION_DENIED)
        bad = self.write("deny_bad.yaml", f"""
datasets: [{{name: d, files: {self.data}/*.sgy}}]
auth: {{token_file: {tokens}, default: deny-all}}
""")
        res = run_server(f"--config={bad}", "--check_config")
        self.assertNotEqual(res.returncode, 0)
        self.assertIn("auth.default", res.stderr)

    def test_a_file_rewritten_in_place_is_never_served_under_its_old_catalog(self):
        d = os.path.join(self.tmp, "rewrite")
        os.makedirs(d)
        path = os.path.join(d, "line.sgy")
        harness.write_survey(path, 5, [11, 12, 13, 14, 15], 8, 60, seed=1)
        new = os.path.join(self.tmp, "rewrite_new.sgy")
        harness.write_survey(new, 5, [211, 212, 213, 214, 215], 8, 60, seed=2)
        self.assertEqual(os.path.getsize(new), os.path.getsize(path))
        want = harness.segyio_shots([new])
        with harness.Server([f"--dataset=line={path}", f"--catalog_dir={self.tmp}/cat"]) as server, \
                shotstream.Client(server.target) as c:
            self.assertEqual(len(list(c.stream("line", [15]))), 1)
            with open(new, "rb") as src, open(path, "r+b") as dst:  # same inode, same size
                dst.write(src.read())
            with self.assertRaises(shotstream.ShotstreamError) as e:
                list(c.stream("line", [15]))
            self.assertEqual(e.exception.code(), grpc.StatusCode.DATA_LOSS)
            self.assertIn("line.sgy", e.exception.details())
            self.assertIn("changed since its catalog was built", e.exception.details())

            def rebuilt():
                try:
                    return 215 in c.dataset("line").shot_ids
                except shotstream.ShotstreamError as err:  # UNAVAILABLE while rebuilding
                    self.assertEqual(err.code(), grpc.StatusCode.UNAVAILABLE)
                    return False
            wait_for(rebuilt, what="the catalog rebuild")
            self.assertNotIn(15, c.dataset("line").shot_ids)
            shot = next(iter(c.stream("line", [215], headers=["field_record"])))
            np.testing.assert_array_equal(shot.samples, want[215][0])
            np.testing.assert_array_equal(shot.headers["field_record"], 215)
            self.assertIn("dataset line: READY again, rebuilt", "".join(server.stderr_lines))
            self.assertEqual(health(server.target, "shotstream.v1.ShotStream/line"), SERVING)

    def test_segy_export_keeps_every_trace_header_byte(self):
        src = os.path.join(self.tmp, "geometry.sgy")
        harness.write_survey(src, 1, [7, 8], 12, 40, seed=3)
        with open(src, "rb") as f:
            raw = f.read()
        trace = 240 + 40 * 4
        source_headers = [raw[3600 + t * trace:3600 + t * trace + 240] for t in range(24)]
        with harness.Server([f"--dataset=g={src}"]) as server:
            for extra in ([], ["--headers=source_x,group_x,offset"]):
                out = os.path.join(self.tmp, f"export{len(extra)}")
                harness.cli("fetch", f"--target={server.target}", "--dataset=g", "--shots=8",
                            "--format=segy", f"--out={out}", *extra)
                with open(os.path.join(out, "shot_8.sgy"), "rb") as f:
                    written = f.read()
                got = [written[3600 + t * trace:3600 + t * trace + 240] for t in range(12)]
                self.assertEqual(got, source_headers[12:], extra)
                with segyio.open(os.path.join(out, "shot_8.sgy"), ignore_geometry=True) as f:
                    np.testing.assert_array_equal(f.trace.raw[:],
                                                  harness.segyio_shots([src])[8][0])
            for native in harness.client_paths():
                with shotstream.Client(server.target, native=native) as c:
                    shot = next(iter(c.stream("g", [7], trace_headers=True)))
                    self.assertEqual(shot.trace_headers.shape, (12, 240))
                    self.assertEqual([bytes(h) for h in shot.trace_headers], source_headers[:12])
                    plain = next(iter(c.stream("g", [7])))
                    self.assertIsNone(plain.trace_headers)

    # --- failures that look like success ---------------------------------------------

    def test_a_server_that_is_not_there_fails_within_the_connect_timeout(self):
        with harness.Server([f"--dataset=d={self.data}/*.sgy"]) as gone:
            target = gone.target
        for native in harness.client_paths():
            with shotstream.Client(target, retries=3, connect_timeout=1, native=native) as c:
                start = time.time()
                with self.assertRaises(shotstream.ShotstreamError) as e:
                    list(c.stream("d", [1]))
                self.assertLess(time.time() - start, 4)  # not 3 reconnect waits of 10 s
                self.assertEqual(e.exception.code(), grpc.StatusCode.UNAVAILABLE)
                self.assertIn(f"{target}: cannot connect within 1s", e.exception.details())
        start = time.time()
        res = harness.cli("fetch", f"--target={target}", "--dataset=d", "--shots=1",
                          f"--out={self.tmp}/nowhere", "--connect_timeout=1s", check=False)
        self.assertLess(time.time() - start, 4)
        self.assertNotEqual(res.returncode, 0)
        self.assertIn(f"{target}: cannot connect within 1s", res.stderr)

    def test_a_server_going_away_is_retried_on_the_next_target(self):
        want = {sid: samples for sid, (samples, _) in
                harness.segyio_shots(sorted(glob.glob(f"{self.data}/*.sgy"))).items()}
        for native in harness.client_paths():
            a = harness.Server([f"--dataset=d={self.data}/*.sgy"])
            b = harness.Server([f"--dataset=d={self.data}/*.sgy"])
            try:
                with shotstream.Client([a.target, b.target], retries=2,
                                       native=native) as c:
                    order = [1, 2, 3, 4] * 3  # spread over both servers
                    it = iter(c.stream("d", order, queue_depth=1))
                    first = next(it)
                    a.stop()  # SIGTERM: what was routed to it goes to b
                    got = [first] + list(it)
                    self.assertEqual([s.shot_id for s in got], order)
                    for s in got:
                        np.testing.assert_array_equal(s.samples, want[s.shot_id])
                    self.assertGreaterEqual(c.reconnects, 1)
            finally:
                a.stop()
                b.stop()

    def test_sigterm_cuts_streams_after_the_grace_period_saying_why_and_exits(self):
        big = os.path.join(self.tmp, "big")
        synth.write_survey(big, n_shots=8, traces_per_shot=200, n_samples=2000, n_files=1,
                           fmt=5)
        for native in harness.client_paths():
            server = harness.Server([f"--dataset=d={big}/*.sgy", "--grace_period=1s"])
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
                        self.assertLess(time.time() - start, 1 + 1 + 0.5)  # grace + 1 s
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


class WhatAUserHadToGuessTest(unittest.TestCase):

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

    def test_addresses_without_a_port_are_errors(self):
        res = run_server(f"--dataset=a={self.data}/*.sgy", "--listen=127.0.0.1",
                         "--check_config")
        self.assertNotEqual(res.returncode, 0)
        self.assertIn("listen '127.0.0.1': expected HOST:PORT", res.stderr)
        res = harness.cli("ls", "--target=127.0.0.1", check=False)
        self.assertNotEqual(res.returncode, 0)
        self.assertIn("target '127.0.0.1': expected HOST:PORT", res.stderr)
        with self.assertRaises(ValueError) as e:
            shotstream.Client("127.0.0.1")
        self.assertIn("expected HOST:PORT", str(e.exception))

    def test_cli_unknown_command_and_what_it_prints(self):
        res = harness.cli("lss", "--target=127.0.0.1:1", check=False)
        self.assertNotEqual(res.returncode, 0)
        self.assertIn("unknown command 'lss'", res.stderr)
        with harness.Server([f"--dataset=d={self.data}/*.sgy"]) as server:
            for args in (["ls"], ["info", "--dataset=d"]):
                res = harness.cli(*args, f"--target={server.target}")
                self.assertNotIn("CUDA", res.stderr)  # said only where staging is asked for

    def test_plot_defaults_to_the_first_shot_and_writes_into_a_directory(self):
        out = os.path.join(self.tmp, "plots")
        os.makedirs(out)
        with harness.Server([f"--dataset=d={self.data}/*.sgy"]) as server:
            res = harness.cli("plot", f"--target={server.target}", "--dataset=d",
                              f"--out={out}", "--agc=20", "--gain=t^1")
            self.assertIn("shot 1,", res.stdout)
            with open(os.path.join(out, "shot_1.png"), "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            res = harness.cli("plot", f"--target={server.target}", "--dataset=d",
                              "--gain=2", check=False)
            self.assertNotEqual(res.returncode, 0)
            self.assertIn("expected t^N", res.stderr)

    def test_fetch_and_bench_with_nothing_to_do_fail(self):
        empty = os.path.join(self.tmp, "empty.sgy")
        with open(empty, "wb") as f:
            f.write(bytes(3200) + bytes(20) + b"\x00\x14" + bytes(2) + b"\x00\x05" +
                    bytes(3600 - 3226))  # a valid header, no traces: READY with 0 shots
        with harness.Server([f"--dataset=none={empty}",
                             f"--dataset=bad={self.tmp}/nothing-*.sgy"]) as server:
            for cmd in ("fetch", "bench"):
                for name, says in (("none", "has no shots"), ("bad", "FAILED_PRECONDITION")):
                    res = harness.cli(cmd, f"--target={server.target}", f"--dataset={name}",
                                      f"--out={self.tmp}/out", check=False)
                    self.assertNotEqual(res.returncode, 0, res.stdout)
                    self.assertIn(says, res.stderr)


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
                wait_for(lambda: any("metrics on http://" in l for l in server.stderr_lines),
                         what="the metrics line")
                line = next(l for l in server.stderr_lines if "metrics on http://" in l)
                port = int(line.split("(port ")[1].rstrip(")\n"))

                def metrics():
                    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                                  timeout=5).read().decode()
                    values = {}
                    for l in text.splitlines():
                        if l and not l.startswith("#"):
                            k, v = l.rsplit(" ", 1)
                            values[k] = float(v)
                    return values

                wait_for(lambda: metrics()["shotstream_active_streams"] == 0,
                         what="the streams to finish")
                m = metrics()
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

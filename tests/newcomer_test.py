"""What a newcomer hit in a day, each against the real server binary or CLI: a port taken
twice, an ACL typo that opened everything, health that said SERVING with nothing to
serve, a config check that passed on globs matching nothing."""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import shotstream  # noqa: E402
import synth  # noqa: E402
from harness import NOT_SERVING, SERVING, health  # noqa: E402


def wait_for(predicate, timeout=30, what="condition"):
    """Polls `predicate` (an event observed through a process's output or an RPC) until
    it holds; fails after `timeout` seconds."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


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

    # --- failures that look like success ---------------------------------------------

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


if __name__ == "__main__":
    unittest.main()

"""Who may read and write, against the real binary: bearer tokens and their SIGHUP reload,
allow-lists and the default rule (a name the token file lacks is a start-up error), stream
limits per peer, TLS and mutual TLS."""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
import harness  # noqa: E402
from harness import run_server  # noqa: E402
import shotstream  # noqa: E402
import synth  # noqa: E402
from harness import SERVING, health, wait_for  # noqa: E402


class TokensAndTlsTest(harness.ConfigSurveyTest):

    def test_bearer_tokens_and_sighup_reload(self):
        tokens = os.path.join(self.tmp, "tokens")
        with open(tokens, "w") as f:
            f.write("s3cret\n")
        with harness.Server([f"--dataset=d={self.data}/*.sgy",
                             f"--auth_token_file={tokens}"]) as server:
            with shotstream.Client(server.target) as anon:
                with self.assertRaises(shotstream.ShotstreamError) as e:
                    anon.list_datasets()
                self.assertEqual(e.exception.code(), grpc.StatusCode.UNAUTHENTICATED)
                with self.assertRaises(shotstream.ShotstreamError) as e:
                    list(anon.stream("d", [1]))
                self.assertEqual(e.exception.code(), grpc.StatusCode.UNAUTHENTICATED)
            self.assertEqual(health(server.target), SERVING)  # health needs no token
            with shotstream.Client(server.target, token="wrong") as bad:
                with self.assertRaises(shotstream.ShotstreamError) as e:
                    bad.dataset("d")
                self.assertEqual(e.exception.code(), grpc.StatusCode.UNAUTHENTICATED)
            with shotstream.Client(server.target, token="s3cret") as good:
                self.assertEqual(next(iter(good.stream("d", [2]))).shot_id, 2)
            with open(tokens, "w") as f:
                f.write("n3w\n")
            server.proc.send_signal(signal.SIGHUP)
            ok = False
            for _ in range(100):
                try:
                    with shotstream.Client(server.target, token="n3w") as c:
                        c.dataset("d")
                        ok = True
                        break
                except shotstream.ShotstreamError:
                    time.sleep(0.05)
            self.assertTrue(ok)
            with shotstream.Client(server.target, token="s3cret") as old:
                with self.assertRaises(shotstream.ShotstreamError):
                    old.dataset("d")

    def test_per_token_dataset_allow_lists(self):
        tokens = os.path.join(self.tmp, "named_tokens")
        with open(tokens, "w") as f:
            f.write("# name token\nalice a-secret\nbob b-secret\nanon-secret\n")
        cfg = self.write_config(f"""
auth:
  token_file: {tokens}
  allow: {{alice: [line1]}}
datasets:
  - {{name: line1, files: {self.data}/*.sgy}}
  - {{name: line2, files: {self.data}/*.sgy}}
""")
        with harness.Server([f"--config={cfg}"]) as server:
            with shotstream.Client(server.target, token="a-secret") as alice:
                self.assertEqual([d.name for d in alice.list_datasets()], ["line1"])
                self.assertEqual(next(iter(alice.stream("line1", [1]))).shot_id, 1)
                for call in (lambda: alice.dataset("line2"),
                             lambda: list(alice.stream("line2", [1]))):
                    with self.assertRaises(shotstream.ShotstreamError) as e:
                        call()
                    self.assertEqual(e.exception.code(), grpc.StatusCode.PERMISSION_DENIED)
                    self.assertIn("token 'alice' may not read dataset 'line2'",
                                  e.exception.details())
            for token in ("b-secret", "anon-secret"):  # not restricted
                with shotstream.Client(server.target, token=token) as other:
                    self.assertEqual(sorted(d.name for d in other.list_datasets()),
                                     ["line1", "line2"])
                    self.assertEqual(next(iter(other.stream("line2", [2]))).shot_id, 2)
        cfg = self.write_config(f"""
auth: {{token_file: {tokens}, allow: {{alice: [nope]}}}}
datasets: [{{name: line1, files: {self.data}/*.sgy}}]
""")
        res = subprocess.run([harness.runfile(harness.SERVER), f"--config={cfg}"],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(res.returncode, 2)
        self.assertIn("auth.allow.alice: unknown dataset 'nope'", res.stderr)

    def test_stream_limit_per_peer(self):
        with harness.Server([f"--dataset=d={self.data}/*.sgy", "--max_streams_per_peer=1"]) \
                as server, shotstream.Client(server.target) as c:
            first = c.stream("d", list(range(1, 13)) * 20, queue_depth=1)
            next(first)
            with self.assertRaises(shotstream.ShotstreamError) as e:
                list(c.stream("d", [1]))
            self.assertEqual(e.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
            self.assertIn("max_streams_per_peer", e.exception.details())
            first.close()
            ok = False
            for _ in range(100):  # the slot is freed once the cancelled stream is gone
                try:
                    list(c.stream("d", [1]))
                    ok = True
                    break
                except shotstream.ShotstreamError:
                    time.sleep(0.05)
            self.assertTrue(ok)

    @unittest.skipUnless(shutil.which("openssl"), "openssl not installed")
    def test_tls(self):
        key, crt = os.path.join(self.tmp, "s.key"), os.path.join(self.tmp, "s.crt")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                        key, "-out", crt, "-days", "2", "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                       check=True, capture_output=True)
        with harness.Server([f"--dataset=d={self.data}/*.sgy", f"--tls_cert={crt}",
                             f"--tls_key={key}"]) as server:
            with shotstream.Client(server.target, tls=crt) as c:
                self.assertEqual(next(iter(c.stream("d", [4]))).shot_id, 4)
            with shotstream.Client(server.target, timeout=3, connect_timeout=1) as plain:
                with self.assertRaises(shotstream.ShotstreamError) as e:
                    plain.list_datasets()
                self.assertEqual(e.exception.code(), grpc.StatusCode.UNAVAILABLE)

    @unittest.skipUnless(shutil.which("openssl"), "openssl not installed")
    def test_mutual_tls_requires_a_client_certificate_from_the_ca(self):
        d = os.path.join(self.tmp, "pki")
        os.makedirs(d, exist_ok=True)

        def run(*args):
            subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=d)

        run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out",
            "ca.crt", "-days", "2", "-subj", "/CN=test-ca")
        ext = os.path.join(d, "san.ext")
        with open(ext, "w") as f:
            f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
        for who in ("server", "client"):
            run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{who}.key", "-out",
                f"{who}.csr", "-subj", f"/CN={who}")
            run("x509", "-req", "-in", f"{who}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", f"{who}.crt", "-days", "2", "-extfile", ext)
        p = lambda name: os.path.join(d, name)  # noqa: E731
        with harness.Server([f"--dataset=d={self.data}/*.sgy", f"--tls_cert={p('server.crt')}",
                             f"--tls_key={p('server.key')}",
                             f"--tls_client_ca={p('ca.crt')}"]) as server:
            mtls = {"root": p("ca.crt"), "cert": p("client.crt"), "key": p("client.key")}
            for native in harness.client_paths():  # the C++ client takes mTLS too
                with shotstream.Client(server.target, tls=mtls, native=native) as c:
                    self.assertEqual(c.native, native)
                    self.assertEqual(next(iter(c.stream("d", [5]))).shot_id, 5)
                    self.assertEqual([d.name for d in c.list_datasets()], ["d"])
                with shotstream.Client(server.target, tls=p("ca.crt"), timeout=5,
                                       connect_timeout=1, native=native) as no_cert:
                    with self.assertRaises(shotstream.ShotstreamError) as e:
                        no_cert.list_datasets()
                    self.assertEqual(e.exception.code(), grpc.StatusCode.UNAVAILABLE)
                # System roots (tls=True) do not trust this test CA: refused, not plaintext.
                with shotstream.Client(server.target, tls=True, timeout=5, connect_timeout=1,
                                       native=native) as system:
                    self.assertEqual(system.native, native)
                    with self.assertRaises(shotstream.ShotstreamError) as e:
                        system.list_datasets()
                    self.assertEqual(e.exception.code(), grpc.StatusCode.UNAVAILABLE)
            with self.assertRaises(ValueError):
                shotstream.Client(server.target, tls={"root": p("ca.crt"),
                                                      "cert": p("client.crt")})
            # The CLI (the C++ client): --tls_cert and --tls_key.
            tls = [f"--target={server.target}", f"--tls_ca={p('ca.crt')}"]
            res = harness.cli("ls", *tls, f"--tls_cert={p('client.crt')}",
                              f"--tls_key={p('client.key')}")
            self.assertIn("d", res.stdout.split())
            res = harness.cli("ls", *tls, "--connect_timeout=1s", check=False)
            self.assertNotEqual(res.returncode, 0)
            self.assertIn("UNAVAILABLE", res.stderr)


class AllowListsTest(harness.SmallSurveyTest):
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


if __name__ == "__main__":
    unittest.main()

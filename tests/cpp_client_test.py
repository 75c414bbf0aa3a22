"""The C++ client library through its CLI and example: resume after a server restart,
routing over three servers with disjoint files, and the FWI example loop."""

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
import harness  # noqa: E402
import synth  # noqa: E402


class CppClientTest(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_resume_after_server_restart(self):
        d = os.path.join(self.tmp, "big")
        synth.write_survey(d, n_shots=30, traces_per_shot=250, n_samples=2000, n_files=2, fmt=5)
        port = harness.free_port()
        args = [f"--dataset=d={d}/*.sgy", f"--listen=127.0.0.1:{port}"]
        order = list(range(1, 31)) * 48  # 1440 shots, ~2.9 GB: long enough to be cut
        random.Random(3).shuffle(order)
        rc, out, err = harness.bench_across_a_restart(args, port, "d", order, "--queue_depth=1",
                                                      "--retries=5")
        self.assertEqual(rc, 0, err)
        result = json.loads(out.strip().splitlines()[-1])
        self.assertEqual(result["shots"], len(order))
        self.assertEqual(result["checksums_verified"], len(order))
        self.assertTrue(result["in_order"])
        self.assertGreaterEqual(result["reconnects"], 1)
        self.assertEqual(result["bytes"], len(order) * 250 * 2000 * 4)

    def test_routing_over_three_servers(self):
        paths = []
        dirs = []
        for k in range(3):
            d = os.path.join(self.tmp, f"node{k}")
            os.makedirs(d)
            p = os.path.join(d, f"part{k}.sgy")
            harness.write_survey(p, 5, [100 * k + 1, 100 * k + 2], 7, 33, seed=k)
            paths.append(p)
            dirs.append(d)
        oracle = harness.segyio_shots(paths)
        servers = [harness.Server([f"--dataset=line={d}/*.sgy"]) for d in dirs]
        try:
            targets = ",".join(s.target for s in servers)
            order = sorted(oracle) * 3
            random.Random(4).shuffle(order)
            res = harness.cli("bench", f"--target={targets}", "--dataset=line",
                              "--shots=" + ",".join(map(str, order)))
            result = json.loads(res.stdout.strip().splitlines()[-1])
            self.assertEqual(result["shots"], len(order))
            self.assertTrue(result["in_order"])
            out = os.path.join(self.tmp, "fetch")
            harness.cli("fetch", f"--target={targets}", "--dataset=line", f"--out={out}",
                        "--headers=offset")
            for sid, (samples, headers) in oracle.items():
                np.testing.assert_array_equal(np.load(os.path.join(out, f"shot_{sid}.npy")),
                                              samples)
                np.testing.assert_array_equal(
                    np.load(os.path.join(out, f"shot_{sid}.offset.npy")), headers["offset"])
            info = harness.cli("info", f"--target={targets}", "--dataset=line").stdout
            self.assertIn("shots: 6", info)
            self.assertIn("traces: 42", info)
            # A DNS name standing for a server (here a loopback literal, resolved the same way).
            port = servers[0].target.rsplit(":", 1)[1]
            info = harness.cli("info", f"--target=dns:///127.0.0.1:{port}",
                               "--dataset=line").stdout
            self.assertIn("shots: 2", info)
        finally:
            for s in servers:
                s.stop()

    def test_fwi_example_loop(self):
        d = os.path.join(self.tmp, "fwi")
        synth.write_survey(d, n_shots=6, traces_per_shot=40, n_samples=300, n_files=2, fmt=1)
        with harness.Server([f"--dataset=d={d}/*.sgy"]) as server:
            res = subprocess.run([harness.runfile("client/fwi_loop"), f"--target={server.target}",
                                  "--dataset=d", "--iterations=3", "--compute_ms=5"],
                                 capture_output=True, text=True, timeout=120)
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(res.stdout.count("6 shots"), 3)
        # Steady state: the pool allocated at most queue depth + a few, not one per shot.
        allocations = int(res.stdout.split("pool: ")[1].split()[0])
        self.assertLessEqual(allocations, 8)

    def test_grpc_ceiling_serves_shots_the_client_verifies(self):
        # The benchmark's reference (tools/grpc_ceiling.cc): its shots must be real ones.
        # One shot for every id; shots from distinct buffers (as many as a dataset's, so
        # that they come from memory, not the cache), each verified against its own
        # CRC-32; the same with the traces laid out as in a SEG-Y file, a slice a trace.
        for flags in ([], ["--shots_in_memory=3"], ["--shots_in_memory=3", "--trace_gap=240"]):
            with self.subTest(flags=flags):
                self.check_grpc_ceiling(flags)

    def check_grpc_ceiling(self, flags):
        tool = harness.runfile("grpc_ceiling")
        srv = subprocess.Popen([tool, "serve", "--listen=127.0.0.1:0", "--n_traces=30",
                                "--n_samples=1001"] + flags, stdout=subprocess.PIPE, text=True)
        try:
            target = srv.stdout.readline().split()[-1]
            bench = harness.cli("bench", f"--target={target}", "--dataset=any",
                                "--shots=5,3,5,9,1,2", "--max_chunk_bytes=50000")
            r = json.loads(bench.stdout.strip().splitlines()[-1])
            self.assertEqual(r["checksums_verified"], 6)
            self.assertTrue(r["in_order"])
            self.assertEqual(r["bytes"], 6 * 30 * 1001 * 4)
            for extra in ([], ["--copy"]):
                out = subprocess.run([tool, "receive", f"--target={target}", "--shots=6",
                                      "--repeat=2", "--warmup_shots=2"] + extra,
                                     capture_output=True, text=True, timeout=60, check=True)
                r = json.loads(out.stdout.strip().splitlines()[-1])
                # Dropped messages count whole messages; copies count samples only.
                if extra:
                    self.assertEqual(r["bytes"], 2 * 6 * 30 * 1001 * 4)
                else:
                    self.assertGreaterEqual(r["bytes"], 2 * 6 * 30 * 1001 * 4)
                self.assertEqual(r["copy"], bool(extra))
        finally:
            srv.terminate()
            srv.wait()

if __name__ == "__main__":
    unittest.main()

"""A client written from shotstream.proto alone, in another language: tests/js/client.mjs
(Node.js, @grpc/grpc-js and @grpc/proto-loader from npm, pinned by tests/js's lockfile),
against a real server. It lists, gets, streams IBM and int16 SEG-Y shots as FLOAT32,
NATIVE and INT16 in chunks of 3 traces (reassembled, CRC-32 checked and decoded as the
proto's comments say), writes a dataset, and asks health and reflection; its shots are
compared value for value with segyio's reading of the files, what it wrote with what the
server serves back."""

import json
import os
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
import harness  # noqa: E402

import shotstream  # noqa: E402

NS = 50


class NodeClientTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        cls.files = {}
        for name, fmt in (("ibm", 1), ("int16", 3)):
            path = os.path.join(cls.tmp, f"{name}.sgy")
            harness.write_survey(path, fmt, [11, 12, 13], 8, NS, seed=fmt)
            cls.files[name] = path

    def run_client(self, dataset, server):
        out = tempfile.mkdtemp(dir=self.tmp)
        proto = harness.runfile("proto/shotstream/v1/shotstream.proto")
        result = json.loads(harness.node("client.mjs", proto, server.target, dataset, out,
                                         test=self).strip().splitlines()[-1])
        return result, out

    def test_a_client_from_the_proto_alone_streams_writes_and_asks_health(self):
        for name, path in self.files.items():
            write_dir = os.path.join(self.tmp, f"written_{name}")
            with harness.Server([f"--dataset={name}={path}", f"--write_dir={write_dir}"]) as server:
                want = harness.segyio_shots([path])
                result, out = self.run_client(name, server)
                self.assertEqual(result["datasets"], [[name, "DATASET_STATE_READY"]])
                self.assertEqual(result["info"]["shot_ids"], [11, 12, 13])
                self.assertEqual(result["info"]["sample_format"], 1 if name == "ibm" else 3)
                for encoding, chunks in result["streams"].items():
                    self.assertEqual(sorted(int(i) for i in chunks), [11, 12, 13])
                    for sid, (samples, headers) in want.items():
                        what = f"{name} {encoding} shot {sid}"
                        self.assertGreaterEqual(chunks[str(sid)], 2, what)  # reassembled
                        got = np.fromfile(os.path.join(out, f"{encoding}_{sid}.bin"),
                                          "<f4").reshape(samples.shape)
                        if encoding == "ENCODING_INT16":
                            bound = np.abs(samples).max(axis=1, keepdims=True) / 32767 * (1 + 1e-6)
                            self.assertTrue(np.all(np.abs(got - samples) <= bound), what)
                        else:
                            np.testing.assert_array_equal(got, samples, err_msg=what)
                        with open(os.path.join(out, f"offset_{sid}.json")) as f:
                            np.testing.assert_array_equal(json.load(f), headers["offset"])
                # What it wrote is served back, value for value.
                self.assertEqual(result["written"]["shot_ids"], [7, 9])
                self.assertEqual(result["written"]["state"], "DATASET_STATE_READY")
                self.assertEqual(result["written"]["max_error"], 0)
                wrote = np.fromfile(os.path.join(out, "written.bin"), "<f4").reshape(2, 4, 25)
                with shotstream.Client(server.target) as c:
                    back = {s.shot_id: s for s in c.stream("from_node", [7, 9], headers=["offset"])}
                for k, sid in enumerate((7, 9)):
                    np.testing.assert_array_equal(back[sid].samples, wrote[k])
                    np.testing.assert_array_equal(back[sid].headers["offset"],
                                                  [100 * sid + 25 * t for t in range(4)])
                self.assertEqual(result["health"], {"overall": "SERVING", "dataset": "SERVING",
                                                    "unknown": "error 5"})  # NOT_FOUND
                for service in ("shotstream.v1.ShotStream", "grpc.health.v1.Health",
                                "grpc.reflection.v1alpha.ServerReflection"):
                    self.assertIn(service, result["services"])


if __name__ == "__main__":
    unittest.main()

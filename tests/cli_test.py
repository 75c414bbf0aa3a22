"""The command-line client against the real server: ls, info, fetch (.npy and SEG-Y exports
read back with segyio, every trace header byte kept), bench's JSON, plot, and its errors
(unknown commands, addresses without a port, nothing to do)."""

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import segyio

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
import harness  # noqa: E402
from harness import run_server  # noqa: E402
import shotstream  # noqa: E402
import synth  # noqa: E402


class CliTest(harness.LineOneTest):

    def test_cli_fetch_writes_npy_equal_to_segyio(self):
        out = os.path.join(self.tmp, "fetch")
        res = harness.cli("fetch", f"--target={self.server.target}", "--dataset=line1",
                          "--shots=3,-7", f"--out={out}", "--headers=group_x,offset")
        self.assertIn("fetched 2 shots", res.stdout)
        for sid in (3, -7):
            samples, headers = self.oracle[sid]
            np.testing.assert_array_equal(np.load(os.path.join(out, f"shot_{sid}.npy")), samples)
            for name in ("group_x", "offset"):
                np.testing.assert_array_equal(
                    np.load(os.path.join(out, f"shot_{sid}.{name}.npy")), headers[name])

    def test_cli_fetch_segy_reads_back_exactly_with_segyio(self):
        import segyio
        for fmt, shots in (("segy", [3, -7, 10]), ("segy-ibm", [1, 2])):
            out = os.path.join(self.tmp, f"fetch-{fmt}")
            harness.cli("fetch", f"--target={self.server.target}", "--dataset=line1",
                        "--shots=" + ",".join(map(str, shots)), f"--out={out}",
                        f"--format={fmt}", "--headers=" + ",".join(harness.HEADER_FIELDS))
            for sid in shots:
                path = os.path.join(out, f"shot_{sid}.sgy")
                got = harness.segyio_shots([path])
                self.assertEqual(list(got), [sid])
                samples, headers = self.oracle[sid]
                np.testing.assert_array_equal(got[sid][0], samples)
                for name in harness.HEADER_FIELDS:
                    np.testing.assert_allclose(got[sid][1][name], headers[name], rtol=0,
                                               atol=1e-9, err_msg=name)
                with segyio.open(path, ignore_geometry=True) as f:
                    self.assertEqual(int(f.bin[segyio.BinField.Format]), 5 if fmt == "segy" else 1)
                    self.assertEqual(segyio.tools.dt(f), 2000)

    def test_cli_plot_writes_a_png_of_the_gather(self):
        import struct
        import zlib
        out = os.path.join(self.tmp, "shot3.png")
        res = harness.cli("plot", f"--target={self.server.target}", "--dataset=line1",
                          "--shot=3", f"--out={out}")
        self.assertIn("48 traces x 301 samples", res.stdout)
        with open(out, "rb") as f:
            png = f.read()
        self.assertEqual(png[:8], b"\x89PNG\r\n\x1a\n")
        w, h = struct.unpack(">II", png[16:24])
        pos, idat = 8, b""
        while pos < len(png):
            n = struct.unpack(">I", png[pos:pos + 4])[0]
            if png[pos + 4:pos + 8] == b"IDAT":
                idat += png[pos + 8:pos + 8 + n]
            pos += 12 + n
        rows = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, 1 + 3 * w)[:, 1:]
        rgb = rows.reshape(h, w, 3).astype(int)
        red = (rgb[..., 0] == 255) & (rgb[..., 2] < 128)
        blue = (rgb[..., 2] == 255) & (rgb[..., 0] < 128)
        self.assertGreater(red.sum(), 100)   # positive amplitudes
        self.assertGreater(blue.sum(), 100)  # negative amplitudes
        self.assertGreater(w, 48)
        self.assertGreater(h, 301)
        res = harness.cli("plot", f"--target={self.server.target}", "--dataset=line1",
                          "--shot=999", f"--out={out}", check=False)
        self.assertNotEqual(res.returncode, 0)
        self.assertIn("NOT_FOUND", res.stderr)

    def test_cli_ls_info_and_bench_json(self):
        ls = harness.cli("ls", f"--target={self.server.target}").stdout
        self.assertIn("line1", ls)
        self.assertIn("FAILED", ls)
        info = harness.cli("info", f"--target={self.server.target}", "--dataset=line1").stdout
        self.assertIn("shots: 7", info)
        self.assertIn("format: segy", info)
        fields = next(l for l in info.splitlines() if l.startswith("header_fields: "))
        for name in ("field_record", "offset", "group_x", "source_x"):
            self.assertIn(name, fields.split(": ")[1].split(","))
        res = harness.cli("bench", f"--target={self.server.target}", "--dataset=line1",
                          "--repeat=3", "--streams=2")
        result = json.loads(res.stdout.strip().splitlines()[-1])
        total = sum(s.size * 4 for s, _ in self.oracle.values())
        self.assertEqual(result["shots"], 2 * 3 * len(self.oracle))
        self.assertEqual(result["bytes"], 2 * 3 * total)
        self.assertGreater(result["seconds"], 0)
        self.assertAlmostEqual(result["gbps"], result["bytes"] / result["seconds"] / 1e9,
                               places=3)
        # Warm-up shots are streamed (and verified) but not counted.
        res = harness.cli("bench", f"--target={self.server.target}", "--dataset=line1",
                          "--warmup_shots=3")
        result = json.loads(res.stdout.strip().splitlines()[-1])
        self.assertEqual(result["shots"], len(self.oracle))
        self.assertEqual(result["bytes"], total)


class CliExportTest(harness.SmallSurveyTest):
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


class CliErrorsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        cls.data = os.path.join(cls.tmp, "data")
        synth.write_survey(cls.data, n_shots=3, traces_per_shot=4, n_samples=20, n_files=1,
                           fmt=5)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

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

    def test_check_config_checks_the_directories_start_up_makes(self):
        """A catalog_dir, write_dir or job_dir that cannot be created fails --check_config
        (as it fails start-up), naming the setting and why; one that can passes."""
        a_file = os.path.join(self.tmp, "a_file")
        open(a_file, "w").close()
        for flag in ("catalog_dir", "write_dir", "job_dir"):
            for bad, says in ((f"/proc/nonexistent/{flag}", "cannot be created"),
                              (f"{a_file}/sub", "not a directory"),
                              (a_file, "not a directory")):
                args = (f"--dataset=a={self.data}/*.sgy", f"--{flag}={bad}")
                res = run_server(*args, "--check_config")
                self.assertNotEqual(res.returncode, 0, (flag, bad))
                self.assertIn(f"{flag} {bad}: ", res.stderr)
                self.assertIn(says, res.stderr.lower())
                start = run_server(*args, "--listen=127.0.0.1:0")  # start-up refuses it too
                self.assertNotEqual(start.returncode, 0, (flag, bad, start.stderr))
            fresh = os.path.join(self.tmp, f"fresh_{flag}")
            res = run_server(f"--dataset=a={self.data}/*.sgy", f"--{flag}={fresh}",
                             "--check_config")
            self.assertEqual(res.returncode, 0, res.stderr)

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
        with harness.Server([f"--dataset=d={self.data}/*.sgy",
                             f"--dataset=e={self.data}/*.sgy"]) as server:
            res = harness.cli("plot", f"--target={server.target}", "--dataset=d",
                              f"--out={out}", "--agc=20", "--gain=t^1")
            self.assertIn("shot 1,", res.stdout)
            with open(os.path.join(out, "d_shot_1.png"), "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            # Named by dataset too: another dataset's shot 1 beside it, not over it; a
            # directory named without a slash (made) rather than a file without extension.
            fresh = os.path.join(self.tmp, "more_plots")
            for ds in ("d", "e"):
                harness.cli("plot", f"--target={server.target}", f"--dataset={ds}",
                            f"--out={fresh}")
            self.assertEqual(sorted(os.listdir(fresh)), ["d_shot_1.png", "e_shot_1.png"])
            res = harness.cli("plot", f"--target={server.target}", "--dataset=d",
                              "--gain=2", check=False)
            self.assertNotEqual(res.returncode, 0)
            self.assertIn("expected t^N", res.stderr)

    def test_plot_without_offsets_and_with_another_header_across(self):
        import struct
        # .npy has no offset header: trace numbers across, and a 5-trace shot still gets
        # an image wide enough for its title.
        npy = os.path.join(self.tmp, "narrow.npy")
        np.save(npy, np.random.default_rng(3).standard_normal((2, 5, 60)).astype("<f4"))
        out = os.path.join(self.tmp, "narrow.png")
        with harness.Server([f"--dataset=n={npy}", f"--dataset=d={self.data}/*.sgy",
                             "--sample_interval_us=1000"]) as server:
            res = harness.cli("plot", f"--target={server.target}", "--dataset=n",
                              f"--out={out}")
            self.assertIn("5 traces x 60 samples", res.stdout)
            with open(out, "rb") as f:
                width = struct.unpack(">II", f.read(24)[16:24])[0]
            title = "SHOT 1   TRACE ACROSS, TIME (MS) DOWN   CLIP 99"
            self.assertGreaterEqual(width, 70 + 6 * len(title))
            res = harness.cli("plot", f"--target={server.target}", "--dataset=d",
                              f"--out={out}", "--x=group_x")
            self.assertIn("wrote", res.stdout)
            res = harness.cli("plot", f"--target={server.target}", "--dataset=n",
                              f"--out={out}", "--x=offset", check=False)
            self.assertNotEqual(res.returncode, 0)
            self.assertIn("has no header 'offset'", res.stderr)

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


if __name__ == "__main__":
    unittest.main()

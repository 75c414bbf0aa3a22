"""Zarr and MDIO stores through the real server: v2 stores written here by Debian's
zarr-python (each layout, compressor and dtype, C and Fortran order, missing chunks), v3
stores written as the v3 specification lays them out (testing/zarr_v3: sharding with the
index at either end, transpose, crc32c, both chunk key encodings) and an MDIO-v1-shaped
store (the StreamerShotGathers3D template's names, dimensions, coordinates, attributes,
structured `headers` and `trace_mask`). Every shot and header is compared value for value
with zarr-python's own reading (v2) or the written arrays (v3), through both Python paths
and the CLI; a window reads fewer chunks (counted); unsupported codecs and malformed
metadata FAILED with the reason while the rest is served; a store changed under the
server is read again."""

import json
import os
import shutil
import sys
import tempfile
import unittest

import grpc
import numcodecs
import numpy as np
import zarr

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
import harness  # noqa: E402
import zarr_v3  # noqa: E402
from harness import wait_for  # noqa: E402

import shotstream  # noqa: E402

NS = 64


def f32(a):
    return np.asarray(a).astype(np.float32)


def mdio_store(path, rng, n_sp=5, n_cable=2, n_chan=12, ns=NS, zarr_format=2):
    """An MDIO v1 StreamerShotGathers3D-shaped store: (shot_point, cable, channel, time),
    amplitude float32 Blosc(zstd), headers with the segy library's field names,
    trace_mask, coordinates and the SEG-Y file header's attributes. Returns the expected
    shots {shot_point: (samples of live traces, {header: values})}."""
    sp = np.array([1001, 1003, 1005, 1007, 1009][:n_sp], dtype=np.int32)
    amp = (rng.standard_normal((n_sp, n_cable, n_chan, ns)) * 100).astype("f4")
    mask = np.ones((n_sp, n_cable, n_chan), bool)
    mask[1, 0, 3:6] = False  # dead channels
    mask[3, 1, :] = False    # a dead cable
    hdr_t = np.dtype([("trace_seq_num_line", "<i4"), ("orig_field_record_num", "<i4"),
                      ("trace_num_orig_record", "<i4"), ("source_to_receiver_distance", "<i4"),
                      ("coordinate_scalar", "<i2"), ("source_coord_x", "<i4"),
                      ("source_coord_y", "<i4"), ("group_coord_x", "<i4"), ("group_coord_y", "<i4"),
                      ("channel_set", "<i2")])  # a name the segy library has not: left out
    hdr = np.zeros((n_sp, n_cable, n_chan), hdr_t)
    s, c, k = np.meshgrid(np.arange(n_sp), np.arange(n_cable), np.arange(n_chan), indexing="ij")
    hdr["trace_seq_num_line"] = (s * n_cable * n_chan + c * n_chan + k + 1)
    hdr["orig_field_record_num"] = 500 + s
    hdr["trace_num_orig_record"] = c * n_chan + k + 1
    hdr["source_to_receiver_distance"] = 100 + 25 * k + 1000 * c
    hdr["coordinate_scalar"] = -100
    hdr["source_coord_x"] = 123456 + 5000 * s
    hdr["source_coord_y"] = 654321
    hdr["group_coord_x"] = 123456 + 5000 * s + 2500 * k + 7
    hdr["group_coord_y"] = 654321 + 10000 * c
    root = zarr.open_group(path, mode="w")
    root.attrs.update({"apiVersion": "1.0.0", "name": "streamer", "createdOn": "2026-12-02",
                       "attributes": {"surveyType": "3D", "gatherType": "common_source",
                                      "defaultVariableName": "amplitude"}})
    blosc = numcodecs.Blosc(cname="zstd", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE)
    dims = ["shot_point", "cable", "channel", "time"]

    def put(name, data, chunks, d, compressor=blosc, **kw):
        a = root.create_dataset(name, data=data, chunks=chunks, compressor=compressor, **kw)
        a.attrs["_ARRAY_DIMENSIONS"] = d
        return a
    put("amplitude", amp, (2, 1, 8, 16), dims, fill_value=np.nan)
    put("headers", hdr, (2, 1, 8), dims[:3])
    put("trace_mask", mask, (2, 1, 8), dims[:3])
    put("shot_point", sp, (n_sp,), ["shot_point"])
    put("cable", np.arange(n_cable, dtype=np.uint8), (n_cable,), ["cable"])
    put("channel", np.arange(1, n_chan + 1, dtype=np.uint16), (n_chan,), ["channel"])
    t = put("time", np.arange(ns, dtype=np.int32) * 2, (ns,), ["time"])  # ms
    t.attrs["unitsV1"] = {"time": "ms"}
    put("source_coord_x", hdr["source_coord_x"][:, 0, 0] / 100.0, (n_sp,), ["shot_point"])
    put("group_coord_x", hdr["group_coord_x"] / 100.0, (2, 1, 8), dims[:3])
    fh = root.create_dataset("segy_file_header", shape=(), dtype="<U1")
    fh.attrs.update({"textHeader": "C 1 MDIO", "binaryHeader": {"sample_interval": 2000,
                                                                 "samples_per_trace": ns}})
    # What zarr-python reads, shot by shot, live traces in (cable, channel) order.
    g = zarr.open_group(path, mode="r")
    want = {}
    for i, shot_point in enumerate(g["shot_point"][:]):
        live = g["trace_mask"][i].reshape(-1)
        h = g["headers"][i].reshape(-1)[live]
        want[int(shot_point)] = (
            f32(g["amplitude"][i].reshape(-1, ns)[live]),
            {"field_record": h["orig_field_record_num"].astype(np.float64),
             "trace_number": h["trace_num_orig_record"].astype(np.float64),
             "offset": h["source_to_receiver_distance"].astype(np.float64),
             "source_x": h["source_coord_x"] / 100.0, "group_x": h["group_coord_x"] / 100.0,
             "group_y": h["group_coord_y"] / 100.0})
    return want


class ZarrTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        rng = np.random.default_rng(34)
        t = cls.tmp
        cls.want = {}  # dataset -> {shot id: (samples, {header: values})}

        # v2 group: data [shots, traces, samples] float32, Blosc lz4 bitshuffle, chunks
        # across shots, traces and time, ids from shot_ids, the interval as an attribute.
        a = (rng.standard_normal((6, 10, NS)) * 50).astype("f4")
        g = zarr.open_group(f"{t}/cube.zarr", mode="w")
        d = g.create_dataset("data", data=a, chunks=(2, 4, 16),
                             compressor=numcodecs.Blosc(cname="lz4", shuffle=numcodecs.Blosc.BITSHUFFLE))
        d.attrs["sample_interval_us"] = 4000
        g.create_dataset("shot_ids", data=np.array([30, 10, 20, 60, 50, 40], dtype=np.int64))
        mask = np.ones((6, 10), bool)
        mask[1, 2:4] = False  # shot 10's channels 3 and 4 dead: the rest keep their numbers
        g.create_dataset("trace_mask", data=mask)
        r = zarr.open_group(f"{t}/cube.zarr", mode="r")
        cls.want["cube"] = {
            int(i): (f32(r["data"][k][r["trace_mask"][k]]),
                     {"trace_number": np.nonzero(r["trace_mask"][k])[0] + 1.0})
            for k, i in enumerate(r["shot_ids"][:])}

        # v2 arrays as the store itself: big-endian int16 in Fortran order with Zstd; uint16
        # with Zlib and '/' keys; int32 with LZ4; float64 uncompressed with chunks never
        # written (the fill value); zfpy (numcodecs' ZFP) at a fixed accuracy.
        stores = {
            "be_i2_fortran": dict(dtype=">i2", compressor=numcodecs.Zstd(level=3), order="F"),
            "u2_zlib": dict(dtype="<u2", compressor=numcodecs.Zlib(level=6),
                            dimension_separator="/"),
            "i4_lz4": dict(dtype="<i4", compressor=numcodecs.LZ4()),
            "f8_missing": dict(dtype="<f8", compressor=None, fill_value=-7.5),
            "gzip_f4": dict(dtype="<f4", compressor=numcodecs.GZip(level=4)),
        }
        if hasattr(numcodecs, "ZFPY"):
            stores["zfpy_f4"] = dict(dtype="<f4", compressor=numcodecs.ZFPY(mode=4, tolerance=1e-3))
        for name, kw in stores.items():
            x = rng.standard_normal((4, 6, NS)) * 1000
            if kw["dtype"][1] in "iu":
                x = np.abs(x) if kw["dtype"][1] == "u" else x
            arr = zarr.open_array(f"{t}/{name}.zarr", mode="w", shape=x.shape, chunks=(1, 4, 24),
                                  **kw)
            if name == "f8_missing":
                arr[0] = x[0]
                arr[2, :3] = x[2, :3]  # shot 3's other chunks stay unwritten
            else:
                arr[:] = x.astype(kw["dtype"])
            r = zarr.open_array(f"{t}/{name}.zarr", mode="r")
            cls.want[name] = {k + 1: (f32(r[k]), {}) for k in range(4)}

        # v2 [traces, samples] float64 with headers/ columns, shots interleaved, GZip.
        n_tr = 24
        rec = np.array([7, 8, 9] * 8, dtype=np.int32)
        offset = np.linspace(-500.25, 500.25, n_tr)
        s = rng.standard_normal((n_tr, NS)) * 9
        g = zarr.open_group(f"{t}/flat.zarr", mode="w")
        g.create_dataset("data", data=s, chunks=(5, 32), compressor=numcodecs.GZip())
        h = g.create_group("headers")
        h.create_dataset("field_record", data=rec)
        h.create_dataset("offset", data=offset)
        h.create_dataset("receiver", data=np.arange(n_tr, dtype=np.int16) * 3)
        cls.want["flat"] = {}
        for sid in (7, 8, 9):
            rows = np.nonzero(rec == sid)[0]
            cls.want["flat"][sid] = (f32(s[rows]), {"offset": offset[rows],
                                                    "receiver": rows * 3.0,
                                                    "trace_number": np.arange(1, len(rows) + 1)})

        # v3: sharded (index at the end and at the start), blosc zstd + crc32c inside.
        v = (rng.standard_normal((6, 8, NS)) * 20).astype("f4")
        inner = [{"name": "bytes", "configuration": {"endian": "little"}},
                 {"name": "blosc", "configuration": {"cname": "zstd", "clevel": 3,
                                                     "shuffle": "shuffle", "typesize": 4}},
                 {"name": "crc32c"}]
        for where in ("end", "start"):
            zarr_v3.group(f"{t}/v3_shard_{where}.zarr")
            zarr_v3.write_array(f"{t}/v3_shard_{where}.zarr/data", v, chunks=(1, 4, 16),
                                shard=(2, 8, 32), codecs=inner, index_location=where,
                                skip={(4, 0, 0)}, attributes={"sample_interval_us": 500})
            shots = {k + 1: v[k].copy() for k in range(6)}
            shots[5][:4, :16] = 0  # the inner chunk never written: fill value 0
            cls.want[f"v3_shard_{where}"] = {k: (x, {}) for k, x in shots.items()}
        # v3: transpose + gzip, big-endian int16, "v2" chunk keys; the store is the array.
        w = (rng.standard_normal((3, 5, NS)) * 3000).astype("<i2")
        zarr_v3.write_array(f"{t}/v3_transpose.zarr", w, chunks=(2, 3, 20),
                            codecs=[{"name": "transpose", "configuration": {"order": [2, 0, 1]}},
                                    {"name": "bytes", "configuration": {"endian": "big"}},
                                    {"name": "gzip", "configuration": {"level": 5}}],
                            key_encoding="v2", fill_value=0)
        cls.want["v3_transpose"] = {k + 1: (f32(w[k]), {}) for k in range(3)}

        # MDIO v1 shot gathers (zarr v2, as mdio writes with zarr's v2 format).
        cls.want["mdio"] = mdio_store(f"{t}/streamer.mdio", rng)

        # Stores refused: a compressor, a filter, metadata that is not JSON, a group without
        # samples; and a window store with time in 4 chunks for the counted reads.
        zarr.open_array(f"{t}/bz2.zarr", mode="w", shape=(2, 3, 8), chunks=(1, 3, 8),
                        dtype="f4", compressor=numcodecs.BZ2())[:] = 1
        zarr.open_array(f"{t}/delta.zarr", mode="w", shape=(2, 3, 8), chunks=(1, 3, 8),
                        dtype="f4", filters=[numcodecs.Delta(dtype="f4")])[:] = 1
        os.makedirs(f"{t}/badjson.zarr")
        with open(f"{t}/badjson.zarr/.zarray", "w") as f:
            f.write('{"zarr_format": 2, "shape": [2, 3')
        zarr.open_group(f"{t}/empty.zarr", mode="w").create_dataset("other", data=np.zeros(3))
        cls.window_data = (rng.standard_normal((4, 6, 4 * 32)) * 5).astype("f4")
        zarr.open_array(f"{t}/window.zarr", mode="w", shape=cls.window_data.shape,
                        chunks=(1, 6, 32), dtype="f4",
                        compressor=numcodecs.Blosc(cname="lz4"))[:] = cls.window_data

        config = f"{t}/zarr.yaml"
        with open(config, "w") as f:
            f.write("datasets:\n")
            for name in cls.want:
                path = "streamer.mdio" if name == "mdio" else f"{name}.zarr"
                extra = ", sample_interval_us: 1000" if name in stores or name == "v3_transpose" else ""
                f.write(f"  - {{name: {name}, files: {t}/{path}{extra}}}\n")
            for name in ("bz2", "delta", "badjson", "empty"):
                f.write(f"  - {{name: {name}, files: {t}/{name}.zarr, format: zarr}}\n")
        cls.server, cls.clients = harness.server_with_clients([f"--config={config}"])

    @classmethod
    def tearDownClass(cls):
        harness.stop_all(cls.server, cls.clients, cls.tmp)

    def test_every_shot_and_header_equals_zarrs_reading_through_both_python_paths(self):
        for native, c in self.clients.items():
            for name, shots in self.want.items():
                ids = sorted(shots)
                headers = sorted({h for shot in shots.values() for h in shot[1]})
                got = list(c.stream(name, ids, headers=headers))
                self.assertEqual([s.shot_id for s in got], ids, name)
                for shot in got:
                    what = f"{name} shot {shot.shot_id} native={native}"
                    samples, want_headers = shots[shot.shot_id]
                    np.testing.assert_array_equal(shot.samples, samples, err_msg=what)
                    for h, values in want_headers.items():
                        np.testing.assert_array_equal(shot.headers[h], values, err_msg=f"{what} {h}")

    def test_dataset_info_says_what_the_stores_hold(self):
        c = self.clients[harness.client_paths()[-1]]
        cube = c.dataset("cube")
        self.assertEqual((cube.state, cube.format, cube.n_shots, cube.n_samples),
                         ("READY", "zarr", 6, NS))
        self.assertEqual(list(cube.shot_ids), [10, 20, 30, 40, 50, 60])
        self.assertEqual(cube.sample_interval_us, 4000)
        mdio = c.dataset("mdio")
        self.assertEqual(list(mdio.shot_ids), [1001, 1003, 1005, 1007, 1009])
        self.assertEqual(list(mdio.shot_trace_counts), [24, 21, 24, 12, 24])  # dead left out
        self.assertEqual(mdio.sample_interval_us, 2000)  # the SEG-Y binary header's
        self.assertIn("group_x", mdio.header_fields)
        self.assertEqual(c.dataset("v3_shard_end").sample_interval_us, 500)
        self.assertEqual(c.dataset("be_i2_fortran").sample_format, 3)
        self.assertEqual(c.dataset("be_i2_fortran").sample_interval_us, 1000)  # the setting
        flat = c.dataset("flat")
        self.assertEqual(list(flat.shot_trace_counts), [8, 8, 8])
        for h in ("offset", "receiver", "field_record", "trace_number"):
            self.assertIn(h, flat.header_fields)

    def test_windows_conditions_and_encodings_as_for_segy(self):
        for native, c in self.clients.items():
            for name in ("mdio", "v3_shard_start", "flat"):
                shots = self.want[name]
                where = {"offset": (100.0, 300.0)} if name in ("mdio", "flat") else None
                for encoding in ("float32", "lossless", "int16"):
                    for shot in c.stream(name, sorted(shots), window=(10, 40), where=where,
                                         encoding=encoding):
                        samples, headers = shots[shot.shot_id]
                        keep = np.ones(samples.shape[0], bool)
                        if where:
                            keep = (headers["offset"] >= 100.0) & (headers["offset"] <= 300.0)
                        want = samples[keep][:, 10:40]
                        what = f"{name} {encoding} native={native} shot {shot.shot_id}"
                        self.assertEqual(shot.samples.shape, want.shape, what)
                        if encoding == "int16":
                            bound = np.abs(want).max(axis=1, keepdims=True) / 32767 * (1 + 1e-6)
                            self.assertTrue(np.all(np.abs(shot.samples - want) <= bound), what)
                        else:
                            np.testing.assert_array_equal(shot.samples, want, err_msg=what)

    def test_cli_fetch(self):
        out = os.path.join(self.tmp, "fetch")
        harness.cli("fetch", f"--target={self.server.target}", "--dataset=mdio",
                    "--shots=1003,1009", f"--out={out}", "--headers=offset,group_x")
        for sid in (1003, 1009):
            samples, headers = self.want["mdio"][sid]
            np.testing.assert_array_equal(np.load(f"{out}/shot_{sid}.npy"), samples)
            np.testing.assert_array_equal(np.load(f"{out}/shot_{sid}.offset.npy"), headers["offset"])
            np.testing.assert_array_equal(np.load(f"{out}/shot_{sid}.group_x.npy"), headers["group_x"])

    def test_refused_stores_fail_with_the_reason_and_the_rest_is_served(self):
        c = self.clients[harness.client_paths()[-1]]
        expect = {
            "bz2": ("bz2.zarr/.zarray", "compressor 'bz2' is not served"),
            "delta": ("delta.zarr/.zarray", "filters delta are not served"),
            "badjson": ("badjson.zarr/.zarray", "not a JSON object"),
            "empty": ("empty.zarr", "without a samples array"),
        }
        listed = {d.name: d for d in c.list_datasets()}
        for name, (path, reason) in expect.items():
            self.assertEqual(listed[name].state, "FAILED", name)
            self.assertIn(path, listed[name].error, name)
            self.assertIn(reason, listed[name].error, name)
            with self.assertRaises(shotstream.ShotstreamError) as e:
                list(c.stream(name, [1]))
            self.assertEqual(e.exception.code(), grpc.StatusCode.FAILED_PRECONDITION, name)
        self.assertEqual(len(list(c.stream("cube", [10]))), 1)

    def test_a_window_reads_only_the_time_chunks_it_touches(self):
        with harness.Server([f"--dataset=w={self.tmp}/window.zarr", "--sample_interval_us=1000",
                             "--metrics_listen=127.0.0.1:0"]) as server, \
                shotstream.Client(server.target) as c:
            def reads():
                return server.metrics()["shotstream_reads_issued_total"]
            before = reads()
            shot = next(iter(c.stream("w", [1], window=(40, 60))))  # inside time chunk 1
            np.testing.assert_array_equal(shot.samples, self.window_data[0][:, 40:60])
            window_reads = reads() - before
            before = reads()
            shot = next(iter(c.stream("w", [2])))
            np.testing.assert_array_equal(shot.samples, self.window_data[1])
            full_reads = reads() - before
            self.assertEqual((window_reads, full_reads), (1, 4))
        # Chunks that hold two shots each: the second shot comes from the decoded-chunk
        # cache, read once for both.
        pairs = (np.arange(4 * 6 * 64, dtype="f4").reshape(4, 6, 64) - 100) * 0.5
        zarr.open_array(f"{self.tmp}/pairs.zarr", mode="w", shape=pairs.shape,
                        chunks=(2, 6, 16), dtype="f4",
                        compressor=numcodecs.Blosc(cname="zstd"))[:] = pairs
        with harness.Server([f"--dataset=p={self.tmp}/pairs.zarr", "--sample_interval_us=1000",
                             "--metrics_listen=127.0.0.1:0"]) as server, \
                shotstream.Client(server.target) as c:
            counts = []
            for sid in (3, 4):
                before = server.metrics()["shotstream_reads_issued_total"]
                shot = next(iter(c.stream("p", [sid])))
                np.testing.assert_array_equal(shot.samples, pairs[sid - 1])
                counts.append(server.metrics()["shotstream_reads_issued_total"] - before)
            self.assertEqual(counts, [4, 0])

    def node(self, script, *args):
        return harness.node(script, *args, test=self)

    def test_v3_stores_written_by_zarrita_are_served_exactly(self):
        # An independent writer: zarrita (JavaScript) writes the stores and their values.
        out = os.path.join(self.tmp, "zarrita")
        os.makedirs(out, exist_ok=True)
        self.node("zarr_write_v3.mjs", out)
        stores = {"zarrita_blosc": ("<f4", (4, 6, 40)), "zarrita_zstd_i2": ("<i2", (3, 5, 33))}
        args = [f"--dataset={n}={out}/{n}.zarr" for n in stores]
        with harness.Server(args + ["--sample_interval_us=3000"]) as server:
            for native in harness.client_paths():
                with shotstream.Client(server.target, native=native) as c:
                    for name, (dtype, shape) in stores.items():
                        want = np.fromfile(f"{out}/{name}.bin", dtype=dtype).reshape(shape)
                        got = list(c.stream(name, list(range(1, shape[0] + 1))))
                        self.assertEqual(len(got), shape[0], name)
                        for k, shot in enumerate(got):
                            np.testing.assert_array_equal(shot.samples, f32(want[k]),
                                                          err_msg=f"{name} native={native}")
            c = shotstream.Client(server.target)
            self.assertEqual(c.dataset("zarrita_blosc").sample_interval_us, 1000)  # its attribute
            self.assertEqual(c.dataset("zarrita_zstd_i2").sample_interval_us, 3000)
            c.close()

    def test_the_v3_fixtures_read_the_same_through_zarrita(self):
        # The stores testing/zarr_v3 lays out, read by an independent reader: sharding with
        # its index at the end (zarrita reads no index at the start), crc32c, blosc, and
        # big-endian bytes.
        t = self.tmp
        v = (np.arange(4 * 8 * 32, dtype="f4").reshape(4, 8, 32) * 0.5 - 100)
        zarr_v3.write_array(f"{t}/js_shard", v, chunks=(1, 4, 16), shard=(2, 8, 32),
                            codecs=[{"name": "bytes", "configuration": {"endian": "little"}},
                                    {"name": "blosc", "configuration": {"cname": "zstd",
                                                                        "shuffle": "shuffle",
                                                                        "typesize": 4}},
                                    {"name": "crc32c"}], skip={(3, 1, 1)})
        w = (np.arange(3 * 5 * 20) % 3000 - 1500).astype("<i2").reshape(3, 5, 20)
        zarr_v3.write_array(f"{t}/js_big", w, chunks=(2, 3, 8),
                            codecs=[{"name": "bytes", "configuration": {"endian": "big"}},
                                    {"name": "zstd", "configuration": {"level": 3}}],
                            key_encoding="v2")
        v_want = v.copy()
        v_want[3, 4:8, 16:32] = 0
        for name, want in (("js_shard", v_want), ("js_big", w)):
            out = f"{t}/{name}.bin"
            shape = json.loads(self.node("zarr_read_v3.mjs", f"{t}/{name}", out))
            self.assertEqual(tuple(shape), want.shape, name)
            np.testing.assert_array_equal(np.fromfile(out, dtype=want.dtype).reshape(want.shape),
                                          want, err_msg=name)

    def test_a_store_changed_under_the_server_is_read_again(self):
        path = os.path.join(self.tmp, "changing.zarr")
        old = np.ones((3, 4, 16), "f4")
        new = np.arange(3 * 4 * 16, dtype="f4").reshape(3, 4, 16)
        zarr.open_array(path, mode="w", shape=old.shape, chunks=(1, 4, 16), dtype="f4")[:] = old
        with harness.Server([f"--dataset=z={path}", "--sample_interval_us=1000"]) as server, \
                shotstream.Client(server.target) as c:
            np.testing.assert_array_equal(next(iter(c.stream("z", [2]))).samples, old[1])
            zarr.open_array(path, mode="r+")[:] = new  # chunk files replaced
            with self.assertRaises(shotstream.ShotstreamError) as e:
                list(c.stream("z", [2]))
            self.assertEqual(e.exception.code(), grpc.StatusCode.DATA_LOSS)
            self.assertIn("changing.zarr", e.exception.details())

            def fresh():
                try:
                    return np.array_equal(next(iter(c.stream("z", [2]))).samples, new[1])
                except shotstream.ShotstreamError as err:  # the rebuild is under way
                    self.assertEqual(err.code(), grpc.StatusCode.UNAVAILABLE, err.details())
                    return False
            wait_for(fresh, what="the store read again")
            np.testing.assert_array_equal(next(iter(c.stream("z", [3]))).samples, new[2])

    def test_a_chunk_rewritten_in_place_with_its_mtime_restored_is_never_served_stale(self):
        """Same inode, size and mtime: the inode's change time still tells (docs/sources.md)."""
        path = os.path.join(self.tmp, "in_place.zarr")
        old = np.ones((3, 4, 16), "f4")
        zarr.open_array(path, mode="w", shape=old.shape, chunks=(1, 4, 16), dtype="f4",
                        compressor=None)[:] = old
        chunk = os.path.join(path, "1.0.0")  # shot 2's chunk, raw float32
        with harness.Server([f"--dataset=z={path}", "--sample_interval_us=1000"]) as server, \
                shotstream.Client(server.target) as c:
            np.testing.assert_array_equal(next(iter(c.stream("z", [2]))).samples, old[1])
            st = os.stat(chunk)
            new = np.full((4, 16), 7.0, "f4")
            with open(chunk, "r+b") as f:
                f.write(new.tobytes())
            os.utime(chunk, ns=(st.st_atime_ns, st.st_mtime_ns))
            after = os.stat(chunk)
            self.assertEqual((after.st_ino, after.st_size, after.st_mtime_ns),
                             (st.st_ino, st.st_size, st.st_mtime_ns))

            # Only the shot whose chunk changed under its read fails DATA_LOSS; the rebuild
            # starts there, and a request for an untouched shot meanwhile is UNAVAILABLE
            # (which the client retries) or served, never DATA_LOSS.
            with self.assertRaises(shotstream.ShotstreamError) as e:
                list(c.stream("z", [2]))
            self.assertEqual(e.exception.code(), grpc.StatusCode.DATA_LOSS)
            self.assertIn("1.0.0", e.exception.details())
            for native in harness.client_paths():
                with shotstream.Client(server.target, native=native, retries=5) as other:
                    np.testing.assert_array_equal(next(iter(other.stream("z", [3]))).samples,
                                                  old[2])

            def not_stale():
                try:
                    got = next(iter(c.stream("z", [2]))).samples
                except shotstream.ShotstreamError as err:
                    self.assertEqual(err.code(), grpc.StatusCode.UNAVAILABLE, err.details())
                    return False
                self.assertFalse(np.array_equal(got, old[1]), "served stale")
                return np.array_equal(got, new)
            wait_for(not_stale, what="the rewritten chunk read again")


if __name__ == "__main__":
    unittest.main()

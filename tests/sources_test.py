"""HDF5 and NumPy sources through the real server: files written here with h5py and
numpy (both layouts, contiguous and chunked, gzip/shuffle/fletcher32, several dtypes and
byte orders), compared value for value and header for header with h5py's and numpy's own
reading, through both Python paths and the C++ CLI; windows, conditions and encodings;
malformed files FAILED with the file and the reason while the others are served; a file
changed on disk has its catalog rebuilt."""

import os
import shutil
import sys
import tempfile
import unittest

import grpc
import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
import harness  # noqa: E402
from harness import wait_for  # noqa: E402

import shotstream  # noqa: E402

NS = 50


def as_float32(a):
    """What the server promises: every stored type converted to float32 as numpy does."""
    return np.asarray(a).astype(np.float32)


class SourcesTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        rng = np.random.default_rng(5)
        cls.want = {}  # dataset -> {shot id: (samples float32, {header: values})}
        t = cls.tmp

        # .npy [shots, traces, samples], two files: ids 1.. continue in name order.
        a = (rng.standard_normal((3, 7, NS)) * 50).astype("<f4")
        b = (rng.standard_normal((2, 7, NS)) * 50).astype("<f4")
        os.makedirs(f"{t}/npy3")
        np.save(f"{t}/npy3/part_a.npy", a)
        np.save(f"{t}/npy3/part_b.npy", b)
        both = np.concatenate([a, b])
        cls.want["npy3"] = {i + 1: (both[i], {"trace_number": np.arange(1, 8)})
                            for i in range(5)}

        # .npy [traces, samples], one shot a file, one dtype and byte order each.
        os.makedirs(f"{t}/npy2")
        cls.want["npy2"] = {}
        for i, dtype in enumerate([">f4", "<f8", "<i2", ">i4", ">f8"]):
            n = 4 + i
            x = (rng.standard_normal((n, NS)) * 1000).astype(dtype)
            np.save(f"{t}/npy2/shot_{i}.npy", x)
            cls.want["npy2"][i + 1] = (as_float32(np.load(f"{t}/npy2/shot_{i}.npy")),
                                       {"trace_number": np.arange(1, n + 1)})

        # HDF5 [shots, traces, samples], contiguous float32, ids from shot_ids.
        c = (rng.standard_normal((4, 9, NS)) * 10).astype("<f4")
        ids = np.array([101, 103, 102, 110], dtype=np.int64)
        with h5py.File(f"{t}/cube.h5", "w") as f:
            d = f.create_dataset("data", data=c)
            d.attrs["sample_interval_us"] = 4000.0
            f.create_dataset("shot_ids", data=ids)
        with h5py.File(f"{t}/cube.h5", "r") as f:
            cls.want["cube"] = {int(i): (as_float32(f["data"][k]), {})
                                for k, i in enumerate(f["shot_ids"][:])}

        # HDF5 [shots, traces, samples], big-endian int16, chunked across shots, with
        # shuffle, gzip and fletcher32; dt in seconds.
        z = (rng.standard_normal((5, 8, NS)) * 3000).astype(">i2")
        with h5py.File(f"{t}/zipped.h5", "w") as f:
            d = f.create_dataset("data", data=z, chunks=(2, 4, 25), compression="gzip",
                                 compression_opts=6, shuffle=True, fletcher32=True)
            d.attrs["dt"] = 0.002
        with h5py.File(f"{t}/zipped.h5", "r") as f:
            cls.want["zipped"] = {k + 1: (as_float32(f["data"][k]), {}) for k in range(5)}

        # HDF5 [traces, samples] + header columns, traces of shots interleaved, float64
        # samples chunked and compressed, another path, a name HDF5 is not known by.
        n_tr = 30
        rec = np.array([7, 8, 9] * 10, dtype=np.int32)
        offset = np.linspace(-1000.5, 1000.5, n_tr)
        source_x = np.arange(n_tr) * 12.5 + 0.25
        chan = np.arange(n_tr, dtype=np.int64) * 3
        s = rng.standard_normal((n_tr, NS)) * 7
        with h5py.File(f"{t}/flat.hdf5", "w") as f:
            g = f.create_group("survey")
            d = g.create_dataset("traces", data=s, chunks=(6, NS), compression="gzip")
            d.attrs["sample_interval_us"] = 1000
            h = g.create_group("headers")
            h["field_record"] = rec
            h["offset"] = offset
            h["source_x"] = source_x
            h["channel"] = chan
            h["shot_no"] = rec.astype(np.int64) + 1000  # a key by a name SEG-Y has not
        with h5py.File(f"{t}/flat.hdf5", "r") as f:
            g = f["survey"]
            cls.want["flat"] = {}
            for sid in (7, 8, 9):
                rows = np.nonzero(g["headers/field_record"][:] == sid)[0]
                cls.want["flat"][sid] = (
                    as_float32(g["traces"][rows]),
                    {"offset": g["headers/offset"][rows], "source_x": g["headers/source_x"][rows],
                     "channel": g["headers/channel"][rows].astype(np.float64),
                     "trace_number": np.arange(1, len(rows) + 1)})
        shutil.copy(f"{t}/flat.hdf5", f"{t}/flat.seis")  # a name that does not say HDF5

        # Malformed files: each dataset FAILED with its file and reason.
        with h5py.File(f"{t}/nodata.h5", "w") as f:
            f["other"] = np.zeros((2, 3, 4), "f4")
        with h5py.File(f"{t}/rank1.h5", "w") as f:
            f["data"] = np.zeros(10, "f4")
        with h5py.File(f"{t}/lzf.h5", "w") as f:  # h5py's own filter, not libhdf5's
            f.create_dataset("data", data=np.ones((2, 3, 40), "f4"), compression="lzf")
        with h5py.File(f"{t}/noheaders.h5", "w") as f:
            f["data"] = np.zeros((6, 10), "f4")
        np.save(f"{t}/cut.npy", np.ones((2, 5, 20), "f4"))
        with open(f"{t}/cut.npy", "r+b") as f:
            f.truncate(os.path.getsize(f"{t}/cut.npy") - 3)
        os.makedirs(f"{t}/mixed")
        np.save(f"{t}/mixed/a.npy", np.ones((2, 3, 20), "f4"))
        np.save(f"{t}/mixed/b.npy", np.ones((2, 3, 21), "f4"))
        np.save(f"{t}/fortran.npy", np.asfortranarray(np.ones((4, 20), "f4")))

        config = f"{t}/sources.yaml"
        with open(config, "w") as f:
            f.write(f"""
datasets:
  - {{name: npy3, files: "{t}/npy3/*.npy", sample_interval_us: 2500}}
  - {{name: npy2, files: "{t}/npy2/shot_*.npy"}}
  - {{name: cube, files: {t}/cube.h5}}
  - {{name: zipped, files: {t}/zipped.h5}}
  - {{name: flat, files: {t}/flat.hdf5, h5_path: /survey/traces}}
  - {{name: flat_named, files: {t}/flat.seis, format: hdf5, h5_path: survey/traces}}
  - {{name: flat_by_shot_no, files: {t}/flat.hdf5, h5_path: /survey/traces, shot_key: shot_no}}
  - {{name: nodata, files: {t}/nodata.h5}}
  - {{name: rank1, files: {t}/rank1.h5}}
  - {{name: lzf, files: {t}/lzf.h5}}
  - {{name: noheaders, files: {t}/noheaders.h5}}
  - {{name: cut, files: {t}/cut.npy}}
  - {{name: mixed, files: "{t}/mixed/*.npy"}}
  - {{name: fortran, files: {t}/fortran.npy}}
""")
        cls.want["flat_named"] = cls.want["flat"]
        cls.want["flat_by_shot_no"] = {sid + 1000: shot for sid, shot in cls.want["flat"].items()}
        cls.server, cls.clients = harness.server_with_clients([f"--config={config}"])

    @classmethod
    def tearDownClass(cls):
        harness.stop_all(cls.server, cls.clients, cls.tmp)

    def headers_of(self, name):
        return sorted({h for shot in self.want[name].values() for h in shot[1]})

    def test_every_shot_and_header_equals_h5py_and_numpy_through_both_python_paths(self):
        for native, c in self.clients.items():
            for name, shots in self.want.items():
                ids = sorted(shots)
                headers = self.headers_of(name)
                got = list(c.stream(name, ids, headers=headers))
                self.assertEqual([s.shot_id for s in got], ids, name)
                for shot in got:
                    what = f"{name} shot {shot.shot_id} native={native}"
                    samples, want_headers = shots[shot.shot_id]
                    self.assertEqual(shot.samples.dtype, np.float32, what)
                    np.testing.assert_array_equal(shot.samples, samples, err_msg=what)
                    for h, values in want_headers.items():
                        np.testing.assert_array_equal(shot.headers[h], values, err_msg=what + h)

    def test_dataset_info_says_what_the_files_hold(self):
        c = self.clients[harness.client_paths()[-1]]
        npy3 = c.dataset("npy3")
        self.assertEqual((npy3.state, npy3.n_shots, npy3.n_traces, npy3.n_samples, npy3.n_files),
                         ("READY", 5, 35, NS, 2))
        self.assertEqual(npy3.sample_interval_us, 2500)
        self.assertEqual(list(npy3.shot_ids), [1, 2, 3, 4, 5])
        self.assertEqual(npy3.header_fields, ["field_record", "trace_number"])
        self.assertEqual(c.dataset("npy2").sample_format, 5)  # the first file: >f4
        self.assertEqual(list(c.dataset("npy2").shot_trace_counts), [4, 5, 6, 7, 8])
        cube = c.dataset("cube")
        self.assertEqual(list(cube.shot_ids), [101, 102, 103, 110])
        self.assertEqual(cube.sample_interval_us, 4000)
        zipped = c.dataset("zipped")
        self.assertEqual((zipped.sample_interval_us, zipped.sample_format), (2000, 3))
        flat = c.dataset("flat")
        self.assertEqual(list(flat.shot_ids), [7, 8, 9])
        self.assertEqual(list(flat.shot_trace_counts), [10, 10, 10])
        self.assertEqual(flat.sample_interval_us, 1000)
        for h in ("offset", "source_x", "channel", "field_record", "trace_number"):
            self.assertIn(h, flat.header_fields)

    def test_windows_conditions_and_encodings_as_for_segy(self):
        for native, c in self.clients.items():
            for name in ("flat", "npy2", "zipped"):
                shots = self.want[name]
                ids = sorted(shots)
                where = {"offset": (-300.0, 500.0)} if name == "flat" else None
                for encoding in ("float32", "native", "lossless", "int16"):
                    got = c.stream(name, ids, window=(5, 41), where=where, encoding=encoding,
                                   headers=["trace_number"])
                    for shot in got:
                        samples, headers = shots[shot.shot_id]
                        keep = np.ones(samples.shape[0], bool)
                        if where:
                            off = headers["offset"]
                            keep = (off >= -300.0) & (off <= 500.0)
                        want = samples[keep][:, 5:41]
                        what = f"{name} {encoding} native={native} shot {shot.shot_id}"
                        self.assertEqual(shot.samples.shape, want.shape, what)
                        if encoding == "int16":
                            bound = np.abs(want).max(axis=1, keepdims=True) / 32767 * (1 + 1e-6)
                            self.assertTrue(np.all(np.abs(shot.samples - want) <= bound), what)
                        else:
                            np.testing.assert_array_equal(shot.samples, want, err_msg=what)
                        numbers = np.arange(1, samples.shape[0] + 1)
                        np.testing.assert_array_equal(shot.headers["trace_number"], numbers[keep],
                                                      err_msg=what)

    def test_cli_fetch_to_npy_and_segy(self):
        import segyio
        out = os.path.join(self.tmp, "fetch")
        harness.cli("fetch", f"--target={self.server.target}", "--dataset=flat",
                    "--shots=8,9", f"--out={out}", "--headers=offset,channel")
        for sid in (8, 9):
            samples, headers = self.want["flat"][sid]
            np.testing.assert_array_equal(np.load(f"{out}/shot_{sid}.npy"), samples)
            np.testing.assert_array_equal(np.load(f"{out}/shot_{sid}.offset.npy"),
                                          headers["offset"])
            np.testing.assert_array_equal(np.load(f"{out}/shot_{sid}.channel.npy"),
                                          headers["channel"])
        # SEG-Y: the columns SEG-Y has go in their fields (as integers, as SEG-Y keeps them).
        harness.cli("fetch", f"--target={self.server.target}", "--dataset=flat", "--shots=7",
                    f"--out={out}", "--format=segy", "--headers=offset")
        with segyio.open(f"{out}/shot_7.sgy", ignore_geometry=True) as f:
            samples, headers = self.want["flat"][7]
            np.testing.assert_array_equal(np.stack([f.trace[i] for i in range(f.tracecount)]),
                                          samples)
            self.assertEqual(list(f.attributes(segyio.TraceField.FieldRecord)[:]), [7] * 10)
            np.testing.assert_array_equal(f.attributes(segyio.TraceField.offset)[:],
                                          np.round(headers["offset"]).astype(np.int32))
            # The geometry kept: source_x (0.25 + 12.5 k) exact through its trace's scalar.
            scalars = f.attributes(segyio.TraceField.SourceGroupScalar)[:].astype(np.float64)
            raw = f.attributes(segyio.TraceField.SourceX)[:].astype(np.float64)
            got_x = np.where(scalars < 0, raw / -scalars, raw * np.where(scalars > 0, scalars, 1))
            np.testing.assert_array_equal(got_x, headers["source_x"])

    def test_malformed_files_fail_with_the_file_and_reason_and_the_rest_is_served(self):
        c = self.clients[harness.client_paths()[-1]]
        expect = {
            "nodata": ("nodata.h5", "no dataset /data"),
            "rank1": ("rank1.h5", "has 1 dimensions"),
            "lzf": ("lzf.h5", "which this HDF5 library cannot decode"),
            "noheaders": ("noheaders.h5", "needs a header column headers/field_record"),
            "cut": ("cut.npy", "truncated"),
            "mixed": ("b.npy", "share"),
            "fortran": ("fortran.npy", "Fortran order"),
        }
        for name, (path, reason) in expect.items():
            listed = {d.name: d for d in c.list_datasets()}
            self.assertEqual(listed[name].state, "FAILED", name)
            self.assertIn(path, listed[name].error, name)
            self.assertIn(reason, listed[name].error, name)
            with self.assertRaises(shotstream.ShotstreamError) as e:
                list(c.stream(name, [1]))
            self.assertEqual(e.exception.code(), grpc.StatusCode.FAILED_PRECONDITION, name)
            self.assertIn(reason, e.exception.details(), name)
        self.assertEqual(len(list(c.stream("cube", [110]))), 1)
        # libhdf5 prints nothing of its own: its messages are in the statuses.
        self.assertNotIn("HDF5-DIAG", "".join(self.server.stderr_lines))

    def test_a_header_the_source_lacks_is_refused_by_name(self):
        c = self.clients[harness.client_paths()[-1]]
        with self.assertRaises(shotstream.ShotstreamError) as e:
            list(c.stream("npy3", [1], headers=["offset"]))
        self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("has no header 'offset'", e.exception.details())
        self.assertIn("field_record, trace_number", e.exception.details())
        with self.assertRaises(shotstream.ShotstreamError) as e:
            list(c.stream("flat", [7], where={"ofset": (0, 1)}))
        self.assertIn("did you mean 'offset'", e.exception.details())

    def test_a_file_changed_on_disk_has_its_catalog_rebuilt(self):
        # Replaced by another file, or rewritten in place (the same inode: libhdf5 shared
        # the old open's state with the rebuild's, which read the old shots until the old
        # handle was retired).
        for kind, in_place in (("npy", False), ("h5", False), ("npy", True), ("h5", True)):
            d = os.path.join(self.tmp, f"change_{kind}_{'inplace' if in_place else 'replaced'}")
            os.makedirs(d)
            path = os.path.join(d, f"line.{kind}")
            old, new = np.ones((2, 3, 20), "f4"), np.arange(4 * 3 * 20, dtype="f4").reshape(4, 3, 20)

            def write(a, to):
                if kind == "npy":
                    with open(to, "wb") as f:
                        np.save(f, a)
                else:
                    with h5py.File(to, "w") as f:
                        f["data"] = a
            write(old, path)
            with harness.Server([f"--dataset=line={path}"]) as server, \
                    shotstream.Client(server.target) as c:
                self.assertEqual(list(c.dataset("line").shot_ids), [1, 2])
                if in_place:
                    inode = os.stat(path).st_ino
                    write(new, path)
                    self.assertEqual(os.stat(path).st_ino, inode)
                else:
                    write(new, path + ".tmp")
                    os.replace(path + ".tmp", path)
                with self.assertRaises(shotstream.ShotstreamError) as e:
                    list(c.stream("line", [1]))
                self.assertEqual(e.exception.code(), grpc.StatusCode.DATA_LOSS)
                self.assertIn(f"line.{kind}", e.exception.details())

                def rebuilt():
                    try:
                        return list(c.dataset("line").shot_ids) == [1, 2, 3, 4]
                    except shotstream.ShotstreamError as err:
                        self.assertEqual(err.code(), grpc.StatusCode.UNAVAILABLE)
                        return False
                wait_for(rebuilt, what="the catalog rebuild")
                shot = next(iter(c.stream("line", [4])))
                np.testing.assert_array_equal(shot.samples, new[3])


if __name__ == "__main__":
    unittest.main()

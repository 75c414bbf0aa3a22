"""shotstream.xarray through a real server and a real dask.distributed LocalCluster of two
worker processes: lazy until computed (no shot sent), values equal to Client.stream and to
segyio for SEG-Y, HDF5 and Zarr datasets with windows, conditions and encodings, ragged
shots padded and masked, a per-shot RMS equal to numpy's, a worker killed mid-compute, a
round trip through to_shotstream read back by segyio, the xarray entry point, and errors
that keep their code through Dask."""

import os
import signal
import sys
import tempfile
import unittest

import grpc
import h5py
import numpy as np
import segyio
import zarr

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
import harness  # noqa: E402
from harness import wait_for  # noqa: E402

import dask  # noqa: E402
import distributed  # noqa: E402
import xarray as xr  # noqa: E402

import shotstream  # noqa: E402
import shotstream.xarray as ssx  # noqa: E402

NS = 120
HEADERS = ["offset", "group_x", "source_x"]


def register_entry_point(tmp):
    """The package's xarray.backends entry point, as pyproject.toml declares it, made
    visible to importlib.metadata (an installed package's dist-info does the same)."""
    text = open(harness.runfile("client/python/pyproject.toml")).read()
    section = text.split('[project.entry-points."xarray.backends"]', 1)[1]
    line = next(l for l in section.splitlines() if "=" in l)
    name, value = (p.strip().strip('"') for p in line.split("=", 1))
    info = os.path.join(tmp, "shotstream_entry-0.dist-info")
    os.makedirs(info)
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write("Metadata-Version: 2.1\nName: shotstream-entry\nVersion: 0\n")
    with open(os.path.join(info, "entry_points.txt"), "w") as f:
        f.write(f"[xarray.backends]\n{name} = {value}\n")
    sys.path.append(tmp)
    return name


def gathers(ds):
    """{shot id: (samples of the traces present, {header: values}, mask)} of a computed
    Dataset."""
    out = {}
    for i, sid in enumerate(ds.shot.values):
        mask = ds.trace_mask.values[i]
        out[int(sid)] = (ds.samples.values[i][mask],
                         {h: ds[h].values[i][mask] for h in ds.coords
                          if ds[h].dims == ("shot", "trace")}, mask, ds.samples.values[i])
    return out


class XarrayTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        t = cls.tmp
        # Ragged SEG-Y: three shots of 12 traces, two of 7, in two files.
        harness.write_survey(f"{t}/a.sgy", 5, [1, 2, 3], 12, NS, seed=1)
        harness.write_survey(f"{t}/b.sgy", 5, [4, 5], 7, NS, seed=2)
        rng = np.random.default_rng(5)
        with h5py.File(f"{t}/cube.h5", "w") as f:
            d = f.create_dataset("data", data=(rng.standard_normal((4, 9, NS)) * 10)
                                 .astype("<f4"))
            d.attrs["sample_interval_us"] = 4000.0
            f.create_dataset("shot_ids", data=np.array([101, 103, 102, 110], dtype=np.int64))
        g = zarr.open_group(f"{t}/cube.zarr", mode="w")
        g.create_dataset("data", data=(rng.standard_normal((6, 10, NS)) * 50).astype("f4"),
                         chunks=(2, 4, 16)).attrs["sample_interval_us"] = 4000
        g.create_dataset("shot_ids", data=np.array([30, 10, 20, 60, 50, 40], dtype=np.int64))
        cfg = f"{t}/server.yaml"
        with open(cfg, "w") as f:
            f.write(f"""write_dir: {t}/written
metrics_listen: 127.0.0.1:0
limits: {{max_shots_per_request: 4}}
datasets:
  - {{name: line, files: "{t}/[ab].sgy"}}
  - {{name: cube_h5, files: {t}/cube.h5}}
  - {{name: cube_zarr, files: {t}/cube.zarr, format: zarr}}
""")
        cls.server = harness.Server([f"--config={cfg}"])
        cls.target = cls.server.target
        cls.client = shotstream.Client(cls.target)
        cls.oracle = harness.segyio_shots([f"{t}/a.sgy", f"{t}/b.sgy"])
        cls.engine = register_entry_point(f"{t}/entry")
        # Two worker processes, one thread each (spawned: each makes its own Client).
        cls.cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                               processes=True, dashboard_address=None)
        cls.dask = distributed.Client(cls.cluster)

    @classmethod
    def tearDownClass(cls):
        cls.dask.close()
        cls.cluster.close()
        cls.client.close()
        harness.stop_all(cls.server, {}, cls.tmp)

    def shots_sent(self):
        return self.server.metrics()["shotstream_shots_sent_total"]

    def assert_equals_stream(self, ds, name, ids, **selection):
        """ds (computed) holds exactly what Client.stream gives for the selection: each
        shot's traces first, NaN after them, trace_mask True where a trace is."""
        got = gathers(ds)
        headers = [h for h in ds.coords if ds[h].dims == ("shot", "trace")]
        n = 0
        shots = (shot for k in range(0, len(ids), 4)  # the server's max_shots_per_request
                 for shot in self.client.stream(name, ids[k:k + 4], headers=headers,
                                                **selection))
        for shot in shots:
            samples, hdrs, mask, padded = got[shot.shot_id]
            k = len(shot.samples)
            what = f"{name} shot {shot.shot_id}"
            np.testing.assert_array_equal(samples, shot.samples, err_msg=what)
            self.assertEqual(list(mask), [True] * k + [False] * (len(mask) - k), what)
            self.assertTrue(np.isnan(padded[k:]).all(), what)
            for h in headers:
                np.testing.assert_array_equal(hdrs[h], shot.headers[h], err_msg=what + h)
            n += 1
        self.assertEqual(n, len(ids))

    def test_lazy_until_computed_then_exact_for_segy_hdf5_and_zarr(self):
        cases = [
            ("line", dict(window=(10, 110), where={"offset": (-1000, -900)},
                          headers=HEADERS)),
            ("line", dict(encoding="int16", tolerance=1e-3, headers=["offset"])),
            ("cube_h5", dict(window=(5, None), encoding="lossless")),
            ("cube_zarr", dict(window=(0, 64), encoding="quantized", tolerance=1e-3,
                               headers=["trace_number"])),
        ]
        for name, sel in cases:
            with self.subTest(name=name, sel=sel):
                before = self.shots_sent()
                ds = ssx.open_dataset(self.target, name, shots_per_chunk=2, **sel)
                self.assertEqual(self.shots_sent(), before)  # nothing read yet
                info = self.client.dataset(name)
                self.assertEqual(list(ds.shot.values), list(info.shot_ids))
                self.assertEqual(ds.samples.dims, ("shot", "trace", "sample"))
                self.assertEqual(ds.samples.data.chunks[0],
                                 tuple([2] * (info.n_shots // 2) + [1] * (info.n_shots % 2)))
                start, stop = sel.get("window") or (0, None)
                stop = stop or info.n_samples
                np.testing.assert_allclose(ds.time.values,
                                           np.arange(start, stop) * info.sample_interval_us
                                           / 1000)
                self.assertEqual(ds.attrs["format"], info.format)
                self.assertEqual(ds.attrs["sample_interval_us"], info.sample_interval_us)
                computed = ds.compute()  # on the cluster (the active distributed Client)
                self.assertGreater(self.shots_sent(), before)
                stream_sel = {k: v for k, v in sel.items() if k != "headers"}
                self.assert_equals_stream(computed, name, list(info.shot_ids), **stream_sel)

    def test_ragged_shots_padded_and_masked_equal_segyio(self):
        ds = ssx.open_dataset(self.target, "line", headers=HEADERS, shots_per_chunk=3)
        self.assertEqual(ds.sizes["trace"], 12)  # the largest shot
        computed = ds.compute(scheduler="threads")  # the threaded scheduler too
        self.assertEqual(list(computed.trace_mask.values.sum(axis=1)), [12, 12, 12, 7, 7])
        for sid, (samples, hdrs, mask, padded) in gathers(computed).items():
            want, want_headers = self.oracle[sid]
            np.testing.assert_array_equal(samples, want)
            for h in HEADERS:
                np.testing.assert_array_equal(hdrs[h], want_headers[h])
            self.assertTrue(np.isnan(padded[len(want):]).all())
            self.assertTrue(np.isnan(computed.offset.values[3, 7:]).all())
        none = ssx.open_dataset(self.target, "line", shot_ids=[], headers=["offset"]).compute()
        self.assertEqual(dict(none.samples.sizes), {"shot": 0, "trace": 0, "sample": NS})
        some = ssx.open_dataset(self.target, "line", shot_ids=[5, 1]).compute()  # any order
        self.assertEqual(list(some.shot.values), [5, 1])
        self.assertEqual(list(some.trace_mask.values.sum(axis=1)), [7, 12])
        np.testing.assert_array_equal(some.samples.values[0, :7], self.oracle[5][0])

    def test_a_per_shot_rms_over_the_survey_equals_numpys(self):
        ds = ssx.open_dataset(self.target, "line")
        rms = np.sqrt((ds.samples.astype("f8") ** 2).mean(("trace", "sample"), skipna=True))
        got = rms.compute()
        want = [np.sqrt(np.mean(self.oracle[s][0].astype("f8") ** 2)) for s in [1, 2, 3, 4, 5]]
        np.testing.assert_allclose(got.values, want, rtol=1e-12)
        self.assertEqual(list(got.shot.values), [1, 2, 3, 4, 5])

    def test_a_worker_killed_mid_compute_and_the_result_still_exact(self):
        ds = ssx.open_dataset(self.target, "line", shots_per_chunk=1)
        go = distributed.Event("go-" + self.id())
        marks = os.path.join(self.tmp, "marks")
        os.makedirs(marks, exist_ok=True)
        event_name = go.name

        def hold(block, block_info=None):
            # The third shot's task says where it runs, then waits to be let go.
            if block_info[0]["chunk-location"][0] == 2:
                with open(os.path.join(marks, f"{os.getpid()}"), "w"):
                    pass
                distributed.Event(event_name).wait(timeout=120)
            return np.sqrt(np.nanmean(block.astype("f8") ** 2, axis=(1, 2)))

        future = self.dask.compute(
            ds.samples.data.map_blocks(hold, drop_axis=(1, 2), dtype="f8"))
        wait_for(lambda: os.listdir(marks), timeout=60, what="the held task to start")
        victim = int(os.listdir(marks)[0])
        os.kill(victim, signal.SIGKILL)  # its worker dies holding the task and its shot
        os.remove(os.path.join(marks, str(victim)))
        go.set()
        got = future.result(timeout=120)
        want = [np.sqrt(np.mean(self.oracle[s][0].astype("f8") ** 2)) for s in [1, 2, 3, 4, 5]]
        np.testing.assert_allclose(got, want, rtol=1e-12)

    def test_to_shotstream_writes_back_one_dataset_read_by_segyio(self):
        ds = ssx.open_dataset(self.target, "line", headers=HEADERS, shots_per_chunk=2)
        processed = ds.assign(samples=ds.samples * 2)  # lazy: a processing step per chunk
        info = ssx.to_shotstream(processed, self.target, "doubled")  # 3 chunks: 3 parts
        self.assertEqual((info.name, info.state, info.n_shots, info.n_traces),
                         ("doubled", "READY", 5, 50))
        self.assertEqual(list(info.shot_trace_counts), [12, 12, 12, 7, 7])
        path = os.path.join(self.tmp, "written", "doubled.sgy")
        back = harness.segyio_shots([path])
        for sid in [1, 2, 3, 4, 5]:
            want, want_headers = self.oracle[sid]
            np.testing.assert_array_equal(back[sid][0], want * 2)
            for h in HEADERS:
                np.testing.assert_array_equal(back[sid][1][h], want_headers[h])
        with segyio.open(path, ignore_geometry=True) as f:
            self.assertEqual(f.bin[segyio.BinField.Interval], 2000)
        # A numpy-backed DataArray (no Dask) is one write; trace_mask honoured.
        small = ds.isel(shot=[3]).compute()
        arr = small.samples.assign_coords(trace_mask=small.trace_mask)
        info = ssx.to_shotstream(arr, self.target, "one_shot")
        self.assertEqual((info.n_shots, list(info.shot_trace_counts)), (1, [7]))
        with self.assertRaises(shotstream.ShotstreamError) as e:  # the name is taken
            ssx.to_shotstream(processed, self.target, "doubled")
        self.assertEqual(e.exception.code(), grpc.StatusCode.ALREADY_EXISTS)

    def test_the_xarray_entry_point(self):
        url = f"shotstream://{self.target}/line"
        ds = xr.open_dataset(url, engine=self.engine, chunks={}, headers=["offset"],
                             window=(0, 60), shots_per_chunk=2)
        self.assertEqual(ds.samples.data.chunks[0], (2, 2, 1))
        direct = ssx.open_dataset(self.target, "line", headers=["offset"], window=(0, 60))
        a, b = ds.compute(), direct.compute()
        np.testing.assert_array_equal(a.samples.values, b.samples.values)
        np.testing.assert_array_equal(a.offset.values, b.offset.values)
        np.testing.assert_array_equal(a.trace_mask.values, b.trace_mask.values)
        self.assertIn(self.engine, xr.backends.list_engines())

    def test_errors_keep_their_code_through_dask(self):
        cases = [
            (dict(name="line", headers=["nope"]), grpc.StatusCode.INVALID_ARGUMENT, "nope"),
            (dict(name="line", window=(50, 20)), grpc.StatusCode.INVALID_ARGUMENT, "window"),
            (dict(name="absent"), grpc.StatusCode.NOT_FOUND, "absent"),
            (dict(name="line", shot_ids=[1, 99]), grpc.StatusCode.NOT_FOUND, "99"),
        ]
        before = self.shots_sent()
        for kw, code, text in cases:
            with self.subTest(kw=kw), self.assertRaises(shotstream.ShotstreamError) as e:
                ssx.open_dataset(self.target, kw.pop("name"), **kw)  # refused at open
            self.assertEqual(e.exception.code(), code)
            self.assertIn(text, str(e.exception))
        self.assertEqual(self.shots_sent(), before)
        # Refused at compute (5 shots a request over the server's limit of 4): the
        # worker's error comes back through Dask with its code.
        ds = ssx.open_dataset(self.target, "line", shots_per_chunk=5)
        with self.assertRaises(shotstream.ShotstreamError) as e:
            dask.compute(ds.samples.sum())
        self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("max_shots_per_request", str(e.exception))

    def test_graph_pickles_without_a_channel(self):
        import pickle
        ds = ssx.open_dataset(self.target, "line", headers=["offset"])
        blob = pickle.dumps(dict(ds.samples.data.__dask_graph__()))
        self.assertLess(len(blob), 20000)
        self.assertNotIn(b"Client", blob)  # the selection and targets, not a connection


if __name__ == "__main__":
    unittest.main()

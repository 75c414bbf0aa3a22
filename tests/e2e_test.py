"""End to end: SEG-Y files written by segyio, the real server binary on port 0, the
Python client and the C++ CLI, every sample and header compared with segyio's reading."""

import glob
import os
import random
import shutil
import sys
import tempfile
import unittest

import grpc
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
import harness  # noqa: E402
import shotstream  # noqa: E402
import synth  # noqa: E402


def raw_stream(channel, request):
    """StreamShots through the generated stubs' raw bytes: each chunk's metadata with its
    samples' size as sent, and the shots shotstream.wire assembles from them."""
    from shotstream import wire
    from shotstream.v1 import shotstream_pb2 as pb
    call = channel.unary_stream("/shotstream.v1.ShotStream/StreamShots",
                                request_serializer=pb.StreamShotsRequest.SerializeToString)
    asm, chunks, shots = wire.Assembler(), [], []
    for raw in call(request):
        meta, data = wire.split_chunk(raw)
        chunks.append((meta, len(data)))
        shot = asm.add(raw)
        if shot is not None:
            shots.append(shot)
    return chunks, shots


class EndToEndTest(harness.LineOneTest):

    def test_list_and_info_match_segyio(self):
        by_name = {d.name: d for d in self.client.list_datasets()}
        self.assertEqual(by_name["line1"].state, "READY")
        self.assertEqual(by_name["broken"].state, "FAILED")
        self.assertIn("junk.sgy", by_name["broken"].error)
        info = self.client.dataset("line1")
        self.assertEqual(list(info.shot_ids), sorted(self.oracle))
        self.assertEqual(info.shot_ids.dtype, np.int64)
        self.assertEqual(list(info.shot_trace_counts),
                         [self.oracle[s][0].shape[0] for s in sorted(self.oracle)])
        self.assertEqual(info.n_samples, 301)
        self.assertEqual(info.sample_interval_us, 2000)
        self.assertEqual(info.sample_format, 1)
        self.assertEqual(info.n_traces, 72 + 48 + 51)
        self.assertEqual(info.n_files, 3)

    def test_get_dataset_pages(self):
        from shotstream.v1 import shotstream_pb2 as pb
        from shotstream.v1 import shotstream_pb2_grpc as pb_grpc
        with grpc.insecure_channel(self.server.target) as ch:
            stub = pb_grpc.ShotStreamStub(ch)
            ids, token, pages = [], "", 0
            while True:
                page = stub.GetDataset(pb.GetDatasetRequest(name="line1", page_size=3,
                                                            page_token=token))
                ids += list(page.shot_ids)
                pages += 1
                token = page.next_page_token
                if not token:
                    break
            self.assertEqual(ids, sorted(self.oracle))
            self.assertEqual(pages, 3)  # 7 shots, 3 per page
            with self.assertRaises(grpc.RpcError) as e:
                stub.GetDataset(pb.GetDatasetRequest(name="line1", page_size=3,
                                                     page_token="bogus"))
            self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        # The clients page by themselves (one page here) and get everything.
        self.assertEqual(list(self.client.dataset("line1").shot_ids), sorted(self.oracle))

    def test_stream_random_order_with_repeats_and_all_headers(self):
        ids = sorted(self.oracle)
        order = ids + ids[::-1] + [3, 3, 3]
        random.Random(5).shuffle(order)
        got = list(self.client.stream("line1", order, queue_depth=3,
                                      headers=list(harness.HEADER_FIELDS)))
        self.assertEqual([s.shot_id for s in got], order)
        self.assertEqual([s.index for s in got], list(range(len(order))))
        for shot in got:
            self.assert_shot(shot, shot.shot_id)
            self.assertEqual(set(shot.headers), set(harness.HEADER_FIELDS))
        # Scalars applied: -100 on coordinates, -10 on elevations.
        self.assertAlmostEqual(got[0].headers["source_x"][0], got[0].shot_id * 50.0)

    def test_large_shots_arrive_in_chunks_and_reassemble_exactly(self):
        # 20000-byte chunks (server flag) and 5000-byte chunks (request) both split shots;
        # 64 MiB sends each shot in one message, viewed without a copy. Either way the
        # samples are exact and read-only.
        for chunk in (0, 5000, 64 << 20):
            for shot in self.client.stream("line1", [3, 1], max_chunk_bytes=chunk):
                self.assert_shot(shot, shot.shot_id)
                self.assertFalse(shot.samples.flags.writeable)
                with self.assertRaises(ValueError):
                    shot.samples[0, 0] = 1.0

    def test_unknown_dataset_and_shot_are_not_found_before_data(self):
        with self.assertRaises(shotstream.ShotstreamError) as e:
            list(self.client.stream("nope", [1]))
        self.assertEqual(e.exception.code(), grpc.StatusCode.NOT_FOUND)
        self.assertIn("nope", e.exception.details())
        with self.assertRaises(shotstream.ShotstreamError) as e:
            self.client.dataset("../etc")
        self.assertEqual(e.exception.code(), grpc.StatusCode.NOT_FOUND)
        # The bad id is last: no shot may be delivered before the error.
        got = []
        with self.assertRaises(shotstream.ShotstreamError) as e:
            for shot in self.client.stream("line1", [1, 2, 999]):
                got.append(shot)
        self.assertEqual(e.exception.code(), grpc.StatusCode.NOT_FOUND)
        self.assertIn("999", e.exception.details())
        self.assertEqual(got, [])
        with self.assertRaises(shotstream.ShotstreamError) as e:
            list(self.client.stream("line1", [1], headers=["no_such_field"]))
        self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        # A dataset that failed to load: permanent, with the file and reason, on both
        # calls (a client with retries must not retry it).
        with self.assertRaises(shotstream.ShotstreamError) as e:
            list(self.client.stream("broken", [1]))
        self.assertEqual(e.exception.code(), grpc.StatusCode.FAILED_PRECONDITION)
        self.assertIn("junk.sgy", e.exception.details())
        with self.assertRaises(shotstream.ShotstreamError) as e:
            self.client.dataset("broken")
        self.assertEqual(e.exception.code(), grpc.StatusCode.FAILED_PRECONDITION)
        self.assertIn("junk.sgy", e.exception.details())
        with shotstream.Client(self.server.target, retries=5) as retrying:
            with self.assertRaises(shotstream.ShotstreamError) as e:
                list(retrying.stream("broken", [1]))
            self.assertEqual(e.exception.code(), grpc.StatusCode.FAILED_PRECONDITION)
        res = harness.cli("info", f"--target={self.server.target}", "--dataset=broken",
                          check=False)
        self.assertNotEqual(res.returncode, 0)
        self.assertIn("FAILED_PRECONDITION", res.stderr)
        self.assertIn("junk.sgy", res.stderr)
        res = harness.cli("fetch", f"--target={self.server.target}", "--dataset=line1",
                          "--shots=12345", f"--out={self.tmp}/x", check=False)
        self.assertNotEqual(res.returncode, 0)
        self.assertIn("NOT_FOUND", res.stderr)
        self.assertIn("12345", res.stderr)
        # The server keeps serving.
        self.assert_shot(next(iter(self.client.stream("line1", [4]))), 4)

    def test_abandoned_stream_does_not_disturb_others(self):
        gen = self.client.stream("line1", sorted(self.oracle) * 20, queue_depth=2)
        first = next(gen)
        self.assert_shot(first, first.shot_id)
        gen.close()  # cancels the call mid-stream
        self.assert_shot(next(iter(self.client.stream("line1", [10]))), 10)

    def test_catalog_dir_builds_once_then_reuses(self):
        cat = os.path.join(self.tmp, "catalogs")
        d = os.path.dirname(self.paths[0])
        outs = []
        for _ in range(2):
            with harness.Server([f"--dataset=line1={d}/*.sgy", f"--catalog_dir={cat}"]) as s:
                with shotstream.Client(s.target) as c:
                    self.assert_shot(next(iter(c.stream("line1", [3]))), 3)
                s.stop()
                outs.append("".join(s.stderr_lines))
        self.assertIn("catalog built, saved to", outs[0])
        self.assertIn("catalog reused", outs[1])
        self.assertTrue(os.path.exists(os.path.join(cat, "line1.catalog")))
        res = harness.cli_server("--index_only", f"--dataset=line1={d}/*.sgy",
                                 f"--catalog_dir={cat}")
        self.assertIn("line1: files 3  traces 171  shots 7", res.stdout)
        self.assertIn("traces/shot min 17 median 24 max 48", res.stdout)

    def test_catalog_scan_on_slow_storage_gives_the_same_catalog(self):
        # Every pread delayed (tools/io_shim.c): the scan switches to region reads after
        # its first strided reads, and must find exactly the same shots.
        import subprocess
        shim = harness.runfile("libio_shim.so")
        d = os.path.join(self.tmp, "long")
        synth.write_survey(d, n_shots=6, traces_per_shot=40, n_samples=1000, n_files=2, fmt=5)
        args = [harness.runfile(harness.SERVER), "--index_only", f"--dataset=d={d}/*.sgy"]
        fast = subprocess.run(args, capture_output=True, text=True, check=True).stdout
        slow = subprocess.run(args, capture_output=True, text=True, check=True,
                              env=harness.preload_env(shim, SLOW_IO_US=300)).stdout
        strip = lambda out: out.split("  bytes")[0]  # noqa: E731
        self.assertEqual(strip(fast), strip(slow))
        self.assertIn("traces 240  shots 6", fast)

    def test_source_xy_shot_key(self):
        d = os.path.dirname(self.paths[0])
        with harness.Server([f"--dataset=xy={d}/*.sgy", "--shot_key=source_xy"]) as s, \
                shotstream.Client(s.target) as c:
            info = c.dataset("xy")
            # write_survey puts shot k's source at x = k * 50 m (scalar -100), y = 1234.56 m;
            # files in name order meet field records 1, 2, 3, 4, -7, 10, 11 in that order.
            first_seen = [1, 2, 3, 4, -7, 10, 11]
            self.assertEqual(list(info.shot_ids), list(range(1, 8)))
            for sid, ffid in zip(range(1, 8), first_seen):
                self.assertEqual(info.source_positions[sid], (ffid * 50.0, 1234.56))
            for shot in c.stream("xy", [5, 3], headers=["source_x"]):
                ffid = first_seen[shot.shot_id - 1]
                np.testing.assert_array_equal(shot.samples, self.oracle[ffid][0])
                np.testing.assert_array_equal(shot.headers["source_x"], ffid * 50.0)

    def test_zero_copy_sends_big_endian_samples_only_to_requests_that_accept_them(self):
        # Shots 4 and 10 lie in big-endian IEEE files (sent as stored, from the mapping,
        # where accepted); shot 3 spans an IBM file too (always decoded).
        from shotstream import wire
        from shotstream.v1 import shotstream_pb2 as pb
        with grpc.insecure_channel(self.server.target) as ch:
            for accept in (True, False):
                with self.subTest(accept_big_endian=accept):
                    req = pb.StreamShotsRequest(
                        dataset="line1", shot_ids=[4, 10, 3, 4],
                        selection=pb.ShotSelection(headers=["offset"], accept_big_endian=accept))
                    chunks, shots = raw_stream(ch, req)
                    big = {}
                    for meta, _ in chunks:
                        big.setdefault(meta.shot_id, set()).add(meta.big_endian)
                    self.assertEqual([s.shot_id for s in shots], [4, 10, 3, 4])
                    for shot in shots:
                        self.assert_shot(shot, shot.shot_id)
                    self.assertEqual(big, {4: {accept}, 10: {accept}, 3: {False}})
        # Off on the server: decoded for everyone.
        with harness.Server([f"--dataset=line1={os.path.dirname(self.paths[0])}/*.sgy",
                             "--zero_copy=false"]) as server, \
                grpc.insecure_channel(server.target) as ch:
            call = ch.unary_stream("/shotstream.v1.ShotStream/StreamShots",
                                   request_serializer=pb.StreamShotsRequest.SerializeToString)
            req = pb.StreamShotsRequest(dataset="line1", shot_ids=[4],
                                        selection=pb.ShotSelection(accept_big_endian=True))
            self.assertEqual({wire.split_chunk(raw)[0].big_endian for raw in call(req)}, {False})

    def test_traces_go_with_the_headers_between_them_to_clients_that_take_gaps(self):
        # Traces of 2500 IEEE samples (10000 bytes): the 240-byte header between two is
        # under 1/32 of a trace, so a request with accept_trace_gaps gets each chunk's
        # traces as the range of the file they lie in, headers and all, within
        # max_chunk_bytes (9 traces: 9 x 10000 + 8 x 240 bytes); one without, 10 traces
        # of samples alone. Every client gets segyio's samples.
        from shotstream.v1 import shotstream_pb2 as pb
        d = os.path.join(self.tmp, "gaps")
        os.makedirs(d)
        harness.write_survey(os.path.join(d, "a.sgy"), 5, [21, 22, 23], 40, 2500, seed=4)
        oracle = harness.segyio_shots([os.path.join(d, "a.sgy")])
        with harness.Server([f"--dataset=gaps={d}/*.sgy"]) as server, \
                grpc.insecure_channel(server.target) as ch:
            for accept in (True, False):
                with self.subTest(accept_trace_gaps=accept):
                    req = pb.StreamShotsRequest(
                        dataset="gaps", shot_ids=[22, 21, 23, 22],
                        selection=pb.ShotSelection(max_chunk_bytes=100_000,
                                                   accept_big_endian=True,
                                                   accept_trace_gaps=accept))
                    chunks, shots = raw_stream(ch, req)
                    sizes = {(meta.trace_gap, size) for meta, size in chunks}
                    self.assertEqual([s.shot_id for s in shots], [22, 21, 23, 22])
                    for shot in shots:
                        np.testing.assert_array_equal(shot.samples, oracle[shot.shot_id][0])
                    if accept:  # 40 traces: 9, 9, 9, 9, 4
                        self.assertEqual(sizes, {(240, 9 * 10000 + 8 * 240),
                                                 (240, 4 * 10000 + 3 * 240)})
                    else:  # 10 traces a chunk
                        self.assertEqual(sizes, {(0, 100_000)})
            # The C++ client takes gaps unless told not to (--trace_gaps=false); it and
            # the Python clients give segyio's samples either way.
            for gaps, extra in ((True, 3 * 35 * 240), (False, 0)):
                res = harness.cli_bench(server.target, "gaps", max_chunk_bytes=100_000,
                                        trace_gaps=str(gaps).lower())
                self.assertEqual(res["checksums_verified"], 3)
                self.assertEqual(res["wire_bytes"], res["bytes"] + extra)
            # Python: natively as trace_gaps says (a shot of 40 traces in one message, 39
            # headers), through grpcio the samples alone.
            for native in harness.client_paths():
                for gaps in (True, False):
                    with shotstream.Client(server.target, native=native) as c:
                        for shot in c.stream("gaps", [23, 21], trace_gaps=gaps):
                            np.testing.assert_array_equal(shot.samples,
                                                          oracle[shot.shot_id][0])
                        self.assertEqual(c.wire_bytes, 2 * 400_000 + (
                            2 * 39 * 240 if gaps and native else 0), (native, gaps))

    def test_little_endian_file_written_with_numpy(self):
        # segyio 1.8.3 writes little-endian files wrongly, so numpy writes this one.
        d = os.path.join(self.tmp, "le")
        os.makedirs(d)
        ns, nt = 50, 6
        rng = np.random.default_rng(9)
        data = rng.standard_normal((nt, ns)).astype("<f4")
        head = np.zeros(3600, dtype=np.uint8)
        binh = head[3200:].view(np.uint8)
        binh[16:18] = np.frombuffer(np.int16(1000).astype("<i2").tobytes(), np.uint8)
        binh[20:22] = np.frombuffer(np.uint16(ns).astype("<u2").tobytes(), np.uint8)
        binh[24:26] = np.frombuffer(np.int16(5).astype("<i2").tobytes(), np.uint8)
        traces = []
        for t in range(nt):
            th = np.zeros(240, dtype=np.uint8)
            th[8:12] = np.frombuffer(np.int32(40 + t // 3).astype("<i4").tobytes(), np.uint8)
            th[36:40] = np.frombuffer(np.int32(t * 10).astype("<i4").tobytes(), np.uint8)
            th[114:116] = np.frombuffer(np.uint16(ns).astype("<u2").tobytes(), np.uint8)
            traces.append(th.tobytes() + data[t].tobytes())
        with open(os.path.join(d, "le.sgy"), "wb") as f:
            f.write(head.tobytes() + b"".join(traces))
        with harness.Server([f"--dataset=le={d}/*.sgy"]) as server:
            with shotstream.Client(server.target) as c:
                info = c.dataset("le")
                self.assertEqual(list(info.shot_ids), [40, 41])
                self.assertEqual(info.sample_interval_us, 1000)
                shots = list(c.stream("le", [41, 40], headers=["offset"]))
                np.testing.assert_array_equal(shots[0].samples, data[3:])
                np.testing.assert_array_equal(shots[1].samples, data[:3])
                np.testing.assert_array_equal(shots[0].headers["offset"], [30, 40, 50])


if __name__ == "__main__":
    unittest.main()

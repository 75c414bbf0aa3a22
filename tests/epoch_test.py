"""Epochs across ranks: Python's epoch_shots against C++'s EpochShots (many sizes, world
sizes 1..8, with and without trace counts) and against `shotstream plan` on a real
server; the torch dataset over two ranks x two DataLoader workers."""

import os
import random
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
import harness  # noqa: E402

import shotstream  # noqa: E402


class EpochShotsTest(unittest.TestCase):

    def test_python_and_cpp_give_the_same_lists(self):
        rng = random.Random(11)
        cases = []
        for n in list(range(0, 20)) + [33, 64, 100, 257]:
            for world in range(1, 9):
                epoch, seed = rng.randrange(0, 1000), rng.choice([0, 1, 42, 2**63 + 5, 2**64 - 1])
                counts = [rng.randrange(1, 2000) for _ in range(n)] if rng.random() < 0.5 else None
                cases.append((epoch, seed, world, n, counts))
        stdin = "".join(f"{e} {s} {w} {n}" + ("" if c is None else " " + " ".join(map(str, c)))
                        + "\n" for e, s, w, n, c in cases)
        res = subprocess.run([harness.runfile("client/epoch_cases")], input=stdin,
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(res.returncode, 0, res.stderr)
        lines = res.stdout.split("\n")
        k = 0
        for epoch, seed, world, n, counts in cases:
            ids = list(range(1, n + 1))
            seen = []
            for rank in range(world):
                want = shotstream.epoch_shots(ids, epoch, seed, rank, world,
                                              None if counts is None else dict(zip(ids, counts)))
                got = [int(x) for x in lines[k].split(",") if x]
                k += 1
                self.assertEqual(got, want, (epoch, seed, world, n, rank))
                seen += got
                if counts is not None:  # a sequence works as a dict does
                    self.assertEqual(want, shotstream.epoch_shots(ids, epoch, seed, rank, world,
                                                                  counts))
            self.assertEqual(sorted(seen), ids)
            if counts and world > 1:
                per = [sum(counts[i - 1] for i in shotstream.epoch_shots(
                    ids, epoch, seed, r, world, counts)) for r in range(world)]
                self.assertLessEqual(max(per) - min(per), max(counts))

    def test_a_new_order_each_epoch_and_none_from_the_input_order(self):
        ids = list(range(100, 160))
        a = shotstream.epoch_permutation(ids, 0, 7)
        self.assertNotEqual(a, shotstream.epoch_permutation(ids, 1, 7))
        self.assertEqual(a, shotstream.epoch_permutation(list(reversed(ids)), 0, 7))
        with self.assertRaises(ValueError):
            shotstream.epoch_shots(ids, 0, 0, 3, 3)


class PlanAndTorchTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        # Shots of different trace counts: 7, 13 and 3 traces.
        for name, shots, traces in (("a", range(1, 6), 7), ("b", range(6, 13), 13),
                                    ("c", range(13, 21), 3)):
            harness.write_survey(os.path.join(cls.tmp, f"{name}.sgy"), 5, list(shots), traces, 20)
        cls.server = harness.Server([f"--dataset=d={cls.tmp}/*.sgy"])

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_plan_prints_the_rank_list_python_computes(self):
        with shotstream.Client(self.server.target) as c:
            info = c.dataset("d")
        counts = dict(zip(info.shot_ids.tolist(), info.shot_trace_counts.tolist()))
        self.assertEqual(sorted(set(counts.values())), [3, 7, 13])
        for world in (1, 2, 3, 4):
            for epoch, seed in ((0, 0), (5, 99)):
                seen = []
                for rank in range(world):
                    out = harness.cli("plan", f"--target={self.server.target}", "--dataset=d",
                                      f"--epoch={epoch}", f"--seed={seed}", f"--rank={rank}",
                                      f"--world_size={world}").stdout
                    got = [int(x) for x in out.strip().splitlines()[-1].split(",") if x]
                    self.assertEqual(got, shotstream.epoch_shots(
                        info.shot_ids.tolist(), epoch, seed, rank, world, counts))
                    seen += got
                self.assertEqual(sorted(seen), sorted(counts))
        bad = harness.cli("plan", f"--target={self.server.target}", "--dataset=d", "--rank=2",
                          "--world_size=2", check=False)
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("INVALID_ARGUMENT", bad.stderr)

    def test_torch_two_ranks_by_two_workers(self):
        try:
            import torch
        except ImportError:
            self.skipTest("torch is not installed (Debian: python3-torch)")
        from shotstream.torch import ShotDataset
        ids = list(range(1, 21))
        orders = {}
        for epoch in (0, 1):
            seen = []
            for rank in (0, 1):
                ds = ShotDataset(self.server.target, "d", ids, seed=3, rank=rank, world_size=2)
                ds.set_epoch(epoch)
                loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2,
                                                     multiprocessing_context="spawn")
                got = [shot.shot_id for shot in loader]
                self.assertEqual(sorted(got), sorted(ds.rank_shots()))
                self.assertEqual(len(ds), len(got))
                orders[(epoch, rank)] = ds.rank_shots()
                seen += got
            self.assertEqual(sorted(seen), ids, f"epoch {epoch}: every shot once")
        self.assertNotEqual(orders[(0, 0)], orders[(1, 0)], "a new order each epoch")

    def test_torch_takes_rank_and_world_size_from_torch_distributed(self):
        try:
            import torch
            import torch.distributed as dist
        except ImportError:
            self.skipTest("torch is not installed (Debian: python3-torch)")
        from shotstream.torch import ShotDataset
        if not dist.is_available():
            self.skipTest("this torch has no torch.distributed")
        dist.init_process_group("gloo", init_method=f"file://{self.tmp}/pg", rank=0,
                                world_size=1)
        try:
            ds = ShotDataset(self.server.target, "d", list(range(1, 21)))
            self.assertEqual((ds.rank, ds.world_size), (0, 1))
            self.assertEqual(sorted(ds.rank_shots()), list(range(1, 21)))
        finally:
            dist.destroy_process_group()


if __name__ == "__main__":
    unittest.main()

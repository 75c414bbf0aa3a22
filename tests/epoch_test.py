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
        """epoch_shots and epoch_remainder, evened or not, with checkpoints at other world
        sizes (one count for all ranks, or one a rank): C++ and Python agree, and over the
        ranks the consumed shots and the remainder are the epoch once."""
        rng = random.Random(11)
        cases = []
        for n in list(range(0, 20)) + [33, 64, 100, 257]:
            for world in range(1, 9):
                epoch, seed = rng.randrange(0, 1000), rng.choice([0, 1, 42, 2**63 + 5, 2**64 - 1])
                counts = [rng.randrange(1, 2000) for _ in range(n)] if rng.random() < 0.5 else None
                even = rng.choice([None, None, "pad", "drop"])
                progress = []
                for _ in range(rng.choice([0, 0, 1, 2])):
                    w = rng.randrange(1, 7)
                    progress.append({"world_size": w, "consumed": rng.randrange(0, n // w + 2)})
                cases.append((epoch, seed, world, n, counts, even, progress))
        code = {None: 0, "pad": 1, "drop": 2}
        stdin = "".join(
            f"{e} {s} {w} {n} {code[ev]} {len(pr)}" +
            "".join(f" {p['world_size']} 1 {p['consumed']}" for p in pr) +
            ("" if c is None else " " + " ".join(map(str, c))) + "\n"
            for e, s, w, n, c, ev, pr in cases)
        res = subprocess.run([harness.runfile("client/epoch_cases")], input=stdin,
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(res.returncode, 0, res.stderr)
        lines = res.stdout.split("\n")
        k = 0
        for epoch, seed, world, n, counts, even, progress in cases:
            ids = list(range(1, n + 1))
            tc = None if counts is None else dict(zip(ids, counts))
            seen = []
            for rank in range(world):
                want = shotstream.epoch_remainder(ids, epoch, seed, progress, rank, world, tc,
                                                  even)
                got = [int(x) for x in lines[k].split(",") if x]
                k += 1
                self.assertEqual(got, want, (epoch, seed, world, n, rank, even, progress))
                seen += got
                if not progress:
                    self.assertEqual(want, shotstream.epoch_shots(ids, epoch, seed, rank, world,
                                                                  counts, even))
            if even is None:
                # What the checkpoints' ranks consumed, plus the remainder: the epoch, once.
                consumed, order = [], shotstream.epoch_permutation(ids, epoch, seed)
                for p in progress:
                    lists = [shotstream.remainder_of(order, [], r, p["world_size"], tc)
                             for r in range(p["world_size"])]
                    took = [s for lst in lists for s in lst[:p["consumed"]]]
                    consumed += took
                    order = [s for s in order if s not in set(took)]
                self.assertEqual(sorted(seen + consumed), ids, (n, world, progress))
            if even is not None and n:
                sizes = {len(shotstream.epoch_remainder(ids, epoch, seed, progress, r, world, tc,
                                                        even)) for r in range(world)}
                self.assertEqual(len(sizes), 1, f"even={even}: equal shares")
            if counts and world > 1 and even is None and not progress:
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

    def test_static_resume_at_any_world_size(self):
        """state_dict after k shots at W ranks (one rank's, or every rank's gathered),
        load_state_dict at W' ranks: consumed + streamed after = the epoch, once."""
        try:
            import torch  # noqa: F401
        except ImportError:
            self.skipTest("torch is not installed (Debian: python3-torch)")
        from shotstream.torch import ShotDataset
        ids = list(range(1, 21))
        for before, k in ((2, 3), (3, 5), (4, 0), (1, 7)):
            consumed, states = [], []
            for rank in range(before):
                ds = ShotDataset(self.server.target, "d", ids, seed=3, rank=rank,
                                 world_size=before)
                ds.set_epoch(2)
                it = iter(ds)
                consumed += [next(it).shot_id for _ in range(k)]
                states.append(ds.state_dict())
                it.close()
            for after in (1, 2, 3, 5, 6):
                for state in (states[0], states):
                    streamed = []
                    for rank in range(after):
                        ds = ShotDataset(self.server.target, "d", ids, seed=3, rank=rank,
                                         world_size=after)
                        ds.load_state_dict(state)
                        self.assertEqual(ds.epoch, 2)
                        got = [s.shot_id for s in ds]
                        self.assertEqual(got, ds.rank_shots())
                        self.assertEqual(len(got), len(ds))
                        streamed += got
                    self.assertEqual(sorted(consumed + streamed), ids, (before, k, after))
        with self.assertRaises(ValueError):
            ShotDataset(self.server.target, "d", ids, seed=4).load_state_dict(states[0])

    def test_workers_under_fork_and_spawn_after_the_parent_used_a_client(self):
        """The new user's program: a Client made and used in the parent, then DataLoader
        workers by fork (forked workers open no connection of their own) and by spawn
        (after a parent on grpcio too): every shot once, for ShotDataset and JobDataset.
        A fresh process, as a user's is (this test's own process has used both gRPC
        cores)."""
        try:
            import torch
        except ImportError:
            self.skipTest("torch is not installed (Debian: python3-torch)")
        script = os.path.join(self.tmp, "workers_after_parent.py")
        with open(script, "w") as f:
            f.write(_WORKERS_AFTER_PARENT)
        for native, loaders in (("None", 4), ("False", 2)):
            res = subprocess.run([sys.executable, script, self.server.target, native],
                                 capture_output=True, text=True, timeout=300)
            self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
            self.assertEqual(res.stdout.split().count("ok"), loaders, res.stdout)
        # Not tested: fork after the parent started grpcio (native=False, or both cores).
        # grpcio 1.51's own fork handlers then run in the parent at every fork and died
        # there of SIGSEGV once in about 75 runs under load (in os.fork, under cygrpc's
        # post-fork handler: grpc/grpc#31885), whatever the child does.

    def test_a_client_forked_after_grpc_runs_every_call_in_its_helper(self):
        """A process forked after its parent streamed: its Client's streams, jobs with
        commits, writes of a generator (pulled through the helper, one that streams
        itself included), pages, errors with their codes and a generator's own exception,
        counters, close; the values equal the parent's, and the process opens no
        connection of its own."""
        out = os.path.join(self.tmp, "forked_out")
        with harness.Server([f"--dataset=d={self.tmp}/*.sgy", f"--write_dir={out}"]) as server:
            script = os.path.join(self.tmp, "forked_client.py")
            with open(script, "w") as f:
                f.write(_FORKED_CLIENT)
            res = subprocess.run([sys.executable, script, server.target], capture_output=True,
                                 text=True, timeout=300)
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        self.assertEqual(res.stdout.splitlines(), [
            "native True", "stream ok", "job [1, 2, 3, 4, 5] token", "write [101, 102]",
            "pages [5, 5, 5, 5]", "NOT_FOUND dataset 'nope'", "ValueError modelling failed",
            "copy [1, 3]", "counters 0 True", "closed FAILED_PRECONDITION",
            "connections 0", "child 0", "helper ended True"], res.stderr)

    def test_persistent_workers_see_every_epoch(self):
        try:
            import torch  # noqa: F401
        except ImportError:
            self.skipTest("torch is not installed (Debian: python3-torch)")
        from shotstream.torch import DataLoader, ShotDataset
        ds = ShotDataset(self.server.target, "d", list(range(1, 21)), seed=5, rank=1,
                         world_size=2)
        loader = DataLoader(ds, batch_size=None, num_workers=2, persistent_workers=True,
                            timeout=60)
        orders = []
        for epoch in range(3):
            ds.set_epoch(epoch)
            got = [s.shot_id for s in loader]
            self.assertEqual(got, ds.rank_shots(), f"epoch {epoch}")
            orders.append(got)
        self.assertEqual(len({tuple(o) for o in orders}), 3, "each epoch in its own order")

    def test_resume_through_the_loader_with_workers_and_batches(self):
        try:
            import torch  # noqa: F401
        except ImportError:
            self.skipTest("torch is not installed (Debian: python3-torch)")
        from shotstream.torch import DataLoader, JobDataset, ShotDataset
        ids = list(range(1, 21))
        # Shots of one shape stack: the 7-trace shots 1..5 and the 13-trace 6..12.
        same = list(range(6, 13))
        ds = ShotDataset(self.server.target, "d", same, seed=2)
        loader = DataLoader(ds, batch_size=2, num_workers=2, timeout=60)
        self.assertEqual(len(loader), 4)
        taken = []
        for k, batch in enumerate(loader):
            taken += batch.shot_ids.tolist()
            if k == 1:
                state = loader.state_dict()
                break
        rest = ShotDataset(self.server.target, "d", same, seed=2, world_size=3, rank=0)
        streamed = []
        for rank in range(3):
            rest = ShotDataset(self.server.target, "d", same, seed=2, world_size=3, rank=rank)
            rest.load_state_dict(state)
            streamed += [s.shot_id for s in rest]
        self.assertEqual(sorted(taken + streamed), same)
        # A plain DataLoader's workers are out of sight: state_dict says so.
        plain = ShotDataset(self.server.target, "d", ids)
        list(torch.utils.data.DataLoader(plain, batch_size=None, num_workers=2,
                                         multiprocessing_context="spawn", timeout=60))
        with self.assertRaises(RuntimeError):
            plain.state_dict()
        # A job: the trainer took 7 shots through two workers, checkpointed, died; a new
        # trainer with three workers resumes.
        job = JobDataset(self.server.target, "d", "resume-loader", ids)
        loader = DataLoader(job, batch_size=None, num_workers=2, timeout=60)
        trained = []
        for shot in loader:
            trained.append(shot.shot_id)
            if len(trained) == 7:
                jstate = loader.state_dict()
                break
        del loader
        job2 = JobDataset(self.server.target, "d", "resume-loader", ids)
        job2.load_state_dict(jstate)
        after = [s.shot_id for s in DataLoader(job2, batch_size=None, num_workers=3,
                                               timeout=60)]
        self.assertEqual(sorted(trained + after), ids)

    def test_equal_shares_for_ddp(self):
        try:
            import torch  # noqa: F401
        except ImportError:
            self.skipTest("torch is not installed (Debian: python3-torch)")
        from shotstream.torch import ShotDataset
        with shotstream.Client(self.server.target) as c:
            info = c.dataset("d")
        ids, counts = info.shot_ids.tolist(), info.shot_trace_counts.tolist()
        for world in range(1, 9):
            for even in ("pad", "drop"):
                sizes = {len(ShotDataset(self.server.target, "d", ids, rank=r, world_size=world,
                                         trace_counts=counts, even=even))
                         for r in range(world)}
                self.assertEqual(len(sizes), 1, (world, even))

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


# Imports and a probe for the scripts below: a worker that connects to the server itself
# raises (a forked worker's client runs in a helper process; spawned ones connect).
_PROBE = """
import os
import sys
import shotstream


def connections_to(port):
    \"\"\"The socket inodes of this process's TCP connections to `port` (gRPC's).\"\"\"
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            link = os.readlink("/proc/self/fd/" + fd)
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    found = set()
    for table in ("/proc/self/net/tcp", "/proc/self/net/tcp6"):
        for line in open(table).readlines()[1:]:
            f = line.split()
            if f[9] in inodes and int(f[2].rsplit(":", 1)[1], 16) == port:
                found.add(f[9])
    return found


def probed(cls):
    \"\"\"cls whose iteration raises once its process opens a connection to the server
    (those inherited from the parent by fork do not count).\"\"\"
    class Probed(cls):
        def __iter__(self):
            port = int(self.targets.rsplit(":", 1)[1])
            inherited = connections_to(port)
            for shot in super().__iter__():
                if connections_to(port) - inherited:
                    raise RuntimeError("a forked worker runs gRPC itself")
                yield shot
    return Probed
"""

_WORKERS_AFTER_PARENT = _PROBE + """
import torch
from shotstream.torch import JobDataset, ShotDataset

def main():
    target, native = sys.argv[1], eval(sys.argv[2])
    c = shotstream.Client(target, native=native)
    ids = sorted(c.dataset("d").shot_ids.tolist())
    # A parent on grpcio forks only at grpcio's own risk (docs/epochs.md): spawn only.
    for ctx in ("fork", "spawn") if native is None else ("spawn",):
        ds = (probed(ShotDataset) if ctx == "fork" else ShotDataset)(target, "d", ids, seed=1)
        got = [s.shot_id for s in torch.utils.data.DataLoader(
            ds, batch_size=None, num_workers=2, multiprocessing_context=ctx, timeout=60)]
        print("ShotDataset", ctx, "ok" if got == ds.rank_shots() else got, flush=True)
        job = JobDataset(target, "d", "after-parent-%s-%s" % (native, ctx), ids)
        got = sorted(s.shot_id for s in torch.utils.data.DataLoader(
            job, batch_size=None, num_workers=2, multiprocessing_context=ctx, timeout=60))
        print("JobDataset", ctx, "ok" if got == ids else got, flush=True)
    print(len(c.dataset("d").shot_ids), "still served to the parent", flush=True)

if __name__ == "__main__":
    main()
"""

_FORKED_CLIENT = _PROBE + """
import select
import numpy as np

target = sys.argv[1]
port = int(target.rsplit(":", 1)[1])
parent = shotstream.Client(target)
want = {s.shot_id: np.array(s.samples) for s in parent.stream("d", range(1, 21))}
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    say = lambda *a: os.write(w, (" ".join(map(str, a)) + "\\n").encode())
    inherited = connections_to(port)
    c = shotstream.Client(target)
    say("native", c.native == (shotstream.client._native is not None))
    got = list(c.stream("d", [4, 1, 20]))
    say("stream", "ok" if [s.shot_id for s in got] == [4, 1, 20] and all(
        np.array_equal(s.samples, want[s.shot_id]) and not s.samples.flags.writeable
        for s in got) else got)
    it = c.stream("d", range(1, 21))
    next(it)
    del it  # dropped early: cancelled in the helper
    job = c.stream_job("d", "forked", [1, 2, 3, 4, 5], seed=3)
    ids = sorted(s.shot_id for s in job)
    say("job", ids, "token" if 0 < len(job.commit(1)) <= 256 else "no token")

    def modelled():
        for i in (101, 102):
            yield i, np.full((3, 20), i, np.float32)
    say("write", list(c.write("new", modelled(), sample_interval_us=1000).shot_ids))
    say("pages", [len(p.shot_ids) for p in c.dataset_pages("d", 5)])
    try:
        c.dataset("nope")
    except shotstream.ShotstreamError as e:
        say(e.code().name, "dataset 'nope'" if "nope" in e.details() else e.details())

    def failing():
        yield 7, np.ones((2, 20), np.float32)
        raise ValueError("modelling failed")
    try:
        c.write("bad", failing(), sample_interval_us=1000)
    except ValueError as e:
        say("ValueError", e)
    copy = c.write("copy", ((s.shot_id, s.samples) for s in c.stream("d", [3, 1])),
                   sample_interval_us=1000)
    say("copy", list(copy.shot_ids))
    say("counters", c.reconnects, c.wire_bytes > 0)
    new = connections_to(port) - inherited
    c.close()
    try:
        c.dataset("d")
    except shotstream.ShotstreamError as e:
        say("closed", e.code().name)
    say("connections", len(new))
    os._exit(0)
os.close(w)
with os.fdopen(r) as f:
    sys.stdout.write(f.read())
print("child", os.waitpid(pid, 0)[1])

# A forked process that dies in the middle of a stream: its helper ends too.
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    c = shotstream.Client(target)
    it = c.stream("d", range(1, 21), queue_depth=1)
    next(it)
    os.write(w, str(c._bridge._proc.pid).encode())
    os._exit(0)
os.close(w)
with os.fdopen(r) as f:
    helper = int(f.read())
os.waitpid(pid, 0)


try:
    pidfd = os.pidfd_open(helper)  # readable once the process has ended
    ended = bool(select.select([pidfd], [], [], 60)[0])
except ProcessLookupError:
    ended = True
print("helper ended", ended)
"""

if __name__ == "__main__":
    unittest.main()

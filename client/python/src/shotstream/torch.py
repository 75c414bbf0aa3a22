"""PyTorch adapter, imported lazily: `import shotstream.torch` needs torch, `import
shotstream` does not.

    from shotstream.torch import ShotDataset, JobDataset, DataLoader, DeviceStager
    ds = ShotDataset("node1:50051", "line1", shot_ids, headers=["group_x"])
    stager = DeviceStager("cuda")
    for shot in ds:                       # background receive, queue_depth ahead
        x = stager.stage(shot.samples)    # pinned host copy, non_blocking H2D on a side stream
        ...                               # compute on x (the current stream waits for it)
"""

import sys
import warnings

try:
    import torch
except ImportError as e:  # pragma: no cover - exercised where torch is absent
    raise ImportError("shotstream.torch needs PyTorch (pip install torch); the rest of "
                      "shotstream works without it") from e

from shotstream.client import Client
from shotstream.epochs import epoch_remainder, remainder_of


class _Shared:
    """State that reaches DataLoader workers, persistent ones too, under fork and spawn
    (shared-memory tensors): the epoch, a JSON document (a resume's progress or token),
    and whether a worker iterated (so that a state_dict the main process cannot count is
    refused, not wrong)."""

    _CAPACITY = 1 << 16

    def __init__(self):
        self.flags = torch.zeros(4, dtype=torch.int64).share_memory_()  # epoch, len, worker
        self.doc = torch.zeros(self._CAPACITY, dtype=torch.uint8).share_memory_()

    @property
    def epoch(self) -> int:
        return int(self.flags[0])

    @epoch.setter
    def epoch(self, e: int) -> None:
        self.flags[0] = int(e)

    def put(self, doc) -> None:
        import json
        b = json.dumps(doc).encode()
        if len(b) > self._CAPACITY:
            raise ValueError(f"a resume state of {len(b)} bytes (at most {self._CAPACITY})")
        if b:
            self.doc[:len(b)] = torch.frombuffer(bytearray(b), dtype=torch.uint8)
        self.flags[1] = len(b)

    def get(self):
        import json
        n = int(self.flags[1])
        return json.loads(bytes(self.doc[:n].tolist())) if n else None

    def mark_worker(self) -> None:
        self.flags[2] = 1

    @property
    def worker_iterated(self) -> bool:
        return bool(self.flags[2])


def _rank_world(rank, world_size):
    dist = torch.distributed
    initialised = dist.is_available() and dist.is_initialized()
    rank = int(rank) if rank is not None else (dist.get_rank() if initialised else 0)
    world_size = int(world_size) if world_size is not None else (
        dist.get_world_size() if initialised else 1)
    if not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} of world_size {world_size}")
    return rank, world_size


def _worker_part(ids, block):
    """A DataLoader worker's part of the rank's list: blocks of `block` shots (the
    loader's batch size), worker w taking blocks w, w + n, ...: the loader hands batches
    out round robin, so what the rank has consumed is always a prefix of its list."""
    info = torch.utils.data.get_worker_info()
    if info is None:
        return ids
    block = max(1, int(block))
    return [s for k in range(info.id * block, len(ids), info.num_workers * block)
            for s in ids[k:k + block]]


def _count_of(batch) -> int:
    if isinstance(batch, (list, tuple)):
        return len(batch)
    if isinstance(batch, ShotBatch):
        return len(batch.shot_ids)
    return 1


def _ids_of(batch):
    if isinstance(batch, (list, tuple)):
        return [int(s.shot_id) for s in batch]
    if isinstance(batch, ShotBatch):
        return [int(s) for s in batch.shot_ids.tolist()]
    return [int(batch.shot_id)]


class ShotDataset(torch.utils.data.IterableDataset):
    """Shots as an IterableDataset, shared by data-parallel ranks and DataLoader workers.

    Each epoch, the shots are shuffled by shotstream.epoch_shots (seed, epoch): this rank
    takes its share (every shot in exactly one rank's share; with `trace_counts` the
    shares balance traces), and each DataLoader worker of the rank a slice of that. Call
    set_epoch(e) before each epoch for a new order (as with DistributedSampler; it reaches
    persistent workers too). rank and world_size default to torch.distributed's when it is
    initialised, else 0 and 1. shuffle=False keeps the given order (the rank's share is
    then every world_size-th). even="pad" or "drop" gives every rank the same number of
    shots (DDP's collectives hang on unequal shares at an epoch's end): see epoch_shots.

    Resume: state_dict() says where the epoch is (the epoch, seed, world size and the
    shots consumed); load_state_dict(state) at any world size (and any number of workers)
    streams the rest of that epoch, split among the ranks as epoch_remainder says: over
    the ranks, what was consumed before and what is streamed after are the epoch's shots,
    once each. Under DDP ranks consume in step, so any one rank's state suffices (a list
    of every rank's states loads too). The count is of shots the trainer took: iterated in
    its own process, or through shotstream.torch.DataLoader when workers stream (a plain
    DataLoader's workers are out of sight: state_dict then raises).

    Yields shotstream.Shot objects; len() is this rank's shots of the epoch (the rest of
    it after a resume). Batches of shots of one shape: DataLoader(..., batch_size=B)
    stacks them (see `collate`); errors raised in workers keep their ShotstreamError type
    and `.code()`."""

    def __init__(self, targets, dataset, shot_ids, queue_depth=2, headers=(), shuffle=True,
                 seed=0, rank=None, world_size=None, trace_counts=None, even=None,
                 **client_kwargs):
        super().__init__()
        self.targets = targets
        self.dataset = dataset
        self.shot_ids = [int(s) for s in shot_ids]
        self.queue_depth = queue_depth
        self.headers = list(headers)
        self.shuffle = bool(shuffle)
        self.seed = int(seed)
        self.rank, self.world_size = _rank_world(rank, world_size)
        self.trace_counts = trace_counts
        self.even = even
        self.client_kwargs = client_kwargs
        self._shared = _Shared()
        self._worker_block = 1        # set by shotstream.torch.DataLoader
        self._counted_by_loader = False
        self._consumed = 0            # shots the trainer took in this pass (main process)

    @property
    def epoch(self) -> int:
        return self._shared.epoch

    def set_epoch(self, epoch):
        """The epoch the next iteration streams (its order and this rank's share)."""
        self._shared.epoch = int(epoch)

    def _progress(self):
        """The checkpoints of this epoch that a resume loaded (oldest first)."""
        doc = self._shared.get()
        if doc and doc.get("epoch") == self.epoch:
            return doc["progress"]
        return []

    def rank_shots(self):
        """This rank's shot ids of the current epoch (its rest after a resume), in the
        order they are streamed."""
        if not self.shuffle:
            return remainder_of(self.shot_ids, self._progress(), self.rank, self.world_size,
                                None, self.even)
        return epoch_remainder(self.shot_ids, self.epoch, self.seed, self._progress(),
                               self.rank, self.world_size, self.trace_counts, self.even)

    def __len__(self):
        return len(self.rank_shots())

    def _start_pass(self):
        self._consumed = 0

    def _took(self, batch):
        self._consumed += _count_of(batch)

    def __iter__(self):
        in_worker = torch.utils.data.get_worker_info() is not None
        if in_worker:
            self._shared.mark_worker()
        else:
            self._start_pass()
        ids = _worker_part(self.rank_shots(), self._worker_block)
        with Client(self.targets, **self.client_kwargs) as client:
            for shot in client.stream(self.dataset, ids, queue_depth=self.queue_depth,
                                      headers=self.headers):
                if not in_worker:
                    self._consumed += 1
                yield shot

    def state_dict(self):
        """Where this rank is in the epoch: a dict of plain values (JSON-able) for the
        trainer's checkpoint."""
        if self._shared.worker_iterated and not self._counted_by_loader:
            raise RuntimeError(
                "ShotDataset.state_dict(): DataLoader workers streamed this dataset and the "
                "main process cannot see what the trainer took from them; build the loader "
                "with shotstream.torch.DataLoader (it counts), or use num_workers=0")
        return {"kind": "shotstream.ShotDataset", "version": 1, "epoch": self.epoch,
                "seed": self.seed, "shuffle": self.shuffle, "even": self.even,
                "n_shots": len(self.shot_ids), "rank": self.rank,
                "progress": self._progress() + [{"world_size": self.world_size,
                                                 "consumed": self._consumed}]}

    def load_state_dict(self, state):
        """Resumes the epoch of `state` (one rank's state_dict(), or a list of every
        rank's) at this dataset's world size: the next iteration streams this rank's part
        of what the checkpoint's ranks had not consumed. Call it before iterating."""
        states = list(state) if isinstance(state, (list, tuple)) else [state]
        first = states[0]
        if first.get("kind") != "shotstream.ShotDataset" or first.get("version") != 1:
            raise ValueError("load_state_dict: not a ShotDataset state")
        for field, here in (("seed", self.seed), ("shuffle", self.shuffle),
                            ("even", self.even), ("n_shots", len(self.shot_ids))):
            if first[field] != here:
                raise ValueError(f"load_state_dict: the state's {field} is {first[field]!r}, "
                                 f"this dataset's {here!r}")
        progress = [dict(p) for p in first["progress"]]
        if len(states) > 1:  # every rank's count of the last checkpoint
            world = progress[-1]["world_size"]
            counts = [None] * world
            for st in states:
                if st["epoch"] != first["epoch"] or st["progress"][:-1] != first["progress"][:-1]:
                    raise ValueError("load_state_dict: the ranks' states are of different "
                                     "checkpoints")
                counts[int(st["rank"])] = int(st["progress"][-1]["consumed"])
            if any(c is None for c in counts):
                raise ValueError(f"load_state_dict: {world} ranks, states of "
                                 f"{sum(c is not None for c in counts)}")
            progress[-1]["consumed"] = counts
        self._shared.epoch = int(first["epoch"])
        self._shared.put({"epoch": int(first["epoch"]), "progress": progress})
        self._consumed = 0


class JobDataset(torch.utils.data.IterableDataset):
    """A job (Client.stream_job) as an IterableDataset: every rank and DataLoader worker
    a consumer of one shared epoch, faster ones taking more, and exact resume with the
    usual calls: state_dict() commits what the trainer took since the last one (every
    rank calls it at the same checkpoint) and returns a small dict holding the token;
    load_state_dict(state) resumes the job from it at any number of ranks and workers.
    set_epoch(e) starts epoch e's job. The count is of shots the trainer took: iterated in
    its own process, or through shotstream.torch.DataLoader when workers stream. Every
    consumer joins without takeover (stream_job's takeover=False): DDP's ranks step in
    lockstep and the loader takes its workers' results in order, so a consumer that waited
    for the shots another holds would wait on itself. Near the end of an epoch ranks so
    end with unequal counts: wrap the loop in torch's Join (docs/epochs.md)."""

    def __init__(self, targets, dataset, job, shot_ids, seed=0, queue_depth=2, headers=(),
                 **client_kwargs):
        super().__init__()
        self.targets = targets
        self.dataset = dataset
        self.job = job
        self.shot_ids = [int(s) for s in shot_ids]
        self.seed = int(seed)
        self.queue_depth = queue_depth
        self.headers = list(headers)
        self.client_kwargs = client_kwargs
        self._shared = _Shared()
        self._worker_block = 1
        self._counted_by_loader = False
        self._trained = []   # taken since the last commit (main process)
        self._step = 0       # the last commit's step
        self._client = None  # the main process's, for commits

    @property
    def epoch(self) -> int:
        return self._shared.epoch

    def set_epoch(self, epoch):
        self._shared.epoch = int(epoch)

    def _resume(self):
        doc = self._shared.get()
        if doc and doc.get("epoch") == self.epoch:
            return bytes.fromhex(doc["token"])
        return None

    def _start_pass(self):
        pass

    def _took(self, batch):
        self._trained.extend(_ids_of(batch))

    def __iter__(self):
        in_worker = torch.utils.data.get_worker_info() is not None
        if in_worker:
            self._shared.mark_worker()
        with Client(self.targets, **self.client_kwargs) as client:
            for shot in client.stream_job(self.dataset, self.job, self.shot_ids,
                                          epoch=self.epoch, seed=self.seed,
                                          queue_depth=self.queue_depth, headers=self.headers,
                                          resume=self._resume(), takeover=False):
                if not in_worker:
                    self._trained.append(shot.shot_id)
                yield shot

    def state_dict(self, step=None):
        """Commits the shots the trainer took since the last call as of `step` (default:
        the previous step + 1; every rank must use the same) and returns {"token": ...}
        for the checkpoint, once the servers hold it durably."""
        if self._shared.worker_iterated and not self._counted_by_loader:
            raise RuntimeError(
                "JobDataset.state_dict(): DataLoader workers streamed this job and the main "
                "process cannot see what the trainer took from them; build the loader with "
                "shotstream.torch.DataLoader (it counts), or use num_workers=0")
        step = self._step + 1 if step is None else int(step)
        if self._client is None:
            self._client = Client(self.targets, **self.client_kwargs)
        token = self._client.commit_job(self.dataset, self.job, self.shot_ids, step,
                                        self._trained, epoch=self.epoch, seed=self.seed,
                                        resume=self._resume())
        self._trained = []
        self._step = step
        return {"kind": "shotstream.JobDataset", "version": 1, "epoch": self.epoch,
                "step": step, "token": token.hex()}

    def load_state_dict(self, state):
        """Resumes the job from a state_dict() (any rank's: they hold the same step)."""
        if isinstance(state, (list, tuple)):
            state = state[0]
        if state.get("kind") != "shotstream.JobDataset" or state.get("version") != 1:
            raise ValueError("load_state_dict: not a JobDataset state")
        self._shared.epoch = int(state["epoch"])
        self._shared.put({"epoch": int(state["epoch"]), "token": state["token"]})
        self._step = int(state["step"])
        self._trained = []


class DataLoader(torch.utils.data.DataLoader):
    """torch's DataLoader over a ShotDataset or JobDataset, for exact resume with workers:
    the main process counts what it hands the trainer (workers read ahead, so only it
    knows), workers take whole batches in turn (what was consumed is a prefix), and
    workers start by 'spawn' unless multiprocessing_context says otherwise (a worker
    forked after its parent used gRPC streams through a helper process, one copy more
    a shot: docs/epochs.md).
    state_dict() and load_state_dict() are the dataset's."""

    def __init__(self, dataset, *args, **kwargs):
        if kwargs.get("num_workers", 0) > 0 and kwargs.get("multiprocessing_context") is None:
            kwargs["multiprocessing_context"] = "spawn"
        super().__init__(dataset, *args, **kwargs)
        if isinstance(dataset, (ShotDataset, JobDataset)):
            dataset._worker_block = self.batch_size or 1
            dataset._counted_by_loader = self.num_workers > 0

    def __iter__(self):
        ds = self.dataset
        counting = self.num_workers > 0 and isinstance(ds, (ShotDataset, JobDataset))
        if counting:
            ds._start_pass()
        for batch in super().__iter__():
            if counting:
                ds._took(batch)
            yield batch

    def state_dict(self, *args, **kwargs):
        return self.dataset.state_dict(*args, **kwargs)

    def load_state_dict(self, state):
        self.dataset.load_state_dict(state)


class ShotBatch:
    """Shots of one shape stacked: samples float32 tensor (B, n_traces, n_samples),
    shot_ids int64 tensor (B,), headers name -> float64 tensor (B, n_traces)."""

    __slots__ = ("shot_ids", "samples", "headers", "sample_interval_us")

    def __init__(self, shot_ids, samples, headers, sample_interval_us):
        self.shot_ids = shot_ids
        self.samples = samples
        self.headers = headers
        self.sample_interval_us = sample_interval_us

    def __len__(self):
        return len(self.shot_ids)

    def __repr__(self):
        return f"ShotBatch(shot_ids={self.shot_ids.tolist()}, samples={tuple(self.samples.shape)})"


def collate(batch):
    """Stacks a list of Shots of one shape into a ShotBatch (DataLoader's collate_fn; it is
    also what DataLoader's default collation does with Shots). Shots of different shapes
    cannot be stacked: ValueError naming them (use batch_size=None, or a collate of your
    own that pads)."""
    shapes = {tuple(s.samples.shape) for s in batch}
    if len(shapes) > 1:
        raise ValueError("shots of different shapes cannot be stacked: " + ", ".join(
            f"shot {s.shot_id} {tuple(s.samples.shape)}" for s in batch))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        samples = torch.stack([torch.from_numpy(s.samples) for s in batch])
        headers = {name: torch.stack([torch.from_numpy(s.headers[name]) for s in batch])
                   for name in (batch[0].headers if batch else {})}
    return ShotBatch(torch.tensor([s.shot_id for s in batch], dtype=torch.int64), samples,
                     headers, batch[0].sample_interval_us if batch else 0.0)


def _register_default_collate():
    """Lets DataLoader's default collation stack Shots (torch >= 1.13 keeps a map from
    type to collate function)."""
    try:
        from torch.utils.data._utils.collate import default_collate_fn_map
    except ImportError:  # older torch: pass collate_fn=shotstream.torch.collate
        return
    from shotstream.types import Shot
    default_collate_fn_map.setdefault(Shot, lambda batch, **_: collate(batch))


_register_default_collate()


class DeviceStager:
    """Copies numpy shots to a device through reusable pinned buffers on a side stream.

    stage() returns a device tensor whose copy the current stream is made to wait for; the
    pinned buffer is reused only after that copy has completed (an event per buffer)."""

    _said_cpu = False  # the CPU fallback is said once per process

    def __init__(self, device="cuda", buffers=2):
        self.device = torch.device(device)
        self.on_gpu = self.device.type == "cuda" and torch.cuda.is_available()
        if self.device.type == "cuda" and not self.on_gpu:
            # A CPU-only torch, or no GPU: CPU copies, as the README says.
            if not DeviceStager._said_cpu:
                DeviceStager._said_cpu = True
                why = "torch has no CUDA" if not torch.backends.cuda.is_built() else \
                    "no CUDA device"
                print(f"shotstream: DeviceStager({device!r}): {why}; staging to CPU memory",
                      file=sys.stderr)
            self.device = torch.device("cpu")
        self.stream = torch.cuda.Stream(self.device) if self.on_gpu else None
        self.buffers = [None] * buffers
        self.events = [None] * buffers
        self.next = 0

    def stage(self, array):
        with warnings.catch_warnings():
            # Shot samples are read-only views; they are only read here.
            warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
            src = torch.from_numpy(array)
        if not self.on_gpu:
            # A copy, as on the GPU: the tensor is the caller's to change, the shot stays.
            out = src.to(self.device)
            return out.clone() if out.data_ptr() == src.data_ptr() else out
        k = self.next
        self.next = (k + 1) % len(self.buffers)
        if self.events[k] is not None:
            self.events[k].synchronize()  # the previous copy from this buffer is done
        buf = self.buffers[k]
        if buf is None or buf.numel() < src.numel():
            buf = torch.empty(src.numel(), dtype=src.dtype, pin_memory=True)
            self.buffers[k] = buf
        host = buf[:src.numel()].view(src.shape)
        host.copy_(src)
        with torch.cuda.stream(self.stream):
            dev = host.to(self.device, non_blocking=True)
            event = torch.cuda.Event()
            event.record(self.stream)
        self.events[k] = event
        torch.cuda.current_stream(self.device).wait_event(event)
        dev.record_stream(torch.cuda.current_stream(self.device))
        return dev

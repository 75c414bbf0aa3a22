"""PyTorch adapter, imported lazily: `import shotstream.torch` needs torch, `import
shotstream` does not.

    from shotstream.torch import ShotDataset, DeviceStager
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
from shotstream.epochs import epoch_shots


class ShotDataset(torch.utils.data.IterableDataset):
    """Shots as an IterableDataset, shared by data-parallel ranks and DataLoader workers.

    Each epoch, the shots are shuffled by shotstream.epoch_shots (seed, epoch): this rank
    takes its share (every shot in exactly one rank's share; with `trace_counts` the
    shares balance traces), and each DataLoader worker of the rank a slice of that. Call
    set_epoch(e) before each epoch for a new order (as with DistributedSampler). rank and
    world_size default to torch.distributed's when it is initialised, else 0 and 1.
    shuffle=False keeps the given order (the rank's share is then every world_size-th).

    Yields shotstream.Shot objects; len() is this rank's shots an epoch. Batches of shots
    of one shape: DataLoader(..., batch_size=B) stacks them (see `collate`); errors raised
    in workers keep their ShotstreamError type and `.code()`."""

    def __init__(self, targets, dataset, shot_ids, queue_depth=2, headers=(), shuffle=True,
                 seed=0, rank=None, world_size=None, trace_counts=None, **client_kwargs):
        super().__init__()
        self.targets = targets
        self.dataset = dataset
        self.shot_ids = [int(s) for s in shot_ids]
        self.queue_depth = queue_depth
        self.headers = list(headers)
        self.shuffle = bool(shuffle)
        self.seed = int(seed)
        dist = torch.distributed
        initialised = dist.is_available() and dist.is_initialized()
        self.rank = int(rank) if rank is not None else (dist.get_rank() if initialised else 0)
        self.world_size = int(world_size) if world_size is not None else (
            dist.get_world_size() if initialised else 1)
        if not 0 <= self.rank < self.world_size:
            raise ValueError(f"rank {self.rank} of world_size {self.world_size}")
        self.trace_counts = trace_counts
        self.epoch = 0
        self.client_kwargs = client_kwargs

    def set_epoch(self, epoch):
        """The epoch the next iteration streams (its order and this rank's share)."""
        self.epoch = int(epoch)

    def rank_shots(self):
        """This rank's shot ids of the current epoch, in the order they are streamed."""
        if not self.shuffle:
            return self.shot_ids[self.rank::self.world_size]
        return epoch_shots(self.shot_ids, self.epoch, self.seed, self.rank, self.world_size,
                           self.trace_counts)

    def __len__(self):
        return len(self.rank_shots())

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        ids = self.rank_shots()
        if info is not None:
            ids = ids[info.id::info.num_workers]
        with Client(self.targets, **self.client_kwargs) as client:
            yield from client.stream(self.dataset, ids, queue_depth=self.queue_depth,
                                     headers=self.headers)


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

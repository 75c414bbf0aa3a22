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


class ShotDataset(torch.utils.data.IterableDataset):
    """Shots as an IterableDataset. Each worker process (DataLoader num_workers > 1) streams
    its own share of the shot ids, in order. Yields shotstream.Shot objects; len() is the
    number of shots an epoch yields. Batches of shots of one shape: DataLoader(...,
    batch_size=B) stacks them (see `collate`); errors raised in workers keep their
    ShotstreamError type and `.code()`."""

    def __init__(self, targets, dataset, shot_ids, queue_depth=2, headers=(), **client_kwargs):
        super().__init__()
        self.targets = targets
        self.dataset = dataset
        self.shot_ids = [int(s) for s in shot_ids]
        self.queue_depth = queue_depth
        self.headers = list(headers)
        self.client_kwargs = client_kwargs

    def __len__(self):
        return len(self.shot_ids)

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        ids = self.shot_ids
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

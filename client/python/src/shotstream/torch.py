"""PyTorch adapter, imported lazily: `import shotstream.torch` needs torch, `import
shotstream` does not.

    from shotstream.torch import ShotDataset, DeviceStager
    ds = ShotDataset("node1:50051", "line1", shot_ids, headers=["group_x"])
    stager = DeviceStager("cuda")
    for shot in ds:                       # background receive, queue_depth ahead
        x = stager.stage(shot.samples)    # pinned host copy, non_blocking H2D on a side stream
        ...                               # compute on x (the current stream waits for it)
"""

import warnings

try:
    import torch
except ImportError as e:  # pragma: no cover - exercised where torch is absent
    raise ImportError("shotstream.torch needs PyTorch (pip install torch); the rest of "
                      "shotstream works without it") from e

from shotstream.client import Client


class ShotDataset(torch.utils.data.IterableDataset):
    """Shots as an IterableDataset. Each worker process (DataLoader num_workers > 1) streams
    its own share of the shot ids, in order. Yields shotstream.Shot objects."""

    def __init__(self, targets, dataset, shot_ids, queue_depth=2, headers=(), **client_kwargs):
        super().__init__()
        self.targets = targets
        self.dataset = dataset
        self.shot_ids = [int(s) for s in shot_ids]
        self.queue_depth = queue_depth
        self.headers = list(headers)
        self.client_kwargs = client_kwargs

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        ids = self.shot_ids
        if info is not None:
            ids = ids[info.id::info.num_workers]
        with Client(self.targets, **self.client_kwargs) as client:
            yield from client.stream(self.dataset, ids, queue_depth=self.queue_depth,
                                     headers=self.headers)


class DeviceStager:
    """Copies numpy shots to a device through reusable pinned buffers on a side stream.

    stage() returns a device tensor whose copy the current stream is made to wait for; the
    pinned buffer is reused only after that copy has completed (an event per buffer)."""

    def __init__(self, device="cuda", buffers=2):
        self.device = torch.device(device)
        self.on_gpu = self.device.type == "cuda" and torch.cuda.is_available()
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

"""shotstream: stream seismic shot gathers from a shotstream server into numpy.

    import shotstream
    c = shotstream.Client("127.0.0.1:50051")
    info = c.dataset("line1")
    for shot in c.stream("line1", info.shot_ids, queue_depth=2, headers=["group_x"]):
        shot.samples          # float32 (n_traces, n_samples)
        shot.headers["group_x"]

Call shotstream.tune() first in a program that streams much: the process-wide malloc
and gRPC settings the C++ tools use (the package never changes them on import).

Modules: client (Client, tune), fallback (the grpcio path where the native extension is
not built), epochs (epoch_shots: each rank's shots of an epoch), types (DatasetInfo,
Shot), errors (ShotstreamError), wire (the ShotChunk format and decoders of the
fallback), routing (targets, shot routing, RetryBudget), torch (PyTorch adapter,
imported on demand).
"""

from shotstream._version import __version__
from shotstream.client import Client, tune
from shotstream.epochs import epoch_permutation, epoch_remainder, epoch_shots, remainder_of
from shotstream.errors import ShotstreamError
from shotstream.routing import RetryBudget, expand_targets
from shotstream.types import DatasetInfo, Shot

__all__ = ["Client", "DatasetInfo", "RetryBudget", "Shot", "ShotstreamError",
           "epoch_permutation", "epoch_remainder", "epoch_shots", "remainder_of", "expand_targets", "tune", "__version__"]

"""shotstream: stream seismic shot gathers from a shotstream server into numpy.

    import shotstream
    c = shotstream.Client("127.0.0.1:50051")
    info = c.dataset("line1")
    for shot in c.stream("line1", info.shot_ids, queue_depth=2, headers=["group_x"]):
        shot.samples          # float32 (n_traces, n_samples)
        shot.headers["group_x"]
"""

from shotstream.client import Client, DatasetInfo, Shot, ShotstreamError, expand_targets

__all__ = ["Client", "DatasetInfo", "Shot", "ShotstreamError", "expand_targets"]
__version__ = "0.1.0"

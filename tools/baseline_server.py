"""The alternative a user would write in an afternoon: a Python grpcio server that reads
each shot with segyio and sends it as one message (same proto, so the same clients can
measure it). Used only by the benchmark.

    baseline_server.py --port=P --files='dir/*.sgy'
"""

import argparse
import concurrent.futures
import glob
import sys
import zlib

import grpc
import numpy as np
import segyio

from shotstream.v1 import shotstream_pb2 as pb
from shotstream.v1 import shotstream_pb2_grpc as pb_grpc


class Baseline(pb_grpc.ShotStreamServicer):

    def __init__(self, paths):
        self.files = [segyio.open(p, ignore_geometry=True) for p in paths]
        self.index = {}  # shot id -> [(file, first, last+1)]
        for f in self.files:
            keys = f.attributes(segyio.TraceField.FieldRecord)[:]
            for sid in np.unique(keys):
                idx = np.nonzero(keys == sid)[0]
                self.index.setdefault(int(sid), []).append((f, int(idx[0]), int(idx[-1]) + 1))

    def GetDataset(self, request, context):
        info = pb.DatasetInfo(name=request.name, state=pb.DATASET_STATE_READY)
        for sid in sorted(self.index):
            info.shot_ids.append(sid)
            info.shot_trace_counts.append(sum(b - a for _, a, b in self.index[sid]))
        return info

    def StreamShots(self, request, context):
        for k, sid in enumerate(request.shot_ids):
            parts = [f.trace.raw[a:b] for f, a, b in self.index[sid]]
            data = np.concatenate(parts).astype("<f4").tobytes()
            n_traces, n_samples = sum(p.shape[0] for p in parts), parts[0].shape[1]
            yield pb.ShotChunk(index=k, shot_id=sid, n_traces=n_traces, n_samples=n_samples,
                               total_bytes=len(data), last=True, crc32=zlib.crc32(data),
                               samples=data)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--files", required=True)
    args = p.parse_args()
    server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=8),
                         options=[("grpc.max_send_message_length", -1)])
    pb_grpc.add_ShotStreamServicer_to_server(Baseline(sorted(glob.glob(args.files))), server)
    server.add_insecure_port(f"127.0.0.1:{args.port}")
    server.start()
    print(f"shotstream listening on 127.0.0.1:{args.port}", flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    sys.exit(main())

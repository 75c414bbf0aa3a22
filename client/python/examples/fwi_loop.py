"""An FWI-style loop in Python: every iteration streams all shots in a new random order,
and computes on each shot while the next ones are received in the background.

    PYTHONPATH=bazel-bin/client/python python3 client/python/examples/fwi_loop.py \
        --target=127.0.0.1:50051 --dataset=line1 --iterations=2
"""

import argparse
import time

import numpy as np

import shotstream


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--target", required=True, help="HOST:PORT[,HOST:PORT...]")
    p.add_argument("--dataset", required=True)
    p.add_argument("--iterations", type=int, default=2)
    p.add_argument("--queue_depth", type=int, default=4)
    args = p.parse_args()
    with shotstream.Client(args.target.split(","), retries=3) as client:
        info = client.dataset(args.dataset)
        rng = np.random.default_rng(0)
        model = np.zeros(info.n_samples, dtype=np.float64)
        for it in range(args.iterations):
            order = rng.permutation(info.shot_ids)
            t0, waited = time.perf_counter(), 0.0
            stream = client.stream(args.dataset, order, queue_depth=args.queue_depth,
                                   headers=["offset"])
            while True:
                t = time.perf_counter()
                shot = next(stream, None)
                waited += time.perf_counter() - t
                if shot is None:
                    break
                # "Gradient": an offset-weighted stack of the shot into the model.
                w = 1.0 / (1.0 + np.abs(shot.headers["offset"]))
                model += (shot.samples * w[:, None]).sum(axis=0)
            print(f"iteration {it}: {len(order)} shots in {time.perf_counter() - t0:.2f} s, "
                  f"waited {waited:.2f} s on I/O, |model| = {np.linalg.norm(model):.4g}")


if __name__ == "__main__":
    main()

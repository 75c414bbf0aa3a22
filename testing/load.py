"""A load generator: many clients against one server, random shot orders, cancels and a
new connection every round, every delivered shot compared with a reference; the server's
memory sampled throughout. Used by //tests:faults_test (which asserts on it) and by
the benchmark (which reports it)."""

import random
import threading
import time

import numpy as np

import harness


def run_load(server, dataset, ref, clients=32, seconds=20.0, max_queue_depth=4):
    """Streams from `server` (a harness.Server) with `clients` threads for `seconds`.
    ref: {shot id: samples} to compare with. Returns a dict: streams, shots, bytes,
    cancels, errors (a list of strings), rss_growth_mb, alive (the server still runs)."""
    import shotstream
    ids = sorted(ref)
    rss0 = harness.rss_kb(server.proc.pid)
    peak = [rss0]
    stop = time.time() + seconds
    totals = {"shots": 0, "bytes": 0, "cancels": 0, "streams": 0}
    errors = []
    lock = threading.Lock()

    def client_loop(k):
        rng = random.Random(k)
        while time.time() < stop:
            try:
                with shotstream.Client(server.target) as cl:  # reconnect each round
                    order = [rng.choice(ids) for _ in range(rng.randint(1, 30))]
                    cancel_at = rng.randint(0, len(order)) if rng.random() < 0.3 else None
                    gen = cl.stream(dataset, order, queue_depth=rng.randint(1, max_queue_depth))
                    n = 0
                    for shot in gen:
                        if shot.shot_id != order[n] or not np.array_equal(
                                shot.samples, ref[shot.shot_id]):
                            errors.append(f"client {k}: wrong shot {shot.shot_id}")
                        n += 1
                        with lock:
                            totals["shots"] += 1
                            totals["bytes"] += shot.samples.nbytes
                        if cancel_at is not None and n >= cancel_at:
                            gen.close()
                            with lock:
                                totals["cancels"] += 1
                            break
                    with lock:
                        totals["streams"] += 1
            except shotstream.ShotstreamError as e:
                errors.append(f"client {k}: {e}")

    threads = [threading.Thread(target=client_loop, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        peak.append(harness.rss_kb(server.proc.pid))
        time.sleep(0.2)  # the sampling period of the memory figure
    for t in threads:
        t.join()
    return dict(totals, errors=errors, rss_growth_mb=(max(peak) - rss0) / 1024,
                alive=server.proc.poll() is None, clients=clients, seconds=seconds)


def describe(r, bound_mb=None):
    """One line for a log or a report."""
    bound = f" (bound {bound_mb:.0f} MB)" if bound_mb is not None else ""
    return (f"{r['clients']} clients, {r['seconds']:.0f} s, {r['streams']} streams, "
            f"{r['shots']} shots, {r['bytes'] / 1e9:.2f} GB, {r['cancels']} cancels, "
            f"{len(r['errors'])} errors, server RSS growth {r['rss_growth_mb']:.0f} MB{bound}")

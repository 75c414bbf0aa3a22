"""epoch_shots: which shots each data-parallel rank takes in an epoch, with no server.

The algorithm (client/epoch_shots.h implements the same; docs/epochs.md states it so that
other languages can reproduce it):
1. The ids, sorted ascending (so that every rank, however it lists them, starts alike).
2. A 64-bit SplitMix64 generator seeded with mix(mix(seed) ^ epoch), where mix(x) is the
   SplitMix64 finalizer of x (arithmetic modulo 2**64; negative numbers as two's
   complement).
3. Fisher-Yates from the last position down: for i = n-1 .. 1, swap i with
   next() % (i + 1).
4. The split: without trace counts rank r takes positions r, r + W, r + 2W, ... of the
   permutation; with them each shot in permutation order goes to the rank with the fewest
   traces so far (ties: the lowest rank), so that any two ranks end within the largest
   shot's trace count of each other. Each rank's list keeps permutation order.
"""

from __future__ import annotations

import heapq
from typing import Dict, List, Mapping, Optional, Sequence, Union

_MASK = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15


def _mix(z: int) -> int:
    z &= _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


class _SplitMix64:
    def __init__(self, seed: int, epoch: int) -> None:
        self.state = _mix(_mix(seed & _MASK) ^ (epoch & _MASK))

    def next(self) -> int:
        self.state = (self.state + _GOLDEN) & _MASK
        return _mix(self.state)


def epoch_permutation(shot_ids: Sequence[int], epoch: int, seed: int) -> List[int]:
    """All the ids in the epoch's order, determined by (seed, epoch) alone."""
    ids = sorted(int(s) for s in shot_ids)
    rng = _SplitMix64(int(seed), int(epoch))
    for i in range(len(ids) - 1, 0, -1):
        j = rng.next() % (i + 1)
        ids[i], ids[j] = ids[j], ids[i]
    return ids


def epoch_shots(shot_ids: Sequence[int], epoch: int, seed: int, rank: int, world_size: int,
                trace_counts: Optional[Union[Mapping[int, int], Sequence[int]]] = None
                ) -> List[int]:
    """Rank `rank`'s shots of the epoch (of `world_size` ranks): every id in exactly one
    rank's list. trace_counts (a dict id -> traces, or a sequence parallel to shot_ids)
    balances total traces instead of shot counts."""
    world_size, rank = int(world_size), int(rank)
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} of world_size {world_size}: need 0 <= rank < world_size")
    order = epoch_permutation(shot_ids, epoch, seed)
    if trace_counts is None:
        return order[rank::world_size]
    counts: Dict[int, int]
    if isinstance(trace_counts, Mapping):
        counts = {int(k): int(v) for k, v in trace_counts.items()}
    else:
        if len(trace_counts) != len(shot_ids):
            raise ValueError(f"{len(trace_counts)} trace counts for {len(shot_ids)} shot ids")
        counts = {int(s): int(c) for s, c in zip(shot_ids, trace_counts)}
    missing = [s for s in order if s not in counts]
    if missing:
        raise ValueError(f"no trace count for shot {missing[0]}")
    heap = [(0, r) for r in range(world_size)]  # (traces so far, rank): the least first
    mine = []
    for s in order:
        total, r = heapq.heappop(heap)
        heapq.heappush(heap, (total + counts[s], r))
        if r == rank:
            mine.append(s)
    return mine

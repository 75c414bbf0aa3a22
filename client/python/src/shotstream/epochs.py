"""epoch_shots: which shots each data-parallel rank takes in an epoch, with no server.

The algorithm (client/epoch_shots.h implements the same; docs/epochs.md states it so that
other languages can reproduce it):
1. The ids, sorted ascending (so that every rank, however it lists them, starts alike).
2. A 64-bit SplitMix64 generator seeded with mix(mix(seed) ^ epoch), where mix(x) is the
   SplitMix64 finalizer of x (arithmetic modulo 2**64; negative numbers as two's
   complement).
3. Fisher-Yates from the last position down: for i = n-1 .. 1, swap i with
   next() % (i + 1).
4. Evening (even="pad"/"drop"): the permutation padded cyclically with its first ids, or
   cut, to a multiple of W.
5. The split: without trace counts rank r takes positions r, r + W, r + 2W, ... of the
   permutation; with them each shot in permutation order goes to the rank with the fewest
   traces so far (ties: the lowest rank; evened, a rank with its n / W shots takes no
   more), so that any two ranks end within the largest shot's trace count of each other.
   Each rank's list keeps permutation order.
6. A remainder after checkpoints: each checkpoint's split, its ranks' consumed prefixes
   removed, leaves a sequence (in order) that the next checkpoint, or the new world
   size, splits again.
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


def _counts_of(shot_ids, trace_counts) -> Optional[Dict[int, int]]:
    if trace_counts is None:
        return None
    if isinstance(trace_counts, Mapping):
        return {int(k): int(v) for k, v in trace_counts.items()}
    if len(trace_counts) != len(shot_ids):
        raise ValueError(f"{len(trace_counts)} trace counts for {len(shot_ids)} shot ids")
    return {int(s): int(c) for s, c in zip(shot_ids, trace_counts)}


_EVEN = (None, "pad", "drop")


def _split(order: List[int], world_size: int, counts: Optional[Dict[int, int]],
           even: Optional[str]):
    """`order` evened for world_size ranks (padded cyclically or cut) and each rank's
    positions in it (C++: SplitOrder in common/epoch_shots.cc)."""
    if even not in _EVEN:
        raise ValueError(f"even={even!r}: None, 'pad' or 'drop'")
    n, w = len(order), world_size
    seq = list(order)
    if even == "pad" and n:
        i = 0
        while len(seq) % w:
            seq.append(order[i % n])
            i += 1
    elif even == "drop":
        seq = seq[:n // w * w]
    if counts is None:
        return seq, [list(range(r, len(seq), w)) for r in range(w)]
    quota = len(seq) if even is None else len(seq) // w
    heap = [(0, r) for r in range(w)]  # (traces so far, rank): the least first
    positions: List[List[int]] = [[] for _ in range(w)]
    for i, s in enumerate(seq):
        if s not in counts:
            raise ValueError(f"no trace count for shot {s}")
        total, r = heapq.heappop(heap)
        positions[r].append(i)
        if len(positions[r]) < quota:
            heapq.heappush(heap, (total + counts[s], r))
    return seq, positions


def _check_rank(rank: int, world_size: int) -> None:
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} of world_size {world_size}: need 0 <= rank < world_size")


def remainder_of(order: Sequence[int], progress: Sequence[Mapping], rank: int,
                 world_size: int, trace_counts: Optional[Mapping[int, int]] = None,
                 even: Optional[str] = None) -> List[int]:
    """Rank `rank`'s part of what is left of `order` (any order; repeats allowed) after
    the checkpoints in `progress`, oldest first: each a dict {"world_size": W,
    "consumed": k or [k_0, ..., k_W-1]} saying that at W ranks rank r had consumed the
    first k_r shots of its list (one k: every rank k, or all of a shorter list).
    C++: shotstream::RemainderOf."""
    rank, world_size = int(rank), int(world_size)
    _check_rank(rank, world_size)
    counts = None if trace_counts is None else dict(trace_counts)
    seq = [int(s) for s in order]
    for k, p in enumerate(progress):
        which = f"checkpoint {k + 1} of {len(progress)}"
        w = int(p["world_size"])
        consumed = p["consumed"]
        consumed = [int(consumed)] if isinstance(consumed, (int,)) or not hasattr(
            consumed, "__len__") else [int(c) for c in consumed]
        if w < 1 or len(consumed) not in (1, w):
            raise ValueError(f"{which}: world_size {w} with {len(consumed)} consumed counts "
                             "(need one, or one a rank)")
        split_seq, positions = _split(seq, w, counts, even)
        gone = set()
        for r in range(w):
            mine = positions[r]
            c = min(consumed[0], len(mine)) if len(consumed) == 1 else consumed[r]
            if c > len(mine) or c < 0:
                raise ValueError(f"{which}: rank {r} consumed {c} shots of its {len(mine)}")
            gone.update(mine[:c])
        seq = [s for i, s in enumerate(split_seq) if i not in gone]
    split_seq, positions = _split(seq, world_size, counts, even)
    return [split_seq[i] for i in positions[rank]]


def epoch_remainder(shot_ids: Sequence[int], epoch: int, seed: int,
                    progress: Sequence[Mapping], rank: int, world_size: int,
                    trace_counts: Optional[Union[Mapping[int, int], Sequence[int]]] = None,
                    even: Optional[str] = None) -> List[int]:
    """The rest of an epoch after checkpoints (see remainder_of), split among world_size
    ranks as epoch_shots splits the whole epoch: over every rank, what was consumed and
    the remainder are the epoch's shots, each once (even="pad": padded repeats aside).
    C++: shotstream::client::EpochRemainder, the same lists."""
    _check_rank(int(rank), int(world_size))
    return remainder_of(epoch_permutation(shot_ids, epoch, seed), progress, rank,
                        world_size, _counts_of(shot_ids, trace_counts), even)


def epoch_shots(shot_ids: Sequence[int], epoch: int, seed: int, rank: int, world_size: int,
                trace_counts: Optional[Union[Mapping[int, int], Sequence[int]]] = None,
                even: Optional[str] = None) -> List[int]:
    """Rank `rank`'s shots of the epoch (of `world_size` ranks): every id in exactly one
    rank's list. trace_counts (a dict id -> traces, or a sequence parallel to shot_ids)
    balances total traces instead of shot counts. even="pad" gives every rank
    ceil(n / world_size) shots (the epoch's first ones repeated, as DistributedSampler
    pads), "drop" n // world_size (the epoch's last n % world_size left out): DDP's
    collectives need equal counts; with trace counts the ranks with room balance traces."""
    return epoch_remainder(shot_ids, epoch, seed, (), rank, world_size, trace_counts, even)

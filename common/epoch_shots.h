// EpochShots: which shots each data-parallel rank takes in an epoch, with no server; the
// same lists as Python's shotstream.epoch_shots (docs/epochs.md states the algorithm).
// EpochRemainder: the same after a checkpoint, at any world size: what the ranks had not
// consumed, split among the new ranks. Shared by the client (shotstream::client::...) and
// the server's jobs (the epoch's permutation). Pure functions, thread-safe.
#ifndef SHOTSTREAM_COMMON_EPOCH_SHOTS_H_
#define SHOTSTREAM_COMMON_EPOCH_SHOTS_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"

namespace shotstream {

// All the ids in the epoch's order: sorted, then shuffled by a SplitMix64 generator seeded
// from (seed, epoch) alone.
std::vector<int64_t> EpochPermutation(std::vector<int64_t> shot_ids, uint64_t epoch,
                                      uint64_t seed);

// Equal numbers of shots a rank, as DDP's collectives need: kPad repeats the order's
// first shots until every rank has ceil(n / W) (DistributedSampler's padding), kDrop
// leaves out the order's last n % W. With trace counts the shares then balance traces
// among ranks that still have room.
enum class EvenShares { kNone, kPad, kDrop };

// Rank `rank`'s shots of the epoch among `world_size` ranks; every id is in exactly one
// rank's list (kPad: a few in two; kDrop: a few in none). With `trace_counts` (id ->
// traces; empty: none) the split balances total traces (any two ranks within the largest
// shot's count). INVALID_ARGUMENT for a rank out of range or an id without a trace count.
absl::StatusOr<std::vector<int64_t>> EpochShots(
    const std::vector<int64_t>& shot_ids, uint64_t epoch, uint64_t seed, int rank,
    int world_size, const absl::flat_hash_map<int64_t, uint64_t>& trace_counts = {},
    EvenShares even = EvenShares::kNone);

// One checkpoint of an epoch: at `world_size` ranks, rank r had consumed the first
// consumed[r] shots of its list (one value: every rank that many, or all of a shorter
// list, as ranks that consume in step do).
struct EpochProgress {
  int world_size = 1;
  std::vector<uint64_t> consumed;
};

// The rest of the epoch after the checkpoints in `progress` (oldest first: a run resumed
// twice has two): the shots of the lists that were not consumed, in epoch order, split
// among `world_size` ranks as EpochShots splits the whole epoch. Over every rank, the
// consumed shots and the remainder are the epoch's, each once. Empty `progress`: EpochShots.
// INVALID_ARGUMENT for a rank out of range, a checkpoint's world size or counts that do
// not fit (a rank that consumed more than its list).
absl::StatusOr<std::vector<int64_t>> EpochRemainder(
    const std::vector<int64_t>& shot_ids, uint64_t epoch, uint64_t seed,
    const std::vector<EpochProgress>& progress, int rank, int world_size,
    const absl::flat_hash_map<int64_t, uint64_t>& trace_counts = {},
    EvenShares even = EvenShares::kNone);

// The same from an order of ids given by the caller instead of the epoch's permutation
// (a list not shuffled; repeats allowed).
absl::StatusOr<std::vector<int64_t>> RemainderOf(
    const std::vector<int64_t>& order, const std::vector<EpochProgress>& progress, int rank,
    int world_size, const absl::flat_hash_map<int64_t, uint64_t>& trace_counts = {},
    EvenShares even = EvenShares::kNone);

}  // namespace shotstream

#endif  // SHOTSTREAM_COMMON_EPOCH_SHOTS_H_

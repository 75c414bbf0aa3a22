// EpochShots: which shots each data-parallel rank takes in an epoch, with no server; the
// same lists as Python's shotstream.epoch_shots (docs/epochs.md states the algorithm).
// Shared by the client (shotstream::client::EpochShots) and the server's jobs (the
// epoch's permutation). Pure functions, thread-safe.
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

// Rank `rank`'s shots of the epoch among `world_size` ranks; every id is in exactly one
// rank's list. With `trace_counts` (id -> traces; empty: none) the split balances total
// traces (any two ranks within the largest shot's count). INVALID_ARGUMENT for a rank out
// of range or an id without a trace count.
absl::StatusOr<std::vector<int64_t>> EpochShots(
    const std::vector<int64_t>& shot_ids, uint64_t epoch, uint64_t seed, int rank,
    int world_size, const absl::flat_hash_map<int64_t, uint64_t>& trace_counts = {});

}  // namespace shotstream

#endif  // SHOTSTREAM_COMMON_EPOCH_SHOTS_H_

#include "shotstream/common/epoch_shots.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <utility>

#include "absl/strings/str_cat.h"

namespace shotstream {
namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

std::vector<int64_t> EpochPermutation(std::vector<int64_t> ids, uint64_t epoch,
                                      uint64_t seed) {
  std::sort(ids.begin(), ids.end());
  uint64_t state = Mix(Mix(seed) ^ epoch);
  for (size_t i = ids.size(); i-- > 1;) {
    state += kGolden;
    const uint64_t j = Mix(state) % (i + 1);
    std::swap(ids[i], ids[j]);
  }
  return ids;
}

absl::StatusOr<std::vector<int64_t>> EpochShots(
    const std::vector<int64_t>& shot_ids, uint64_t epoch, uint64_t seed, int rank,
    int world_size, const absl::flat_hash_map<int64_t, uint64_t>& trace_counts) {
  if (world_size < 1 || rank < 0 || rank >= world_size) {
    return absl::InvalidArgumentError(absl::StrCat("rank ", rank, " of world_size ", world_size,
                                                   ": need 0 <= rank < world_size"));
  }
  const std::vector<int64_t> order = EpochPermutation(shot_ids, epoch, seed);
  std::vector<int64_t> mine;
  if (trace_counts.empty()) {
    for (size_t i = rank; i < order.size(); i += world_size) mine.push_back(order[i]);
    return mine;
  }
  // (traces so far, rank), the least first: ties go to the lowest rank.
  using Load = std::pair<uint64_t, int>;
  std::priority_queue<Load, std::vector<Load>, std::greater<Load>> ranks;
  for (int r = 0; r < world_size; ++r) ranks.push({0, r});
  for (int64_t id : order) {
    auto it = trace_counts.find(id);
    if (it == trace_counts.end()) {
      return absl::InvalidArgumentError(absl::StrCat("no trace count for shot ", id));
    }
    auto [total, r] = ranks.top();
    ranks.pop();
    ranks.push({total + it->second, r});
    if (r == rank) mine.push_back(id);
  }
  return mine;
}

}  // namespace shotstream

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

absl::Status CheckRank(int rank, int world_size) {
  if (world_size < 1 || rank < 0 || rank >= world_size) {
    return absl::InvalidArgumentError(absl::StrCat("rank ", rank, " of world_size ", world_size,
                                                   ": need 0 <= rank < world_size"));
  }
  return absl::OkStatus();
}

// `order` evened for `world_size` ranks (padded cyclically or cut), and each rank's
// positions in it, in order.
struct Split {
  std::vector<int64_t> seq;
  std::vector<std::vector<size_t>> positions;
};

absl::StatusOr<Split> SplitOrder(const std::vector<int64_t>& order, int world_size,
                                 const absl::flat_hash_map<int64_t, uint64_t>& trace_counts,
                                 EvenShares even) {
  Split s;
  s.seq = order;
  const size_t n = order.size(), w = static_cast<size_t>(world_size);
  if (even == EvenShares::kPad && n > 0) {
    for (size_t i = 0; s.seq.size() % w != 0; ++i) s.seq.push_back(order[i % n]);
  } else if (even == EvenShares::kDrop) {
    s.seq.resize(n / w * w);
  }
  s.positions.resize(w);
  if (trace_counts.empty()) {
    for (size_t i = 0; i < s.seq.size(); ++i) s.positions[i % w].push_back(i);
    return s;
  }
  // (traces so far, rank), the least first: ties go to the lowest rank; evened, a rank
  // with its share leaves the queue.
  const size_t quota = even == EvenShares::kNone ? s.seq.size() : s.seq.size() / w;
  using Load = std::pair<uint64_t, int>;
  std::priority_queue<Load, std::vector<Load>, std::greater<Load>> ranks;
  for (int r = 0; r < world_size; ++r) ranks.push({0, r});
  for (size_t i = 0; i < s.seq.size(); ++i) {
    auto it = trace_counts.find(s.seq[i]);
    if (it == trace_counts.end()) {
      return absl::InvalidArgumentError(absl::StrCat("no trace count for shot ", s.seq[i]));
    }
    auto [total, r] = ranks.top();
    ranks.pop();
    s.positions[r].push_back(i);
    if (s.positions[r].size() < quota) ranks.push({total + it->second, r});
  }
  return s;
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
    int world_size, const absl::flat_hash_map<int64_t, uint64_t>& trace_counts,
    EvenShares even) {
  return EpochRemainder(shot_ids, epoch, seed, {}, rank, world_size, trace_counts, even);
}

absl::StatusOr<std::vector<int64_t>> EpochRemainder(
    const std::vector<int64_t>& shot_ids, uint64_t epoch, uint64_t seed,
    const std::vector<EpochProgress>& progress, int rank, int world_size,
    const absl::flat_hash_map<int64_t, uint64_t>& trace_counts, EvenShares even) {
  if (absl::Status s = CheckRank(rank, world_size); !s.ok()) return s;
  return RemainderOf(EpochPermutation(shot_ids, epoch, seed), progress, rank, world_size,
                     trace_counts, even);
}

absl::StatusOr<std::vector<int64_t>> RemainderOf(
    const std::vector<int64_t>& order, const std::vector<EpochProgress>& progress, int rank,
    int world_size, const absl::flat_hash_map<int64_t, uint64_t>& trace_counts,
    EvenShares even) {
  if (absl::Status s = CheckRank(rank, world_size); !s.ok()) return s;
  std::vector<int64_t> seq = order;
  for (size_t k = 0; k < progress.size(); ++k) {
    const EpochProgress& p = progress[k];
    const std::string which = absl::StrCat("checkpoint ", k + 1, " of ", progress.size());
    if (p.world_size < 1 || (p.consumed.size() != 1 &&
                             p.consumed.size() != static_cast<size_t>(p.world_size))) {
      return absl::InvalidArgumentError(absl::StrCat(
          which, ": world_size ", p.world_size, " with ", p.consumed.size(),
          " consumed counts (need one, or one a rank)"));
    }
    absl::StatusOr<Split> split = SplitOrder(seq, p.world_size, trace_counts, even);
    if (!split.ok()) return split.status();
    std::vector<bool> consumed(split->seq.size(), false);
    for (int r = 0; r < p.world_size; ++r) {
      const std::vector<size_t>& mine = split->positions[r];
      uint64_t c = p.consumed.size() == 1 ? std::min<uint64_t>(p.consumed[0], mine.size())
                                          : p.consumed[r];
      if (c > mine.size()) {
        return absl::InvalidArgumentError(absl::StrCat(which, ": rank ", r, " consumed ", c,
                                                       " shots of its ", mine.size()));
      }
      for (uint64_t i = 0; i < c; ++i) consumed[mine[i]] = true;
    }
    seq.clear();
    for (size_t i = 0; i < split->seq.size(); ++i) {
      if (!consumed[i]) seq.push_back(split->seq[i]);
    }
  }
  absl::StatusOr<Split> split = SplitOrder(seq, world_size, trace_counts, even);
  if (!split.ok()) return split.status();
  std::vector<int64_t> mine;
  for (size_t i : split->positions[rank]) mine.push_back(split->seq[i]);
  return mine;
}

}  // namespace shotstream

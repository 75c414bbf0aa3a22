#include "shotstream/common/epoch_shots.h"

#include <algorithm>
#include <map>
#include <random>

#include "gtest/gtest.h"

namespace shotstream {
namespace {

std::vector<int64_t> Ids(int n) {
  std::vector<int64_t> ids;
  for (int i = 0; i < n; ++i) ids.push_back(1000 + 7 * i);
  return ids;
}

TEST(EpochShotsTest, EveryIdInExactlyOneRankForManySizes) {
  for (int n : {0, 1, 2, 3, 7, 16, 33, 100}) {
    for (int w = 1; w <= 8; ++w) {
      std::map<int64_t, int> seen;
      for (int r = 0; r < w; ++r) {
        auto mine = EpochShots(Ids(n), 3, 42, r, w);
        ASSERT_TRUE(mine.ok());
        EXPECT_LE(mine->size(), static_cast<size_t>((n + w - 1) / w));
        for (int64_t id : *mine) seen[id]++;
      }
      ASSERT_EQ(seen.size(), static_cast<size_t>(n)) << n << " " << w;
      for (auto [id, times] : seen) EXPECT_EQ(times, 1) << id;
    }
  }
}

TEST(EpochShotsTest, DeterminedBySeedAndEpochAloneNotByTheInputOrder) {
  std::vector<int64_t> ids = Ids(50), shuffled = ids;
  std::mt19937 rng(1);
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  EXPECT_EQ(EpochPermutation(ids, 2, 9), EpochPermutation(shuffled, 2, 9));
  EXPECT_NE(EpochPermutation(ids, 2, 9), EpochPermutation(ids, 3, 9));  // a new epoch
  EXPECT_NE(EpochPermutation(ids, 2, 9), EpochPermutation(ids, 2, 10));  // another seed
  std::vector<int64_t> sorted = EpochPermutation(ids, 2, 9);
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, ids);
}

TEST(EpochShotsTest, TraceCountsBalanceWithinTheLargestShot) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 20; ++trial) {
    const std::vector<int64_t> ids = Ids(40 + trial);
    absl::flat_hash_map<int64_t, uint64_t> counts;
    uint64_t largest = 0;
    for (int64_t id : ids) {
      counts[id] = 50 + rng() % 950;  // 50..999 traces
      largest = std::max(largest, counts[id]);
    }
    for (int w : {2, 3, 4, 8}) {
      uint64_t lo = UINT64_MAX, hi = 0;
      size_t total = 0;
      for (int r = 0; r < w; ++r) {
        auto mine = EpochShots(ids, trial, 1, r, w, counts);
        ASSERT_TRUE(mine.ok());
        uint64_t traces = 0;
        for (int64_t id : *mine) traces += counts[id];
        lo = std::min(lo, traces);
        hi = std::max(hi, traces);
        total += mine->size();
      }
      EXPECT_EQ(total, ids.size());
      EXPECT_LE(hi - lo, largest) << trial << " " << w;
    }
  }
}

TEST(EpochShotsTest, BadRankAndMissingCountsAreInvalid) {
  EXPECT_EQ(EpochShots(Ids(3), 0, 0, 2, 2).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(EpochShots(Ids(3), 0, 0, 0, 0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(EpochShots(Ids(3), 0, 0, 0, 1, {{1000, 5}}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace shotstream

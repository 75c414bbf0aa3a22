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


TEST(EpochShotsTest, EvenSharesAreEqualPaddedOrDropped) {
  for (int n : {0, 1, 5, 20, 37}) {
    for (int w = 1; w <= 8; ++w) {
      for (bool counted : {false, true}) {
        absl::flat_hash_map<int64_t, uint64_t> counts;
        if (counted) {
          for (int64_t id : Ids(n)) counts[id] = 1 + id % 97;
        }
        std::map<int64_t, int> pad_seen, drop_seen;
        for (int r = 0; r < w; ++r) {
          auto pad = EpochShots(Ids(n), 1, 2, r, w, counts, EvenShares::kPad);
          auto drop = EpochShots(Ids(n), 1, 2, r, w, counts, EvenShares::kDrop);
          ASSERT_TRUE(pad.ok() && drop.ok());
          EXPECT_EQ(pad->size(), static_cast<size_t>(n == 0 ? 0 : (n + w - 1) / w));
          EXPECT_EQ(drop->size(), static_cast<size_t>(n / w));
          for (int64_t id : *pad) pad_seen[id]++;
          for (int64_t id : *drop) drop_seen[id]++;
        }
        EXPECT_EQ(pad_seen.size(), static_cast<size_t>(n));  // every shot at least once
        for (auto [id, times] : drop_seen) EXPECT_EQ(times, 1);
        EXPECT_EQ(drop_seen.size(), static_cast<size_t>(n / w * w));
      }
    }
  }
}

// Consumed before the checkpoint plus the remainder after it, at any new world size, are
// the epoch's shots, each once.
TEST(EpochShotsTest, TheRemainderAtAnyWorldSizeCompletesTheEpochOnce) {
  const std::vector<int64_t> ids = Ids(53);
  absl::flat_hash_map<int64_t, uint64_t> counts;
  for (int64_t id : ids) counts[id] = 3 + id % 11;
  for (bool counted : {false, true}) {
    const auto& c = counted ? counts : absl::flat_hash_map<int64_t, uint64_t>{};
    for (int before = 1; before <= 6; ++before) {
      for (uint64_t k : {0, 1, 4, 9, 100}) {
        std::map<int64_t, int> seen;
        for (int r = 0; r < before; ++r) {
          auto mine = EpochShots(ids, 4, 8, r, before, c);
          ASSERT_TRUE(mine.ok());
          for (size_t i = 0; i < std::min<size_t>(k, mine->size()); ++i) seen[(*mine)[i]]++;
        }
        for (int after = 1; after <= 6; ++after) {
          std::map<int64_t, int> all = seen;
          for (int r = 0; r < after; ++r) {
            auto rest = EpochRemainder(ids, 4, 8, {{before, {k}}}, r, after, c);
            ASSERT_TRUE(rest.ok()) << rest.status();
            for (int64_t id : *rest) all[id]++;
          }
          ASSERT_EQ(all.size(), ids.size()) << before << " " << k << " " << after;
          for (auto [id, times] : all) EXPECT_EQ(times, 1) << id;
        }
      }
    }
  }
}

TEST(EpochShotsTest, CheckpointsThatDoNotFitAreInvalid) {
  EXPECT_EQ(EpochRemainder(Ids(10), 0, 0, {{0, {1}}}, 0, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(EpochRemainder(Ids(10), 0, 0, {{2, {1, 2, 3}}}, 0, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Rank 0 of 2 has 5 shots: it cannot have consumed 6.
  EXPECT_EQ(EpochRemainder(Ids(10), 0, 0, {{2, {6, 0}}}, 0, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(EpochRemainder(Ids(10), 0, 0, {{2, {5, 5}}}, 0, 3)->empty());
}

}  // namespace
}  // namespace shotstream

#include "server/io/trace_crcs.h"

#include <cstdint>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace shotstream::io {
namespace {

TEST(TraceCrcsTest, KeepsWhatIsStoredAndNothingElse) {
  TraceCrcBudget budget(1 << 20);
  TraceCrcs crcs(100, &budget);
  uint32_t crc = 7;
  EXPECT_FALSE(crcs.Find(3, &crc));
  EXPECT_EQ(crcs.held_bytes(), 0u);
  EXPECT_EQ(budget.used(), 0u);

  crcs.Store(3, 0);  // a CRC of 0 is a CRC like any other
  crcs.Store(99, 0xFFFFFFFFu);
  ASSERT_TRUE(crcs.Find(3, &crc));
  EXPECT_EQ(crc, 0u);
  ASSERT_TRUE(crcs.Find(99, &crc));
  EXPECT_EQ(crc, 0xFFFFFFFFu);
  EXPECT_FALSE(crcs.Find(4, &crc));
  EXPECT_FALSE(crcs.Find(100, &crc));  // past the file's traces
  crcs.Store(100, 5);                  // ignored, not out of bounds
  EXPECT_FALSE(crcs.Find(100, &crc));
  EXPECT_EQ(budget.used(), 800u);
}

TEST(TraceCrcsTest, TablesComeOutOfTheBudgetAndGoBackWithTheFile) {
  TraceCrcBudget budget(1000);
  {
    TraceCrcs a(100, &budget);  // 800 bytes
    TraceCrcs b(100, &budget);  // would be 1600: refused, keeps nothing
    a.Store(0, 1);
    b.Store(0, 2);
    uint32_t crc;
    EXPECT_TRUE(a.Find(0, &crc));
    EXPECT_FALSE(b.Find(0, &crc));
    EXPECT_EQ(b.held_bytes(), 0u);
    EXPECT_EQ(budget.used(), 800u);
    EXPECT_EQ(budget.refusals(), 1u);
    b.Store(1, 2);  // refused once: not asked again
    EXPECT_EQ(budget.refusals(), 1u);
  }
  EXPECT_EQ(budget.used(), 0u);
  TraceCrcs c(125, &budget);  // exactly the limit
  c.Store(124, 9);
  uint32_t crc;
  EXPECT_TRUE(c.Find(124, &crc));
  EXPECT_EQ(budget.used(), 1000u);
}

TEST(TraceCrcsTest, AFileHoldsOnlyTheBlocksOfTheTracesSent) {
  TraceCrcBudget budget(uint64_t{1} << 30);
  const uint64_t block = TraceCrcs::kBlockTraces;
  {
    TraceCrcs crcs(100'000'000, &budget);  // 800 MB were it whole
    crcs.Store(5 * block + 7, 1);
    crcs.Store(5 * block + 8, 2);  // the same block
    EXPECT_EQ(crcs.held_bytes(), block * 8);
    crcs.Store(99'999'999, 3);  // the last block, shorter
    EXPECT_EQ(crcs.held_bytes(), block * 8 + (100'000'000 % block) * 8);
    EXPECT_EQ(budget.used(), crcs.held_bytes());
    uint32_t crc;
    ASSERT_TRUE(crcs.Find(99'999'999, &crc));
    EXPECT_EQ(crc, 3u);
    EXPECT_FALSE(crcs.Find(5 * block + 9, &crc));
    EXPECT_FALSE(crcs.Find(0, &crc));
  }
  EXPECT_EQ(budget.used(), 0u);
  // A budget of one block: the second block is refused, and the file asks no more.
  TraceCrcBudget one(block * 8);
  TraceCrcs crcs(4 * block, &one);
  crcs.Store(0, 1);
  crcs.Store(block, 2);
  crcs.Store(2 * block, 3);
  uint32_t crc;
  EXPECT_TRUE(crcs.Find(0, &crc));
  EXPECT_FALSE(crcs.Find(block, &crc));
  EXPECT_EQ(one.refusals(), 1u);
  EXPECT_EQ(crcs.held_bytes(), block * 8);
}

TEST(TraceCrcsTest, ConcurrentFirstStoresKeepOneTable) {
  TraceCrcBudget budget(1 << 20);
  TraceCrcs crcs(4096, &budget);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&crcs, t] {
      for (uint64_t i = t; i < 4096; i += 8) crcs.Store(i, static_cast<uint32_t>(i * 2654435761u));
    });
  }
  for (std::thread& t : threads) t.join();
  for (uint64_t i = 0; i < 4096; ++i) {
    uint32_t crc;
    ASSERT_TRUE(crcs.Find(i, &crc)) << i;
    EXPECT_EQ(crc, static_cast<uint32_t>(i * 2654435761u));
  }
  EXPECT_EQ(budget.used(), 4096u * 8);
}

}  // namespace
}  // namespace shotstream::io

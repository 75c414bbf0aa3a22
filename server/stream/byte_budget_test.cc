#include "server/stream/byte_budget.h"

#include <vector>

#include "gtest/gtest.h"

namespace shotstream::stream {
namespace {

struct Recorder : ByteBudget::Waiter {
  explicit Recorder(std::vector<int>* log, int id) : log(log), id(id) {}
  void Wake() override { log->push_back(id); }
  std::vector<int>* log;
  int id;
};

TEST(ByteBudgetTest, LimitsAndWakesInFifoOrder) {
  ByteBudget b(100);
  std::vector<int> woken;
  Recorder a(&woken, 1), c(&woken, 2), d(&woken, 3);
  EXPECT_TRUE(b.TryAcquire(60, false, &a));
  EXPECT_FALSE(b.TryAcquire(60, false, &c));  // over the limit: queued
  EXPECT_FALSE(b.TryAcquire(10, false, &d));  // fits, but c waits first: queued (fairness)
  EXPECT_EQ(b.in_use(), 60u);
  b.Release(60);  // c's 60 and then d's 10 are granted, in that order
  EXPECT_EQ(woken, std::vector<int>({2, 3}));
  EXPECT_EQ(b.in_use(), 70u);
  Recorder e(&woken, 4);
  EXPECT_FALSE(b.TryAcquire(50, false, &e));
  b.Release(10);
  EXPECT_EQ(woken, std::vector<int>({2, 3}));  // 60 + 50 does not fit yet
  b.Release(60);
  EXPECT_EQ(woken, std::vector<int>({2, 3, 4}));
  EXPECT_EQ(b.in_use(), 50u);
}

TEST(ByteBudgetTest, AStreamHoldingNothingAlwaysProgresses) {
  ByteBudget b(100);
  std::vector<int> woken;
  Recorder a(&woken, 1), c(&woken, 2);
  EXPECT_TRUE(b.TryAcquire(90, false, &a));
  EXPECT_TRUE(b.TryAcquire(500, true, &c));  // larger than the whole budget, holds nothing
  EXPECT_EQ(b.peak(), 590u);
  EXPECT_FALSE(b.TryAcquire(1, false, &a));
  EXPECT_TRUE(b.Cancel(&a));
  EXPECT_FALSE(b.Cancel(&a));
  b.Release(590);
  EXPECT_TRUE(woken.empty());  // a was cancelled
  EXPECT_EQ(b.in_use(), 0u);
  // A queued request larger than the limit is granted once nothing else is in use.
  EXPECT_TRUE(b.TryAcquire(50, false, &a));
  EXPECT_FALSE(b.TryAcquire(300, false, &c));
  b.Release(50);
  EXPECT_EQ(woken, std::vector<int>({2}));
}

}  // namespace
}  // namespace shotstream::stream

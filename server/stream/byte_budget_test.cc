// The byte budget's rules, one test each: progress, fair share, order, and what Cancel and
// closing an account give back. Single-threaded: every grant is seen as it happens.
#include "server/stream/byte_budget.h"

#include <memory>
#include <vector>

#include "gtest/gtest.h"

namespace shotstream::stream {

namespace {

// A stream: its account, and the order in which grants woke streams.
struct Stream : ByteBudget::Waiter {
  Stream(ByteBudget* budget, std::vector<int>* log, int id)
      : log(log), id(id), account(budget->Open(this)) {}
  void Wake() override { log->push_back(id); }
  std::vector<int>* log;
  int id;
  std::unique_ptr<ByteBudget::Account> account;
};

class ByteBudgetTest : public ::testing::Test {
 protected:
  Stream& New(int id) {
    streams_.push_back(std::make_unique<Stream>(&budget_, &woken_, id));
    return *streams_.back();
  }
  ByteBudget budget_{100};
  std::vector<int> woken_;
  std::vector<std::unique_ptr<Stream>> streams_;
};

TEST_F(ByteBudgetTest, TakesWhatFitsAndQueuesWhatDoesNot) {
  Stream& a = New(1);
  EXPECT_TRUE(a.account->TryAcquire(40));
  EXPECT_TRUE(a.account->TryAcquire(40));  // alone: its share is the whole budget
  EXPECT_EQ(budget_.in_use(), 80u);
  EXPECT_FALSE(a.account->TryAcquire(40));  // over the limit: queued
  EXPECT_EQ(budget_.waiting(), 1u);
  a.account->Release(40);
  EXPECT_EQ(woken_, std::vector<int>({1}));
  EXPECT_EQ(a.account->held(), 80u);
  EXPECT_EQ(budget_.waiting(), 0u);
}

// The starvation of issue 35: streams that stopped reading hold the budget and have
// requests queued; a new stream gets its first shot, queues its second while it holds the
// first, and must be granted the moment its first is sent, not after them.
TEST_F(ByteBudgetTest, AQueuedRequestIsGrantedWhenItsStreamComesToHoldNothing) {
  for (int id = 1; id <= 3; ++id) ASSERT_TRUE(New(id).account->TryAcquire(30));
  for (int k = 0; k < 3; ++k) ASSERT_FALSE(streams_[k]->account->TryAcquire(30));
  Stream& fresh = New(9);
  EXPECT_TRUE(fresh.account->TryAcquire(30)) << "it holds nothing: granted over the limit";
  EXPECT_EQ(budget_.in_use(), 120u);
  EXPECT_FALSE(fresh.account->TryAcquire(30));
  fresh.account->Release(30);  // its first shot is on the wire
  EXPECT_EQ(woken_, std::vector<int>({9})) << "the stalled streams' requests wait on";
  EXPECT_EQ(fresh.account->held(), 30u);
  for (int k = 0; k < 5; ++k) {  // and so on, shot after shot
    EXPECT_FALSE(fresh.account->TryAcquire(30));
    fresh.account->Release(30);
  }
  EXPECT_EQ(woken_, std::vector<int>(6, 9));
}

TEST_F(ByteBudgetTest, AStreamHoldingNothingGetsEvenMoreThanTheWholeBudget) {
  Stream& a = New(1);
  Stream& b = New(2);
  EXPECT_TRUE(a.account->TryAcquire(90));
  EXPECT_TRUE(b.account->TryAcquire(500));
  EXPECT_EQ(budget_.peak(), 590u);
  b.account->Release(500);
  EXPECT_EQ(budget_.in_use(), 90u);
}

TEST_F(ByteBudgetTest, WhileOthersWaitAStreamHoldsAtMostItsShare) {
  Stream& a = New(1);
  Stream& b = New(2);
  EXPECT_TRUE(a.account->TryAcquire(30));
  EXPECT_TRUE(a.account->TryAcquire(30));  // alone so far: 60 of 100
  EXPECT_TRUE(b.account->TryAcquire(10));
  // Two streams hold bytes: a's share is 50. 70 would fit the budget, not the share.
  EXPECT_FALSE(a.account->TryAcquire(10));
  EXPECT_TRUE(b.account->TryAcquire(30)) << "b is below its share";
  EXPECT_FALSE(b.account->TryAcquire(20)) << "60 is over b's share too";
  a.account->Release(30);  // a holds 30: its 10 fits its share (in use 80)
  EXPECT_EQ(woken_, std::vector<int>({1}));
  EXPECT_EQ(budget_.in_use(), 80u);
}

TEST_F(ByteBudgetTest, OpenAccountsThatNeitherHoldNorWantShareNothing) {
  for (int id = 1; id <= 10; ++id) New(id);  // streams between shots: idle
  Stream& a = New(11);
  EXPECT_TRUE(a.account->TryAcquire(50));
  EXPECT_TRUE(a.account->TryAcquire(50)) << "the only busy stream: the whole budget is its";
}

TEST_F(ByteBudgetTest, ReleasedBytesGoToTheStreamThatHoldsLeastNotToTheFirstInLine) {
  Stream& a = New(1);
  Stream& b = New(2);
  Stream& c = New(3);
  ASSERT_TRUE(a.account->TryAcquire(40));
  ASSERT_TRUE(b.account->TryAcquire(20));
  ASSERT_TRUE(c.account->TryAcquire(40));
  ASSERT_FALSE(a.account->TryAcquire(20));  // first in line
  ASSERT_FALSE(b.account->TryAcquire(20));
  c.account->Release(40);  // two busy streams, shares of 50: b (20 + 20) fits, a (60) not
  EXPECT_EQ(woken_, std::vector<int>({2}));
  b.account->Release(40);  // b is idle: a alone may take the whole budget
  EXPECT_EQ(woken_, std::vector<int>({2, 1}));
  EXPECT_EQ(budget_.in_use(), 60u);
}

TEST_F(ByteBudgetTest, AmongEqualHoldersTheFirstToAskGoesFirst) {
  Stream& a = New(1);
  Stream& b = New(2);
  Stream& c = New(3);
  ASSERT_TRUE(a.account->TryAcquire(30));
  ASSERT_TRUE(b.account->TryAcquire(30));
  ASSERT_TRUE(c.account->TryAcquire(30));
  ASSERT_FALSE(b.account->TryAcquire(10));
  ASSERT_FALSE(a.account->TryAcquire(10));
  c.account->Release(30);  // one grant each fits; b asked first
  EXPECT_EQ(woken_, std::vector<int>({2, 1}));
}

TEST_F(ByteBudgetTest, ANewRequestDoesNotPassAWaitingStreamThatHoldsLess) {
  Stream& c = New(3);
  Stream& a = New(1);
  Stream& b = New(2);
  ASSERT_TRUE(c.account->TryAcquire(60));
  ASSERT_TRUE(a.account->TryAcquire(10));
  ASSERT_TRUE(b.account->TryAcquire(20));  // three busy: shares of 33, 90 in use
  ASSERT_FALSE(a.account->TryAcquire(20)) << "within a's share, but 110 is over the limit";
  EXPECT_FALSE(b.account->TryAcquire(10)) << "it would fit, but a holds less and waits";
  c.account->Release(60);  // two busy: shares of 50; a, then b
  EXPECT_EQ(woken_, std::vector<int>({1, 2}));
  EXPECT_EQ(budget_.in_use(), 60u);
}

TEST_F(ByteBudgetTest, CancelDropsTheRequestAndSaysWhetherThereWasOne) {
  Stream& a = New(1);
  ASSERT_TRUE(a.account->TryAcquire(90));
  ASSERT_FALSE(a.account->TryAcquire(20));
  EXPECT_TRUE(a.account->Cancel());
  EXPECT_FALSE(a.account->Cancel());
  a.account->Release(90);
  EXPECT_TRUE(woken_.empty()) << "a cancelled request is not granted";
  EXPECT_EQ(budget_.in_use(), 0u);
  EXPECT_EQ(budget_.waiting(), 0u);
}

TEST_F(ByteBudgetTest, ClosingAnAccountGivesBackWhatItHeldAndGrantsOthers) {
  Stream& a = New(1);
  Stream& b = New(2);
  ASSERT_TRUE(a.account->TryAcquire(90));
  ASSERT_TRUE(b.account->TryAcquire(10));
  ASSERT_FALSE(b.account->TryAcquire(40));
  a.account.reset();  // the stream ended (or was cancelled) holding 90
  EXPECT_EQ(woken_, std::vector<int>({2}));
  EXPECT_EQ(budget_.in_use(), 50u);
  b.account.reset();  // and its queued request, had there been one, goes with it
  EXPECT_EQ(budget_.in_use(), 0u);
}

}  // namespace
}  // namespace shotstream::stream

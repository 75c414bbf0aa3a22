#include "server/stream/unit_cursor.h"

#include <deque>
#include <memory>
#include <vector>

#include "gtest/gtest.h"

namespace shotstream::stream {
namespace {

// Every shot of 10 traces x 100 samples (4,000 bytes).
class SizedSource final : public ShotSource {
 public:
  double sample_interval_us() const override { return 1000; }
  uint64_t ShotBytes(int64_t, uint32_t) const override { return 4000; }
  absl::StatusOr<dataset::ShotData> ReadShot(int64_t, const dataset::ReadPlan&,
                                             ShotReadCost*) const override {
    return absl::UnimplementedError("not read here");
  }
  absl::StatusOr<dataset::ShotHead> ReadShotHead(int64_t, const dataset::ReadPlan&, uint64_t,
                                                 ShotReadCost*) const override {
    return absl::UnimplementedError("not read here");
  }
  absl::StatusOr<dataset::ShotData> ReadPiece(const dataset::ShotHead&, size_t,
                                              const dataset::ReadPlan&,
                                              ShotReadCost*) const override {
    return absl::UnimplementedError("not read here");
  }
};

class QueueFeed final : public ShotFeed {
 public:
  std::deque<int64_t> shots;
  bool ended = false;
  std::vector<int64_t> given_back;
  Take Next(int64_t* id) override {
    if (shots.empty()) return ended ? Take::kEnd : Take::kWait;
    *id = shots.front();
    shots.pop_front();
    return Take::kShot;
  }
  void SetWake(std::function<void()>) override {}
  void GiveBack(const std::vector<int64_t>& ids) override {
    given_back.insert(given_back.end(), ids.begin(), ids.end());
  }
};

WindowPlan Plan(std::vector<int64_t> ids) {
  WindowPlan plan;
  plan.source = std::make_shared<SizedSource>();
  plan.shot_ids = std::move(ids);
  return plan;
}

TEST(UnitCursorTest, ShotsComeInOrderAndTheStreamEndsWhenEachWasSent) {
  const WindowPlan plan = Plan({5, 3, 9});
  UnitCursor cursor(&plan);
  std::vector<int64_t> order;
  ShotUnit unit;
  while (cursor.Peek(&unit)) {
    EXPECT_FALSE(unit.pieced);
    EXPECT_EQ(unit.bytes, 4000u);
    order.push_back(cursor.id(unit.index));
    cursor.Advance(unit);
  }
  EXPECT_EQ(order, (std::vector<int64_t>{5, 3, 9}));
  EXPECT_FALSE(cursor.all_sent());
  for (size_t i = 0; i < 3; ++i) cursor.ShotSent(i);
  EXPECT_TRUE(cursor.all_sent());
  EXPECT_EQ(cursor.ids(1, 5), (std::vector<int64_t>{3, 9}));
}

// A shot over piece_bytes: its first piece, then nothing until its head is read, then
// each later piece, then the next shot.
TEST(UnitCursorTest, LaterPiecesWaitForTheHead) {
  WindowPlan plan = Plan({1, 2});
  plan.piece_bytes = 1000;
  UnitCursor cursor(&plan);
  ShotUnit unit;
  ASSERT_TRUE(cursor.Peek(&unit));
  EXPECT_TRUE(unit.pieced);
  EXPECT_EQ(unit.piece, 0u);
  EXPECT_EQ(unit.bytes, 1000u);
  cursor.Advance(unit);
  EXPECT_FALSE(cursor.Peek(&unit));  // the head is still being read
  auto head = std::make_shared<dataset::ShotHead>();
  head->n_traces = 10;
  head->n_samples = 100;
  head->traces_per_piece = 4;  // pieces of 4, 4 and 2 traces
  cursor.HeadRead(0, head);
  std::vector<uint64_t> bytes;
  while (cursor.Peek(&unit) && unit.index == 0) {
    EXPECT_EQ(unit.head, head);
    bytes.push_back(unit.bytes);
    cursor.Advance(unit);
  }
  EXPECT_EQ(bytes, (std::vector<uint64_t>{1600, 800}));
  EXPECT_EQ(unit.index, 1u);
  EXPECT_EQ(unit.piece, 0u);
}

// A job's feed: shots are taken as the cursor needs them; a stall rewinds the cursor and
// returns the shots from there on to the feed, which are then taken afresh.
TEST(UnitCursorTest, ARewindGivesAFeedsShotsBack) {
  auto feed = std::make_shared<QueueFeed>();
  feed->shots = {10, 11, 12, 13};
  WindowPlan plan = Plan({});
  plan.feed = feed;
  UnitCursor cursor(&plan);
  ShotUnit unit;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(cursor.Peek(&unit));
    cursor.Advance(unit);
  }
  cursor.ShotSent(0);
  cursor.MoveTo(1, 0);  // shots 11 and 12 given back
  EXPECT_EQ(cursor.Rewind(), (std::vector<int64_t>{11, 12}));
  EXPECT_EQ(cursor.ids(0, 10), (std::vector<int64_t>{10}));
  ASSERT_TRUE(cursor.Peek(&unit));
  EXPECT_EQ(cursor.id(unit.index), 13);  // the feed's next
  cursor.Advance(unit);
  EXPECT_FALSE(cursor.all_known());
  EXPECT_FALSE(cursor.Peek(&unit));
  feed->ended = true;
  EXPECT_FALSE(cursor.Peek(&unit));
  EXPECT_TRUE(cursor.all_known());
}

}  // namespace
}  // namespace shotstream::stream

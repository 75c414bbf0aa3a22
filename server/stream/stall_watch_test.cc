#include "server/stream/stall_watch.h"

#include <memory>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace shotstream::stream {
namespace {

// Stalled since `since`; counts the give-backs, and notifies on the first.
class FakeStream final : public Stallable {
 public:
  explicit FakeStream(absl::Time since) : since_(since) {}
  bool GiveBackIfStalled(absl::Time now, absl::Duration timeout) override {
    if (gave_back_ || now - since_ < timeout) return false;
    gave_back_ = true;
    if (!first_.HasBeenNotified()) first_.Notify();
    return true;
  }
  bool gave_back() const { return gave_back_; }
  absl::Notification& first() { return first_; }

 private:
  const absl::Time since_;
  bool gave_back_ = false;
  absl::Notification first_;
};

TEST(StallWatchTest, AsksEveryStreamAndCountsThoseThatGaveBack) {
  StallWatch watch(absl::Seconds(30), /*run_thread=*/false);
  const absl::Time t0 = absl::Now();
  auto old = std::make_shared<FakeStream>(t0);
  auto young = std::make_shared<FakeStream>(t0 + absl::Seconds(20));
  watch.Watch(old);
  watch.Watch(young);
  EXPECT_EQ(watch.CheckNow(t0 + absl::Seconds(10)), 0);
  EXPECT_EQ(watch.CheckNow(t0 + absl::Seconds(31)), 1);
  EXPECT_TRUE(old->gave_back());
  EXPECT_FALSE(young->gave_back());
  EXPECT_EQ(watch.CheckNow(t0 + absl::Seconds(51)), 1);
  EXPECT_TRUE(young->gave_back());
}

TEST(StallWatchTest, StreamsThatEndedAreForgottenNotKeptAlive) {
  StallWatch watch(absl::Seconds(30), /*run_thread=*/false);
  auto a = std::make_shared<FakeStream>(absl::Now());
  std::weak_ptr<FakeStream> b_alive;
  {
    auto b = std::make_shared<FakeStream>(absl::Now());
    b_alive = b;
    watch.Watch(a);
    watch.Watch(b);
  }
  EXPECT_TRUE(b_alive.expired()) << "watching holds no stream";
  EXPECT_EQ(watch.watched(), 2u);
  watch.CheckNow(absl::Now());
  EXPECT_EQ(watch.watched(), 1u);
}

TEST(StallWatchTest, TimeoutZeroIsOff) {
  StallWatch watch(absl::ZeroDuration());
  auto a = std::make_shared<FakeStream>(absl::InfinitePast());
  watch.Watch(a);
  EXPECT_EQ(watch.watched(), 0u);
  EXPECT_EQ(watch.CheckNow(absl::Now()), 0);
}

TEST(StallWatchTest, ItsThreadFindsAStalledStreamAndStopsWithTheWatch) {
  auto a = std::make_shared<FakeStream>(absl::Now());
  {
    StallWatch watch(absl::Milliseconds(40));
    watch.Watch(a);
    a->first().WaitForNotification();  // found by a scan of the thread's, not by the test
  }  // joins the thread
  EXPECT_TRUE(a->gave_back());
}

}  // namespace
}  // namespace shotstream::stream

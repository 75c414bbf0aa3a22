#include "server/stream/reader_pool.h"

#include <atomic>

#include "absl/synchronization/blocking_counter.h"
#include "gtest/gtest.h"

namespace shotstream::stream {
namespace {

TEST(ReaderPoolTest, RunsEveryTaskOnSeveralThreads) {
  std::atomic<int> sum{0};
  {
    ReaderPool pool(3);
    EXPECT_EQ(pool.threads(), 3);
    absl::BlockingCounter done(100);
    for (int i = 1; i <= 100; ++i) {
      pool.Submit([&, i] {
        sum += i;
        done.DecrementCount();
      });
    }
    done.Wait();
  }
  EXPECT_EQ(sum.load(), 5050);
}

TEST(ReaderPoolTest, DestructorDrainsQueuedTasks) {
  std::atomic<int> ran{0};
  {
    ReaderPool pool(1);
    for (int i = 0; i < 50; ++i) pool.Submit([&] { ++ran; });
  }
  EXPECT_EQ(ran.load(), 50);
}

}  // namespace
}  // namespace shotstream::stream

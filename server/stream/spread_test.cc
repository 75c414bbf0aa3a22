#include "server/stream/spread.h"

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "server/stream/reader_pool.h"

namespace shotstream::stream {
namespace {

TEST(SpreadTest, EveryStepRunsOnceWithoutAnExecutor) {
  std::vector<int> runs(10);
  Spread(nullptr, runs.size(), [&](size_t i) { runs[i]++; });
  EXPECT_EQ(runs, std::vector<int>(10, 1));
  Spread(nullptr, 0, [&](size_t) { FAIL() << "no step"; });
}

TEST(SpreadTest, StepsRunOnTheCallerAndAHelperAtOnce) {
  ReaderPool pool(2);
  // Step 0 waits until step 1 has started elsewhere: only two threads at once finish it.
  absl::Notification one_started;
  std::vector<std::atomic<int>> runs(2);
  absl::Mutex mu;
  std::set<std::thread::id> threads;
  Spread(&pool, 2, [&](size_t i) {
    {
      absl::MutexLock lock(&mu);
      threads.insert(std::this_thread::get_id());
    }
    if (i == 1) one_started.Notify();
    if (i == 0) one_started.WaitForNotification();
    runs[i]++;
  });
  EXPECT_EQ(runs[0], 1);
  EXPECT_EQ(runs[1], 1);
  EXPECT_EQ(threads.size(), 2u);
}

TEST(SpreadTest, ACallerOnABusyPoolDoesEveryStepItself) {
  ReaderPool pool(2);
  absl::Notification release;
  pool.Submit([&] { release.WaitForNotification(); });  // the other thread stays busy
  absl::Notification done;
  std::vector<int> runs(50);
  std::atomic<int> on_caller{0};
  pool.Submit([&] {  // the caller, itself on the pool
    const auto me = std::this_thread::get_id();
    Spread(&pool, runs.size(), [&](size_t i) {
      runs[i]++;
      if (std::this_thread::get_id() == me) on_caller++;
    });
    done.Notify();
  });
  done.WaitForNotification();  // returned although its helper never ran
  EXPECT_EQ(on_caller.load(), 50);
  EXPECT_EQ(runs, std::vector<int>(50, 1));
  release.Notify();
}

}  // namespace
}  // namespace shotstream::stream

#include "shotstream/gpu/pinned_buffer_pool.h"

#include <cstring>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace shotstream::gpu {
namespace {

TEST(PinnedBufferPoolTest, ReusesBuffersWithNoAllocationPerShotInSteadyState) {
  PinnedBufferPool pool;
  const size_t shot = 480 * 4000;  // floats
  {
    HostBuffer a = pool.Acquire(shot);
    HostBuffer b = pool.Acquire(shot);
    ASSERT_NE(a.data(), nullptr);
    EXPECT_EQ(a.size(), shot);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % 4096, 0u);
    std::memset(a.data(), 0, shot * sizeof(float));
  }
  EXPECT_EQ(pool.stats().allocations, 2u);
  // A ring of two shots in flight, 1000 shots: no new allocation.
  HostBuffer prev;
  for (int i = 0; i < 1000; ++i) {
    HostBuffer next = pool.Acquire(shot);
    next[0] = static_cast<float>(i);
    prev = std::move(next);  // the previous one goes back
  }
  EXPECT_EQ(pool.stats().allocations, 2u);
  EXPECT_GE(pool.stats().reuses, 1000u);
  EXPECT_EQ(pool.stats().outstanding, 1u);
}

TEST(PinnedBufferPoolTest, PrefillLeavesTheBuffersAStreamWillHoldFree) {
  PinnedBufferPool::Options options;
  options.max_free_buffers = 4;
  PinnedBufferPool pool(options);
  const size_t shot = 480 * 4000;
  HostBuffer first = pool.Acquire(shot);  // a stream's first shot
  EXPECT_EQ(pool.Prefill(shot, 3), 3u);
  EXPECT_EQ(pool.stats().allocations, 4u);
  EXPECT_EQ(pool.stats().outstanding, 1u);
  EXPECT_EQ(pool.Prefill(shot, 3), 0u);   // there already
  EXPECT_EQ(pool.Prefill(shot / 2, 2), 0u);  // smaller shots fit them
  {
    std::vector<HostBuffer> held;  // the stream at its fullest: nothing more allocated
    for (int i = 0; i < 3; ++i) held.push_back(pool.Acquire(shot));
    for (HostBuffer& h : held) std::memset(h.data(), 1, shot * sizeof(float));
    EXPECT_EQ(pool.stats().allocations, 4u);
  }
  EXPECT_EQ(pool.Prefill(2 * shot, 9), 1u);  // larger shots: up to max_free_buffers
  EXPECT_EQ(pool.stats().allocations, 5u);
}

TEST(PinnedBufferPoolTest, PageableShotBuffersSitOnHugePageBoundaries) {
  PinnedBufferPool::Options options;
  options.pinned = false;
  PinnedBufferPool pool(options);
  HostBuffer shot = pool.Acquire(480 * 4000);  // 7.68 MB: 2 MiB-aligned, THP advised
  HostBuffer small = pool.Acquire(1000);       // 4 KiB-aligned
  ASSERT_NE(shot.data(), nullptr);
  ASSERT_NE(small.data(), nullptr);
  EXPECT_FALSE(shot.pinned());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(shot.data()) % (2 << 20), 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small.data()) % 4096, 0u);
  std::memset(shot.data(), 1, 480 * 4000 * sizeof(float));  // all of it is writable
  std::memset(small.data(), 1, 1000 * sizeof(float));
}

TEST(PinnedBufferPoolTest, GrowsForLargerShotsAndReusesForSmaller) {
  PinnedBufferPool pool;
  { HostBuffer small = pool.Acquire(1000); }
  { HostBuffer big = pool.Acquire(10'000'000); }  // does not fit the small one: grows
  EXPECT_EQ(pool.stats().allocations, 2u);
  HostBuffer again = pool.Acquire(2000);  // the smallest free buffer that fits
  EXPECT_LT(again.capacity_bytes(), 10'000'000u * 4);
  HostBuffer mid = pool.Acquire(5'000'000);
  EXPECT_GE(mid.capacity_bytes(), 5'000'000u * 4);
  EXPECT_EQ(pool.stats().allocations, 2u);
}

TEST(PinnedBufferPoolTest, KeepsAtMostMaxFreeBuffers) {
  PinnedBufferPool::Options o;
  o.max_free_buffers = 2;
  PinnedBufferPool pool(o);
  {
    std::vector<HostBuffer> many;
    for (int i = 0; i < 5; ++i) many.push_back(pool.Acquire(1000 * (i + 1)));
  }
  EXPECT_EQ(pool.stats().frees, 3u);
}

TEST(PinnedBufferPoolTest, ConcurrentAcquireAndReturn) {
  PinnedBufferPool pool;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&pool, t] {
      for (int i = 0; i < 500; ++i) {
        HostBuffer b = pool.Acquire(1000 + 100 * t);
        b[0] = static_cast<float>(i);
        HostBuffer moved = std::move(b);
        ASSERT_EQ(moved[0], static_cast<float>(i));
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(pool.stats().outstanding, 0u);
  EXPECT_LE(pool.stats().allocations, 4u);
}

}  // namespace
}  // namespace shotstream::gpu

// Without a GPU (as here) the stager runs on host memory; the same test runs on a GPU
// machine through gpu/device_check.sh.
#include "shotstream/gpu/device_stager.h"

#include <vector>

#include "shotstream/gpu/cuda_runtime.h"
#include "gtest/gtest.h"

namespace shotstream::gpu {
namespace {

TEST(DeviceStagerTest, StagesShotsThroughARingOfSlots) {
  PinnedBufferPool pool;
  DeviceStager::Options o;
  o.slots = 2;
  DeviceStager stager(o);
  EXPECT_EQ(stager.on_device(), CudaDeviceAvailable());
  for (int i = 0; i < 10; ++i) {
    HostBuffer h = pool.Acquire(1000);
    for (size_t k = 0; k < h.size(); ++k) h[k] = static_cast<float>(i * 1000 + k);
    auto shot = stager.Stage(std::move(h));
    ASSERT_TRUE(shot.ok()) << shot.status();
    ASSERT_TRUE(shot->WaitOn(nullptr).ok());
    ASSERT_TRUE(shot->Synchronize().ok());
    EXPECT_EQ(shot->size(), 1000u);
    // What reached the device (or host memory without a GPU), read back, bit for bit.
    std::vector<float> back(shot->size(), -1.0f);
    ASSERT_TRUE(shot->CopyToHost(back.data()).ok());
    for (size_t k = 0; k < back.size(); ++k) {
      ASSERT_EQ(back[k], static_cast<float>(i * 1000 + k)) << "shot " << i << " sample " << k;
    }
  }
  EXPECT_EQ(stager.stats().copies, 10u);
  // Every host buffer went back: the pool allocated only what the ring needed.
  EXPECT_EQ(pool.stats().outstanding, 0u);
  EXPECT_LE(pool.stats().allocations, 2u);
}

// Shots staged back to back while earlier ones are still held: each keeps its own values
// (no slot is reused under a live shot), on the GPU as without one.
TEST(DeviceStagerTest, LiveShotsKeepTheirValuesWhileOthersAreStaged) {
  PinnedBufferPool pool;
  DeviceStager::Options o;
  o.slots = 3;
  DeviceStager stager(o);
  constexpr size_t kFloats = 1 << 20;  // 4 MiB a shot: a real copy, not a token one
  std::vector<DeviceShot> live;
  for (int round = 0; round < 4; ++round) {
    live.clear();
    for (int i = 0; i < 3; ++i) {
      HostBuffer h = pool.Acquire(kFloats);
      for (size_t k = 0; k < kFloats; ++k) h[k] = static_cast<float>(round * 7 + i) + k * 0.5f;
      auto shot = stager.Stage(std::move(h));
      ASSERT_TRUE(shot.ok()) << shot.status();
      live.push_back(std::move(*shot));
    }
    for (int i = 0; i < 3; ++i) {
      std::vector<float> back(kFloats);
      ASSERT_TRUE(live[i].CopyToHost(back.data()).ok());
      for (size_t k = 0; k < kFloats; k += 4099) {
        ASSERT_EQ(back[k], static_cast<float>(round * 7 + i) + k * 0.5f) << round << " " << i;
      }
      EXPECT_EQ(back[kFloats - 1], static_cast<float>(round * 7 + i) + (kFloats - 1) * 0.5f);
    }
  }
  EXPECT_EQ(stager.stats().copies, 12u);
}

TEST(DeviceStagerTest, FullRingIsAClearError) {
  PinnedBufferPool pool;
  DeviceStager::Options o;
  o.slots = 2;
  DeviceStager stager(o);
  auto a = stager.Stage(pool.Acquire(10));
  auto b = stager.Stage(pool.Acquire(10));
  ASSERT_TRUE(a.ok() && b.ok());
  auto c = stager.Stage(pool.Acquire(10));
  EXPECT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted);
  *a = DeviceShot();  // frees a slot
  EXPECT_TRUE(stager.Stage(pool.Acquire(10)).ok());
}

}  // namespace
}  // namespace shotstream::gpu

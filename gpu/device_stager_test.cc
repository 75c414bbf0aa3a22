// Without a GPU (as here) the stager runs on host memory; the same test runs on a GPU
// machine through gpu/device_check.sh.
#include "gpu/device_stager.h"

#include "gpu/cuda_runtime.h"
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
    shot->WaitOn(nullptr);
    shot->Synchronize();
    EXPECT_EQ(shot->size(), 1000u);
    if (!stager.on_device()) {
      EXPECT_EQ(shot->device_data()[999], static_cast<float>(i * 1000 + 999));
    }
  }
  EXPECT_EQ(stager.stats().copies, 10u);
  // Every host buffer went back: the pool allocated only what the ring needed.
  EXPECT_EQ(pool.stats().outstanding, 0u);
  EXPECT_LE(pool.stats().allocations, 2u);
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

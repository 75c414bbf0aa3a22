#include "server/common/heap_trimmer.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "common/malloc_tuning.h"

namespace shotstream {
namespace {

// Resident bytes of this process (/proc/self/statm).
uint64_t ResidentBytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  unsigned long long size = 0, resident = 0;
  EXPECT_EQ(std::fscanf(f, "%llu %llu", &size, &resident), 2);
  std::fclose(f);
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

TEST(HeapTrimmerTest, GivesABurstBackWhileIdle) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "the sanitizer's allocator is not glibc's malloc";
#endif
  TuneMallocForLargeBuffers();  // as the server runs: the heap never shrinks by itself
  std::vector<void*> burst;
  for (int i = 0; i < 64; ++i) {  // 64 MiB in 1 MiB blocks, touched
    void* p = std::malloc(1 << 20);
    std::memset(p, 1, 1 << 20);
    burst.push_back(p);
  }
  const uint64_t busy = ResidentBytes();
  for (void* p : burst) std::free(p);
  EXPECT_GT(HeapTrimmer::FreeHeapBytes(), 48ull << 20);  // kept by the tuning
  EXPECT_GT(ResidentBytes() + (16 << 20), busy);          // and still resident
  absl::Notification idle_asked;
  {
    HeapTrimmer trimmer(
        [&] {
          if (!idle_asked.HasBeenNotified()) idle_asked.Notify();
          return true;
        },
        absl::Milliseconds(1));
    idle_asked.WaitForNotification();
  }  // the first trim ran before the second idle() call or the destructor's join
  EXPECT_LT(ResidentBytes() + (48 << 20), busy);  // given back
  EXPECT_FALSE(HeapTrimmer::TrimIfWorthIt(1ull << 40));
}

}  // namespace
}  // namespace shotstream

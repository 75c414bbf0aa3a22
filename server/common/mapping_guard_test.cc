#include "server/common/mapping_guard.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace shotstream {
namespace {

class MappingGuardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") +
            "/mapping_guard_test.bin";
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd_, 0);
    std::vector<char> bytes(kSize, 7);
    ASSERT_EQ(::write(fd_, bytes.data(), bytes.size()), static_cast<ssize_t>(kSize));
    map_ = static_cast<const char*>(::mmap(nullptr, kSize, PROT_READ, MAP_SHARED, fd_, 0));
    ASSERT_NE(map_, MAP_FAILED);
  }
  void TearDown() override {
    ::munmap(const_cast<char*>(map_), kSize);
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  static constexpr size_t kSize = 1 << 20;
  std::string path_;
  int fd_ = -1;
  const char* map_ = nullptr;
};

TEST_F(MappingGuardTest, WholeFileReadsNormally) {
  std::vector<char> out(kSize);
  EXPECT_TRUE(RunGuardingMapping(map_, kSize, [&] { std::memcpy(out.data(), map_, kSize); }));
  EXPECT_EQ(out[kSize - 1], 7);
}

TEST_F(MappingGuardTest, TruncatedUnderTheMappingIsAFalseReturnNotADeath) {
  std::vector<char> out(kSize);
  ASSERT_EQ(::ftruncate(fd_, 4096), 0);  // the rest of the mapping is gone
  for (int i = 0; i < 3; ++i) {  // again and again: the handler stays usable
    EXPECT_FALSE(RunGuardingMapping(map_, kSize, [&] { std::memcpy(out.data(), map_, kSize); }));
  }
  // The page still there reads, in the same thread, after the faults.
  EXPECT_TRUE(RunGuardingMapping(map_, 4096, [&] { std::memcpy(out.data(), map_, 4096); }));
  EXPECT_EQ(out[4095], 7);
}

TEST_F(MappingGuardTest, EachThreadGuardsItsOwnRange) {
  ASSERT_EQ(::ftruncate(fd_, kSize / 2), 0);
  bool lost = true, kept = false;
  std::thread a([&] {
    std::vector<char> out(kSize / 2);
    lost = RunGuardingMapping(map_ + kSize / 2, kSize / 2,
                              [&] { std::memcpy(out.data(), map_ + kSize / 2, kSize / 2); });
  });
  std::thread b([&] {
    std::vector<char> out(kSize / 2);
    kept = RunGuardingMapping(map_, kSize / 2, [&] { std::memcpy(out.data(), map_, kSize / 2); });
  });
  a.join();
  b.join();
  EXPECT_FALSE(lost);
  EXPECT_TRUE(kept);
}

TEST_F(MappingGuardTest, AFaultOutsideTheGuardedRangeStillKillsTheProcess) {
  ASSERT_EQ(::ftruncate(fd_, 4096), 0);
  EXPECT_DEATH(
      {
        std::vector<char> out(kSize);
        // Guards only the first page; the fault is past it.
        RunGuardingMapping(map_, 4096, [&] { std::memcpy(out.data(), map_, kSize); });
      },
      "");
}

}  // namespace
}  // namespace shotstream

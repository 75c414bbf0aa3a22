#include "server/io/open_file_cache.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace shotstream::io {
namespace {

struct FakeFile : CachedFile {
  void Close() override { ++closes; }
  int closes = 0;
};

TEST(OpenFileCacheTest, ClosesTheLeastRecentlyUsedBeyondItsCapacity) {
  OpenFileCache cache(2);
  FakeFile a, b, c;
  cache.Opened(&a);
  cache.Opened(&b);
  cache.Used(&a);  // b is now the least recently used
  cache.Opened(&c);
  EXPECT_EQ(b.closes, 1);
  EXPECT_EQ(a.closes + c.closes, 0);
  EXPECT_EQ(cache.open_files(), 2u);
  cache.Opened(&b);  // reopened: a goes
  EXPECT_EQ(a.closes, 1);
  EXPECT_EQ(cache.opens(), 4u);
  EXPECT_EQ(cache.evictions(), 2u);
}

TEST(OpenFileCacheTest, ForgottenFilesAreNeverClosedAndUseOfThemIsHarmless) {
  OpenFileCache cache(1);
  FakeFile a, b;
  cache.Opened(&a);
  cache.Forget(&a);
  cache.Used(&a);
  cache.Opened(&b);
  EXPECT_EQ(a.closes, 0);
  EXPECT_EQ(cache.open_files(), 1u);
}

TEST(OpenFileCacheTest, ASmallerCapacityClosesFilesAtOnce) {
  OpenFileCache cache(10);
  std::vector<FakeFile> files(10);
  for (FakeFile& f : files) cache.Opened(&f);
  cache.SetCapacity(3);
  int closed = 0;
  for (const FakeFile& f : files) closed += f.closes;
  EXPECT_EQ(closed, 7);
  EXPECT_EQ(files[9].closes, 0);  // the most recent stay
  EXPECT_EQ(cache.capacity(), 3u);
}

TEST(OpenFileCacheTest, DefaultCapacityIsHalfTheDescriptorLimitWithinBounds) {
  const size_t c = OpenFileCache::DefaultCapacity();
  EXPECT_GE(c, 16u);
  EXPECT_LE(c, 32768u);
}

}  // namespace
}  // namespace shotstream::io

// The decoded-chunk cache on its own: least recently used out first within its bytes,
// chunks larger than the whole cache not kept, erase, hits and misses counted.
#include "server/zarr/chunk_cache.h"

#include "gtest/gtest.h"

namespace shotstream::zarr {
namespace {

std::shared_ptr<const ChunkData> Chunk(size_t bytes, uint8_t value) {
  auto c = std::make_shared<ChunkData>();
  c->bytes.assign(bytes, value);
  return c;
}

TEST(ChunkCache, KeepsTheMostRecentlyUsedWithinItsBytes) {
  ChunkCache cache(300);
  cache.Insert({1, 0}, Chunk(100, 0));
  cache.Insert({1, 1}, Chunk(100, 1));
  cache.Insert({2, 0}, Chunk(100, 2));  // another array, the same chunk index
  EXPECT_EQ(cache.bytes(), 300u);
  ASSERT_NE(cache.Find({1, 0}), nullptr);  // now the most recent
  cache.Insert({1, 2}, Chunk(100, 3));     // evicts {1, 1}, the least recent
  EXPECT_EQ(cache.Find({1, 1}), nullptr);
  EXPECT_EQ(cache.Find({1, 0})->bytes[0], 0);
  EXPECT_EQ(cache.Find({2, 0})->bytes[0], 2);
  EXPECT_EQ(cache.bytes(), 300u);
  EXPECT_EQ(cache.hits(), 3u);
  EXPECT_EQ(cache.misses(), 1u);
}

TEST(ChunkCache, ReplacesEraseAndChunksLargerThanTheCache) {
  ChunkCache cache(300);
  cache.Insert({1, 0}, Chunk(100, 0));
  cache.Insert({1, 0}, Chunk(50, 9));  // the same key: replaced, bytes follow
  EXPECT_EQ(cache.bytes(), 50u);
  EXPECT_EQ(cache.Find({1, 0})->bytes[0], 9);
  cache.Insert({1, 1}, Chunk(301, 1));  // never kept, nothing evicted for it
  EXPECT_EQ(cache.Find({1, 1}), nullptr);
  EXPECT_NE(cache.Find({1, 0}), nullptr);
  cache.Erase({1, 0});
  EXPECT_EQ(cache.Find({1, 0}), nullptr);
  EXPECT_EQ(cache.bytes(), 0u);
}

}  // namespace
}  // namespace shotstream::zarr

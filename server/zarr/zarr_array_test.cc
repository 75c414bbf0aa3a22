// Arrays on disk, laid out by hand as the v2 and v3 specifications say (the end-to-end
// tests read stores written by zarr-python): chunk keys, Fortran order, shards with their
// index at either end, missing chunks, metadata refused by name, and a chunk rewritten
// under a reader.
#include "server/zarr/zarr_array.h"

#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <thread>

#include "gtest/gtest.h"
#include "server/env/fault_env.h"
#include "server/env/mem_env.h"

namespace shotstream::zarr {
namespace {

std::string Dir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string d = std::string(tmp ? tmp : "/tmp") + "/" + name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

void Put(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

void PutBytes(const std::string& path, const std::vector<uint8_t>& b) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), b.size());
}

template <typename T>
std::vector<uint8_t> Raw(const std::vector<T>& v) {
  std::vector<uint8_t> out(v.size() * sizeof(T));
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

std::vector<float> Floats(const std::vector<uint8_t>& b) {
  std::vector<float> out(b.size() / 4);
  std::memcpy(out.data(), b.data(), b.size());
  return out;
}

TEST(ZarrArray, V2FortranOrderAndMissingChunks) {
  const std::string d = Dir("v2f");
  Put(d + "/.zarray", R"({"zarr_format": 2, "shape": [3, 4], "chunks": [2, 2], "dtype": "<f4",
      "compressor": null, "fill_value": -1.0, "order": "F", "filters": null})");
  Put(d + "/.zattrs", R"({"_ARRAY_DIMENSIONS": ["trace", "time"]})");
  // Element (i, j) = 10 i + j. Chunk (0, 0) holds rows 0-1, columns 0-1, stored in F order.
  PutBytes(d + "/0.0", Raw<float>({0, 10, 1, 11}));
  PutBytes(d + "/1.0", Raw<float>({20, 30, 21, 31}));  // row 3 is outside the array
  // Chunks (0, 1) and (1, 1) are missing: the fill value.
  auto a = ZarrArray::Open(d);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ((*a)->dimension_names(), (std::vector<std::string>{"trace", "time"}));
  auto all = (*a)->ReadAll();
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(Floats(*all), (std::vector<float>{0, 1, -1, -1, 10, 11, -1, -1, 20, 21, -1, -1}));
}

// A v3 array of 4 x 6 int16, shards of 2 x 6 holding chunks of 2 x 3, crc32c on the index.
std::string ShardedStore(bool index_at_start) {
  const std::string d = Dir(index_at_start ? "v3s_start" : "v3s_end");
  Put(d + "/zarr.json", std::string(R"({"zarr_format": 3, "node_type": "array", "shape": [4, 6],
      "data_type": "int16", "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 6]}},
      "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
      "fill_value": 99, "dimension_names": ["trace", "time"],
      "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [2, 3],
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
        "index_location": ")") + (index_at_start ? "start" : "end") + R"("}}]})");
  // Shard 0 (rows 0-1): inner chunk 0 (cols 0-2) written, inner chunk 1 empty.
  std::vector<int16_t> chunk0 = {0, 1, 2, 10, 11, 12};
  std::vector<uint8_t> data = Raw(chunk0);
  std::vector<uint8_t> index(2 * 16 + 4);
  const uint64_t at = index_at_start ? index.size() : 0, size = data.size(), none = UINT64_MAX;
  std::memcpy(index.data(), &at, 8);
  std::memcpy(index.data() + 8, &size, 8);
  std::memcpy(index.data() + 16, &none, 8);
  std::memcpy(index.data() + 24, &none, 8);
  const uint32_t crc = Crc32c(index.data(), 32);
  std::memcpy(index.data() + 32, &crc, 4);
  std::vector<uint8_t> shard;
  if (index_at_start) {
    shard = index;
    shard.insert(shard.end(), data.begin(), data.end());
  } else {
    shard = data;
    shard.insert(shard.end(), index.begin(), index.end());
  }
  PutBytes(d + "/c/0/0", shard);
  // Shard 1 (rows 2-3) missing.
  return d;
}

TEST(ZarrArray, V3ShardsReadInnerChunksThroughTheIndex) {
  for (bool start : {false, true}) {
    auto a = ZarrArray::Open(ShardedStore(start));
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_EQ((*a)->read_chunk(), (std::vector<uint64_t>{2, 3}));
    ChunkCache cache(1 << 20);
    io::ReadStats stats;
    const uint64_t c00[] = {0, 0};
    auto chunk = (*a)->Chunk(c00, &cache, &stats);
    ASSERT_TRUE(chunk.ok()) << chunk.status();
    std::vector<int16_t> v(6);
    std::memcpy(v.data(), (*chunk)->bytes.data(), 12);
    EXPECT_EQ(v, (std::vector<int16_t>{0, 1, 2, 10, 11, 12}));
    EXPECT_EQ(stats.reads, 1u);
    EXPECT_EQ(stats.bytes_read, 12u);  // the inner chunk, not the shard
    ASSERT_TRUE((*a)->Chunk(c00, &cache, &stats).ok());
    EXPECT_EQ(stats.reads, 1u);  // from the cache
    auto all = (*a)->ReadAll();
    ASSERT_TRUE(all.ok()) << all.status();
    std::vector<int16_t> got(24);
    std::memcpy(got.data(), all->data(), 48);
    EXPECT_EQ(got, (std::vector<int16_t>{0, 1, 2, 99, 99, 99, 10, 11, 12, 99, 99, 99,
                                         99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99}));
  }
}

TEST(ZarrArray, ACorruptShardIndexIsDataLoss) {
  const std::string d = ShardedStore(false);
  std::fstream f(d + "/c/0/0", std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(13);
  f.put('\x7f');
  f.close();
  auto a = ZarrArray::Open(d);
  ASSERT_TRUE(a.ok());
  const uint64_t c00[] = {0, 0};
  auto chunk = (*a)->Chunk(c00, nullptr, nullptr);
  EXPECT_EQ(chunk.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(chunk.status().message().find("c/0/0"), std::string::npos) << chunk.status();
}

TEST(ZarrArray, MetadataItCannotReadIsRefusedByName) {
  const std::string d = Dir("refused");
  Put(d + "/zarr.json", R"({"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "float32",
      "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}}, "fill_value": 0,
      "codecs": [{"name": "bytes"}, {"name": "bz2-extension"}]})");
  auto a = ZarrArray::Open(d);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(a.status().message().find("bz2-extension"), std::string::npos) << a.status();
  EXPECT_NE(a.status().message().find("zarr.json"), std::string::npos) << a.status();
  const std::string g = Dir("group");
  Put(g + "/zarr.json", R"({"zarr_format": 3, "node_type": "group"})");
  EXPECT_EQ(ZarrArray::Open(g).status().code(), absl::StatusCode::kNotFound);
}

TEST(ZarrArray, AChunkRewrittenUnderTheReaderIsFound) {
  const std::string d = Dir("rewritten");
  Put(d + "/.zarray", R"({"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "<f4",
      "compressor": null, "fill_value": 0, "order": "C", "filters": null})");
  PutBytes(d + "/0", Raw<float>({1, 2}));
  auto a = ZarrArray::Open(d);
  ASSERT_TRUE(a.ok());
  ChunkCache cache(1 << 20);
  const uint64_t c0[] = {0};
  ASSERT_TRUE((*a)->Chunk(c0, &cache, nullptr).ok());
  EXPECT_TRUE((*a)->CheckUnchanged().ok());
  // Rewritten as zarr-python does: a new file renamed over the old one.
  PutBytes(d + "/0.tmp", Raw<float>({5, 6}));
  std::filesystem::rename(d + "/0.tmp", d + "/0");
  auto again = (*a)->Chunk(c0, &cache, nullptr);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kDataLoss);
  const absl::Status s = (*a)->CheckUnchanged();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("changed"), std::string::npos) << s;
}

// The same reads through an Env in memory (MemEnv) and its faults (FaultEnv): a missing
// chunk is the fill value, an I/O error is UNAVAILABLE and passes on retry, a chunk file
// shorter than its index says is DATA_LOSS, a chunk replaced under the reader is found.
TEST(ZarrArray, ChunksThroughAnEnvInMemoryAndTheirFaults) {
  env::MemEnv mem;
  env::FaultEnv env(&mem);
  mem.Put("/store/a/.zarray", R"({"zarr_format": 2, "shape": [3, 4], "chunks": [2, 2],
      "dtype": "<f4", "compressor": null, "fill_value": -1.0, "order": "C", "filters": null})");
  mem.Put("/store/a/.zattrs", R"({"_ARRAY_DIMENSIONS": ["trace", "time"]})");
  auto put = [&](const std::string& key, const std::vector<float>& v) {
    const std::vector<uint8_t> b = Raw(v);
    mem.Put("/store/a/" + key, std::string(b.begin(), b.end()));
  };
  put("0.0", {0, 1, 10, 11});
  put("1.0", {20, 21, 30, 31});
  put("1.1", {22, 23, 32, 33});
  EXPECT_TRUE(IsZarrNode("/store/a", &env));
  EXPECT_FALSE(IsZarrNode("/store/b", &env));
  auto a = ZarrArray::Open("/store/a", &env);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ((*a)->dimension_names(), (std::vector<std::string>{"trace", "time"}));
  auto all = (*a)->ReadAll();
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(Floats(*all), (std::vector<float>{0, 1, -1, -1, 10, 11, -1, -1, 20, 21, 22, 23}));

  const uint64_t c10[] = {1, 0};
  env.Inject(env::Fault::kReadError, "/store/a/1.0", 0, 1);
  auto failed = (*a)->Chunk(c10, nullptr, nullptr);
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kUnavailable) << failed.status();
  EXPECT_NE(failed.status().message().find("/store/a/1.0"), std::string::npos);
  EXPECT_TRUE((*a)->Chunk(c10, nullptr, nullptr).ok());
  env.Inject(env::Fault::kShortRead, "/store/a/1.0", 0, 1);
  auto short_read = (*a)->Chunk(c10, nullptr, nullptr);
  EXPECT_EQ(short_read.status().code(), absl::StatusCode::kDataLoss) << short_read.status();
  EXPECT_TRUE((*a)->CheckUnchanged().ok());

  put("1.0", {40, 41, 50, 51});  // another file under the same key
  EXPECT_EQ((*a)->Chunk(c10, nullptr, nullptr).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ((*a)->CheckUnchanged().code(), absl::StatusCode::kDataLoss);
  mem.Put("/store/a/.zattrs", "{}");  // metadata replaced: found too, by the Env's Stat
  auto b = ZarrArray::Open("/store/a", &env);
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE((*b)->CheckUnchanged().ok());
  mem.Put("/store/a/.zarray", "{}");
  EXPECT_EQ((*b)->CheckUnchanged().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace shotstream::zarr

// The codecs on their own: bytes made here with the libraries' encoders (or by hand, as
// the specifications lay them out), decoded back.
#include "server/zarr/zarr_codecs.h"

#include <blosc.h>
#include <zlib.h>
#include <zstd.h>

#include <cmath>
#include <cstring>
#include <numeric>

#include "gtest/gtest.h"

namespace shotstream::zarr {
namespace {

ChunkBytes Bytes(const std::vector<float>& v) {
  ChunkBytes out(v.size() * 4);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

ChunkBytes Of(const std::vector<uint8_t>& v) { return ChunkBytes(v.begin(), v.end()); }

DataType Float32() { return *ParseDataType("\"float32\"", 3); }

TEST(Crc32c, KnownValue) {
  const char* s = "123456789";
  EXPECT_EQ(Crc32c(reinterpret_cast<const uint8_t*>(s), 9), 0xE3069283u);  // RFC 3720's check
}

TEST(DataTypes, V2AndV3ScalarsAndRecords) {
  auto t = ParseDataType("\">i2\"", 2);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->size, 2u);
  EXPECT_TRUE(t->scalar.big_endian);
  EXPECT_EQ(t->scalar.kind, ScalarKind::kInt);
  auto r = ParseDataType(R"([["a", "<i4"], ["b", "<f8"], ["c", "|u1"]])", 2);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->fields.size(), 3u);
  EXPECT_EQ(r->fields[1].offset, 4u);
  EXPECT_EQ(r->size, 13u);
  auto v3 = ParseDataType(
      R"({"name": "structured", "configuration": {"fields": [["x", "int16"], ["y", "float32"]]}})", 3);
  ASSERT_TRUE(v3.ok());
  EXPECT_EQ(v3->size, 6u);
  EXPECT_FALSE(ParseDataType("\"<U8\"", 2).ok());
  EXPECT_FALSE(ParseDataType("\"complex64\"", 3).ok());
  EXPECT_FALSE(ParseDataType("\"float16\"", 3).ok());
}

TEST(FillValues, NumbersNamesAndBits) {
  const DataType f = Float32();
  float v;
  auto nan = ParseFillValue("\"NaN\"", f, 3);
  ASSERT_TRUE(nan.ok());
  std::memcpy(&v, nan->data(), 4);
  EXPECT_TRUE(std::isnan(v));
  auto bits = ParseFillValue("\"0x3f800000\"", f, 3);
  std::memcpy(&v, bits->data(), 4);
  EXPECT_EQ(v, 1.0f);
  auto num = ParseFillValue("-2.5", f, 2);
  std::memcpy(&v, num->data(), 4);
  EXPECT_EQ(v, -2.5f);
  auto i = ParseFillValue("-7", *ParseDataType("\"<i2\"", 2), 2);
  int16_t s;
  std::memcpy(&s, i->data(), 2);
  EXPECT_EQ(s, -7);
}

TEST(Decode, BytesBigEndian) {
  ChunkBytes stored = Of({0x3f, 0x80, 0, 0, 0xc0, 0, 0, 0});  // 1.0f, -2.0f big-endian
  Codec bytes = *ParseV3Codec(R"({"name": "bytes", "configuration": {"endian": "big"}})");
  const uint64_t shape[] = {2};
  auto got = DecodeChunk(stored, {bytes}, shape, Float32());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, Bytes({1.0f, -2.0f}));
}

TEST(Decode, GzipZstdBloscAndCrc32c) {
  std::vector<float> v(1000);
  std::iota(v.begin(), v.end(), -3.0f);
  const ChunkBytes raw = Bytes(v);
  const uint64_t shape[] = {10, 100};
  const Codec bytes = *ParseV3Codec(R"({"name": "bytes", "configuration": {"endian": "little"}})");
  // gzip (RFC 1952), as zlib writes it with windowBits 16 + 15.
  {
    ChunkBytes gz(compressBound(raw.size()) + 32);
    z_stream z{};
    deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
    z.next_in = const_cast<Bytef*>(raw.data());
    z.avail_in = raw.size();
    z.next_out = gz.data();
    z.avail_out = gz.size();
    ASSERT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
    gz.resize(z.total_out);
    deflateEnd(&z);
    auto got = DecodeChunk(gz, {bytes, *ParseV3Codec(R"({"name": "gzip"})")}, shape, Float32());
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, raw);
  }
  // zstd, then crc32c after it.
  {
    ChunkBytes z(ZSTD_compressBound(raw.size()));
    z.resize(ZSTD_compress(z.data(), z.size(), raw.data(), raw.size(), 3));
    const uint32_t crc = Crc32c(z.data(), z.size());
    z.insert(z.end(), reinterpret_cast<const uint8_t*>(&crc), reinterpret_cast<const uint8_t*>(&crc) + 4);
    const std::vector<Codec> chain = {bytes, *ParseV3Codec(R"({"name": "zstd"})"),
                                      *ParseV3Codec(R"({"name": "crc32c"})")};
    auto got = DecodeChunk(z, chain, shape, Float32());
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, raw);
    z[3] ^= 1;  // a flipped bit: the checksum says so
    auto bad = DecodeChunk(z, chain, shape, Float32());
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_NE(bad.status().message().find("crc32c"), std::string::npos);
  }
  // blosc with bit shuffle.
  {
    ChunkBytes b(raw.size() + BLOSC_MAX_OVERHEAD);
    b.resize(blosc_compress_ctx(5, BLOSC_BITSHUFFLE, 4, raw.size(), raw.data(), b.data(),
                                b.size(), "lz4", 0, 1));
    auto got = DecodeChunk(
        b, {bytes, *ParseV3Codec(R"({"name": "blosc", "configuration": {"cname": "lz4", "shuffle": "bitshuffle"}})")},
        shape, Float32());
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, raw);
    b.resize(b.size() / 2);
    EXPECT_EQ(DecodeChunk(b, {bytes, *ParseV3Codec(R"({"name": "blosc"})")}, shape, Float32())
                  .status()
                  .code(),
              absl::StatusCode::kDataLoss);
  }
}

TEST(Decode, TransposePutsAxesBack) {
  // Decoded [2][3] = 0..5; transpose order [1, 0] stores it as [3][2].
  const std::vector<float> decoded = {0, 1, 2, 3, 4, 5};
  const std::vector<float> stored = {0, 3, 1, 4, 2, 5};
  const Codec t = *ParseV3Codec(R"({"name": "transpose", "configuration": {"order": [1, 0]}})");
  const Codec bytes = *ParseV3Codec(R"({"name": "bytes"})");
  const uint64_t shape[] = {2, 3};
  auto got = DecodeChunk(Bytes(stored), {t, bytes}, shape, Float32());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, Bytes(decoded));
  // Three axes, order [2, 0, 1]: encoded[k][i][j] = decoded[i][j][k].
  const uint64_t shape3[] = {2, 3, 4};
  std::vector<float> d3(24), e3(24);
  std::iota(d3.begin(), d3.end(), 0.0f);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) e3[k * 6 + i * 3 + j] = d3[i * 12 + j * 4 + k];
  const Codec t3 = *ParseV3Codec(R"({"name": "transpose", "configuration": {"order": [2, 0, 1]}})");
  auto got3 = DecodeChunk(Bytes(e3), {t3, bytes}, shape3, Float32());
  ASSERT_TRUE(got3.ok()) << got3.status();
  EXPECT_EQ(*got3, Bytes(d3));
}

TEST(Decode, WrongSizeIsDataLoss) {
  const uint64_t shape[] = {4};
  auto got = DecodeChunk(Bytes({1, 2, 3}), {*ParseV3Codec(R"({"name": "bytes"})")}, shape, Float32());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
}

TEST(Codecs, UnknownOnesAreNamed) {
  auto c = ParseV3Codec(R"({"name": "vlen-utf8"})");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("vlen-utf8"), std::string::npos);
  auto v2 = ParseV2Compressor(R"({"id": "bz2", "level": 1})");
  ASSERT_FALSE(v2.ok());
  EXPECT_NE(v2.status().message().find("bz2"), std::string::npos);
}

TEST(Convert, EveryScalarToFloat32) {
  const int16_t s[] = {-3, 7};
  float out[2];
  ToFloat32(reinterpret_cast<const uint8_t*>(s), Scalar{ScalarKind::kInt, 2, false}, 2, out);
  EXPECT_EQ(out[0], -3.0f);
  EXPECT_EQ(out[1], 7.0f);
  const double d[] = {0.5, -1e10};
  ToFloat32(reinterpret_cast<const uint8_t*>(d), Scalar{ScalarKind::kFloat, 8, false}, 2, out);
  EXPECT_EQ(out[0], 0.5f);
  EXPECT_EQ(out[1], -1e10f);
  const uint64_t u[] = {42};
  ToFloat32(reinterpret_cast<const uint8_t*>(u), Scalar{ScalarKind::kUInt, 8, false}, 1, out);
  EXPECT_EQ(out[0], 42.0f);
}

}  // namespace
}  // namespace shotstream::zarr

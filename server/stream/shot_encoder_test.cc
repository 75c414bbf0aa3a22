#include "server/stream/shot_encoder.h"

#include <cmath>
#include <limits>

#include "common/crc32.h"
#include "gtest/gtest.h"
#include "wire/sample_encoding.h"

namespace shotstream::stream {
namespace {

// A decoded shot of `n_traces` traces in chunks of `per_chunk`, as Dataset::ReadShot
// gives it.
dataset::ShotData Shot(uint32_t n_traces, uint32_t n_samples, uint32_t per_chunk) {
  dataset::ShotData shot;
  shot.shot_id = 7;
  shot.n_traces = n_traces;
  shot.n_samples = n_samples;
  shot.total_bytes = uint64_t{n_traces} * n_samples * 4;
  for (uint32_t t = 0; t < n_traces; t += per_chunk) {
    const uint32_t n = std::min(per_chunk, n_traces - t);
    shot.chunks.emplace_back(size_t{n} * n_samples * 4);
    float* p = reinterpret_cast<float*>(shot.chunks.back().data());
    for (uint32_t i = 0; i < n * n_samples; ++i) {
      p[i] = std::sin(0.01f * static_cast<float>(i + t * n_samples)) * 100 * (t + 1);
    }
    shot.chunk_traces.push_back(n);
    shot.crc32 = Crc32(shot.crc32, shot.chunks.back().data(), shot.chunks.back().size());
  }
  return shot;
}

std::vector<float> Decoded(const dataset::ShotData& shot) {
  std::vector<float> out;
  for (size_t c = 0; c < shot.chunks.size(); ++c) {
    std::vector<float> part(size_t{shot.chunk_traces[c]} * shot.n_samples);
    EXPECT_TRUE(wire::DecodeSamples(shot.encoding, 0, false, shot.chunks[c].data(),
                                    shot.chunks[c].size(), shot.chunk_traces[c], shot.n_samples,
                                    part.data())
                    .ok());
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

TEST(ShotEncoderTest, LosslessKeepsTheFloat32CrcAndEverySample) {
  dataset::ShotData shot = Shot(10, 300, 4);
  const std::vector<float> before = Decoded(shot);
  const uint32_t crc = shot.crc32;
  ASSERT_TRUE(EncodeShot(&shot, wire::Encoding::kLossless, 0).ok());
  EXPECT_EQ(shot.encoding, wire::Encoding::kLossless);
  EXPECT_EQ(shot.crc32, crc);
  EXPECT_EQ(Decoded(shot), before);
}

TEST(ShotEncoderTest, LossyEncodingsChecksumTheirBytesAndKeepTheirBounds) {
  for (wire::Encoding e : {wire::Encoding::kInt16, wire::Encoding::kZfp}) {
    dataset::ShotData shot = Shot(10, 300, 3);
    dataset::ShotData plain = Shot(10, 300, 3);
    const std::vector<float> before = Decoded(plain);
    ASSERT_TRUE(EncodeShot(&shot, e, 1e-3).ok());
    EXPECT_EQ(shot.encoding, e);
    uint32_t crc = 0;
    for (const SampleBuffer& c : shot.chunks) crc = Crc32(crc, c.data(), c.size());
    EXPECT_EQ(shot.crc32, crc);
    const std::vector<float> after = Decoded(shot);
    const double rms = wire::Rms(before.data(), before.size());
    for (size_t i = 0; i < before.size(); ++i) {
      const uint32_t t = static_cast<uint32_t>(i / 300);
      const double bound = e == wire::Encoding::kZfp ? 1e-3 * rms : 100.0 * (t + 1) / 32767;
      ASSERT_LE(std::fabs(after[i] - before[i]), bound) << wire::EncodingName(e) << " " << i;
    }
  }
}

TEST(ShotEncoderTest, NonFiniteSamplesGoLossless) {
  dataset::ShotData shot = Shot(4, 50, 2);
  reinterpret_cast<float*>(shot.chunks[1].data())[3] = std::numeric_limits<float>::infinity();
  const uint32_t crc = shot.crc32;
  ASSERT_TRUE(EncodeShot(&shot, wire::Encoding::kZfp, 1e-3).ok());
  EXPECT_EQ(shot.encoding, wire::Encoding::kLossless);
  EXPECT_EQ(shot.crc32, crc);
  EXPECT_TRUE(std::isinf(Decoded(shot)[2 * 50 + 3]));
}

TEST(ShotEncoderTest, Float32AndNativeAreLeftAsTheyAre) {
  dataset::ShotData shot = Shot(4, 50, 2);
  ASSERT_TRUE(EncodeShot(&shot, wire::Encoding::kFloat32, 0).ok());
  ASSERT_TRUE(EncodeShot(&shot, wire::Encoding::kNative, 0).ok());
  EXPECT_EQ(shot.encoding, wire::Encoding::kFloat32);
  EXPECT_EQ(shot.chunks[0].size(), 2u * 50 * 4);
}

}  // namespace
}  // namespace shotstream::stream

#include "server/stream/shot_encoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "common/crc32.h"
#include "gtest/gtest.h"
#include "server/stream/reader_pool.h"
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

// Encoded on the calling thread alone, and with the chunks spread over a pool.
class ShotEncoderPoolTest : public ::testing::TestWithParam<int> {
 protected:
  Executor* executor() { return GetParam() == 0 ? nullptr : &pool_; }
  ReaderPool pool_{2};
};

TEST_P(ShotEncoderPoolTest, LossyEncodingsChecksumTheirBytesAndKeepTheirBounds) {
  for (wire::Encoding e :
       {wire::Encoding::kInt16, wire::Encoding::kZfp, wire::Encoding::kQuantized}) {
    dataset::ShotData shot = Shot(10, 300, 3);
    dataset::ShotData plain = Shot(10, 300, 3);
    const std::vector<float> before = Decoded(plain);
    ASSERT_TRUE(EncodeShot(&shot, e, 1e-3, executor()).ok());
    EXPECT_EQ(shot.encoding, e);
    uint32_t crc = 0;
    for (const SampleBuffer& c : shot.chunks) crc = Crc32(crc, c.data(), c.size());
    EXPECT_EQ(shot.crc32, crc);
    const std::vector<float> after = Decoded(shot);
    const double rms = wire::Rms(before.data(), before.size());
    for (size_t i = 0; i < before.size(); ++i) {
      const uint32_t t = static_cast<uint32_t>(i / 300);
      const double bound = e == wire::Encoding::kInt16 ? 100.0 * (t + 1) / 32767 : 1e-3 * rms;
      ASSERT_LE(std::fabs(after[i] - before[i]), bound) << wire::EncodingName(e) << " " << i;
    }
  }
}

TEST_P(ShotEncoderPoolTest, NonFiniteSamplesGoLossless) {
  for (wire::Encoding e :
       {wire::Encoding::kInt16, wire::Encoding::kZfp, wire::Encoding::kQuantized}) {
    for (float bad : {std::numeric_limits<float>::infinity(), std::nanf("")}) {
      dataset::ShotData shot = Shot(8, 50, 2);
      // In the last chunk: INT16 has encoded the others by the time it finds it.
      reinterpret_cast<float*>(shot.chunks[3].data())[3] = bad;
      const uint32_t crc = shot.crc32;  // of the float32 samples, NaN and all
      const std::vector<float> before = Decoded(shot);
      ASSERT_TRUE(EncodeShot(&shot, e, 1e-3, executor()).ok());
      EXPECT_EQ(shot.encoding, wire::Encoding::kLossless) << wire::EncodingName(e);
      EXPECT_EQ(shot.crc32, crc);
      const std::vector<float> after = Decoded(shot);
      ASSERT_EQ(after.size(), before.size());
      EXPECT_EQ(std::memcmp(after.data(), before.data(), after.size() * 4), 0);  // NaN too
    }
  }
}

TEST_P(ShotEncoderPoolTest, BoundInt16KeepsTheToleranceOrGoesQuantized) {
  // Shot(): trace t peaks at 100 (t + 1); the shot's RMS is about 40 x 2.3 here.
  dataset::ShotData shot = Shot(4, 300, 2);
  const std::vector<float> before = Decoded(shot);
  const double rms = wire::Rms(before.data(), before.size());
  ASSERT_TRUE(EncodeShot(&shot, wire::Encoding::kInt16, 1e-2, executor(), true).ok());
  EXPECT_EQ(shot.encoding, wire::Encoding::kInt16);  // 400 / 65534 < 1e-2 x RMS
  // 1e-5 x RMS is below INT16's per-trace bound: QUANTIZED keeps it.
  dataset::ShotData tight = Shot(4, 300, 2);
  ASSERT_TRUE(EncodeShot(&tight, wire::Encoding::kInt16, 1e-5, executor(), true).ok());
  EXPECT_EQ(tight.encoding, wire::Encoding::kQuantized);
  const std::vector<float> after = Decoded(tight);
  for (size_t i = 0; i < before.size(); ++i) {
    ASSERT_LE(std::fabs(after[i] - before[i]), 1e-5 * rms) << i;
  }
  // Without the bound (asked for INT16 by name), INT16 whatever the tolerance.
  dataset::ShotData named = Shot(4, 300, 2);
  ASSERT_TRUE(EncodeShot(&named, wire::Encoding::kInt16, 1e-5, executor()).ok());
  EXPECT_EQ(named.encoding, wire::Encoding::kInt16);
}

TEST_P(ShotEncoderPoolTest, QuantizedOfASilentShotIsZeros) {
  dataset::ShotData shot = Shot(6, 40, 4);
  for (SampleBuffer& c : shot.chunks) std::memset(c.data(), 0, c.size());
  ASSERT_TRUE(EncodeShot(&shot, wire::Encoding::kQuantized, 1e-3, executor()).ok());
  EXPECT_EQ(shot.encoding, wire::Encoding::kQuantized);
  EXPECT_EQ(Decoded(shot), std::vector<float>(6 * 40, 0.0f));
}

TEST_P(ShotEncoderPoolTest, QuantizedBelowFloatPrecisionGoesLossless) {
  dataset::ShotData shot = Shot(4, 50, 2);
  reinterpret_cast<float*>(shot.chunks[1].data())[0] = 3e7f;  // RMS ~ 1e6, ulp(3e7) = 2
  const std::vector<float> before = Decoded(shot);
  ASSERT_TRUE(EncodeShot(&shot, wire::Encoding::kQuantized, 1e-9, executor()).ok());
  EXPECT_EQ(shot.encoding, wire::Encoding::kLossless);
  EXPECT_EQ(Decoded(shot), before);
}

INSTANTIATE_TEST_SUITE_P(Threads, ShotEncoderPoolTest, ::testing::Values(0, 2));

// Stored traces in the test's memory (the default Visit: memory that cannot vanish).
class MemoryTraces final : public io::StoredTraces {
 public:
  MemoryTraces(std::vector<const uint8_t*> traces, size_t trace_bytes, bool big_endian)
      : StoredTraces(std::move(traces), trace_bytes, big_endian) {}
  absl::Status Touch() const override { return absl::OkStatus(); }
};

// `decoded`'s traces as a read that located them would give them: stored in `memory`
// (big-endian when asked), per_chunk traces a chunk.
dataset::ShotData Stored(const dataset::ShotData& decoded, bool big_endian, uint32_t per_chunk,
                         std::vector<uint8_t>* memory) {
  const std::vector<float> samples = Decoded(decoded);
  memory->resize(samples.size() * 4);
  std::memcpy(memory->data(), samples.data(), memory->size());
  if (big_endian) {
    for (size_t i = 0; i < memory->size(); i += 4) std::reverse(&(*memory)[i], &(*memory)[i + 4]);
  }
  const size_t trace_bytes = size_t{decoded.n_samples} * 4;
  std::vector<const uint8_t*> traces;
  for (uint32_t t = 0; t < decoded.n_traces; ++t) traces.push_back(memory->data() + t * trace_bytes);
  dataset::ShotData shot;
  shot.shot_id = decoded.shot_id;
  shot.n_traces = decoded.n_traces;
  shot.n_samples = decoded.n_samples;
  shot.total_bytes = decoded.total_bytes;
  shot.stored = std::make_shared<MemoryTraces>(std::move(traces), trace_bytes, big_endian);
  shot.traces_per_chunk = per_chunk;
  shot.big_endian = big_endian;
  return shot;
}

TEST_P(ShotEncoderPoolTest, Int16OfStoredTracesIsByteForByteThatOfTheDecodedShot) {
  for (bool big_endian : {true, false}) {
    dataset::ShotData decoded = Shot(10, 300, 3);
    std::vector<uint8_t> memory;
    dataset::ShotData stored = Stored(decoded, big_endian, 3, &memory);
    ASSERT_TRUE(EncodeShot(&decoded, wire::Encoding::kInt16, 0, executor()).ok());
    ASSERT_TRUE(EncodeShot(&stored, wire::Encoding::kInt16, 0, executor()).ok());
    EXPECT_FALSE(stored.is_stored());
    EXPECT_FALSE(stored.big_endian);
    EXPECT_EQ(stored.encoding, wire::Encoding::kInt16);
    EXPECT_EQ(stored.chunk_traces, decoded.chunk_traces);
    ASSERT_EQ(stored.chunks.size(), decoded.chunks.size());
    for (size_t c = 0; c < stored.chunks.size(); ++c) {
      ASSERT_EQ(stored.chunks[c].size(), decoded.chunks[c].size());
      EXPECT_EQ(std::memcmp(stored.chunks[c].data(), decoded.chunks[c].data(),
                            stored.chunks[c].size()),
                0)
          << c;
      EXPECT_EQ(stored.chunk_crc32[c],
                Crc32(0, stored.chunks[c].data(), stored.chunks[c].size()));
    }
    EXPECT_EQ(stored.chunk_crc32, decoded.chunk_crc32);
    EXPECT_EQ(stored.crc32, decoded.crc32);
  }
}

TEST_P(ShotEncoderPoolTest, StoredTracesWithNonFiniteSamplesGoLosslessExactly) {
  dataset::ShotData decoded = Shot(8, 50, 2);
  reinterpret_cast<float*>(decoded.chunks[3].data())[3] = std::nanf("");
  decoded.crc32 = 0;
  for (const SampleBuffer& c : decoded.chunks) decoded.crc32 = Crc32(decoded.crc32, c.data(), c.size());
  std::vector<uint8_t> memory;
  dataset::ShotData stored = Stored(decoded, /*big_endian=*/true, 2, &memory);
  ASSERT_TRUE(EncodeShot(&stored, wire::Encoding::kInt16, 0, executor()).ok());
  EXPECT_EQ(stored.encoding, wire::Encoding::kLossless);
  EXPECT_FALSE(stored.is_stored());
  EXPECT_EQ(stored.crc32, decoded.crc32);  // of the float32 samples, NaN and all
  const std::vector<float> before = Decoded(decoded), after = Decoded(stored);
  ASSERT_EQ(after.size(), before.size());
  EXPECT_EQ(std::memcmp(after.data(), before.data(), after.size() * 4), 0);
}

// INT16 that `auto` picked under a tolerance, from stored traces (its RMS and peak taken
// in the pass that encodes): the same bytes and the same choice as from the decoded shot,
// INT16 within the bound, QUANTIZED past it, LOSSLESS for NaN.
TEST_P(ShotEncoderPoolTest, BoundInt16OfStoredTracesChoosesAndEncodesAsTheDecodedShot) {
  for (double tolerance : {1e-2, 1e-5}) {
    for (bool nan : {false, true}) {
      for (bool big_endian : {true, false}) {
        dataset::ShotData decoded = Shot(10, 300, 3);
        if (nan) {
          reinterpret_cast<float*>(decoded.chunks[2].data())[5] = std::nanf("");
          decoded.crc32 = 0;
          for (const SampleBuffer& c : decoded.chunks) {
            decoded.crc32 = Crc32(decoded.crc32, c.data(), c.size());
          }
        }
        std::vector<uint8_t> memory;
        dataset::ShotData stored = Stored(decoded, big_endian, 3, &memory);
        ASSERT_TRUE(EncodeShot(&decoded, wire::Encoding::kInt16, tolerance, executor(),
                               /*bound_int16=*/true)
                        .ok());
        ASSERT_TRUE(EncodeShot(&stored, wire::Encoding::kInt16, tolerance, executor(),
                               /*bound_int16=*/true)
                        .ok());
        const std::string what = "tolerance " + std::to_string(tolerance) +
                                 (nan ? ", NaN" : "") + (big_endian ? ", big-endian" : "");
        EXPECT_EQ(stored.encoding, nan                ? wire::Encoding::kLossless
                                   : tolerance > 1e-3 ? wire::Encoding::kInt16
                                                      : wire::Encoding::kQuantized)
            << what;
        EXPECT_EQ(stored.encoding, decoded.encoding) << what;
        EXPECT_FALSE(stored.is_stored()) << what;
        ASSERT_EQ(stored.chunks.size(), decoded.chunks.size()) << what;
        for (size_t c = 0; c < stored.chunks.size(); ++c) {
          ASSERT_EQ(stored.chunks[c].size(), decoded.chunks[c].size()) << what << " " << c;
          EXPECT_EQ(std::memcmp(stored.chunks[c].data(), decoded.chunks[c].data(),
                                stored.chunks[c].size()),
                    0)
              << what << " " << c;
        }
        // LOSSLESS keeps the float32 samples' CRC-32; the lossy ones carry their bytes'.
        if (!nan) EXPECT_EQ(stored.chunk_crc32, decoded.chunk_crc32) << what;
        EXPECT_EQ(stored.crc32, decoded.crc32) << what;
      }
    }
  }
}

TEST(ShotEncoderTest, StoredTracesAreEncodedInt16Only) {
  dataset::ShotData decoded = Shot(4, 50, 2);
  std::vector<uint8_t> memory;
  dataset::ShotData stored = Stored(decoded, true, 2, &memory);
  EXPECT_EQ(EncodeShot(&stored, wire::Encoding::kLossless, 0).code(),
            absl::StatusCode::kInternal);
  ASSERT_TRUE(EncodeShot(&stored, wire::Encoding::kFloat32, 0).ok());  // sent as stored
  EXPECT_TRUE(stored.is_stored());
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

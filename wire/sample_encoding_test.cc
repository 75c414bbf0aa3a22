#include "wire/sample_encoding.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "segy/sample_format.h"

namespace shotstream::wire {
namespace {

// Seismic-like traces: noise with a decaying amplitude per trace, so that the per-trace
// scales differ.
std::vector<float> Traces(uint32_t n_traces, uint32_t n_samples, int significant_bits = 24) {
  std::mt19937 rng(7);
  std::normal_distribution<float> noise(0, 1);
  std::vector<float> v(size_t{n_traces} * n_samples);
  for (uint32_t t = 0; t < n_traces; ++t) {
    for (uint32_t i = 0; i < n_samples; ++i) {
      float x = noise(rng) * 1000.0f / (1 + t);
      if (significant_bits < 24) {
        int e;
        const float m = std::frexp(x, &e);
        x = std::ldexp(std::round(std::ldexp(m, significant_bits)), e - significant_bits);
      }
      v[size_t{t} * n_samples + i] = x;
    }
  }
  return v;
}

std::vector<float> Decode(Encoding e, const SampleBuffer& b, uint32_t nt, uint32_t ns) {
  std::vector<float> out(size_t{nt} * ns, -1);
  absl::Status s = DecodeSamples(e, 0, false, b.data(), b.size(), nt, ns, out.data());
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

TEST(SampleEncodingTest, LosslessIsBitExactAndSmallerForFewSignificantBits) {
  const auto v = Traces(40, 500, 16);
  auto b = EncodeSamples(Encoding::kLossless, v.data(), 40, 500);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_LT(b->size(), v.size() * 4 * 3 / 4);
  const auto out = Decode(Encoding::kLossless, *b, 40, 500);
  EXPECT_EQ(std::memcmp(out.data(), v.data(), v.size() * 4), 0);
}

TEST(SampleEncodingTest, Int16IsWithinItsBoundPerTrace) {
  const auto v = Traces(30, 400);
  auto b = EncodeSamples(Encoding::kInt16, v.data(), 30, 400);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->size(), 30 * 4 + 30 * 400 * 2);
  const auto out = Decode(Encoding::kInt16, *b, 30, 400);
  for (uint32_t t = 0; t < 30; ++t) {
    float peak = 0;
    for (uint32_t i = 0; i < 400; ++i) peak = std::max(peak, std::fabs(v[t * 400 + i]));
    for (uint32_t i = 0; i < 400; ++i) {
      ASSERT_LE(std::fabs(out[t * 400 + i] - v[t * 400 + i]), peak / 32767) << t << " " << i;
    }
  }
}

TEST(SampleEncodingTest, Int16OfASilentTraceIsZero) {
  std::vector<float> v(2 * 8, 0.0f);
  v[8] = 3;  // trace 1 has a sample, trace 0 none
  auto b = EncodeSamples(Encoding::kInt16, v.data(), 2, 8);
  ASSERT_TRUE(b.ok());
  const auto out = Decode(Encoding::kInt16, *b, 2, 8);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(out[i], 0.0f);
  EXPECT_FLOAT_EQ(out[8], 3.0f);
}

TEST(SampleEncodingTest, ZfpKeepsItsAbsoluteAccuracy) {
  const auto v = Traces(64, 1000);
  for (double tol : {1e-1, 1e-3}) {
    const double accuracy = tol * Rms(v.data(), v.size());
    auto b = EncodeSamples(Encoding::kZfp, v.data(), 64, 1000, accuracy);
    ASSERT_TRUE(b.ok()) << b.status();
    const auto out = Decode(Encoding::kZfp, *b, 64, 1000);
    double worst = 0;
    for (size_t i = 0; i < v.size(); ++i) worst = std::max(worst, double{std::fabs(out[i] - v[i])});
    EXPECT_LE(worst, accuracy) << tol;
    EXPECT_LT(b->size(), v.size() * 4) << tol;
  }
}

TEST(SampleEncodingTest, LossyEncodingsRefuseNonFiniteSamples) {
  std::vector<float> v(16, 1.0f);
  v[3] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(EncodeSamples(Encoding::kInt16, v.data(), 2, 8).status().code(),
            absl::StatusCode::kFailedPrecondition);
  v[3] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(EncodeSamples(Encoding::kZfp, v.data(), 2, 8, 1e-3).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(EncodeSamples(Encoding::kLossless, v.data(), 2, 8).ok());
}

TEST(SampleEncodingTest, NoTracesEncodeAndDecode) {
  for (Encoding e : {Encoding::kLossless, Encoding::kInt16, Encoding::kZfp}) {
    auto b = EncodeSamples(e, nullptr, 0, 100, 1e-3);
    ASSERT_TRUE(b.ok()) << EncodingName(e);
    EXPECT_TRUE(DecodeSamples(e, 0, false, b->data(), b->size(), 0, 100, nullptr).ok());
  }
}

TEST(SampleEncodingTest, NativeDecodesEveryIntegerAndIbmFormat) {
  const std::vector<float> v = {0, 1, -1, 100, -100, 12.5f, 127, -128};
  for (int format : {1, 2, 3, 7, 8}) {
    for (bool big : {true, false}) {
      const int w = NativeBytesPerSample(format);
      ASSERT_GT(w, 0) << format;
      // Encoded as the file would hold them: big-endian, then swapped for little.
      std::vector<uint8_t> raw(v.size() * w);
      if (format == 1) {
        segy::EncodeSamplesBigEndian(v.data(), v.size(), segy::SampleFormat::kIbmFloat32,
                                     raw.data());
      } else {
        for (size_t i = 0; i < v.size(); ++i) {  // two's complement, big-endian, w bytes
          const int64_t x = static_cast<int64_t>(v[i] == 12.5f ? 12 : v[i]);
          for (int b = 0; b < w; ++b) raw[i * w + b] = static_cast<uint8_t>(x >> (8 * (w - 1 - b)));
        }
      }
      if (!big) {
        for (size_t i = 0; i < v.size(); ++i) std::reverse(&raw[i * w], &raw[i * w] + w);
      }
      std::vector<float> out(v.size());
      ASSERT_TRUE(DecodeSamples(Encoding::kNative, format, big, raw.data(), raw.size(), 1,
                                v.size(), out.data())
                      .ok());
      std::vector<float> want(v.size());
      segy::DecodeSamples(raw.data(), v.size(), static_cast<segy::SampleFormat>(format),
                          big ? segy::ByteOrder::kBigEndian : segy::ByteOrder::kLittleEndian,
                          want.data());
      EXPECT_EQ(out, want) << format << " " << big;
      EXPECT_EQ(out[3], 100.0f) << format;
    }
  }
  EXPECT_EQ(NativeBytesPerSample(5), 0);  // IEEE goes as float32
  EXPECT_EQ(NativeBytesPerSample(6), 0);  // wider than float32
  EXPECT_EQ(NativeBytesPerSample(4), 0);  // needs the trace's gain
  EXPECT_EQ(NativeBytesPerSample(3), 2);
}

TEST(SampleEncodingTest, CorruptPayloadsAreDataLoss) {
  const auto v = Traces(8, 100);
  std::vector<float> out(v.size());
  for (Encoding e : {Encoding::kLossless, Encoding::kInt16, Encoding::kZfp}) {
    auto b = EncodeSamples(e, v.data(), 8, 100, 1e-2);
    ASSERT_TRUE(b.ok());
    // Too short, and a payload for other dimensions.
    EXPECT_EQ(DecodeSamples(e, 0, false, b->data(), b->size() / 2, 8, 100, out.data()).code(),
              absl::StatusCode::kDataLoss)
        << EncodingName(e);
    EXPECT_EQ(DecodeSamples(e, 0, false, b->data(), b->size(), 4, 100, out.data()).code(),
              absl::StatusCode::kDataLoss)
        << EncodingName(e);
  }
  uint8_t garbage[64] = {};
  EXPECT_EQ(DecodeSamples(Encoding::kZfp, 0, false, garbage, sizeof garbage, 8, 100, out.data())
                .code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeSamples(Encoding::kNative, 5, false, garbage, 8, 1, 2, out.data()).code(),
            absl::StatusCode::kDataLoss);
}

TEST(SampleEncodingTest, Names) {
  for (Encoding e : {Encoding::kFloat32, Encoding::kNative, Encoding::kLossless,
                     Encoding::kInt16, Encoding::kZfp, Encoding::kAuto}) {
    EXPECT_EQ(*EncodingFromName(EncodingName(e)), e);
  }
  EXPECT_EQ(EncodingFromName("gzip").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace shotstream::wire

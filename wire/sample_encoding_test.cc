#include "wire/sample_encoding.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "segy/sample_format.h"
#include "wire/sample_kernels.h"

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

// The bound the proto and docs/encodings.md state: |decoded - sample| <= 1.01 x
// max|trace| / 65534 (half a step, plus float32 roundings of the scale and of
// sample / scale: at most 32767 x 2^-22 of a step more, 0.8%).
TEST(SampleEncodingTest, Int16IsWithinItsBoundPerTrace) {
  const uint32_t n_traces = 3000, n = 400;
  const auto v = Traces(n_traces, n);
  auto b = EncodeSamples(Encoding::kInt16, v.data(), n_traces, n);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->size(), n_traces * 4 + n_traces * n * 2);
  const auto out = Decode(Encoding::kInt16, *b, n_traces, n);
  double worst = 0;  // the largest error, in units of max|trace| / 65534
  for (uint32_t t = 0; t < n_traces; ++t) {
    float peak = 0;
    for (uint32_t i = 0; i < n; ++i) peak = std::max(peak, std::fabs(v[t * n + i]));
    for (uint32_t i = 0; i < n; ++i) {
      const double e = std::fabs(double{out[t * n + i]} - double{v[t * n + i]});
      worst = std::max(worst, e / (double{peak} / 65534));
    }
  }
  EXPECT_LE(worst, 1.01);
  EXPECT_GT(worst, 0.99) << "the bound is met with little to spare, as stated";
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

TEST(SampleEncodingTest, Int16OfADenormalTraceIsZero) {
  std::vector<float> v(2 * 20, 1e-40f);  // trace 0: denormal (its scale would overflow 1 / scale)
  for (int i = 20; i < 40; ++i) v[i] = 1e-30f * static_cast<float>(i - 30);
  auto b = EncodeSamples(Encoding::kInt16, v.data(), 2, 20);
  ASSERT_TRUE(b.ok());
  const auto out = Decode(Encoding::kInt16, *b, 2, 20);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(out[i], 0.0f) << i;
  for (int i = 20; i < 40; ++i) EXPECT_NEAR(out[i], v[i], 1e-29f / 32767) << i;
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

// Data that tries the QUANTIZED bound: a wide dynamic range (samples from 1e-6 to 1e6 x
// the bound), ties at half steps, denormals, zeros, both signs.
std::vector<float> Hard(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mantissa(-1, 1);
  std::uniform_int_distribution<int> exponent(-20, 20);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    v[i] = std::ldexp(mantissa(rng), exponent(rng));
    if (i % 97 == 0) v[i] = 0;
    if (i % 89 == 0) v[i] = std::numeric_limits<float>::denorm_min() * (i % 3 == 0 ? -1 : 1);
    if (i % 83 == 0) v[i] = 0.5f * (i % 7);  // ties for steps of 1, 0.5 ...
  }
  return v;
}

class QuantizedTest : public ::testing::TestWithParam<kernels::Path> {
 protected:
  void SetUp() override { kernels::ForcePath(GetParam()); }
  void TearDown() override { kernels::ForcePath(kernels::Path::kAuto); }
};

TEST_P(QuantizedTest, EverySampleIsWithinTheBound) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    for (double tol : {1e-1, 1e-3, 1e-5}) {
      const auto v = seed == 1 ? Traces(37, 301, 16) : Hard(37 * 301, seed);
      const double bound = tol * Rms(v.data(), v.size());
      auto b = EncodeSamples(Encoding::kQuantized, v.data(), 37, 301, bound);
      ASSERT_TRUE(b.ok()) << b.status() << " " << seed << " " << tol;
      const auto out = Decode(Encoding::kQuantized, *b, 37, 301);
      for (size_t i = 0; i < v.size(); ++i) {
        ASSERT_LE(std::fabs(double{out[i]} - double{v[i]}), bound)
            << "seed " << seed << " tol " << tol << " sample " << i << ": " << v[i] << " -> "
            << out[i];
      }
      if (seed == 1 && tol == 1e-3) {
        EXPECT_LT(b->size(), v.size() * 4 * 6 / 10);  // 16-bit data
      }
    }
  }
}

TEST_P(QuantizedTest, WidthFollowsTheLargestSample) {
  std::vector<float> v(64);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 11) - 5;
  for (const auto& [bound, width] : {std::pair{0.6, 1}, std::pair{0.01, 2}, std::pair{1e-5, 4}}) {
    auto b = EncodeSamples(Encoding::kQuantized, v.data(), 2, 32, bound);
    ASSERT_TRUE(b.ok());
    EXPECT_EQ((*b).data()[4], width) << bound;
    const auto out = Decode(Encoding::kQuantized, *b, 2, 32);
    for (size_t i = 0; i < v.size(); ++i) ASSERT_LE(std::fabs(out[i] - v[i]), bound);
  }
  std::vector<float> zeros(50, 0.0f);  // an all-zero chunk: any step, zeros back
  auto b = EncodeSamples(Encoding::kQuantized, zeros.data(), 5, 10, 1e-30);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(Decode(Encoding::kQuantized, *b, 5, 10), zeros);
}

INSTANTIATE_TEST_SUITE_P(Paths, QuantizedTest,
                         ::testing::Values(kernels::Path::kPortable, kernels::Path::kAvx2),
                         [](const auto& info) { return kernels::TestName(info.param); });

TEST(SampleEncodingTest, QuantizedRefusesABoundBelowFloatPrecision) {
  std::vector<float> v = {1e6f, -3, 2, 1};
  auto b = EncodeSamples(Encoding::kQuantized, v.data(), 1, 4, 1e-3);  // 1e6 has ulp 0.06
  EXPECT_EQ(b.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(b.status().message().find("precision"), std::string::npos) << b.status();
  EXPECT_EQ(QuantizedStep(0, 1), 0.0f);
  EXPECT_GT(QuantizedStep(1e-3, 1), 0.0f);
  EXPECT_LE(QuantizedStep(1e-3, 1), 2e-3f);
}

TEST(SampleEncodingTest, LossyEncodingsRefuseNonFiniteSamples) {
  std::vector<float> v(16, 1.0f);
  v[3] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(EncodeSamples(Encoding::kInt16, v.data(), 2, 8).status().code(),
            absl::StatusCode::kFailedPrecondition);
  v[3] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(EncodeSamples(Encoding::kZfp, v.data(), 2, 8, 1e-3).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(EncodeSamples(Encoding::kQuantized, v.data(), 2, 8, 1e-3).status().code(),
            absl::StatusCode::kFailedPrecondition);
  v[3] = 1;
  v[15] = -std::numeric_limits<float>::infinity();  // in the last trace, in a tail
  EXPECT_EQ(EncodeSamples(Encoding::kInt16, v.data(), 2, 8).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(EncodeSamples(Encoding::kLossless, v.data(), 2, 8).ok());
}

// The one accuracy rule: tolerance x RMS, the default tolerance when none is given, and a
// positive bound for an all-zero shot.
TEST(SampleEncodingTest, LossyAccuracyIsToleranceTimesRms) {
  EXPECT_DOUBLE_EQ(LossyAccuracy(0.01, 200.0), 2.0);
  EXPECT_DOUBLE_EQ(LossyAccuracy(0, 200.0), kDefaultZfpTolerance * 200.0);
  EXPECT_GT(LossyAccuracy(0.01, 0.0), 0.0);
  EXPECT_LT(LossyAccuracy(0.01, 0.0), 1e-20);
}

TEST(SampleEncodingTest, NoTracesEncodeAndDecode) {
  for (Encoding e : {Encoding::kLossless, Encoding::kInt16, Encoding::kZfp,
                     Encoding::kQuantized}) {
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
  for (Encoding e : {Encoding::kLossless, Encoding::kInt16, Encoding::kZfp,
                     Encoding::kQuantized}) {
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
  // QUANTIZED's header: a width of 3, a negative step, a nonzero pad byte.
  auto q = EncodeSamples(Encoding::kQuantized, v.data(), 8, 100, 1e-2);
  ASSERT_TRUE(q.ok());
  for (auto damage : {+[](uint8_t* p) { p[4] = 3; }, +[](uint8_t* p) { p[3] |= 0x80; },
                      +[](uint8_t* p) { p[6] = 1; }}) {
    SampleBuffer copy = SampleBuffer::CopyOf(q->view());
    damage(copy.data());
    const absl::Status s =
        DecodeSamples(Encoding::kQuantized, 0, false, copy.data(), copy.size(), 8, 100, out.data());
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
    EXPECT_NE(s.message().find("quantized chunk"), std::string::npos) << s;
  }
}

TEST(SampleEncodingTest, Names) {
  for (Encoding e : {Encoding::kFloat32, Encoding::kNative, Encoding::kLossless,
                     Encoding::kInt16, Encoding::kZfp, Encoding::kQuantized, Encoding::kAuto}) {
    EXPECT_EQ(*EncodingFromName(EncodingName(e)), e);
  }
  EXPECT_EQ(EncodingFromName("gzip").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace shotstream::wire

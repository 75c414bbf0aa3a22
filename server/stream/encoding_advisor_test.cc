#include "server/stream/encoding_advisor.h"

#include "gtest/gtest.h"

namespace shotstream::stream {
namespace {

constexpr double kMB = 1e6;

TEST(EncodingAdvisorTest, PlainUntilBothLinkAndCodecAreMeasured) {
  EncodingAdvisor a(2);
  EXPECT_EQ(a.Choose("p", "d", 4), wire::Encoding::kFloat32);
  EXPECT_EQ(a.Choose("p", "d", 2), wire::Encoding::kNative);  // int16: half the bytes
  a.RecordLink("p", 100 * kMB, 1.0);
  EXPECT_EQ(a.Choose("p", "d", 4), wire::Encoding::kFloat32);  // codec not measured yet
  a.RecordCodec("d", 4 * kMB, 2 * kMB, 0.002);                  // 2x at 2 GB/s a thread
  EXPECT_EQ(a.Choose("p", "d", 4), wire::Encoding::kLossless);
  EXPECT_EQ(a.Choose("other peer", "d", 4), wire::Encoding::kFloat32);
}

TEST(EncodingAdvisorTest, LosslessOnlyWhereTheLinkIsSlowerThanTheCodec) {
  EncodingAdvisor a(1);
  a.RecordCodec("d", 4 * kMB, 2 * kMB, 0.004);  // 2x at 1 GB/s
  a.RecordLink("slow", 120 * kMB, 1.0);         // 1 Gbit/s: lossless delivers 240 MB/s
  a.RecordLink("fast", 5000 * kMB, 1.0);        // loopback: the codec would hold it back
  EXPECT_EQ(a.Choose("slow", "d", 4), wire::Encoding::kLossless);
  EXPECT_EQ(a.Choose("fast", "d", 4), wire::Encoding::kFloat32);
  // Against NATIVE int16 (already 2x), a 2x codec gains nothing.
  EXPECT_EQ(a.Choose("slow", "d", 2), wire::Encoding::kNative);
}

TEST(EncodingAdvisorTest, IncompressibleDataStaysFloat32) {
  EncodingAdvisor a(4);
  a.RecordCodec("noise", 4 * kMB, 3.6 * kMB, 0.002);  // 1.11x
  a.RecordLink("slow", 120 * kMB, 1.0);
  EXPECT_EQ(a.Choose("slow", "noise", 4), wire::Encoding::kFloat32);
}

TEST(EncodingAdvisorTest, OutcomesOverruleTheModel) {
  EncodingAdvisor a(2);
  a.RecordCodec("d", 4 * kMB, 2 * kMB, 0.002);
  a.RecordLink("p", 1000 * kMB, 1.0);
  EXPECT_EQ(a.Choose("p", "d", 4), wire::Encoding::kLossless);  // the model says try it
  a.RecordOutcome("p", "d", wire::Encoding::kFloat32, 1000 * kMB, 1.0);
  a.RecordOutcome("p", "d", wire::Encoding::kLossless, 700 * kMB, 1.0);  // the client was slow
  EXPECT_EQ(a.Choose("p", "d", 4), wire::Encoding::kFloat32);
  // Where it did deliver more, it stays.
  a.RecordOutcome("q", "d", wire::Encoding::kFloat32, 100 * kMB, 1.0);
  a.RecordOutcome("q", "d", wire::Encoding::kLossless, 200 * kMB, 1.0);
  EXPECT_EQ(a.Choose("q", "d", 4), wire::Encoding::kLossless);
  // Measured outcomes that tie: the plain encoding (no decoding for the client); one
  // faster, the faster.
  a.RecordOutcome("r", "d", wire::Encoding::kNative, 100 * kMB, 1.0);
  a.RecordOutcome("r", "d", wire::Encoding::kLossless, 100 * kMB, 1.0);
  EXPECT_EQ(a.Choose("r", "d", 2), wire::Encoding::kNative);
  a.RecordOutcome("s", "d", wire::Encoding::kNative, 100 * kMB, 1.0);
  a.RecordOutcome("s", "d", wire::Encoding::kLossless, 102 * kMB, 1.0);
  EXPECT_EQ(a.Choose("s", "d", 2), wire::Encoding::kLossless);
}

TEST(EncodingAdvisorTest, ShortStreamsSayNothingOfOutcomes) {
  EncodingAdvisor a(2);
  a.RecordOutcome("p", "d", wire::Encoding::kFloat32, 100 * kMB, 1.0);
  a.RecordOutcome("p", "d", wire::Encoding::kLossless, 120 * kMB, 1.0);
  EXPECT_EQ(a.Choose("p", "d", 4), wire::Encoding::kLossless);
  // A warm-up of 15 MB on a fresh connection (TCP slow start): not an outcome.
  a.RecordOutcome("p", "d", wire::Encoding::kFloat32, 15 * kMB, 0.5);
  EXPECT_EQ(a.Choose("p", "d", 4), wire::Encoding::kLossless);
  a.RecordOutcome("p", "d", wire::Encoding::kFloat32, 200 * kMB, 1.0);  // blends to 150
  EXPECT_EQ(a.Choose("p", "d", 4), wire::Encoding::kFloat32);
}

TEST(EncodingAdvisorTest, QuantizedOnlyWhereATolerancePermitsIt) {
  EncodingAdvisor a(2);
  a.RecordLink("p", 1000 * kMB, 1.0);
  a.RecordCodec("d", 4 * kMB, 2 * kMB, 0.004);  // LOSSLESS: 2x at 1 GB/s a thread
  a.RecordCodec("d", 4 * kMB, 1.4 * kMB, 0.001, wire::Encoding::kQuantized, 1e-3);  // 2.9x, 4 GB/s
  // Without a tolerance the caller asked for exact samples.
  EXPECT_EQ(a.Choose("p", "d", 4), wire::Encoding::kLossless);
  EXPECT_EQ(a.Choose("p", "d", 4, 1e-3), wire::Encoding::kQuantized);
  EXPECT_DOUBLE_EQ(a.quantized_ratio("d", 1e-3), 4.0 / 1.4);
  // Measured at another tolerance only: nothing known at this one.
  EXPECT_EQ(a.Choose("p", "d", 4, 1e-2), wire::Encoding::kLossless);
  // Its outcome decides: slower than LOSSLESS delivered, it is dropped.
  a.RecordOutcome("p", "d", wire::Encoding::kFloat32, 1000 * kMB, 1.0);
  a.RecordOutcome("p", "d", wire::Encoding::kLossless, 1500 * kMB, 1.0);
  a.RecordOutcome("p", "d", wire::Encoding::kQuantized, 1300 * kMB, 1.0, 1e-3);
  EXPECT_EQ(a.Choose("p", "d", 4, 1e-3), wire::Encoding::kLossless);
  a.RecordOutcome("p", "d", wire::Encoding::kQuantized, 2500 * kMB, 1.0, 1e-3);  // blends to 1900
  EXPECT_EQ(a.Choose("p", "d", 4, 1e-3), wire::Encoding::kQuantized);
}

TEST(EncodingAdvisorTest, Int16IsACandidateOnlyWithATolerance) {
  EncodingAdvisor a(2);
  a.RecordLink("p", 1000 * kMB, 1.0);
  a.RecordCodec("d", 4 * kMB, 2 * kMB, 0.0004, wire::Encoding::kInt16);  // 2x at 10 GB/s
  EXPECT_EQ(a.Choose("p", "d", 4), wire::Encoding::kFloat32);
  EXPECT_EQ(a.Choose("p", "d", 4, 1e-3), wire::Encoding::kInt16);
  // Against NATIVE int16 (already 2x), it gains nothing.
  EXPECT_EQ(a.Choose("p", "d", 2, 1e-3), wire::Encoding::kNative);
  // What it delivered decides: here QUANTIZED did better.
  a.RecordCodec("d", 4 * kMB, 1.4 * kMB, 0.001, wire::Encoding::kQuantized, 1e-3);
  a.RecordOutcome("p", "d", wire::Encoding::kFloat32, 1000 * kMB, 1.0);
  a.RecordOutcome("p", "d", wire::Encoding::kInt16, 1500 * kMB, 1.0);
  a.RecordOutcome("p", "d", wire::Encoding::kQuantized, 1800 * kMB, 1.0, 1e-3);
  EXPECT_EQ(a.Choose("p", "d", 4, 1e-3), wire::Encoding::kQuantized);
}

TEST(EncodingAdvisorTest, MeasurementsBlendAndTinyOnesAreIgnored) {
  EncodingAdvisor a(1);
  a.RecordLink("p", 1000, 1e-6);  // under 1 MiB: says nothing
  EXPECT_EQ(a.link_rate("p"), 0);
  a.RecordLink("p", 100 * kMB, 1.0);
  a.RecordLink("p", 300 * kMB, 1.0);
  EXPECT_DOUBLE_EQ(a.link_rate("p"), 200 * kMB);
  a.RecordCodec("d", 400, 100, 1e-6);
  EXPECT_DOUBLE_EQ(a.lossless_ratio("d"), 4.0);
}

}  // namespace
}  // namespace shotstream::stream

#include "server/stream/link_meter.h"

#include "gtest/gtest.h"

namespace shotstream::stream {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1000);

// Two writes of 1 MB, each 10 ms on the wire, with 1 s between them: the link rate is
// the bytes over the time on the wire (100 MB/s), not over the stream's wall time.
TEST(LinkMeterTest, TheRateIsBytesOverTimeOnTheWire) {
  LinkMeter meter;
  meter.Start(kT0);
  meter.ChunkOut(1000000, 1000000, kT0);
  EXPECT_TRUE(meter.on_wire());
  EXPECT_EQ(meter.chunk_since(), kT0);
  meter.ChunkSent(kT0 + absl::Milliseconds(10));
  EXPECT_FALSE(meter.on_wire());
  meter.ChunkOut(1000000, 1000000, kT0 + absl::Seconds(1));
  meter.ChunkSent(kT0 + absl::Seconds(1) + absl::Milliseconds(10));
  EncodingAdvisor advisor(2);
  meter.Report(&advisor, "peer", "ds", wire::Encoding::kFloat32, 0);
  EXPECT_NEAR(advisor.link_rate("peer"), 1e8, 1e3);
}

// A Sent with no chunk out counts nothing.
TEST(LinkMeterTest, ASentWithoutAChunkCountsNothing) {
  LinkMeter meter;
  meter.Start(kT0);
  meter.ChunkSent(kT0 + absl::Seconds(5));
  EncodingAdvisor advisor(2);
  meter.Report(&advisor, "peer", "ds", wire::Encoding::kFloat32, 0);
  EXPECT_EQ(advisor.link_rate("peer"), 0);
}

// The outcome is recorded only for a stream that ran to its end: the advisor then
// prefers what delivered more float32 bytes a second to that peer.
TEST(LinkMeterTest, OnlyAStreamThatEndedOkReportsItsOutcome) {
  const uint64_t big = EncodingAdvisor::kMinOutcomeBytes * 2;
  auto run = [&](wire::Encoding e, uint64_t sent, double seconds, bool ended_ok,
                 EncodingAdvisor* advisor) {
    LinkMeter meter;
    meter.Start(kT0);
    meter.ChunkOut(sent, big, kT0);
    meter.ChunkSent(kT0 + absl::Seconds(seconds));
    if (ended_ok) meter.EndedOk();
    meter.Report(advisor, "peer", "ds", e, 0);
  };
  // LOSSLESS halves the bytes; it took 1 s against FLOAT32's 2 s.
  EncodingAdvisor ended(2);
  run(wire::Encoding::kFloat32, big, 2.0, true, &ended);
  run(wire::Encoding::kLossless, big / 2, 1.0, true, &ended);
  ended.RecordCodec("ds", big, big / 2, 0.01);
  EXPECT_EQ(ended.Choose("peer", "ds", 4), wire::Encoding::kLossless);
  // The same, but the LOSSLESS stream was cut off: its outcome is not heard, and with
  // only FLOAT32's (a slow link of 2 s) the model decides.
  EncodingAdvisor cut(2);
  run(wire::Encoding::kFloat32, big, 0.001, true, &cut);
  run(wire::Encoding::kLossless, big / 2, 100.0, false, &cut);
  cut.RecordCodec("ds", big, big / 2, 100.0);  // a slow codec: the model says FLOAT32
  EXPECT_EQ(cut.Choose("peer", "ds", 4), wire::Encoding::kFloat32);
}

}  // namespace
}  // namespace shotstream::stream

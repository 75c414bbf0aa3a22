#include "server/stream/stream_plan.h"

#include <algorithm>

#include "gtest/gtest.h"

namespace shotstream::stream {
namespace {

constexpr double kMB = 1e6;

bool Probes(const dataset::ShotPlan& p, wire::Encoding e) {
  return std::find(p.encode.probes.begin(), p.encode.probes.end(), e) != p.encode.probes.end();
}

TEST(StreamPlanTest, AutoWithoutAToleranceStaysExactAndProbesLosslessOnly) {
  EncodingAdvisor a(2);
  dataset::ShotSelection s;
  s.encoding = wire::Encoding::kAuto;
  const dataset::ShotPlan p = PlanShots(s, 5, true, &a, "peer", "d");
  EXPECT_EQ(p.encode.encoding, wire::Encoding::kFloat32);
  EXPECT_EQ(p.encode.probes, std::vector<wire::Encoding>{wire::Encoding::kLossless});
  EXPECT_FALSE(p.encode.bound_int16);
  EXPECT_EQ(p.read.zero_copy, dataset::ZeroCopy::kLittleEndian);
}

TEST(StreamPlanTest, AutoPickingInt16WithAToleranceHoldsItToTheTolerance) {
  EncodingAdvisor a(2);
  a.RecordLink("peer", 1000 * kMB, 1.0);
  a.RecordCodec("d", 4 * kMB, 2 * kMB, 0.0004, wire::Encoding::kInt16);
  dataset::ShotSelection s;
  s.encoding = wire::Encoding::kAuto;
  s.tolerance = 1e-3;
  const dataset::ShotPlan p = PlanShots(s, 5, true, &a, "peer", "d");
  EXPECT_EQ(p.encode.encoding, wire::Encoding::kInt16);
  EXPECT_TRUE(p.encode.bound_int16);
  EXPECT_TRUE(Probes(p, wire::Encoding::kLossless));
  EXPECT_TRUE(Probes(p, wire::Encoding::kQuantized));
  EXPECT_FALSE(Probes(p, wire::Encoding::kInt16));
  // Encoded from the mapping like INT16 by name, its RMS and peak taken in the same pass.
  EXPECT_EQ(p.read.zero_copy, dataset::ZeroCopy::kAnyByteOrder);
  // INT16 asked for by name keeps its own bound, and is encoded from the mapping, in either
  // byte order, where the server sends from mappings.
  s.encoding = wire::Encoding::kInt16;
  const dataset::ShotPlan named = PlanShots(s, 5, true, &a, "peer", "d");
  EXPECT_FALSE(named.encode.bound_int16);
  EXPECT_EQ(named.read.zero_copy, dataset::ZeroCopy::kAnyByteOrder);
  EXPECT_EQ(PlanShots(s, 5, false, &a, "peer", "d").read.zero_copy, dataset::ZeroCopy::kOff);
  s.encoding = wire::Encoding::kLossless;
  EXPECT_EQ(PlanShots(s, 5, true, &a, "peer", "d").read.zero_copy, dataset::ZeroCopy::kOff);
  EXPECT_EQ(p.encode.tolerance, 1e-3);  // the one tolerance the encoder and probes use
  EXPECT_FALSE(p.read.native);
}

}  // namespace
}  // namespace shotstream::stream

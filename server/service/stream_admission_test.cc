#include "server/service/stream_admission.h"

#include "gtest/gtest.h"

namespace shotstream::service {
namespace {

TEST(StreamAdmissionTest, PeersCountByAddressWithoutThePort) {
  EXPECT_EQ(StreamAdmission::PeerAddress("ipv4:127.0.0.1:5555"), "ipv4:127.0.0.1");
  EXPECT_EQ(StreamAdmission::PeerAddress("ipv6:[::1]:5555"), "ipv6:[::1]");
  EXPECT_EQ(StreamAdmission::PeerAddress("unix:/tmp/s"), "unix:/tmp/s");
}

TEST(StreamAdmissionTest, TheLimitsHoldAndReleasedSlotsComeBack) {
  StreamAdmission a(/*max_streams=*/3, /*max_streams_per_peer=*/2);
  EXPECT_TRUE(a.Admit("ipv4:10.0.0.1").ok());
  EXPECT_TRUE(a.Admit("ipv4:10.0.0.1").ok());
  const absl::Status per_peer = a.Admit("ipv4:10.0.0.1");
  EXPECT_EQ(per_peer.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(per_peer.message(),
            "ipv4:10.0.0.1 runs 2 streams, the limit per peer (max_streams_per_peer)");
  EXPECT_TRUE(a.Admit("ipv4:10.0.0.2").ok());
  const absl::Status all = a.Admit("ipv4:10.0.0.3");
  EXPECT_EQ(all.message(), "the server runs 3 streams, its limit (max_streams)");
  EXPECT_EQ(a.running(), 3u);
  a.Release("ipv4:10.0.0.1");
  EXPECT_EQ(a.running(), 2u);
  EXPECT_TRUE(a.Admit("ipv4:10.0.0.3").ok());
  a.Release("ipv4:10.0.0.9");  // never admitted: changes nothing
  EXPECT_EQ(a.running(), 3u);
}

}  // namespace
}  // namespace shotstream::service

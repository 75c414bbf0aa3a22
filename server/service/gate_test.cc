// The gate on its own: every check in its order, every refusal counted once by code and by
// RPC, stream slots taken last and given back with the pass.
#include "server/service/gate.h"

#include <cstdlib>
#include <fstream>

#include "gtest/gtest.h"
#include "server/dataset/dataset.h"
#include "server/source/fake_source.h"

namespace shotstream::service {
namespace {

// A READY dataset of one shot, over a source in memory.
std::unique_ptr<dataset::Dataset> FakeDataset(const std::string& name) {
  auto fake = std::make_unique<source::FakeSource>(4);
  fake->AddShot(1, {source::FakeTrace{{0, 0, 0, 0}, {}}});
  fake->Finish();
  dataset::DatasetSpec spec;
  spec.name = name;
  return dataset::Dataset::FromSource(spec, std::move(fake));
}

class GateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* d = std::getenv("TEST_TMPDIR");
    const std::string path = std::string(d ? d : "/tmp") + "/gate_tokens";
    std::ofstream(path) << "bob b0b\nwriter w1\n";
    tokens_ = *TokenStore::Load(path);
    registry_.at(0).name = "line1";
    registry_.at(0).SetLoaded(FakeDataset("line1"));
    registry_.at(1).name = "line2";
    registry_.at(1).SetFailed(absl::DataLossError("a.sgy: byte 3225: not SEG-Y"));
  }

  Gate::Options Options() {
    Gate::Options o;
    o.tokens = tokens_.get();
    o.access.allow["bob"] = {"line1", "line2"};
    o.access.writers = {"writer"};
    o.draining = &draining_;
    o.max_streams = 2;
    o.max_streams_per_peer = 1;
    o.log = false;
    return o;
  }

  static Caller As(const std::string& token, const std::string& peer = "ipv4:10.0.0.1:4000") {
    Caller c;
    if (!token.empty()) c.authorization = "Bearer " + token;
    c.peer = peer;
    return c;
  }

  int64_t Rejected(Rpc rpc, absl::StatusCode code) const {
    return counters_.rejected_by_rpc[static_cast<int>(rpc)][static_cast<int>(code)].load();
  }

  std::unique_ptr<TokenStore> tokens_;
  dataset::DatasetRegistry registry_{2};
  ServiceCounters counters_;
  std::atomic<bool> draining_{false};
};

TEST_F(GateTest, ChecksInOrderAndCountsEveryRefusalOnceByRpcAndCode) {
  Gate gate(&registry_, &counters_, Options());
  // Authentication first, for every RPC.
  EXPECT_EQ(gate.Enter(Rpc::kListDatasets, As("")).status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(gate.Enter(Rpc::kStreamJob, As("nope"), "line1").status().code(),
            absl::StatusCode::kUnauthenticated);
  // The dataset: unknown (with the closest name the caller may read), not READY.
  auto unknown = gate.Enter(Rpc::kGetDataset, As("b0b"), "lin2");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(unknown.status().message().find("did you mean 'line2'?"), absl::string_view::npos)
      << unknown.status();
  auto failed = gate.Enter(Rpc::kStreamShots, As("b0b"), "line2");
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(failed.status().message().find("not SEG-Y"), absl::string_view::npos);
  // Writing needs a writer's token.
  EXPECT_EQ(gate.Enter(Rpc::kWriteShots, As("b0b")).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(gate.Enter(Rpc::kWriteShots, As("w1")).ok());
  // The request's own check comes after the gate's, and its refusal is counted too.
  auto bad = gate.Enter(Rpc::kWriteShots, As("w1"), "", [] {
    return absl::InvalidArgumentError("start.dataset: bad");
  });
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(counters_.streams_rejected.load(), 6);
  EXPECT_EQ(Rejected(Rpc::kListDatasets, absl::StatusCode::kUnauthenticated), 1);
  EXPECT_EQ(Rejected(Rpc::kStreamJob, absl::StatusCode::kUnauthenticated), 1);
  EXPECT_EQ(Rejected(Rpc::kGetDataset, absl::StatusCode::kNotFound), 1);
  EXPECT_EQ(Rejected(Rpc::kStreamShots, absl::StatusCode::kFailedPrecondition), 1);
  EXPECT_EQ(Rejected(Rpc::kWriteShots, absl::StatusCode::kPermissionDenied), 1);
  EXPECT_EQ(Rejected(Rpc::kWriteShots, absl::StatusCode::kInvalidArgument), 1);
  EXPECT_EQ(counters_.rejected_by_code[static_cast<int>(absl::StatusCode::kUnauthenticated)].load(),
            2);
  EXPECT_EQ(counters_.active_streams.load(), 0);  // a refusal is never a running stream
  EXPECT_EQ(gate.running_streams(), 0u);
}

TEST_F(GateTest, StreamSlotsAreTakenLastAndGivenBackWithThePass) {
  Gate gate(&registry_, &counters_, Options());
  auto a = gate.Enter(Rpc::kStreamShots, As("w1", "ipv4:10.0.0.1:1"), "line1");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(gate.running_streams(), 1u);
  // One stream per peer address (the port does not count).
  auto same_peer = gate.Enter(Rpc::kStreamJob, As("w1", "ipv4:10.0.0.1:2"), "line1");
  EXPECT_EQ(same_peer.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(same_peer.status().message().find("max_streams_per_peer"), absl::string_view::npos);
  auto b = gate.Enter(Rpc::kStreamJob, As("w1", "ipv4:10.0.0.2:1"), "line1");
  ASSERT_TRUE(b.ok());
  auto c = gate.Enter(Rpc::kStreamShots, As("w1", "ipv4:10.0.0.3:1"), "line1");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(c.status().message().find("max_streams"), absl::string_view::npos);
  // A request whose own check fails takes no slot.
  a->reset();
  EXPECT_EQ(gate.running_streams(), 1u);
  auto checked = gate.Enter(Rpc::kStreamShots, As("w1", "ipv4:10.0.0.1:3"), "line1",
                            [] { return absl::InvalidArgumentError("window"); });
  EXPECT_EQ(checked.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(gate.running_streams(), 1u);
  EXPECT_TRUE(gate.Enter(Rpc::kStreamShots, As("w1", "ipv4:10.0.0.1:4"), "line1").ok());
  EXPECT_EQ(gate.running_streams(), 1u);  // the pass went at the end of that statement
  EXPECT_EQ(Rejected(Rpc::kStreamJob, absl::StatusCode::kResourceExhausted), 1);
  EXPECT_EQ(Rejected(Rpc::kStreamShots, absl::StatusCode::kResourceExhausted), 1);
  EXPECT_EQ(Rejected(Rpc::kStreamShots, absl::StatusCode::kInvalidArgument), 1);
  // Unary calls take no slot.
  ASSERT_TRUE(gate.Enter(Rpc::kListDatasets, As("w1")).ok());
  EXPECT_EQ(gate.running_streams(), 1u);
}

// Writes take slots of their own (max_writes), from any peer, apart from the streams'.
TEST_F(GateTest, WritesTakeSlotsOfTheirOwnUpToMaxWrites) {
  Gate::Options o = Options();
  o.max_writes = 2;
  Gate gate(&registry_, &counters_, o);
  auto w1 = gate.Enter(Rpc::kWriteShots, As("w1", "ipv4:10.0.0.1:1"));
  ASSERT_TRUE(w1.ok()) << w1.status();
  auto w2 = gate.Enter(Rpc::kWriteShots, As("w1", "ipv4:10.0.0.1:2"));
  ASSERT_TRUE(w2.ok()) << w2.status();  // the same peer may run several
  auto w3 = gate.Enter(Rpc::kWriteShots, As("w1", "ipv4:10.0.0.9:1"));
  EXPECT_EQ(w3.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(w3.status().message().find("2 writes, its limit (max_writes)"),
            absl::string_view::npos) << w3.status();
  EXPECT_EQ(Rejected(Rpc::kWriteShots, absl::StatusCode::kResourceExhausted), 1);
  // Writes hold no stream slot, and streams none of the writes'.
  EXPECT_EQ(gate.running_streams(), 0u);
  auto stream = gate.Enter(Rpc::kStreamShots, As("w1", "ipv4:10.0.0.5:1"), "line1");
  EXPECT_TRUE(stream.ok()) << stream.status();
  w1->reset();  // a write ends: its slot goes back
  EXPECT_TRUE(gate.Enter(Rpc::kWriteShots, As("w1", "ipv4:10.0.0.9:1")).ok());
}

// Every admitted call's end is counted in one place, Pass::End: streams are numbered and
// running from Enter to End, writes count as committed or failed, and a call dropped
// without saying its end counts as UNKNOWN.
TEST_F(GateTest, EveryCallsEndIsCountedOnceByThePass) {
  Gate gate(&registry_, &counters_, Options());
  auto ended = [&](Rpc rpc, absl::StatusCode code) {
    return counters_.ended_by_rpc[static_cast<int>(rpc)][static_cast<int>(code)].load();
  };
  auto a = gate.Enter(Rpc::kStreamShots, As("w1", "ipv4:10.0.0.1:1"), "line1");
  auto b = gate.Enter(Rpc::kStreamJob, As("w1", "ipv4:10.0.0.2:1"), "line1");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ((*a)->id(), 1);
  EXPECT_EQ((*b)->id(), 2);
  EXPECT_EQ(counters_.active_streams.load(), 2);
  EXPECT_EQ(counters_.streams_started.load(), 2);
  (*a)->End(absl::OkStatus(), "stream 1: OK");
  (*a)->End(absl::InternalError("twice"));  // once only
  EXPECT_EQ(counters_.active_streams.load(), 1);
  EXPECT_EQ(counters_.finished_by_code[0].load(), 1);
  EXPECT_EQ(ended(Rpc::kStreamShots, absl::StatusCode::kOk), 1);
  EXPECT_EQ(ended(Rpc::kStreamShots, absl::StatusCode::kInternal), 0);
  b->reset();  // dropped without End
  EXPECT_EQ(counters_.active_streams.load(), 0);
  EXPECT_EQ(ended(Rpc::kStreamJob, absl::StatusCode::kUnknown), 1);
  auto w = gate.Enter(Rpc::kWriteShots, As("w1"));
  ASSERT_TRUE(w.ok());
  EXPECT_EQ((*w)->id(), 0);  // not a stream
  (*w)->End(absl::DataLossError("checksum"));
  EXPECT_EQ(counters_.writes_failed_by_code[static_cast<int>(absl::StatusCode::kDataLoss)].load(),
            1);
  EXPECT_EQ(counters_.writes_committed.load(), 0);
  auto l = gate.Enter(Rpc::kListDatasets, As("w1"));
  ASSERT_TRUE(l.ok());
  (*l)->End(absl::OkStatus());
  EXPECT_EQ(ended(Rpc::kListDatasets, absl::StatusCode::kOk), 1);
  EXPECT_EQ(counters_.active_streams.load(), 0);  // unary calls never ran as streams
}

TEST_F(GateTest, DrainingRefusesNewStreamsAndWritesButNotMetadata) {
  Gate gate(&registry_, &counters_, Options());
  draining_ = true;
  EXPECT_TRUE(gate.Enter(Rpc::kListDatasets, As("w1")).ok());
  auto write = gate.Enter(Rpc::kWriteShots, As("w1"));
  EXPECT_EQ(write.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(write.status().message().find("shutting down"), absl::string_view::npos);
  EXPECT_EQ(Rejected(Rpc::kWriteShots, absl::StatusCode::kUnavailable), 1);
}

TEST_F(GateTest, WithoutTokensEveryoneIsAnonymousAndMayReadAndWrite) {
  Gate::Options open = Options();
  open.tokens = nullptr;
  open.access = {};
  Gate gate(&registry_, &counters_, open);
  auto pass = gate.Enter(Rpc::kWriteShots, As(""));
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ((*pass)->who(), "");
  EXPECT_EQ((*pass)->peer_address(), "ipv4:10.0.0.1");
  EXPECT_TRUE(gate.MayRead("", "line1"));
}

}  // namespace
}  // namespace shotstream::service

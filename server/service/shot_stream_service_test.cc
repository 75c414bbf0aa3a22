// The service in-process on a real loopback port, driven by the generated stub.
#include "server/service/shot_stream_service.h"

#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "grpcpp/grpcpp.h"
#include "grpcpp/impl/service_type.h"
#include "gtest/gtest.h"
#include "server/segy/test_writer.h"
#include "server/stream/reader_pool.h"
#include "shotstream/v1/shotstream.grpc.pb.h"

namespace shotstream::service {
namespace {

namespace v1 = ::shotstream::v1;

int ThreadCount() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  }
  return -1;
}

class ServiceTest : public ::testing::Test {
 protected:
  static constexpr int kShots = 30;
  static constexpr int kTracesPerShot = 20;
  static constexpr int kSamples = 1000;

  void SetUp() override {
    const char* d = std::getenv("TEST_TMPDIR");
    const std::string path = std::string(d ? d : "/tmp") + "/svc.sgy";
    segy::TestFileSpec spec;
    spec.n_samples = kSamples;
    for (int s = 0; s < kShots; ++s) {
      for (int t = 0; t < kTracesPerShot; ++t) {
        segy::TestTrace tr;
        tr.fields = {{9, 4, s}};
        tr.samples.assign(kSamples, static_cast<float>(s));
        spec.traces.push_back(tr);
      }
    }
    segy::WriteSegyFile(path, spec);
    dataset::DatasetSpec ds;
    ds.name = "d";
    ds.globs = {path};
    ds.io = io_;
    datasets_ = std::make_unique<dataset::DatasetRegistry>(1);
    datasets_->at(0).name = "d";
    ASSERT_TRUE(datasets_->at(0).Load(ds).ok());
    pool_ = std::make_unique<stream::ReaderPool>(2);
    disk_ = std::make_unique<stream::ReaderPool>(1);
    job_disk_ = std::make_unique<stream::ReaderPool>(1);
    if (max_inflight_bytes_ > 0) budget_ = std::make_unique<stream::ByteBudget>(max_inflight_bytes_);
    jobs_ = std::make_unique<jobs::JobRegistry>("", absl::Minutes(1), &counters_.jobs);
    Gate::Options gate;
    gate.log = false;
    gate_ = std::make_unique<Gate>(datasets_.get(), &counters_, gate);
    ServiceParts parts;
    parts.datasets = datasets_.get();
    parts.gate = gate_.get();
    parts.readers = pool_.get();
    parts.disk = disk_.get();
    parts.job_disk = job_disk_.get();
    parts.budget = budget_.get();
    parts.advisor = &advisor_;
    parts.jobs = jobs_.get();
    parts.counters = &counters_;
    parts.limits.default_chunk_bytes = 1 << 20;
    parts.log_streams = false;
    parts.max_page_shots = max_page_shots_;
    service_ = MakeShotStreamService(parts);
    grpc::ServerBuilder b;
    int port = 0;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    b.RegisterService(service_.get());
    server_ = b.BuildAndStart();
    ASSERT_NE(port, 0);
    // Small windows so that a slow reader really pushes back on the server.
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 64 * 1024);
    args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
    args.SetMaxReceiveMessageSize(-1);
    stub_ = v1::ShotStream::NewStub(grpc::CreateCustomChannel(
        "127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials(), args));
  }

  void TearDown() override {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
    server_->Wait();
  }

  v1::StreamShotsRequest Request(int repeats, uint32_t depth) {
    v1::StreamShotsRequest r;
    r.set_dataset("d");
    for (int k = 0; k < repeats; ++k) {
      for (int s = 0; s < kShots; ++s) r.add_shot_ids(s);
    }
    r.set_queue_depth(depth);
    return r;
  }

  bool WaitFor(const std::function<bool()>& pred) {
    for (int i = 0; i < 500; ++i) {
      if (pred()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return pred();
  }

  uint64_t max_inflight_bytes_ = 0;
  uint32_t max_page_shots_ = 250'000;
  io::IoMode io_ = io::IoMode::kPread;
  ServiceCounters counters_;
  std::unique_ptr<dataset::DatasetRegistry> datasets_;
  std::unique_ptr<stream::ByteBudget> budget_;
  stream::EncodingAdvisor advisor_{2};
  std::unique_ptr<stream::ReaderPool> disk_;
  std::unique_ptr<stream::ReaderPool> job_disk_;
  std::unique_ptr<jobs::JobRegistry> jobs_;
  std::unique_ptr<stream::ReaderPool> pool_;
  std::unique_ptr<Gate> gate_;
  std::unique_ptr<grpc::Service> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::ShotStream::Stub> stub_;
};

TEST_F(ServiceTest, SlowConsumerNeverMakesTheServerHoldMoreThanItsQueueDepth) {
  grpc::ClientContext ctx;
  auto reader = stub_->StreamShots(&ctx, Request(2, 3));
  v1::ShotChunk chunk;
  int shots = 0;
  while (reader->Read(&chunk)) {
    if (chunk.last()) {
      EXPECT_EQ(chunk.shot_id(), shots % kShots);  // request order
      ++shots;
      if (shots < 10) std::this_thread::sleep_for(std::chrono::milliseconds(30));
    }
    EXPECT_LE(counters_.shots_held.load(), 3);
  }
  ASSERT_TRUE(reader->Finish().ok());
  EXPECT_EQ(shots, 2 * kShots);
  EXPECT_LE(counters_.max_shots_held_by_one_stream.load(), 3);
  EXPECT_GE(counters_.max_shots_held_by_one_stream.load(), 1);
  EXPECT_TRUE(WaitFor([&] { return counters_.active_streams.load() == 0; }));
  EXPECT_EQ(counters_.shots_held.load(), 0);
}

TEST_F(ServiceTest, CancelMidStreamHundredTimesFreesEverything) {
  auto cancel_mid_stream = [&](int i) {
    grpc::ClientContext ctx;
    auto reader = stub_->StreamShots(&ctx, Request(50, 4));
    v1::ShotChunk chunk;
    for (int k = 0; k < 1 + i % 5 && reader->Read(&chunk); ++k) {
    }
    ctx.TryCancel();
    while (reader->Read(&chunk)) {
    }
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  };
  // Warm up so that gRPC's own (bounded) thread pools have grown before counting.
  for (int i = 0; i < 30; ++i) cancel_mid_stream(i);
  const int threads_before = ThreadCount();
  for (int i = 0; i < 100; ++i) cancel_mid_stream(i);
  ASSERT_TRUE(WaitFor([&] {
    return counters_.active_streams.load() == 0 && counters_.reads_in_flight.load() == 0;
  }));
  EXPECT_EQ(counters_.shots_held.load(), 0);
  EXPECT_GE(counters_.streams_cancelled.load(), 1);
  // gRPC's own pools may still grow by a few threads; a thread per stream would add 100.
  EXPECT_LE(ThreadCount(), threads_before + 8);
  // Other clients are unaffected.
  grpc::ClientContext ctx;
  auto reader = stub_->StreamShots(&ctx, Request(1, 2));
  v1::ShotChunk chunk;
  int shots = 0;
  while (reader->Read(&chunk)) shots += chunk.last();
  EXPECT_TRUE(reader->Finish().ok());
  EXPECT_EQ(shots, kShots);
}

// The same file mapped: its big-endian IEEE traces go out as stored where accepted.
class ZeroCopyTest : public ServiceTest {
 protected:
  void SetUp() override {
    io_ = io::IoMode::kMmap;
    ServiceTest::SetUp();
  }
};

TEST_F(ZeroCopyTest, StoredBigEndianSamplesOnlyWhereAcceptedWithTheCrcOfWhatIsSent) {
  for (const bool accept : {true, false}) {
    grpc::ClientContext ctx;
    v1::StreamShotsRequest request = Request(2, 3);
    request.mutable_selection()->set_accept_big_endian(accept);
    // 3 traces a chunk: 7 per shot.
    request.mutable_selection()->set_max_chunk_bytes(3 * kSamples * 4 + 5);
    auto reader = stub_->StreamShots(&ctx, request);
    v1::ShotChunk chunk;
    std::string bytes;
    int shots = 0, chunks = 0;
    while (reader->Read(&chunk)) {
      ++chunks;
      EXPECT_EQ(chunk.big_endian(), accept);
      EXPECT_EQ(chunk.offset(), bytes.size());
      bytes += chunk.samples();
      if (!chunk.last()) continue;
      EXPECT_EQ(chunk.crc32(), ::crc32(0, reinterpret_cast<const Bytef*>(bytes.data()),
                                       static_cast<uInt>(bytes.size())));
      const float want = static_cast<float>(shots % kShots);
      uint32_t u;
      std::memcpy(&u, &want, 4);
      if (accept) u = __builtin_bswap32(u);
      ASSERT_EQ(bytes.size(), size_t{kTracesPerShot} * kSamples * 4);
      for (size_t i = 0; i < bytes.size(); i += 4) {
        uint32_t got;
        std::memcpy(&got, bytes.data() + i, 4);
        ASSERT_EQ(got, u) << "shot " << shots << " byte " << i;
      }
      bytes.clear();
      ++shots;
    }
    ASSERT_TRUE(reader->Finish().ok());
    EXPECT_EQ(shots, 2 * kShots);
    EXPECT_EQ(chunks, 7 * shots);
  }
  EXPECT_EQ(counters_.shots_sent_zero_copy.load(), 2 * kShots);  // the accepting pass only
  EXPECT_TRUE(WaitFor([&] { return counters_.active_streams.load() == 0; }));
  EXPECT_EQ(counters_.shots_held.load(), 0);
}

TEST_F(ZeroCopyTest, CancelMidStreamWhileSendingStoredFreesEverything) {
  for (int i = 0; i < 40; ++i) {
    grpc::ClientContext ctx;
    v1::StreamShotsRequest request = Request(50, 4);
    request.mutable_selection()->set_accept_big_endian(true);
    auto reader = stub_->StreamShots(&ctx, request);
    v1::ShotChunk chunk;
    for (int k = 0; k < 1 + i % 5 && reader->Read(&chunk); ++k) {
    }
    ctx.TryCancel();
    while (reader->Read(&chunk)) {
    }
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  ASSERT_TRUE(WaitFor([&] {
    return counters_.active_streams.load() == 0 && counters_.reads_in_flight.load() == 0;
  }));
  EXPECT_EQ(counters_.shots_held.load(), 0);
  EXPECT_EQ(counters_.inflight_bytes.load(), 0);
}

class BudgetTest : public ServiceTest {
 protected:
  static constexpr uint64_t kShotBytes = kTracesPerShot * kSamples * 4;
  void SetUp() override {
    max_inflight_bytes_ = 5 * kShotBytes / 2;  // two and a half shots for all streams
    ServiceTest::SetUp();
  }
};

TEST_F(BudgetTest, StreamsShareTheInflightBudgetAndAllFinish) {
  constexpr int kStreams = 4;
  std::vector<std::thread> threads;
  std::vector<int> shots(kStreams, 0);
  std::vector<bool> in_order(kStreams, true);
  for (int k = 0; k < kStreams; ++k) {
    threads.emplace_back([&, k] {
      grpc::ClientContext ctx;
      auto reader = stub_->StreamShots(&ctx, Request(3, 4));
      v1::ShotChunk chunk;
      while (reader->Read(&chunk)) {
        if (!chunk.last()) continue;
        in_order[k] = in_order[k] && chunk.shot_id() == shots[k] % kShots;
        ++shots[k];
        if (k == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));  // one slow
      }
      EXPECT_TRUE(reader->Finish().ok());
    });
  }
  for (auto& t : threads) t.join();
  for (int k = 0; k < kStreams; ++k) {
    EXPECT_EQ(shots[k], 3 * kShots) << k;
    EXPECT_TRUE(in_order[k]) << k;
  }
  // Within the budget, plus at most one shot per stream (the progress guarantee).
  EXPECT_LE(counters_.inflight_bytes_peak.load(),
            static_cast<int64_t>(max_inflight_bytes_ + kStreams * kShotBytes));
  EXPECT_TRUE(WaitFor([&] { return counters_.active_streams.load() == 0; }));
  EXPECT_EQ(counters_.inflight_bytes.load(), 0);
}

TEST_F(BudgetTest, CancelWhileWaitingForTheBudget) {
  for (int i = 0; i < 30; ++i) {
    const int64_t waits_before = counters_.budget_waits.load();
    grpc::ClientContext a, b;
    auto ra = stub_->StreamShots(&a, Request(5, 4));
    auto rb = stub_->StreamShots(&b, Request(5, 4));
    v1::ShotChunk chunk;
    ra->Read(&chunk);
    rb->Read(&chunk);
    // Two and a half shots for both, four read ahead each: one of them is waiting now.
    EXPECT_TRUE(WaitFor([&] { return counters_.budget_waits.load() > waits_before; }));
    a.TryCancel();
    b.TryCancel();
    while (ra->Read(&chunk)) {
    }
    while (rb->Read(&chunk)) {
    }
    ra->Finish();
    rb->Finish();
  }
  EXPECT_TRUE(WaitFor([&] {
    return counters_.active_streams.load() == 0 && counters_.inflight_bytes.load() == 0;
  }));
}

class PageLimitTest : public ServiceTest {
 protected:
  PageLimitTest() { max_page_shots_ = 12; }
};

// page_size 0 (or above the limit) gets the server's page limit, never every shot in one
// message; the pages' tokens lead through every shot, in catalog order.
TEST_F(PageLimitTest, PageSizeZeroGetsTheLimitAndATokenForTheRest) {
  for (uint32_t asked : {0u, 1000u}) {
    std::vector<int64_t> ids;
    std::string token;
    int pages = 0;
    do {
      v1::GetDatasetRequest req;
      req.set_name("d");
      req.set_page_size(asked);
      req.set_page_token(token);
      v1::DatasetInfo page;
      grpc::ClientContext ctx;
      ASSERT_TRUE(stub_->GetDataset(&ctx, req, &page).ok());
      EXPECT_LE(page.shot_ids_size(), 12);
      ids.insert(ids.end(), page.shot_ids().begin(), page.shot_ids().end());
      token = page.next_page_token();
      ++pages;
    } while (!token.empty());
    EXPECT_EQ(pages, 3) << "asked " << asked;  // 12 + 12 + 6
    ASSERT_EQ(ids.size(), static_cast<size_t>(kShots));
    for (int s = 0; s < kShots; ++s) EXPECT_EQ(ids[s], s);
  }
}

TEST_F(ServiceTest, ValidationErrorsBeforeAnyData) {
  struct Case {
    std::function<void(v1::StreamShotsRequest*)> edit;
    grpc::StatusCode code;
    std::string says;
  };
  const std::vector<Case> cases = {
      {[](auto* r) { r->set_dataset("nope"); }, grpc::StatusCode::NOT_FOUND, "nope"},
      {[](auto* r) { r->add_shot_ids(12345); }, grpc::StatusCode::NOT_FOUND, "12345"},
      {[](auto* r) { r->set_queue_depth(1000); }, grpc::StatusCode::INVALID_ARGUMENT,
       "max_queue_depth"},
      {[](auto* r) { r->mutable_selection()->add_headers("bogus"); },
       grpc::StatusCode::INVALID_ARGUMENT, "bogus"},
  };
  for (const Case& c : cases) {
    v1::StreamShotsRequest r = Request(1, 2);
    c.edit(&r);
    grpc::ClientContext ctx;
    auto reader = stub_->StreamShots(&ctx, r);
    v1::ShotChunk chunk;
    EXPECT_FALSE(reader->Read(&chunk));
    grpc::Status s = reader->Finish();
    EXPECT_EQ(s.error_code(), c.code);
    EXPECT_NE(s.error_message().find(c.says), std::string::npos) << s.error_message();
  }
}

}  // namespace
}  // namespace shotstream::service

namespace shotstream::service {
namespace {

// A refused StreamJob (before or after its first message) is counted and never runs: no
// stream started, none left active; an admitted one counts once and ends.
TEST_F(ServiceTest, RefusedJobStreamsAreCountedAndNeverActive) {
  auto start = [](std::string dataset, std::vector<int64_t> ids, uint64_t seed) {
    v1::JobRequest m;
    v1::JobStart* s = m.mutable_start();
    s->set_dataset(std::move(dataset));
    s->set_job("j");
    for (int64_t id : ids) s->add_shot_ids(id);
    s->set_seed(seed);
    return m;
  };
  v1::JobRequest progress;
  progress.mutable_progress()->set_done(1);
  struct Case {
    std::vector<v1::JobRequest> messages;
    grpc::StatusCode code;
    std::string says;
  };
  const std::vector<Case> refused = {
      {{start("nope", {1}, 1)}, grpc::StatusCode::NOT_FOUND, "unknown dataset 'nope'"},
      {{start("d", {1, 99999}, 1)}, grpc::StatusCode::NOT_FOUND, "99999"},
      {{progress}, grpc::StatusCode::INVALID_ARGUMENT, "must be `start`"},
      {{}, grpc::StatusCode::INVALID_ARGUMENT, "before its first message"},
  };
  int64_t rejected = 0;
  for (const Case& c : refused) {
    grpc::ClientContext ctx;
    auto call = stub_->StreamJob(&ctx);
    for (const auto& m : c.messages) call->Write(m);
    call->WritesDone();
    v1::ShotChunk chunk;
    EXPECT_FALSE(call->Read(&chunk));
    const grpc::Status s = call->Finish();
    EXPECT_EQ(s.error_code(), c.code) << s.error_message();
    EXPECT_NE(s.error_message().find(c.says), std::string::npos) << s.error_message();
    ++rejected;
    EXPECT_TRUE(WaitFor([&] { return counters_.streams_rejected.load() == rejected; }));
  }
  const int kJob = static_cast<int>(Rpc::kStreamJob);
  EXPECT_EQ(counters_.rejected_by_rpc[kJob][grpc::StatusCode::NOT_FOUND].load(), 2);
  EXPECT_EQ(counters_.rejected_by_rpc[kJob][grpc::StatusCode::INVALID_ARGUMENT].load(), 2);
  EXPECT_EQ(counters_.streams_started.load(), 0);
  EXPECT_EQ(counters_.active_streams.load(), 0);
  // A consumer that disagrees with a running job is refused the same way.
  grpc::ClientContext first_ctx;
  auto first = stub_->StreamJob(&first_ctx);
  first->Write(start("d", {1, 2, 3}, 7));
  v1::ShotChunk chunk;
  ASSERT_TRUE(first->Read(&chunk));  // it runs
  EXPECT_EQ(counters_.streams_started.load(), 1);
  grpc::ClientContext other_ctx;
  auto other = stub_->StreamJob(&other_ctx);
  other->Write(start("d", {1, 2, 3}, 8));
  other->WritesDone();
  EXPECT_FALSE(other->Read(&chunk));
  const grpc::Status disagree = other->Finish();
  EXPECT_EQ(disagree.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(disagree.error_message().find("disagree on the seed"), std::string::npos);
  first_ctx.TryCancel();
  while (first->Read(&chunk)) {
  }
  first->Finish();
  EXPECT_TRUE(WaitFor([&] { return counters_.active_streams.load() == 0; }));
  EXPECT_EQ(counters_.streams_started.load(), 1);
  EXPECT_EQ(counters_.streams_rejected.load(), rejected + 1);
}

}  // namespace
}  // namespace shotstream::service

// The C++ client against a real server in this process (ShotStreamServer on a loopback
// port), over a SEG-Y file written here: values, headers, routing of the summary fields,
// and a Cancel from another thread while Next waits for a server that went away.
#include "shotstream/client/client.h"

#include <algorithm>
#include <map>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "server/app/shotstream_server.h"
#include "server/segy/test_writer.h"

namespace shotstream::client {
namespace {

constexpr int kShots = 4, kTraces = 3, kSamples = 50;

float Value(int shot, int trace, int sample) { return shot * 1000.0f + trace * 100.0f + sample; }

// Shots 1..kShots (field record, bytes 9-12), offsets trace*25 (bytes 37-40), source x/y
// (bytes 73-80) shot*10 and -shot.
config::ServerConfig OneDataset(const std::string& name, const std::string& shot_key) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(dir ? dir : "/tmp") + "/client_" + name + ".sgy";
  segy::TestFileSpec spec;
  spec.n_samples = kSamples;
  for (int s = 1; s <= kShots; ++s) {
    for (int t = 0; t < kTraces; ++t) {
      segy::TestTrace tr;
      tr.fields = {{9, 4, s}, {37, 4, t * 25}, {73, 4, s * 10}, {77, 4, -s}};
      for (int k = 0; k < kSamples; ++k) tr.samples.push_back(Value(s, t, k));
      spec.traces.push_back(tr);
    }
  }
  segy::WriteSegyFile(path, spec);
  config::ServerConfig c;
  c.listen = "127.0.0.1:0";
  c.grace_period = absl::ZeroDuration();
  c.drain_delay = absl::ZeroDuration();
  c.log_streams = false;
  config::DatasetConfig d;
  d.name = name;
  d.files = {path};
  d.shot_key = shot_key;
  c.datasets.push_back(d);
  return c;
}

TEST(ClientTest, StreamsShotsInRequestOrderWithTheirValuesAndHeaders) {
  auto server = server::ShotStreamServer::Start(OneDataset("d", "field_record"));
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE((*server)->AwaitLoaded().has_value());  // it listens while they load
  auto client = Client::Connect((*server)->address());
  ASSERT_TRUE(client.ok()) << client.status();
  auto info = (*client)->GetDataset("d");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->shot_ids, (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(info->shot_trace_counts, (std::vector<uint32_t>(kShots, kTraces)));
  EXPECT_EQ(info->n_samples, static_cast<uint32_t>(kSamples));
  EXPECT_NE(std::find(info->header_fields.begin(), info->header_fields.end(), "offset"),
            info->header_fields.end());
  EXPECT_TRUE(info->source_positions.empty());
  // The same shots a page at a time, holding one page.
  std::string token;
  std::vector<int64_t> paged;
  std::vector<size_t> sizes;
  do {
    auto page = (*client)->GetDatasetPage("d", 3, &token);
    ASSERT_TRUE(page.ok()) << page.status();
    EXPECT_EQ(page->n_shots, static_cast<uint64_t>(kShots));
    sizes.push_back(page->shot_ids.size());
    paged.insert(paged.end(), page->shot_ids.begin(), page->shot_ids.end());
  } while (!token.empty());
  EXPECT_EQ(paged, info->shot_ids);
  EXPECT_EQ(sizes, (std::vector<size_t>{3, 1}));
  std::string none;
  EXPECT_EQ((*client)->GetDatasetPage("nope", 3, &none).status().code(),
            absl::StatusCode::kNotFound);
  std::string bad = "x";
  EXPECT_EQ((*client)->GetDatasetPage("d", 3, &bad).status().code(),
            absl::StatusCode::kInvalidArgument);

  StreamOptions so;
  so.headers = {"offset"};
  so.max_chunk_bytes = kSamples * 4;  // a trace a message: every shot in several chunks
  const std::vector<int64_t> order = {3, 1, 4, 1};
  auto reader = (*client)->Stream("d", order, so);
  Shot shot;
  for (size_t i = 0; i < order.size(); ++i) {
    auto more = reader->Next(&shot);
    ASSERT_TRUE(more.ok()) << more.status();
    ASSERT_TRUE(*more);
    EXPECT_EQ(shot.index, i);
    ASSERT_EQ(shot.shot_id, order[i]);
    ASSERT_EQ(shot.samples.size(), size_t{kTraces} * kSamples);
    for (int t = 0; t < kTraces; ++t) {
      for (int k = 0; k < kSamples; ++k) {
        ASSERT_EQ(shot.samples.data()[t * kSamples + k], Value(order[i], t, k));
      }
    }
    ASSERT_NE(shot.header("offset"), nullptr);
    EXPECT_EQ(*shot.header("offset"), (std::vector<double>{0, 25, 50}));
  }
  auto end = reader->Next(&shot);
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(*end);
  EXPECT_EQ(reader->checksums_verified(), order.size());
}

TEST(ClientTest, SourcePositionsOfASourceXyDatasetReachTheSummary) {
  auto server = server::ShotStreamServer::Start(OneDataset("xy", "source_xy"));
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE((*server)->AwaitLoaded().has_value());  // it listens while they load
  auto client = Client::Connect((*server)->address());
  ASSERT_TRUE(client.ok());
  auto info = (*client)->GetDataset("xy");
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_EQ(info->source_positions.size(), size_t{kShots});
  for (int s = 1; s <= kShots; ++s) {
    const DatasetSummary::SourcePosition& p = info->source_positions[s - 1];
    EXPECT_EQ(p.shot_id, s);
    EXPECT_EQ(p.x, s * 10.0);
    EXPECT_EQ(p.y, -s);
  }
}

// The server goes away in the middle of a stream; the client, allowed retries and a long
// reconnect wait, backs off and waits for it to come back. A Cancel from another thread
// ends that wait: Next returns CANCELLED (before, it waited out reconnect_timeout, here an
// hour, far beyond the test's timeout).
TEST(ClientTest, CancelFromAnotherThreadEndsANextWaitingForAServerToComeBack) {
  // Shots of 12 MB, asked for 20 times: more than gRPC's flow-control windows hold, so the
  // stream is still running when the server goes.
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(dir ? dir : "/tmp") + "/client_big.sgy";
  segy::TestFileSpec spec;
  spec.n_samples = 1'000'000;
  for (int s = 1; s <= 2; ++s) {
    for (int t = 0; t < 3; ++t) {
      segy::TestTrace tr;
      tr.fields = {{9, 4, s}};
      tr.samples.assign(spec.n_samples, static_cast<float>(s));
      spec.traces.push_back(tr);
    }
  }
  segy::WriteSegyFile(path, spec);
  config::ServerConfig c = OneDataset("unused", "field_record");
  c.datasets[0].name = "big";
  c.datasets[0].files = {path};
  auto server = server::ShotStreamServer::Start(c);
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE((*server)->AwaitLoaded().has_value());  // it listens while they load
  ClientOptions options;
  options.retries = 5;
  options.reconnect_timeout = absl::Hours(1);
  auto client = Client::Connect({(*server)->address()}, options);
  ASSERT_TRUE(client.ok());
  std::vector<int64_t> ids;
  for (int i = 0; i < 20; ++i) ids.push_back(1 + i % 2);
  StreamOptions so;
  so.queue_depth = 1;
  auto reader = (*client)->Stream("big", ids, so);
  Shot shot;
  ASSERT_TRUE(*reader->Next(&shot));  // the stream runs
  (*server)->Drain();                 // grace 0: the stream is cut, UNAVAILABLE
  server->reset();                    // and nothing listens there any more
  std::thread canceller([&] {
    // Cancel once the stream has failed and is waiting to reconnect.
    while (reader->reconnects() == 0) absl::SleepFor(absl::Milliseconds(5));
    reader->Cancel();
  });
  absl::StatusOr<bool> next = true;
  int received = 1;
  while (next.ok() && *next) {
    next = reader->Next(&shot);
    if (next.ok() && *next) ++received;
  }
  canceller.join();
  EXPECT_EQ(next.status().code(), absl::StatusCode::kCancelled) << next.status();
  EXPECT_LT(received, 20);
  EXPECT_GE(reader->reconnects(), 1);
}

TEST(ClientTest, TwoConsumersOfAJobShareItsShotsOnceEachInTheEpochsOrder) {
  auto server = server::ShotStreamServer::Start(OneDataset("j", "field_record"));
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE((*server)->AwaitLoaded().has_value());  // it listens while they load
  auto client = Client::Connect((*server)->address());
  ASSERT_TRUE(client.ok()) << client.status();
  const std::vector<int64_t> ids = {1, 2, 3, 4};
  StreamOptions so;
  so.queue_depth = 1;
  std::vector<int64_t> got[2];
  std::thread consumers[2];
  for (int c = 0; c < 2; ++c) {
    consumers[c] = std::thread([&, c] {
      auto reader = (*client)->StreamJob("j", "fwi", ids, /*epoch=*/1, /*seed=*/9, so);
      Shot shot;
      for (;;) {
        auto more = reader->Next(&shot);
        ASSERT_TRUE(more.ok()) << more.status();
        if (!*more) break;
        EXPECT_EQ(shot.samples.data()[0], Value(static_cast<int>(shot.shot_id), 0, 0));
        got[c].push_back(shot.shot_id);
      }
    });
  }
  for (auto& t : consumers) t.join();
  std::vector<int64_t> all = got[0];
  all.insert(all.end(), got[1].begin(), got[1].end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, ids);
  // Another consumer of the same job naming other shots is refused, naming the job.
  auto late = (*client)->StreamJob("j", "fwi", {1, 2}, 1, 9, so);
  Shot shot;
  auto refused = late->Next(&shot);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
  EXPECT_NE(refused.status().message().find("job 'fwi'"), absl::string_view::npos);
}

// Consumers that join a job whose shots are all done get none, and their streams end at
// once: the server finishes them while their start is still running on its executor,
// which must not end the call (and free it) before the start has returned.
TEST(ClientTest, ConsumersOfAFinishedJobEndAtOnceAndCleanly) {
  auto server = server::ShotStreamServer::Start(OneDataset("jf", "field_record"));
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE((*server)->AwaitLoaded().has_value());
  auto client = Client::Connect((*server)->address());
  ASSERT_TRUE(client.ok()) << client.status();
  const std::vector<int64_t> ids = {1, 2, 3, 4};
  StreamOptions so;
  so.queue_depth = 1;
  Shot shot;
  auto first = (*client)->StreamJob("jf", "done", ids, /*epoch=*/1, /*seed=*/3, so);
  int n = 0;
  for (;;) {
    auto more = first->Next(&shot);
    ASSERT_TRUE(more.ok()) << more.status();
    if (!*more) break;
    ++n;
  }
  ASSERT_EQ(n, 4);
  first.reset();
  for (int i = 0; i < 50; ++i) {
    auto late = (*client)->StreamJob("jf", "done", ids, 1, 3, so);
    auto more = late->Next(&shot);
    ASSERT_TRUE(more.ok()) << i << ": " << more.status();
    EXPECT_FALSE(*more) << i;
  }
}

// A job asks for what a stream can: the same window, conditions, encoding and headers
// give the same shots, sample for sample.
TEST(ClientTest, AJobsShotsAreWhatAStreamWithTheSameSelectionGives) {
  auto server = server::ShotStreamServer::Start(OneDataset("sel", "field_record"));
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE((*server)->AwaitLoaded().has_value());  // it listens while they load
  auto client = Client::Connect((*server)->address());
  ASSERT_TRUE(client.ok()) << client.status();
  const std::vector<int64_t> ids = {1, 2, 3, 4};
  for (const std::string encoding : {"float32", "int16", "lossless", "quantized"}) {
    SCOPED_TRACE(encoding);
    StreamOptions so;
    so.queue_depth = 2;
    so.window = std::make_pair(10u, 30u);
    so.where = {{"offset", 20, 60}};  // traces 1 and 2
    so.headers = {"offset"};
    so.encoding = encoding;
    std::map<int64_t, std::vector<float>> streamed, job;
    auto stream = (*client)->Stream("sel", ids, so);
    Shot shot;
    while (*stream->Next(&shot)) {
      streamed[shot.shot_id].assign(shot.samples.data(),
                                    shot.samples.data() + shot.n_traces * shot.n_samples);
      EXPECT_EQ(*shot.header("offset"), (std::vector<double>{25, 50}));
    }
    auto reader = (*client)->StreamJob("sel", "job-" + encoding, ids, 0, 1, so);
    for (;;) {
      auto more = reader->Next(&shot);
      ASSERT_TRUE(more.ok()) << more.status();
      if (!*more) break;
      EXPECT_EQ(shot.n_traces, 2u);
      EXPECT_EQ(shot.n_samples, 20u);
      EXPECT_EQ(*shot.header("offset"), (std::vector<double>{25, 50}));
      EXPECT_EQ(shot.encoding, encoding);
      job[shot.shot_id].assign(shot.samples.data(),
                               shot.samples.data() + shot.n_traces * shot.n_samples);
    }
    EXPECT_EQ(reader->last_encoding(), encoding);
    ASSERT_EQ(job.size(), 4u);
    EXPECT_EQ(job, streamed);
    // Shot 3, trace 1, sample 10: exact, or within int16's bound (max |x| / 32767 / 2), or
    // quantized's (1e-3 x the shot's RMS, at most its max |x|).
    EXPECT_NEAR(job[3][0], Value(3, 1, 10),
                encoding == "int16" ? 3150.0 / 32767 : encoding == "quantized" ? 3.15 : 0.0);
  }
}

}  // namespace
}  // namespace shotstream::client

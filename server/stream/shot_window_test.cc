// The stream window on its own: a manual executor runs its tasks when the test says, and
// a fake source serves shots from memory, so every interleaving here is deterministic.
#include "server/stream/shot_window.h"

#include <atomic>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/crc32.h"
#include "gtest/gtest.h"
#include "server/stream/reader_pool.h"

namespace shotstream::stream {
namespace {

// Runs tasks only when told, in the order the test chooses.
class ManualExecutor final : public Executor {
 public:
  void Submit(std::function<void()> task) override { tasks_.push_back(std::move(task)); }
  size_t pending() const { return tasks_.size(); }
  bool running() const { return running_; }
  void RunFirst() { Run(/*last=*/false); }
  void RunLast() { Run(/*last=*/true); }
  void RunAll() {
    while (!tasks_.empty()) RunFirst();
  }

 private:
  void Run(bool last) {
    ASSERT_FALSE(tasks_.empty());
    std::function<void()> task = last ? std::move(tasks_.back()) : std::move(tasks_.front());
    if (last) {
      tasks_.pop_back();
    } else {
      tasks_.pop_front();
    }
    running_ = true;
    task();
    running_ = false;
  }
  std::deque<std::function<void()>> tasks_;
  bool running_ = false;
};

class FakeSource;

// Stored traces of the fake source's memory; touch and CRC-32 fail where the source says.
class FakeStored final : public io::StoredTraces {
 public:
  FakeStored(const FakeSource* source, int64_t id, std::vector<const uint8_t*> traces,
             size_t trace_bytes)
      : StoredTraces(std::move(traces), trace_bytes, false), source_(source), id_(id) {}
  absl::Status Touch() const override;
  absl::StatusOr<uint32_t> Crc(size_t first, size_t n, uint32_t crc) const override;
  std::optional<uint32_t> KeptCrc(size_t first, size_t n) const override;

 private:
  const FakeSource* const source_;
  const int64_t id_;
};

// Shots 1..n_shots of n_traces x n_samples float32, sample value shot*1000 + trace; stored
// (sent from "the mapping", the source's own memory) when zero copy is asked for.
class FakeSource final : public ShotSource {
 public:
  FakeSource(int n_shots, uint32_t n_traces, uint32_t n_samples, const ManualExecutor* executor)
      : n_traces_(n_traces), n_samples_(n_samples), executor_(executor) {
    for (int s = 1; s <= n_shots; ++s) {
      std::vector<float>& v = samples_[s];
      for (uint32_t t = 0; t < n_traces; ++t) v.insert(v.end(), n_samples, s * 1000.0f + t);
    }
  }
  uint64_t trace_bytes() const { return uint64_t{n_samples_} * 4; }
  uint64_t shot_bytes() const { return trace_bytes() * n_traces_; }
  const uint8_t* bytes_of(int64_t id) const {
    return reinterpret_cast<const uint8_t*>(samples_.at(id).data());
  }
  std::set<int64_t> fail_read, fail_touch, fail_crc;
  std::set<size_t> fail_piece;  // pieces (of any shot) whose read fails
  mutable std::atomic<int> reads{0};
  mutable std::atomic<int> heads{0};
  mutable std::atomic<int> pieces_read{0};
  mutable std::atomic<int> touches_off_the_executor{0};
  mutable std::atomic<int> crcs_on_the_executor{0};
  mutable std::atomic<int> crcs_by_writer{0};  // Crc off the executor
  mutable std::atomic<int> kept_crcs_off_the_executor{0};
  std::set<int64_t> kept;  // shots whose traces' CRC-32s FakeStored reports kept
  const ManualExecutor* executor() const { return executor_; }

  double sample_interval_us() const override { return 2000; }
  uint64_t ShotBytes(int64_t, uint32_t) const override { return shot_bytes(); }

  absl::StatusOr<dataset::ShotData> ReadShot(int64_t id, const dataset::ReadPlan& plan,
                                             ShotReadCost* cost) const override {
    ++reads;
    cost->reads = 1;
    if (fail_read.count(id)) return absl::DataLossError("shot " + std::to_string(id) + " lost");
    return Traces(id, plan, 0, n_traces_);
  }

  // Pieces: whole chunks of about piece_bytes.
  absl::StatusOr<dataset::ShotHead> ReadShotHead(int64_t id, const dataset::ReadPlan& plan,
                                                 uint64_t piece_bytes,
                                                 ShotReadCost* cost) const override {
    ++heads;
    cost->reads = 1;
    if (fail_read.count(id)) return absl::DataLossError("shot " + std::to_string(id) + " lost");
    dataset::ShotHead head;
    head.shot_id = id;
    head.n_traces = n_traces_;
    head.n_samples = n_samples_;
    head.total_bytes = shot_bytes();
    const uint64_t per_chunk =
        std::max<uint64_t>(1, plan.selection.max_chunk_bytes / trace_bytes());
    head.traces_per_piece = static_cast<uint32_t>(
        std::max<uint64_t>(1, piece_bytes / (per_chunk * trace_bytes())) * per_chunk);
    head.headers.emplace_back("trace", std::vector<double>(n_traces_, 1.0));
    return head;
  }
  absl::StatusOr<dataset::ShotData> ReadPiece(const dataset::ShotHead& head, size_t piece,
                                              const dataset::ReadPlan& plan,
                                              ShotReadCost* cost) const override {
    ++reads;
    ++pieces_read;
    cost->reads = 1;
    if (fail_piece.count(piece)) return absl::DataLossError("piece " + std::to_string(piece));
    dataset::ShotData data =
        Traces(head.shot_id, plan, head.piece_first(piece), head.piece_traces(piece));
    data.first_trace = head.piece_first(piece);
    return data;
  }

 private:
  // Traces [first, first + n) of shot `id`, as the plan says (stored, or decoded chunks).
  dataset::ShotData Traces(int64_t id, const dataset::ReadPlan& plan, uint32_t first,
                           uint32_t n) const {
    dataset::ShotData shot;
    shot.shot_id = id;
    shot.n_traces = n;
    shot.n_samples = n_samples_;
    shot.total_bytes = trace_bytes() * n;
    shot.traces_per_chunk = static_cast<uint32_t>(
        std::max<uint64_t>(1, plan.selection.max_chunk_bytes / trace_bytes()));
    const uint8_t* base = bytes_of(id) + first * trace_bytes();
    if (plan.zero_copy != dataset::ZeroCopy::kOff) {
      std::vector<const uint8_t*> traces;
      for (uint32_t t = 0; t < n; ++t) traces.push_back(base + t * trace_bytes());
      shot.stored = std::make_shared<FakeStored>(this, id, std::move(traces), trace_bytes());
      return shot;
    }
    for (uint32_t t = 0; t < n; t += shot.traces_per_chunk) {
      const uint32_t k = std::min(shot.traces_per_chunk, n - t);
      shot.chunks.push_back(SampleBuffer::CopyOf(std::string_view(
          reinterpret_cast<const char*>(base + t * trace_bytes()), k * trace_bytes())));
      shot.chunk_traces.push_back(k);
      shot.chunk_crc32.push_back(Crc32(0, base + t * trace_bytes(), k * trace_bytes()));
    }
    shot.crc32 = Crc32(0, base, trace_bytes() * n);
    return shot;
  }

  const uint32_t n_traces_, n_samples_;
  const ManualExecutor* executor_;  // null: any thread may read
  std::map<int64_t, std::vector<float>> samples_;
};

absl::Status FakeStored::Touch() const {
  if (source_->executor() != nullptr && !source_->executor()->running()) {
    ++source_->touches_off_the_executor;
  }
  if (source_->fail_touch.count(id_)) return absl::DataLossError("file truncated before the touch");
  return absl::OkStatus();
}

std::optional<uint32_t> FakeStored::KeptCrc(size_t first, size_t n) const {
  if (source_->kept.count(id_) == 0) return std::nullopt;
  if (source_->executor() != nullptr && !source_->executor()->running()) {
    ++source_->kept_crcs_off_the_executor;
  }
  uint32_t crc = 0;
  for (size_t k = first; k < first + n; ++k) crc = Crc32(crc, traces()[k], trace_bytes());
  return crc;
}

absl::StatusOr<uint32_t> FakeStored::Crc(size_t first, size_t n, uint32_t crc) const {
  if (source_->executor() != nullptr && source_->executor()->running()) {
    ++source_->crcs_on_the_executor;
  } else {
    ++source_->crcs_by_writer;
  }
  if (source_->fail_crc.count(id_)) return absl::DataLossError("file truncated under shot");
  for (size_t k = first; k < first + n; ++k) crc = Crc32(crc, traces()[k], trace_bytes());
  return crc;
}

class ShotWindowTest : public ::testing::Test {
 protected:
  WindowPlan Plan(std::vector<int64_t> ids, uint32_t depth = 2) {
    WindowPlan plan;
    plan.source = source_;
    plan.shot_ids = std::move(ids);
    plan.queue_depth = depth;
    // 2 traces a chunk: 3 chunks a shot.
    plan.shot.read.selection.max_chunk_bytes = 2 * source_->trace_bytes();
    plan.counters = &counters_;
    return plan;
  }
  std::shared_ptr<ShotWindow> Make(WindowPlan plan) {
    const size_t before = executor_.pending();
    auto w = ShotWindow::Create(std::move(plan), &executor_, [this] {
      ++ready_calls_;
      EXPECT_TRUE(executor_.running()) << "on_ready must come from the executor";
    });
    EXPECT_EQ(executor_.pending(), before) << "Create reads nothing";
    w->Start();
    return w;
  }
  // The chunk Next gives now, which must be one.
  OutgoingChunk MustChunk(ShotWindow& w) {
    OutgoingChunk c;
    absl::Status end;
    EXPECT_EQ(w.Next(&c, &end), ShotWindow::Pull::kChunk) << end;
    return c;
  }
  absl::Status MustEnd(ShotWindow& w) {
    OutgoingChunk c;
    absl::Status end;
    EXPECT_EQ(w.Next(&c, &end), ShotWindow::Pull::kEnd);
    return end;
  }
  void ExpectNothingHeld() {
    EXPECT_EQ(counters_.shots_held.load(), 0);
    EXPECT_EQ(counters_.inflight_bytes.load(), 0);
    EXPECT_EQ(counters_.reads_in_flight.load(), 0);
  }

  ManualExecutor executor_;
  std::shared_ptr<FakeSource> source_ = std::make_shared<FakeSource>(6, 5, 8, &executor_);
  WindowCounters counters_;
  int ready_calls_ = 0;
};

TEST_F(ShotWindowTest, SendsShotsInRequestOrderInChunksOfWholeTracesWithTheirCrc) {
  auto w = Make(Plan({3, 1, 2}, /*depth=*/3));
  ASSERT_EQ(executor_.pending(), 3u);
  // Reads finish last first; the writer still gets request order.
  while (executor_.pending() > 0) executor_.RunLast();
  for (uint32_t index = 0; index < 3; ++index) {
    const int64_t id = std::vector<int64_t>{3, 1, 2}[index];
    std::string bytes;
    uint32_t crc = 0;
    for (int c = 0; c < 3; ++c) {
      OutgoingChunk chunk = MustChunk(*w);
      EXPECT_EQ(chunk.meta.index(), index);
      EXPECT_EQ(chunk.meta.shot_id(), id);
      EXPECT_EQ(chunk.meta.offset(), bytes.size());
      EXPECT_EQ(chunk.meta.total_bytes(), source_->shot_bytes());
      EXPECT_EQ(chunk.meta.sample_interval_us(), 2000);
      EXPECT_EQ(chunk.meta.last(), c == 2);
      EXPECT_EQ(chunk.samples.size(), (c < 2 ? 2 : 1) * source_->trace_bytes());
      bytes += chunk.samples.view();
      if (chunk.meta.last()) crc = chunk.meta.crc32();
      w->Sent();
    }
    EXPECT_EQ(std::memcmp(bytes.data(), source_->bytes_of(id), bytes.size()), 0);
    EXPECT_EQ(crc, Crc32(0, bytes.data(), bytes.size()));
  }
  EXPECT_TRUE(MustEnd(*w).ok());
  EXPECT_EQ(w->shots_sent(), 3u);
  EXPECT_EQ(w->bytes_sent(), 3 * source_->shot_bytes());
  EXPECT_EQ(counters_.shots_sent.load(), 3);
  EXPECT_EQ(counters_.reads_issued.load(), 3);
  w.reset();
  ExpectNothingHeld();
}

TEST_F(ShotWindowTest, ReadsAtMostQueueDepthAheadAndMoreOnlyOnceAShotIsSent) {
  auto w = Make(Plan({1, 2, 3, 4, 5}, /*depth=*/2));
  EXPECT_EQ(executor_.pending(), 2u);
  executor_.RunAll();
  EXPECT_EQ(executor_.pending(), 0u) << "no read beyond the queue depth";
  for (int c = 0; c < 3; ++c) {
    MustChunk(*w);
    if (c < 2) {
      w->Sent();
      EXPECT_EQ(executor_.pending(), 0u) << "the shot is not fully sent yet";
    }
  }
  EXPECT_EQ(executor_.pending(), 0u) << "the last chunk is not written yet";
  w->Sent();
  EXPECT_EQ(executor_.pending(), 1u);
  EXPECT_EQ(counters_.max_shots_held_by_one_stream.load(), 2);
}

// A feed that hands out `ids` one at a time while `open`, else waits; ends once closed.
class FakeFeed final : public ShotFeed {
 public:
  Take Next(int64_t* id) override {
    if (next < ids.size() && open) {
      *id = ids[next++];
      return Take::kShot;
    }
    return next == ids.size() && closed ? Take::kEnd : Take::kWait;
  }
  void SetWake(std::function<void()> w) override { wake = std::move(w); }
  // First in line again, in their order.
  void GiveBack(const std::vector<int64_t>& back) override {
    given_back.insert(given_back.end(), back.begin(), back.end());
    ids.insert(ids.begin() + static_cast<std::ptrdiff_t>(next), back.begin(), back.end());
  }
  std::vector<int64_t> ids, given_back;
  size_t next = 0;
  bool open = true, closed = false;
  std::function<void()> wake;
};

TEST_F(ShotWindowTest, AFeedsShotsAreTakenAsThereIsRoomAndTheEndWaitsForTheFeed) {
  auto feed = std::make_shared<FakeFeed>();
  feed->ids = {4, 2, 5};
  feed->open = false;
  WindowPlan plan = Plan({}, /*depth=*/2);
  plan.feed = feed;
  auto w = Make(std::move(plan));
  EXPECT_EQ(executor_.pending(), 0u);  // the feed waits
  OutgoingChunk c;
  absl::Status end;
  EXPECT_EQ(w->Next(&c, &end), ShotWindow::Pull::kNotReady);
  feed->open = true;
  feed->wake();
  EXPECT_EQ(executor_.pending(), 2u);  // as many as the window has room for
  EXPECT_EQ(feed->next, 2u);
  executor_.RunAll();
  for (int64_t id : {4, 2, 5}) {
    for (int k = 0; k < 3; ++k) {
      OutgoingChunk chunk = MustChunk(*w);
      EXPECT_EQ(chunk.meta.shot_id(), id);
      w->Sent();
    }
    executor_.RunAll();
  }
  EXPECT_EQ(w->shot_ids(0, 10), (std::vector<int64_t>{4, 2, 5}));
  EXPECT_EQ(w->Next(&c, &end), ShotWindow::Pull::kNotReady) << "the feed has not ended";
  const int before = ready_calls_;
  feed->closed = true;
  feed->wake();
  executor_.RunAll();
  EXPECT_GT(ready_calls_, before);  // the writer hears the end
  EXPECT_TRUE(MustEnd(*w).ok());
}

TEST_F(ShotWindowTest, NotReadyUntilTheFrontShotIsReadThenOnReadyFromTheExecutor) {
  auto w = Make(Plan({1, 2}));
  OutgoingChunk c;
  absl::Status end;
  EXPECT_EQ(w->Next(&c, &end), ShotWindow::Pull::kNotReady);
  executor_.RunLast();  // shot 2: not the front, nothing to say
  EXPECT_EQ(ready_calls_, 0);
  EXPECT_EQ(w->Next(&c, &end), ShotWindow::Pull::kNotReady);
  executor_.RunFirst();  // shot 1
  EXPECT_EQ(ready_calls_, 1);
  EXPECT_EQ(MustChunk(*w).meta.shot_id(), 1);
}

TEST_F(ShotWindowTest, AReadErrorEndsTheStreamAfterTheShotsBeforeIt) {
  source_->fail_read = {2};
  auto w = Make(Plan({1, 2, 3}, /*depth=*/3));
  executor_.RunAll();
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(MustChunk(*w).meta.shot_id(), 1);
    w->Sent();
  }
  const absl::Status end = MustEnd(*w);
  EXPECT_EQ(end.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(end.message(), "shot 2 lost");
  EXPECT_EQ(MustEnd(*w), end) << "the end is said once and stays";
  executor_.RunAll();
  w.reset();
  ExpectNothingHeld();
}

TEST_F(ShotWindowTest, TheBudgetHoldsBackReadsUntilASentShotGivesItsBytesBack) {
  ByteBudget budget(2 * source_->shot_bytes());
  WindowPlan plan = Plan({1, 2, 3, 4}, /*depth=*/3);
  plan.budget = &budget;
  auto w = Make(std::move(plan));
  EXPECT_EQ(executor_.pending(), 2u) << "the third read waits for the budget";
  EXPECT_EQ(counters_.budget_waits.load(), 1);
  EXPECT_EQ(budget.in_use(), 2 * source_->shot_bytes());
  EXPECT_EQ(counters_.inflight_bytes.load(), static_cast<int64_t>(budget.in_use()));
  executor_.RunAll();
  for (int c = 0; c < 3; ++c) MustChunk(*w);
  EXPECT_EQ(executor_.pending(), 0u) << "bytes go back only once the shot is written";
  w->Sent();
  EXPECT_EQ(executor_.pending(), 1u) << "the waiting read was woken by the release";
  EXPECT_EQ(budget.in_use(), 2 * source_->shot_bytes());

  // A second window holding nothing gets its first shot although the budget is full.
  WindowPlan other_plan = Plan({5, 6}, /*depth=*/2);
  other_plan.budget = &budget;
  auto other = Make(std::move(other_plan));
  EXPECT_EQ(executor_.pending(), 2u);  // w's woken read and the other's first
  EXPECT_EQ(budget.in_use(), 3 * source_->shot_bytes());
  executor_.RunAll();
  other->Close();
  other.reset();
  w->Close();
  w.reset();
  executor_.RunAll();
  EXPECT_EQ(budget.in_use(), 0u);
  ExpectNothingHeld();
}

// Sent() in two steps: Written() gives nothing back; the writer may take the next chunk
// before Refill(), which gives back the written shot's bytes alone and reads ahead.
TEST_F(ShotWindowTest, WrittenMarksAShotsBytesAndRefillGivesThemBackAndReadsAhead) {
  const uint64_t shot = source_->shot_bytes();
  ByteBudget budget(2 * shot);
  WindowPlan plan = Plan({1, 2, 3, 4}, /*depth=*/2);
  plan.budget = &budget;
  auto w = Make(std::move(plan));
  executor_.RunAll();
  for (int c = 0; c < 2; ++c) {
    EXPECT_EQ(MustChunk(*w).meta.shot_id(), 1);
    w->Written();
    w->Refill();
  }
  EXPECT_TRUE(MustChunk(*w).meta.last());  // shot 1's last chunk
  w->Written();
  EXPECT_EQ(budget.in_use(), 2 * shot) << "Written() gives nothing back";
  EXPECT_EQ(executor_.pending(), 0u);
  EXPECT_EQ(MustChunk(*w).meta.shot_id(), 2) << "the next write may start first";
  w->Refill();
  EXPECT_EQ(executor_.pending(), 1u) << "shot 3 is read in shot 1's bytes";
  EXPECT_EQ(budget.in_use(), 2 * shot) << "shot 2, on the wire, still holds its bytes";
  EXPECT_EQ(counters_.inflight_bytes.load(), static_cast<int64_t>(2 * shot));
  w->Refill();  // nothing more was written: nothing more goes back
  EXPECT_EQ(budget.in_use(), 2 * shot);
  // Written, then closed before its Refill: the window's bytes all go back all the same.
  w->Written();
  w->Close();
  w.reset();
  executor_.RunAll();
  EXPECT_EQ(budget.in_use(), 0u);
  ExpectNothingHeld();
}

TEST_F(ShotWindowTest, StopWhileWaitingForTheBudgetFreesEverything) {
  ByteBudget budget(source_->shot_bytes());
  WindowPlan plan = Plan({1, 2, 3}, /*depth=*/2);
  plan.budget = &budget;
  auto w = Make(std::move(plan));
  ASSERT_EQ(executor_.pending(), 1u) << "waiting for the budget";
  std::weak_ptr<ShotWindow> alive = w;
  w->Stop(absl::CancelledError("cancelled by the client"));
  EXPECT_EQ(MustEnd(*w).code(), absl::StatusCode::kCancelled);
  w->Close();
  w.reset();
  EXPECT_FALSE(alive.expired()) << "its read is still queued";
  executor_.RunAll();
  EXPECT_TRUE(alive.expired());
  EXPECT_EQ(budget.in_use(), 0u);
  EXPECT_EQ(source_->reads, 0) << "a stopped window reads nothing more";
  EXPECT_EQ(ready_calls_, 0) << "closed: no more on_ready";
  ExpectNothingHeld();
}

TEST_F(ShotWindowTest, AWaitingWindowIsGrantedTheMomentItHoldsNothingHoweverFullTheBudget) {
  ByteBudget budget(source_->shot_bytes());
  WindowPlan a_plan = Plan({1, 2}, /*depth=*/2);
  a_plan.budget = &budget;
  auto a = Make(std::move(a_plan));  // shot 1, then waits for shot 2's bytes
  WindowPlan b_plan = Plan({3, 4}, /*depth=*/1);
  b_plan.budget = &budget;
  auto b = Make(std::move(b_plan));  // holds nothing: gets shot 3 all the same
  ASSERT_EQ(executor_.pending(), 2u);
  executor_.RunAll();
  for (int c = 0; c < 3; ++c) MustChunk(*a);
  a->Sent();  // b's shot 3 fills the budget, but a holds nothing now: its wait ends
  ASSERT_EQ(executor_.pending(), 1u);
  executor_.RunFirst();
  EXPECT_EQ(MustChunk(*a).meta.shot_id(), 2);
  a->Close();
  a.reset();
  b->Close();
  b.reset();
  executor_.RunAll();
  EXPECT_EQ(budget.in_use(), 0u);
  ExpectNothingHeld();
}

TEST_F(ShotWindowTest, AWaitingWindowIsWokenWhenAnotherWindowsReleaseMakesRoom) {
  ByteBudget budget(3 * source_->shot_bytes());
  WindowPlan a_plan = Plan({1, 2, 3}, /*depth=*/3);
  a_plan.budget = &budget;
  auto a = Make(std::move(a_plan));  // alone: the whole budget is its share
  WindowPlan b_plan = Plan({4, 5}, /*depth=*/2);
  b_plan.budget = &budget;
  auto b = Make(std::move(b_plan));  // shot 4 (it held nothing), and shot 5 waits
  ASSERT_EQ(executor_.pending(), 4u);
  EXPECT_EQ(counters_.budget_waits.load(), 1);
  executor_.RunAll();
  for (int64_t id : {1, 2}) {
    for (int c = 0; c < 3; ++c) EXPECT_EQ(MustChunk(*a).meta.shot_id(), id);
    a->Sent();
    EXPECT_EQ(executor_.pending(), 0u) << "two shots would be more than b's half";
  }
  for (int c = 0; c < 3; ++c) MustChunk(*a);
  a->Sent();  // a holds nothing: b is the only stream that wants bytes
  ASSERT_EQ(executor_.pending(), 1u);
  executor_.RunFirst();
  for (int64_t id : {4, 5}) {
    for (int c = 0; c < 3; ++c) EXPECT_EQ(MustChunk(*b).meta.shot_id(), id);
    b->Sent();
  }
  EXPECT_TRUE(MustEnd(*a).ok());
  EXPECT_TRUE(MustEnd(*b).ok());
  a->Close();
  a.reset();
  b->Close();
  b.reset();
  EXPECT_EQ(budget.in_use(), 0u);
  ExpectNothingHeld();
}

// Reads every chunk of the window to its end, the shots' ids in the order they came and
// each shot's CRC checked against the source; runs reads as they are needed.
std::vector<int64_t> ReadToTheEnd(ShotWindow& w, ManualExecutor& executor,
                                  const FakeSource& source) {
  std::vector<int64_t> ids;
  uint32_t crc = 0;
  for (;;) {
    OutgoingChunk c;
    absl::Status end;
    const ShotWindow::Pull pull = w.Next(&c, &end);
    if (pull == ShotWindow::Pull::kEnd) {
      EXPECT_TRUE(end.ok()) << end;
      return ids;
    }
    if (pull == ShotWindow::Pull::kNotReady) {
      if (executor.pending() == 0) {
        ADD_FAILURE() << "not ready, and nothing to run";
        return ids;
      }
      executor.RunFirst();
      continue;
    }
    if (c.meta.offset() == 0) {
      ids.push_back(c.meta.shot_id());
      crc = 0;
    }
    crc = Crc32(crc, c.samples.data(), c.samples.size());
    if (c.meta.last()) {
      EXPECT_EQ(c.meta.crc32(), crc) << "shot " << c.meta.shot_id();
      EXPECT_EQ(crc, Crc32(0, source.bytes_of(c.meta.shot_id()), source.shot_bytes()));
    }
    w.Sent();
  }
}

TEST_F(ShotWindowTest, AStalledWindowGivesBackItsReadAheadAndReadsItAgainInOrder) {
  ByteBudget budget(10 * source_->shot_bytes());
  WindowPlan plan = Plan({1, 2, 3, 4, 5, 6}, /*depth=*/4);
  plan.budget = &budget;
  auto w = Make(std::move(plan));
  executor_.RunAll();
  EXPECT_EQ(budget.in_use(), 4 * source_->shot_bytes());
  OutgoingChunk first = MustChunk(*w);  // on the wire, and the consumer reads no more
  EXPECT_EQ(first.meta.shot_id(), 1);
  const absl::Time now = absl::Now();
  EXPECT_FALSE(w->GiveBackIfStalled(now, absl::Seconds(30))) << "not for 30 s yet";
  EXPECT_TRUE(w->GiveBackIfStalled(now + absl::Seconds(31), absl::Seconds(30)));
  EXPECT_FALSE(w->GiveBackIfStalled(now + absl::Seconds(62), absl::Seconds(30)))
      << "once per stall";
  EXPECT_EQ(counters_.stalled_streams.load(), 1);
  EXPECT_EQ(counters_.shots_given_back.load(), 3);
  EXPECT_EQ(counters_.bytes_given_back.load(), static_cast<int64_t>(3 * source_->shot_bytes()));
  EXPECT_EQ(budget.in_use(), source_->shot_bytes()) << "shot 1, begun on the wire, stays";
  EXPECT_EQ(counters_.shots_held.load(), 1);
  EXPECT_EQ(counters_.inflight_bytes.load(), static_cast<int64_t>(source_->shot_bytes()));
  EXPECT_EQ(executor_.pending(), 0u) << "a stalled window reads nothing";

  w->Sent();  // the consumer is back
  EXPECT_EQ(counters_.stalled_streams.load(), 0);
  EXPECT_EQ(executor_.pending(), 3u) << "shots 2, 3 and 4 read again";
  uint32_t crc = Crc32(0, first.samples.data(), first.samples.size());
  for (int c = 1; c < 3; ++c) {
    OutgoingChunk chunk = MustChunk(*w);
    EXPECT_EQ(chunk.meta.shot_id(), 1);
    crc = Crc32(crc, chunk.samples.data(), chunk.samples.size());
    if (chunk.meta.last()) {
      EXPECT_EQ(chunk.meta.crc32(), crc);
    }
    w->Sent();
  }
  EXPECT_EQ(ReadToTheEnd(*w, executor_, *source_), (std::vector<int64_t>{2, 3, 4, 5, 6}));
  EXPECT_EQ(source_->reads, 6 + 3);
  w->Close();
  w.reset();
  EXPECT_EQ(budget.in_use(), 0u);
  ExpectNothingHeld();
}

TEST_F(ShotWindowTest, ReadsInFlightWhenAStallGivesBackFillNothing) {
  ByteBudget budget(10 * source_->shot_bytes());
  WindowPlan plan = Plan({1, 2, 3, 4}, /*depth=*/3);
  plan.budget = &budget;
  auto w = Make(std::move(plan));
  executor_.RunFirst();  // shot 1; the reads of 2 and 3 are still queued
  MustChunk(*w);
  ASSERT_TRUE(w->GiveBackIfStalled(absl::Now() + absl::Minutes(1), absl::Seconds(30)));
  EXPECT_EQ(budget.in_use(), source_->shot_bytes());
  executor_.RunAll();  // the two reads run, and their shots are thrown away
  EXPECT_EQ(counters_.reads_in_flight.load(), 0);
  EXPECT_EQ(counters_.shots_held.load(), 1);
  w->Sent();
  EXPECT_EQ(executor_.pending(), 2u) << "shots 2 and 3, read again";
  for (int c = 1; c < 3; ++c) {
    EXPECT_EQ(MustChunk(*w).meta.shot_id(), 1);
    w->Sent();
  }
  EXPECT_EQ(ReadToTheEnd(*w, executor_, *source_), (std::vector<int64_t>{2, 3, 4}));
  w->Close();
  w.reset();
  EXPECT_EQ(budget.in_use(), 0u);
  ExpectNothingHeld();
}

TEST_F(ShotWindowTest, AStallWhileTheLastChunkOfAShotIsOnTheWireKeepsNoShotInTheWindow) {
  ByteBudget budget(10 * source_->shot_bytes());
  WindowPlan plan = Plan({1, 2, 3}, /*depth=*/2);
  plan.budget = &budget;
  auto w = Make(std::move(plan));
  executor_.RunAll();
  for (int c = 0; c < 2; ++c) {
    MustChunk(*w);
    w->Sent();
  }
  ASSERT_TRUE(MustChunk(*w).meta.last());  // shot 1 is out of the window; shot 2 ready
  ASSERT_TRUE(w->GiveBackIfStalled(absl::Now() + absl::Minutes(1), absl::Seconds(30)));
  EXPECT_EQ(counters_.shots_given_back.load(), 1);
  EXPECT_EQ(counters_.shots_held.load(), 0);
  EXPECT_EQ(budget.in_use(), source_->shot_bytes()) << "shot 1's, until its chunk is sent";
  w->Sent();
  EXPECT_EQ(budget.in_use(), 2 * source_->shot_bytes()) << "shots 2 and 3, read again";
  EXPECT_EQ(ReadToTheEnd(*w, executor_, *source_), (std::vector<int64_t>{2, 3}));
  w->Close();
}

TEST_F(ShotWindowTest, AStallWatchWatchesAWindowFromItsStartUntilItGoes) {
  StallWatch watch(absl::Seconds(30), /*run_thread=*/false);
  WindowPlan plan = Plan({1, 2, 3}, /*depth=*/3);
  plan.stall_watch = &watch;
  auto w = Make(std::move(plan));
  EXPECT_EQ(watch.watched(), 1u);
  executor_.RunAll();
  MustChunk(*w);
  EXPECT_EQ(watch.CheckNow(absl::Now()), 0);
  EXPECT_EQ(watch.CheckNow(absl::Now() + absl::Seconds(31)), 1);
  EXPECT_EQ(counters_.shots_given_back.load(), 2);
  w->Sent();
  w->Close();
  w.reset();
  executor_.RunAll();
  watch.CheckNow(absl::Now());
  EXPECT_EQ(watch.watched(), 0u);
}

TEST_F(ShotWindowTest, AWindowWithNothingOnTheWireIsNotStalled) {
  auto w = Make(Plan({1, 2}));
  const absl::Time later = absl::Now() + absl::Hours(1);
  EXPECT_FALSE(w->GiveBackIfStalled(later, absl::Seconds(30))) << "waiting for its reads";
  executor_.RunAll();
  MustChunk(*w);
  w->Sent();
  EXPECT_FALSE(w->GiveBackIfStalled(later, absl::Seconds(30))) << "the writer's turn";
  for (int c = 1; c < 3; ++c) {
    MustChunk(*w);
    w->Sent();
  }
  EXPECT_EQ(ReadToTheEnd(*w, executor_, *source_), (std::vector<int64_t>{2}));
  EXPECT_FALSE(w->GiveBackIfStalled(later, absl::Seconds(30))) << "ended";
  EXPECT_EQ(counters_.stalled_streams.load(), 0);
  w->Close();
}

TEST_F(ShotWindowTest, AStalledJobWindowGivesItsShotsBackToTheFeedAndTakesAgainAfter) {
  auto feed = std::make_shared<FakeFeed>();
  feed->ids = {4, 2, 5, 1};
  WindowPlan plan = Plan({}, /*depth=*/3);
  plan.feed = feed;
  auto w = Make(std::move(plan));
  executor_.RunAll();
  EXPECT_EQ(MustChunk(*w).meta.shot_id(), 4);
  ASSERT_TRUE(w->GiveBackIfStalled(absl::Now() + absl::Minutes(1), absl::Seconds(30)));
  EXPECT_EQ(feed->given_back, (std::vector<int64_t>{2, 5})) << "in their order";
  EXPECT_EQ(w->shot_ids(0, 10), (std::vector<int64_t>{4})) << "only what it kept";
  feed->closed = true;
  for (int c = 1; c < 3; ++c) {
    MustChunk(*w);
    w->Sent();
  }
  EXPECT_EQ(ReadToTheEnd(*w, executor_, *source_), (std::vector<int64_t>{2, 5, 1}));
  EXPECT_EQ(w->shot_ids(0, 10), (std::vector<int64_t>{4, 2, 5, 1}));
  w->Close();
}

TEST_F(ShotWindowTest, StopEndsWithItsStatusAndTellsAWaitingWriter) {
  auto w = Make(Plan({1, 2}));
  OutgoingChunk c;
  absl::Status end;
  ASSERT_EQ(w->Next(&c, &end), ShotWindow::Pull::kNotReady);
  w->Stop(absl::UnavailableError("the server is shutting down"));
  w->Stop(absl::CancelledError("later"));  // the first reason stays
  EXPECT_EQ(ready_calls_, 0) << "not from the caller's thread";
  executor_.RunAll();
  EXPECT_EQ(ready_calls_, 1);
  EXPECT_EQ(MustEnd(*w), absl::UnavailableError("the server is shutting down"));
}

TEST_F(ShotWindowTest, CloseWithReadsInFlightKeepsTheWindowUntilTheyRun) {
  auto w = Make(Plan({1, 2, 3}, /*depth=*/3));
  std::weak_ptr<ShotWindow> alive = w;
  w->Close();
  w.reset();
  EXPECT_FALSE(alive.expired());
  executor_.RunAll();
  EXPECT_TRUE(alive.expired());
  EXPECT_EQ(ready_calls_, 0);
  ExpectNothingHeld();
}

// Stored shots: touched on the executor with their read. Each chunk's CRC-32: where every
// trace's is kept (shot 2), joined there too, with the read; else (shot 4) read by the
// writer in Next(), just before the chunk is sent.
TEST_F(ShotWindowTest, StoredShotsAreTouchedOnTheExecutorAndSentFromWhereTheyAre) {
  source_->kept = {2};
  WindowPlan plan = Plan({2, 4});
  plan.shot.read.zero_copy = dataset::ZeroCopy::kLittleEndian;
  auto w = Make(std::move(plan));
  executor_.RunAll();
  EXPECT_EQ(source_->touches_off_the_executor.load(), 0);
  for (int64_t id : {2, 4}) {
    for (int c = 0; c < 3; ++c) {
      OutgoingChunk chunk = MustChunk(*w);
      EXPECT_TRUE(chunk.samples.empty());
      ASSERT_EQ(chunk.stored.size(), c < 2 ? 2u : 1u);
      EXPECT_EQ(chunk.trace_bytes, source_->trace_bytes());
      EXPECT_EQ(chunk.stored[0], source_->bytes_of(id) + 2 * c * source_->trace_bytes());
      EXPECT_EQ(chunk.meta.chunk_crc32(),
                Crc32(0, chunk.stored[0], chunk.stored.size() * source_->trace_bytes()));
      if (chunk.meta.last()) {
        EXPECT_EQ(chunk.meta.crc32(), Crc32(0, source_->bytes_of(id), source_->shot_bytes()));
      }
      EXPECT_EQ(source_->crcs_by_writer.load(), id == 2 ? 0 : c + 1)
          << "shot " << id << " chunk " << c;
      w->Sent();
    }
  }
  EXPECT_TRUE(MustEnd(*w).ok());
  EXPECT_EQ(source_->crcs_on_the_executor.load(), 0);
  EXPECT_EQ(source_->kept_crcs_off_the_executor.load(), 0);
  EXPECT_EQ(counters_.shots_sent_zero_copy.load(), 2);
}

TEST_F(ShotWindowTest, AStoredShotThatCannotBeTouchedEndsTheStreamAfterTheShotsBefore) {
  source_->fail_touch = {2};
  WindowPlan plan = Plan({1, 2});
  plan.shot.read.zero_copy = dataset::ZeroCopy::kLittleEndian;
  auto w = Make(std::move(plan));
  executor_.RunAll();
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(MustChunk(*w).meta.shot_id(), 1);
    w->Sent();
  }
  EXPECT_EQ(MustEnd(*w), absl::DataLossError("file truncated before the touch"));
}

TEST_F(ShotWindowTest, AStoredChunkWhoseCrcCannotBeReadEndsTheStream) {
  source_->fail_crc = {1};
  WindowPlan plan = Plan({1, 2});
  plan.shot.read.zero_copy = dataset::ZeroCopy::kLittleEndian;
  auto w = Make(std::move(plan));
  executor_.RunAll();
  EXPECT_EQ(MustEnd(*w), absl::DataLossError("file truncated under shot"));
  EXPECT_EQ(MustEnd(*w), absl::DataLossError("file truncated under shot"));
}

TEST_F(ShotWindowTest, TheTestHookCorruptsOneByteAfterTheCrcOfADecodedShot) {
  WindowPlan plan = Plan({1});
  plan.shot.read.zero_copy = dataset::ZeroCopy::kLittleEndian;
  plan.corrupt_shot = 1;
  auto w = Make(std::move(plan));
  executor_.RunAll();
  std::string bytes;
  uint32_t crc = 0;
  for (int c = 0; c < 3; ++c) {
    OutgoingChunk chunk = MustChunk(*w);
    ASSERT_TRUE(chunk.stored.empty()) << "a corrupted shot is decoded";
    bytes += chunk.samples.view();
    crc = chunk.meta.crc32();
    w->Sent();
  }
  EXPECT_EQ(crc, Crc32(0, source_->bytes_of(1), source_->shot_bytes()));
  EXPECT_NE(crc, Crc32(0, bytes.data(), bytes.size()));
}

// The same window on real threads (run under TSan too): writers on their own threads,
// reads on a reader pool, one budget for all, some streams stopped midway.
// Pieces: shots of 5 traces (160 bytes) with 2 traces a chunk; piece_bytes of one chunk
// (64 bytes) makes 3 pieces a shot: traces [0, 2), [2, 4), [4, 5).
class ShotWindowPieceTest : public ShotWindowTest {
 protected:
  WindowPlan Pieced(std::vector<int64_t> ids, uint32_t depth) {
    WindowPlan plan = Plan(std::move(ids), depth);
    plan.piece_bytes = 2 * source_->trace_bytes();
    return plan;
  }
  // Sends every chunk of the shot at the front, checking each as a client would: its own
  // CRC-32, its place, and at the end the shot's CRC-32 and bytes.
  void ExpectShot(ShotWindow& w, uint32_t index, int64_t id) {
    std::string bytes;
    for (int c = 0; c < 3; ++c) {
      while (executor_.pending() > 0) executor_.RunFirst();
      OutgoingChunk chunk = MustChunk(w);
      const std::string part = chunk.stored.empty() ? std::string(chunk.samples.view())
                                                    : StoredBytes(chunk);
      EXPECT_EQ(chunk.meta.index(), index);
      EXPECT_EQ(chunk.meta.shot_id(), id);
      EXPECT_EQ(chunk.meta.n_traces(), 5u) << "every chunk says the whole shot";
      EXPECT_EQ(chunk.meta.total_bytes(), source_->shot_bytes());
      EXPECT_EQ(chunk.meta.offset(), bytes.size());
      EXPECT_EQ(chunk.meta.headers_size(), c == 0 ? 1 : 0) << "the head's columns, once";
      ASSERT_TRUE(chunk.meta.has_chunk_crc32());
      EXPECT_EQ(chunk.meta.chunk_crc32(), Crc32(0, part.data(), part.size()));
      bytes += part;
      EXPECT_EQ(chunk.meta.last(), c == 2);
      if (chunk.meta.last()) {
        EXPECT_EQ(chunk.meta.crc32(), Crc32(0, bytes.data(), bytes.size()));
      }
      w.Sent();
    }
    ASSERT_EQ(bytes.size(), source_->shot_bytes());
    EXPECT_EQ(std::memcmp(bytes.data(), source_->bytes_of(id), bytes.size()), 0);
  }
  static std::string StoredBytes(const OutgoingChunk& chunk) {
    std::string out;
    for (const uint8_t* t : chunk.stored) {
      out.append(reinterpret_cast<const char*>(t), chunk.trace_bytes);
    }
    return out;
  }
};

TEST_F(ShotWindowPieceTest, AShotLargerThanAPieceIsReadAndSentPieceByPieceInOrder) {
  auto w = Make(Pieced({2, 4}, /*depth=*/2));
  ASSERT_EQ(executor_.pending(), 1u) << "the first piece; the next waits for the head";
  executor_.RunFirst();
  EXPECT_EQ(source_->heads.load(), 1);
  EXPECT_EQ(executor_.pending(), 1u) << "the head known: the second piece is read";
  ExpectShot(*w, 0, 2);
  ExpectShot(*w, 1, 4);
  EXPECT_TRUE(MustEnd(*w).ok());
  EXPECT_EQ(source_->heads.load(), 2);
  EXPECT_EQ(source_->pieces_read.load(), 6);
  EXPECT_EQ(w->shots_sent(), 2u);
  EXPECT_EQ(counters_.shots_sent.load(), 2);
  w.reset();
  ExpectNothingHeld();
}

TEST_F(ShotWindowPieceTest, QueueDepthOneReadsPieceAfterPieceAndShotAfterShot) {
  auto w = Make(Pieced({2, 4, 6}, /*depth=*/1));
  ExpectShot(*w, 0, 2);
  ExpectShot(*w, 1, 4);
  ExpectShot(*w, 2, 6);
  EXPECT_TRUE(MustEnd(*w).ok());
  w.reset();
  ExpectNothingHeld();
}

TEST_F(ShotWindowPieceTest, StoredPiecesCarryTheirOwnCrcAndTheShotsJoined) {
  WindowPlan plan = Pieced({3}, /*depth=*/3);
  plan.shot.read.zero_copy = dataset::ZeroCopy::kLittleEndian;
  auto w = Make(std::move(plan));
  ExpectShot(*w, 0, 3);
  EXPECT_TRUE(MustEnd(*w).ok());
  EXPECT_EQ(counters_.shots_sent_zero_copy.load(), 1);
}

TEST_F(ShotWindowPieceTest, TheBudgetHoldsPiecesNotTheShot) {
  ByteBudget budget(1 << 20);
  WindowPlan plan = Pieced({1, 2}, /*depth=*/2);
  plan.budget = &budget;
  auto w = Make(std::move(plan));
  const uint64_t piece = 2 * source_->trace_bytes();
  for (int k = 0; k < 8; ++k) executor_.RunAll();
  EXPECT_EQ(budget.in_use(), 2 * piece) << "two pieces held, not two shots";
  ExpectShot(*w, 0, 1);
  ExpectShot(*w, 1, 2);
  EXPECT_TRUE(MustEnd(*w).ok());
  EXPECT_LE(budget.peak(), 2 * piece);
  EXPECT_LT(budget.peak(), source_->shot_bytes());
  w.reset();
  EXPECT_EQ(budget.in_use(), 0u);
}

TEST_F(ShotWindowPieceTest, AStalledWindowKeepsOnlyThePieceOnTheWireAndResumesAtTheNext) {
  ByteBudget budget(1 << 20);
  WindowPlan plan = Pieced({5, 6}, /*depth=*/4);
  plan.budget = &budget;
  auto w = Make(std::move(plan));
  for (int k = 0; k < 8; ++k) executor_.RunAll();
  const uint64_t piece = 2 * source_->trace_bytes();
  // Shot 5's three pieces (the last of one trace) and shot 6's first.
  EXPECT_EQ(budget.in_use(), 3 * piece + source_->trace_bytes());
  OutgoingChunk first = MustChunk(*w);  // shot 5's first piece (one chunk) on the wire
  EXPECT_EQ(first.meta.offset(), 0u);
  const std::string part(first.samples.view());
  ASSERT_TRUE(w->GiveBackIfStalled(absl::Now() + absl::Hours(1), absl::Seconds(1)));
  EXPECT_EQ(counters_.shots_given_back.load(), 3) << "the pieces behind the one on the wire";
  EXPECT_EQ(budget.in_use(), piece) << "a stalled consumer holds only its piece";
  w->Sent();  // reads on: the rest of shot 5 from its second piece, then shot 6
  for (int k = 0; k < 8; ++k) executor_.RunAll();
  std::string bytes = part;
  uint32_t crc = 0;
  for (;;) {
    OutgoingChunk c = MustChunk(*w);
    EXPECT_EQ(c.meta.shot_id(), 5);
    EXPECT_EQ(c.meta.offset(), bytes.size()) << "nothing sent twice, nothing skipped";
    bytes += c.samples.view();
    const bool last = c.meta.last();
    if (last) crc = c.meta.crc32();
    w->Sent();
    for (int k = 0; k < 4; ++k) executor_.RunAll();
    if (last) break;
  }
  EXPECT_EQ(std::memcmp(bytes.data(), source_->bytes_of(5), source_->shot_bytes()), 0);
  EXPECT_EQ(crc, Crc32(0, bytes.data(), bytes.size()));
  EXPECT_EQ(source_->heads.load(), 3) << "shot 5's head was kept; shot 6's read again";
  ExpectShot(*w, 1, 6);
  EXPECT_TRUE(MustEnd(*w).ok());
  w.reset();
  EXPECT_EQ(budget.in_use(), 0u);
}

TEST_F(ShotWindowPieceTest, APieceThatCannotBeReadEndsTheStreamAfterThePiecesBefore) {
  source_->fail_piece.insert(1);
  auto w = Make(Pieced({1}, /*depth=*/2));
  for (int k = 0; k < 4; ++k) executor_.RunAll();
  OutgoingChunk c = MustChunk(*w);
  EXPECT_EQ(c.meta.offset(), 0u);
  w->Sent();
  EXPECT_EQ(MustEnd(*w).code(), absl::StatusCode::kDataLoss);
}

TEST_F(ShotWindowPieceTest, ShotsWithinThePieceSizeAreReadWhole) {
  WindowPlan plan = Plan({1, 2}, /*depth=*/2);
  plan.piece_bytes = source_->shot_bytes();  // not larger: whole
  auto w = Make(std::move(plan));
  executor_.RunAll();
  EXPECT_EQ(source_->heads.load(), 0);
  EXPECT_EQ(source_->reads.load(), 2);
}

TEST(ShotWindowThreadsTest, ManyWindowsOnARealPoolShareABudgetAndFreeEverything) {
  constexpr int kWindows = 8;
  auto source = std::make_shared<FakeSource>(20, 7, 64, nullptr);
  WindowCounters counters;
  ByteBudget budget(3 * source->shot_bytes());
  // Every window counts as stalled whenever a chunk of it is on the wire: give-backs at
  // any moment, from another thread, while the writers go on. Now and then a writer keeps
  // its chunk on the wire until the staller has looked once more.
  StallWatch watch(absl::Seconds(1), /*run_thread=*/false);
  std::atomic<bool> writing{true};
  int stalls = 0;
  absl::Mutex scan_mu;
  int scans = 0;  // guarded by scan_mu
  std::thread staller([&] {
    while (writing) {
      stalls += watch.CheckNow(absl::Now() + absl::Hours(1));
      absl::MutexLock lock(&scan_mu);
      ++scans;
    }
  });
  {
    ReaderPool pool(4);
    std::vector<std::thread> writers;
    for (int k = 0; k < kWindows; ++k) {
      writers.emplace_back([&, k] {
        absl::Mutex mu;
        int ready = 0;  // on_ready calls not yet seen by this writer
        WindowPlan plan;
        plan.source = source;
        for (int64_t id = 1; id <= 20; ++id) plan.shot_ids.push_back(id);
        plan.queue_depth = 1 + k % 4;
        plan.shot.read.selection.max_chunk_bytes = 3 * source->trace_bytes();
        plan.shot.read.zero_copy = k % 2 ? dataset::ZeroCopy::kLittleEndian : dataset::ZeroCopy::kOff;
        plan.counters = &counters;
        plan.budget = &budget;
        plan.stall_watch = &watch;
        auto w = ShotWindow::Create(std::move(plan), &pool, [&] {
          absl::MutexLock lock(&mu);
          ++ready;
        });
        w->Start();
        int shots = 0;
        const int stop_after = k % 3 == 0 ? 5 : -1;
        for (;;) {
          OutgoingChunk chunk;
          absl::Status end;
          const ShotWindow::Pull pull = w->Next(&chunk, &end);
          if (pull == ShotWindow::Pull::kEnd) {
            EXPECT_EQ(end.ok(), stop_after < 0) << end;
            break;
          }
          if (pull == ShotWindow::Pull::kNotReady) {
            absl::MutexLock lock(&mu);
            mu.Await(absl::Condition(+[](int* n) { return *n > 0; }, &ready));
            ready = 0;
            continue;
          }
          EXPECT_EQ(chunk.meta.shot_id(), shots + 1);
          if (chunk.meta.index() % 3 == 1 && chunk.meta.offset() == 0) {
            absl::MutexLock lock(&scan_mu);
            const int seen = scans;
            auto looked_again = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(scan_mu) {
              return scans > seen;
            };
            scan_mu.Await(absl::Condition(&looked_again));
          }
          if (chunk.meta.last()) {
            EXPECT_EQ(chunk.meta.crc32(),
                      Crc32(0, source->bytes_of(shots + 1), source->shot_bytes()));
            if (++shots == stop_after) w->Stop(absl::CancelledError("stopped"));
          }
          w->Sent();
        }
        if (stop_after < 0) {
          EXPECT_EQ(shots, 20);
        }
        w->Close();
      });
    }
    for (std::thread& t : writers) t.join();
    writing = false;
    staller.join();
  }  // the pool finishes its queued tasks: every window is gone
  EXPECT_EQ(budget.in_use(), 0u);
  EXPECT_EQ(counters.shots_held.load(), 0);
  EXPECT_EQ(counters.inflight_bytes.load(), 0);
  EXPECT_EQ(counters.stalled_streams.load(), 0);
  EXPECT_GT(stalls, 0) << "the staller never caught a window with a chunk on the wire";
  EXPECT_LE(counters.inflight_bytes_peak.load(),
            static_cast<int64_t>((3 + kWindows) * source->shot_bytes()));
}

}  // namespace
}  // namespace shotstream::stream

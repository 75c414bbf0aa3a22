#include "server/stream/shot_window.h"

#include <algorithm>
#include <utility>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace shotstream::stream {
namespace {

void RaiseMax(std::atomic<int64_t>* max, int64_t value) {
  int64_t seen = max->load(std::memory_order_relaxed);
  while (value > seen && !max->compare_exchange_weak(seen, value)) {
  }
}

}  // namespace

std::shared_ptr<ShotWindow> ShotWindow::Create(WindowPlan plan, Executor* executor,
                                               std::function<void()> on_ready) {
  return std::shared_ptr<ShotWindow>(
      new ShotWindow(std::move(plan), executor, std::move(on_ready)));
}

void ShotWindow::Start() {
  if (plan_.feed != nullptr) {
    // Weak: the feed may outlive the window (a job holds it) and must not keep it alive.
    plan_.feed->SetWake([weak = std::weak_ptr<ShotWindow>(shared_from_this())] {
      if (auto w = weak.lock()) w->Poke();
    });
    plan_.feed->SetStop([weak = std::weak_ptr<ShotWindow>(shared_from_this())](
                            const absl::Status& why) {
      if (auto w = weak.lock()) w->Stop(why);
    });
  }
  if (plan_.stall_watch != nullptr) plan_.stall_watch->Watch(shared_from_this());
  absl::MutexLock lock(&mu_);
  link_.Start(absl::Now());
  SubmitReadsLocked();
}

void ShotWindow::Poke() {
  bool ended;
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return;
    SubmitReadsLocked();
    ended = cursor_.all_known() && window_.empty();
  }
  if (ended) {  // the writer hears the end (on_ready comes from the executor)
    executor_->Submit([self = shared_from_this()] { self->Notify(); });
  }
}

std::vector<int64_t> ShotWindow::shot_ids(size_t first, size_t count) const {
  absl::MutexLock lock(&mu_);
  return cursor_.ids(first, count);
}

ShotWindow::ShotWindow(WindowPlan plan, Executor* executor, std::function<void()> on_ready)
    : plan_(std::move(plan)),
      executor_(executor),
      pipeline_(&plan_, executor),
      on_ready_(std::move(on_ready)),
      counters_(plan_.counters),
      account_(plan_.budget != nullptr ? plan_.budget->Open(this) : nullptr),
      cursor_(&plan_) {}

ShotWindow::~ShotWindow() {
  counters_->shots_held -= static_cast<int64_t>(window_.size());
  counters_->inflight_bytes -= static_cast<int64_t>(held_bytes_);
  if (stalled_) counters_->stalled_streams--;
  // account_ goes with the window: what it holds goes back to the budget.
}

void ShotWindow::HoldLocked(uint64_t bytes) {
  held_bytes_ += bytes;
  counters_->inflight_bytes += static_cast<int64_t>(bytes);
  RaiseMax(&counters_->inflight_bytes_peak, counters_->inflight_bytes.load());
}

ShotWindow::Slot* ShotWindow::FindSlotLocked(uint64_t read) {
  for (Slot& slot : window_) {
    if (slot.read == read) return &slot;
  }
  return nullptr;
}

void ShotWindow::SubmitReadsLocked() {
  Unit unit;
  while (!stopped_ && !waiting_ && !stalled_ && window_.size() < plan_.queue_depth &&
         cursor_.Peek(&unit)) {
    uint64_t bytes = 0;
    if (account_ != nullptr) {
      bytes = unit.bytes;
      if (!account_->TryAcquire(bytes)) {
        counters_->budget_waits++;
        waiting_ = true;
        waiting_unit_ = std::move(unit);
        self_while_waiting_ = shared_from_this();
        return;
      }
      HoldLocked(bytes);
    }
    SubmitOneLocked(unit, bytes);
  }
}

void ShotWindow::SubmitOneLocked(const Unit& unit, uint64_t budget_bytes) {
  Slot& slot = window_.emplace_back();
  slot.index = unit.index;
  slot.piece = unit.piece;
  slot.budget_bytes = budget_bytes;
  slot.read = ++reads_;
  counters_->reads_in_flight++;
  counters_->shots_held++;
  RaiseMax(&counters_->max_shots_held_by_one_stream, static_cast<int64_t>(window_.size()));
  executor_->Submit([self = shared_from_this(), unit, id = cursor_.id(unit.index),
                      read = slot.read] { self->Read(unit, id, read); });
  cursor_.Advance(unit);
}

void ShotWindow::Wake() {
  std::shared_ptr<ShotWindow> self;  // dropped after the lock
  uint64_t give_back = 0;
  {
    absl::MutexLock lock(&mu_);
    waiting_ = false;
    self = std::move(self_while_waiting_);
    Unit unit = std::move(waiting_unit_);
    waiting_unit_ = Unit();
    if (stopped_ || stalled_) {  // (a stall that could not cancel the request: read later)
      give_back = unit.bytes;
    } else {
      HoldLocked(unit.bytes);
      SubmitOneLocked(unit, unit.bytes);
      SubmitReadsLocked();
    }
  }
  if (give_back > 0) account_->Release(give_back);
}

void ShotWindow::Read(const Unit& unit, int64_t id, uint64_t read) {
  bool skip;
  {
    absl::MutexLock lock(&mu_);
    skip = stopped_.has_value() || FindSlotLocked(read) == nullptr;
  }
  absl::StatusOr<dataset::ShotData> shot =
      skip ? absl::CancelledError("stream stopped") : pipeline_.Read(unit, id);
  bool notify = false;
  {
    absl::MutexLock lock(&mu_);
    counters_->reads_in_flight--;
    // Its slot may be gone (a stall gave it back, and its unit may be read again by a
    // read of its own): only the read the slot waits for fills it.
    Slot* slot = FindSlotLocked(read);
    if (!stopped_ && slot != nullptr) {
      const bool head_learned = unit.pieced && unit.piece == 0 && shot.ok();
      if (head_learned) cursor_.HeadRead(unit.index, shot->head);
      slot->shot = std::move(shot);
      slot->ready = true;
      notify = slot == &window_.front();
      if (head_learned) SubmitReadsLocked();  // the shot's later pieces may now be read
    }
  }
  if (notify) Notify();
}

ShotWindow::Pull ShotWindow::Next(OutgoingChunk* chunk, absl::Status* end) {
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) {
      *end = *stopped_;
      return Pull::kEnd;
    }
    if (window_.empty()) {
      if (!cursor_.all_sent()) return Pull::kNotReady;
      *end = absl::OkStatus();
      link_.EndedOk();
      return Pull::kEnd;
    }
    Slot& slot = window_.front();
    if (!slot.ready) return Pull::kNotReady;
    if (!slot.shot.ok()) {
      stopped_ = slot.shot.status();
      *end = *stopped_;
      return Pull::kEnd;
    }
    const bool sealed = !slot.shot->chunk_crc32.empty();  // (every chunk's, or none)
    FillChunkLocked(slot, chunk);
    if (sealed) return Pull::kChunk;
  }
  // A stored chunk whose traces must be read for their CRC-32 (the pipeline joined those
  // of the shots whose every trace's is kept): taken here, by the writer, without the
  // lock, just before the write, so that the kernel's copy finds the pages in cache
  // (docs/design.md); chunks_ waits for it to seal the chunk (only the writer frames and
  // seals).
  absl::StatusOr<uint32_t> crc =
      chunk->stored_set->Crc(chunk->stored_first, chunk->stored.size(), 0);
  absl::MutexLock lock(&mu_);
  if (!crc.ok()) {
    if (!stopped_) stopped_ = crc.status();
    *end = *stopped_;
    return Pull::kEnd;
  }
  chunks_.Seal(*crc, &chunk->meta);
  return Pull::kChunk;
}

void ShotWindow::FillChunkLocked(Slot& slot, OutgoingChunk* chunk) {
  dataset::ShotData& shot = *slot.shot;
  const dataset::ShotHead* head = shot.head.get();
  ChunkAt at;
  at.index = slot.index;
  at.piece = slot.piece;
  at.chunk = slot.next_chunk++;
  at.sample_interval_us = plan_.source->sample_interval_us();
  const bool last_of_unit = slot.next_chunk == shot.n_chunks();
  const bool last = last_of_unit && (head == nullptr || slot.piece + 1 == head->n_pieces());
  const uint32_t traces = TakeChunk(shot, at, last, plan_.shot.read.selection.accept_trace_gaps,
                                    &chunks_, chunk);
  const uint64_t size = chunk->sample_bytes();
  link_.ChunkOut(size, uint64_t{traces} * shot.n_samples * sizeof(float), absl::Now());
  bytes_sent_ += size;
  counters_->bytes_sent += static_cast<int64_t>(size);
  if (last && shot.is_stored()) counters_->shots_sent_zero_copy++;
  const size_t index = slot.index;  // (the slot goes with the unit)
  if (last_of_unit) {  // the unit leaves the window; its bytes go back once Sent()
    release_after_sent_ += slot.budget_bytes;
    counters_->shots_held--;
    window_.pop_front();
  }
  if (last) {
    counters_->shots_sent++;
    cursor_.ShotSent(index);
  }
}

void ShotWindow::Sent() {
  Written();
  Refill();
}

void ShotWindow::Written() {
  absl::MutexLock lock(&mu_);
  link_.ChunkSent(absl::Now());
  if (stalled_) {  // the consumer reads again: what was given back is read again
    stalled_ = false;
    counters_->stalled_streams--;
  }
  release_on_refill_ += release_after_sent_;
  release_after_sent_ = 0;
}

void ShotWindow::Refill() {
  uint64_t release;
  {
    absl::MutexLock lock(&mu_);
    release = release_on_refill_;
    release_on_refill_ = 0;
    held_bytes_ -= release;
    counters_->inflight_bytes -= static_cast<int64_t>(release);
  }
  // Outside the lock: releasing may wake other windows (or this one).
  if (release > 0) account_->Release(release);
  absl::MutexLock lock(&mu_);
  SubmitReadsLocked();
}

void ShotWindow::Stop(const absl::Status& why) {
  std::shared_ptr<ShotWindow> self;  // dropped after the lock
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return;  // the writer hears (or heard) the first reason
    stopped_ = why;
    if (waiting_ && account_->Cancel()) {
      waiting_ = false;
      self = std::move(self_while_waiting_);
    }
  }
  executor_->Submit([w = shared_from_this()] { w->Notify(); });
}

void ShotWindow::Notify() {
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return;
    ++callbacks_running_;
  }
  on_ready_();
  absl::MutexLock lock(&mu_);
  --callbacks_running_;
}

void ShotWindow::Close() {
  std::shared_ptr<ShotWindow> self;  // dropped after the lock
  absl::MutexLock lock(&mu_);
  if (!stopped_) stopped_ = absl::CancelledError("stream closed");
  if (!closed_) {
    link_.Report(plan_.advisor, plan_.peer, plan_.dataset, plan_.shot.encode.encoding,
                 plan_.shot.encode.tolerance);
  }
  closed_ = true;
  if (waiting_ && account_->Cancel()) {
    waiting_ = false;
    self = std::move(self_while_waiting_);
  }
  mu_.Await(absl::Condition(this, &ShotWindow::NoCallbackRunning));
}

bool ShotWindow::GiveBackIfStalled(absl::Time now, absl::Duration timeout) {
  uint64_t give_back = 0;
  std::vector<int64_t> fed_back;
  std::shared_ptr<ShotWindow> self;  // dropped after the lock
  {
    absl::MutexLock lock(&mu_);
    if (stalled_ || stopped_ || !link_.on_wire() || now - link_.chunk_since() < timeout) {
      return false;
    }
    // A unit begun on the wire stays (its chunks go out in one piece); every other unit
    // read, being read or waited for goes back. (The unit whose last chunk is on the
    // wire has left the window; its bytes go back when Sent() says so.)
    if (waiting_ && account_->Cancel()) {
      waiting_ = false;
      self = std::move(self_while_waiting_);
      waiting_unit_ = Unit();
    }
    // A read in flight behind the front finds its slot gone and is dropped.
    const size_t keep = !window_.empty() && window_.front().next_chunk > 0 ? 1 : 0;
    size_t units = 0;
    while (window_.size() > keep) {
      Slot& slot = window_.back();
      give_back += slot.budget_bytes;
      cursor_.MoveTo(slot.index, slot.piece);  // at last, the first unit given back
      window_.pop_back();
      ++units;
    }
    counters_->shots_held -= static_cast<int64_t>(units);
    held_bytes_ -= give_back;
    counters_->inflight_bytes -= static_cast<int64_t>(give_back);
    fed_back = cursor_.Rewind();
    stalled_ = true;
    counters_->stalled_streams++;
    counters_->shots_given_back += static_cast<int64_t>(units);
    counters_->bytes_given_back += static_cast<int64_t>(give_back);
  }
  if (give_back > 0) account_->Release(give_back);  // may wake other windows
  if (!fed_back.empty()) plan_.feed->GiveBack(fed_back);
  return true;
}

size_t ShotWindow::shots_sent() const {
  absl::MutexLock lock(&mu_);
  return cursor_.shots_sent();
}

uint64_t ShotWindow::bytes_sent() const {
  absl::MutexLock lock(&mu_);
  return bytes_sent_;
}

}  // namespace shotstream::stream

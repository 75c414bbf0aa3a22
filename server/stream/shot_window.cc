#include "server/stream/shot_window.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "absl/strings/str_cat.h"
#include "common/crc32.h"
#include "common/status_macros.h"
#include "server/stream/shot_encoder.h"
#include "wire/chunk_plan.h"
#include "wire/encoding_proto.h"
#include "wire/sample_encoding.h"

namespace shotstream::stream {
namespace {

void ObserveLatency(WindowCounters* c, double seconds) {
  size_t b = 0;
  while (b < std::size(WindowCounters::kLatencyBuckets) &&
         seconds > WindowCounters::kLatencyBuckets[b]) {
    ++b;
  }
  c->read_latency_count[b]++;
  c->read_latency_sum_us += static_cast<int64_t>(seconds * 1e6);
}

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
  wire_.started = absl::Now();
  ids_ = plan_.shot_ids;
  SubmitReadsLocked();
}

bool ShotWindow::HaveNextLocked() {
  if (next_submit_ < ids_.size()) return true;
  if (AllKnownLocked()) return false;
  int64_t id;
  switch (plan_.feed->Next(&id)) {
    case ShotFeed::Take::kShot:
      ids_.push_back(id);
      return true;
    case ShotFeed::Take::kEnd:
      feed_ended_ = true;
      return false;
    case ShotFeed::Take::kWait:
      return false;
  }
  return false;
}

void ShotWindow::Poke() {
  bool ended;
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return;
    SubmitReadsLocked();
    ended = feed_ended_ && window_.empty();
  }
  if (ended) {  // the writer hears the end (on_ready comes from the executor)
    executor_->Submit([self = shared_from_this()] { self->Notify(); });
  }
}

std::vector<int64_t> ShotWindow::shot_ids(size_t first, size_t count) const {
  absl::MutexLock lock(&mu_);
  if (first >= ids_.size()) return {};
  return std::vector<int64_t>(ids_.begin() + first,
                              ids_.begin() + first + std::min(count, ids_.size() - first));
}

ShotWindow::ShotWindow(WindowPlan plan, Executor* executor, std::function<void()> on_ready)
    : plan_(std::move(plan)),
      executor_(executor),
      on_ready_(std::move(on_ready)),
      counters_(plan_.counters),
      account_(plan_.budget != nullptr ? plan_.budget->Open(this) : nullptr) {}

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

bool ShotWindow::NextUnitLocked(Unit* unit) {
  for (;;) {
    if (next_piece_ > 0) {  // within a shot read in pieces
      auto it = heads_.find(next_submit_);
      // No head: its first piece (and head) is still being read, or the shot was sent to
      // its end and its head dropped.
      if (it == heads_.end() && next_submit_ >= shots_done_) return false;
      if (it != heads_.end() && next_piece_ < it->second->n_pieces()) {
        const dataset::ShotHead& head = *it->second;
        unit->index = next_submit_;
        unit->piece = next_piece_;
        unit->pieced = true;
        unit->bytes = uint64_t{head.piece_traces(next_piece_)} * head.n_samples * sizeof(float);
        unit->head = it->second;
        return true;
      }
      ++next_submit_;  // every piece of it submitted: the next shot
      next_piece_ = 0;
      continue;
    }
    if (!HaveNextLocked()) return false;
    const uint64_t bytes =
        plan_.source->ShotBytes(ids_[next_submit_], plan_.shot.selection.count);
    unit->index = next_submit_;
    unit->piece = 0;
    unit->pieced = plan_.piece_bytes > 0 && bytes > plan_.piece_bytes;
    unit->bytes = unit->pieced ? plan_.piece_bytes : bytes;
    unit->head.reset();
    return true;
  }
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
         NextUnitLocked(&unit)) {
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
  executor_->Submit([self = shared_from_this(), unit, id = ids_[unit.index], read = slot.read] {
    self->Read(unit, id, read);
  });
  // The cursor moves on: to the shot's next piece, or to the next shot.
  if (unit.pieced) {
    next_piece_ = unit.piece + 1;
  } else {
    ++next_submit_;
    next_piece_ = 0;
  }
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

absl::StatusOr<dataset::ShotData> ShotWindow::ReadUnit(const Unit& unit, int64_t id) const {
  const bool corrupt = plan_.corrupt_shot == id && unit.piece == 0;
  ShotReadCost cost;
  const absl::Time t0 = absl::Now();
  absl::StatusOr<dataset::ShotData> shot;
  dataset::ShotPlan decoded;
  if (corrupt) {  // its bytes get flipped: never sent as stored
    decoded = plan_.shot;
    decoded.zero_copy = dataset::ZeroCopy::kOff;
  }
  const dataset::ShotPlan& plan = corrupt ? decoded : plan_.shot;
  if (!unit.pieced) {
    shot = plan_.source->ReadShot(id, plan, &cost);
  } else if (unit.piece == 0) {  // the shot's head, then its first piece
    absl::StatusOr<dataset::ShotHead> head =
        plan_.source->ReadShotHead(id, plan, plan_.piece_bytes, &cost);
    if (!head.ok()) {
      shot = head.status();
    } else {
      auto shared = std::make_shared<const dataset::ShotHead>(*std::move(head));
      shot = plan_.source->ReadPiece(*shared, 0, plan, &cost);
      if (shot.ok()) shot->head = std::move(shared);
    }
  } else {
    shot = plan_.source->ReadPiece(*unit.head, unit.piece, plan, &cost);
    if (shot.ok()) shot->head = unit.head;
  }
  if (shot.ok() && shot->is_stored()) {
    // The first touch of the mapped pages, here on the executor, not in the writer.
    if (absl::Status touched = shot->stored->Touch(); !touched.ok()) shot = touched;
  }
  if (shot.ok()) {  // compression, here on the executor too
    if (absl::Status encoded = Encode(unit, &*shot); !encoded.ok()) shot = encoded;
  }
  ObserveLatency(counters_, absl::ToDoubleSeconds(absl::Now() - t0));
  counters_->reads_issued += static_cast<int64_t>(cost.reads);
  counters_->bytes_read += static_cast<int64_t>(cost.bytes_read);
  counters_->bytes_wanted += static_cast<int64_t>(cost.bytes_wanted);
  if (shot.ok() && corrupt && !shot->chunks.empty() && !shot->chunks[0].empty()) {
    shot->chunks[0].data()[0] ^= 0x01;  // after its CRC-32 was taken
  }
  return shot;
}

absl::Status ShotWindow::Encode(const Unit& unit, dataset::ShotData* shot) const {
  const double tolerance = plan_.shot.selection.tolerance;
  if (plan_.advisor != nullptr && !plan_.shot.probes.empty() && unit.piece == 0 &&
      unit.index % kProbeEvery == 0) {
    const std::vector<float> probe = FirstTraces(*shot, 64);
    const uint32_t n_traces = shot->n_samples == 0 ? 0 : probe.size() / shot->n_samples;
    auto measure = [&](wire::Encoding e) {
      const double accuracy =
          e == wire::Encoding::kQuantized ? tolerance * wire::Rms(probe.data(), probe.size()) : 0;
      // (INT16's probe: its rate; its ratio is 2 less the scales.)
      const absl::Time t0 = absl::Now();
      auto packed = wire::EncodeSamples(e, probe.data(), n_traces, shot->n_samples, accuracy);
      if (packed.ok()) {
        plan_.advisor->RecordCodec(plan_.dataset, probe.size() * sizeof(float), packed->size(),
                                   absl::ToDoubleSeconds(absl::Now() - t0), e, tolerance);
      }
    };
    for (wire::Encoding e : plan_.shot.probes) measure(e);
  }
  const uint64_t raw = shot->total_bytes;
  const absl::Time t0 = absl::Now();
  SS_RETURN_IF_ERROR(
      EncodeShot(shot, plan_.shot.encoding, tolerance, executor_, plan_.shot.bound_int16));
  const wire::Encoding got = shot->encoding;
  if (plan_.advisor != nullptr && (got == wire::Encoding::kLossless ||
                                   got == wire::Encoding::kQuantized ||
                                   got == wire::Encoding::kInt16)) {
    // Chunks ran on up to the executor's threads at once: the rate of one thread is at
    // least raw over (wall time x threads).
    uint64_t encoded = 0;
    for (const SampleBuffer& c : shot->chunks) encoded += c.size();
    const size_t threads = std::min<size_t>(shot->chunks.size(),
                                            std::max(executor_->parallelism(), 1));
    plan_.advisor->RecordCodec(plan_.dataset, raw, encoded,
                               absl::ToDoubleSeconds(absl::Now() - t0) * threads, shot->encoding,
                               tolerance);
  }
  return absl::OkStatus();
}

void ShotWindow::Read(const Unit& unit, int64_t id, uint64_t read) {
  bool skip;
  {
    absl::MutexLock lock(&mu_);
    skip = stopped_.has_value() || FindSlotLocked(read) == nullptr;
  }
  absl::StatusOr<dataset::ShotData> shot =
      skip ? absl::CancelledError("stream stopped") : ReadUnit(unit, id);
  bool notify = false;
  {
    absl::MutexLock lock(&mu_);
    counters_->reads_in_flight--;
    // Its slot may be gone (a stall gave it back, and its unit may be read again by a
    // read of its own): only the read the slot waits for fills it.
    Slot* slot = FindSlotLocked(read);
    if (!stopped_ && slot != nullptr) {
      const bool head_learned = unit.pieced && unit.piece == 0 && shot.ok();
      if (head_learned) heads_[unit.index] = shot->head;
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
      if (shots_done_ < ids_.size() || !AllKnownLocked()) return Pull::kNotReady;
      *end = absl::OkStatus();
      wire_.ended_ok = true;
      return Pull::kEnd;
    }
    Slot& slot = window_.front();
    if (!slot.ready) return Pull::kNotReady;
    if (slot.shot.ok() && !slot.shot->is_stored() &&
        slot.shot->chunk_crc32.size() != slot.shot->chunks.size()) {
      slot.shot = absl::InternalError(absl::StrCat("shot ", slot.shot->shot_id,
                                                   ": its chunks' CRC-32s are missing"));
    }
    if (!slot.shot.ok()) {
      stopped_ = slot.shot.status();
      *end = *stopped_;
      return Pull::kEnd;
    }
    FillChunkLocked(slot, chunk);
    if (chunk->stored.empty()) return Pull::kChunk;
  }
  // A stored chunk's CRC-32, taken by the writer without the lock (the pages were
  // touched on the executor). Only the writer reads or writes shot_crc_.
  absl::StatusOr<uint32_t> crc =
      chunk->stored_set->Crc(chunk->stored_first, chunk->stored.size(), 0);
  absl::MutexLock lock(&mu_);
  if (!crc.ok()) {
    if (!stopped_) stopped_ = crc.status();
    *end = *stopped_;
    return Pull::kEnd;
  }
  chunk->meta.set_chunk_crc32(*crc);
  shot_crc_ = Crc32Combine(shot_crc_, *crc, chunk->sample_bytes());
  if (chunk->meta.last()) chunk->meta.set_crc32(shot_crc_);
  return Pull::kChunk;
}

void ShotWindow::FillChunkLocked(Slot& slot, OutgoingChunk* chunk) {
  dataset::ShotData& shot = *slot.shot;
  const dataset::ShotHead* head = shot.head.get();
  const size_t c = slot.next_chunk++;
  const bool first_of_shot = slot.piece == 0 && c == 0;
  const bool last_of_unit = slot.next_chunk == shot.n_chunks();
  const bool last = last_of_unit && (head == nullptr || slot.piece + 1 == head->n_pieces());
  chunk->samples = SampleBuffer();
  chunk->stored.clear();
  chunk->stored_set.reset();
  chunk->trace_bytes = 0;
  uint32_t traces;
  if (shot.is_stored()) {
    const std::vector<const uint8_t*>& all = shot.stored->traces();
    const size_t first = c * shot.traces_per_chunk;
    const size_t n = std::min<size_t>(shot.traces_per_chunk, all.size() - first);
    chunk->stored.assign(all.begin() + first, all.begin() + first + n);
    chunk->stored_set = shot.stored;
    chunk->stored_first = first;
    chunk->trace_bytes = shot.stored->trace_bytes();
    traces = static_cast<uint32_t>(n);  // its CRC-32: Next() takes it
  } else {
    chunk->samples = std::move(shot.chunks[c]);
    traces = c < shot.chunk_traces.size()
                 ? shot.chunk_traces[c]
                 : static_cast<uint32_t>(chunk->samples.size() / sizeof(float) /
                                         std::max<uint32_t>(shot.n_samples, 1));
  }
  // What the chunk carries: wire/chunk_plan.h.
  wire::ShotFrame frame;
  frame.index = static_cast<uint32_t>(slot.index);
  frame.shot_id = shot.shot_id;
  frame.n_traces = head != nullptr ? head->n_traces : shot.n_traces;
  frame.n_samples = shot.n_samples;
  frame.sample_interval_us = plan_.source->sample_interval_us();
  frame.encoding = shot.encoding;
  frame.sample_format = shot.sample_format;
  frame.big_endian = shot.big_endian;
  v1::ShotChunk& meta = chunk->meta;
  wire::PlanChunk(frame, chunk_trace_, traces, last, &meta);
  if (first_of_shot) {
    shot_crc_ = 0;
    // A shot read whole gives its columns away; a head's stay with the head.
    auto& columns = head != nullptr ? head->headers : shot.headers;
    for (auto& [name, values] : columns) {
      v1::HeaderColumn* col = meta.add_headers();
      col->set_name(name);
      col->mutable_values()->Add(values.begin(), values.end());
    }
    if (head != nullptr) {
      if (!head->trace_headers.empty()) meta.set_trace_headers(head->trace_headers);
    } else if (!shot.trace_headers.empty()) {
      meta.set_trace_headers(std::move(shot.trace_headers));
    }
  }
  if (!shot.is_stored()) {
    meta.set_chunk_crc32(shot.chunk_crc32[c]);
    shot_crc_ = Crc32Combine(shot_crc_, shot.chunk_crc32[c],
                             wire::CrcCoveredBytes(shot.encoding, traces, shot.n_samples,
                                                   chunk->samples.size()));
    if (last) meta.set_crc32(shot_crc_);
  }
  const uint64_t size = chunk->sample_bytes();
  wire_.chunk_bytes = size;
  wire_.chunk_float32_bytes = uint64_t{traces} * shot.n_samples * sizeof(float);
  wire_.chunk_since = absl::Now();
  on_wire_ = true;
  chunk_trace_ += traces;
  bytes_sent_ += size;
  counters_->bytes_sent += static_cast<int64_t>(size);
  if (last && shot.is_stored()) counters_->shots_sent_zero_copy++;
  const size_t index = slot.index;
  if (last_of_unit) {  // the unit leaves the window; its bytes go back once Sent()
    release_after_sent_ += slot.budget_bytes;
    counters_->shots_held--;
    window_.pop_front();
  }
  if (last) {
    counters_->shots_sent++;
    ++shots_done_;
    heads_.erase(index);
    chunk_trace_ = 0;
  }
}

void ShotWindow::Sent() {
  uint64_t release;
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = absl::Now();
    wire_.time += now - wire_.chunk_since;
    wire_.bytes += wire_.chunk_bytes;
    wire_.float32_bytes += wire_.chunk_float32_bytes;
    wire_.last_done = now;
    on_wire_ = false;
    if (stalled_) {  // the consumer reads again: what was given back is read again
      stalled_ = false;
      counters_->stalled_streams--;
    }
    release = release_after_sent_;
    release_after_sent_ = 0;
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
  if (!closed_ && plan_.advisor != nullptr) {
    plan_.advisor->RecordLink(plan_.peer, wire_.bytes, absl::ToDoubleSeconds(wire_.time));
    if (wire_.ended_ok && wire_.bytes > 0) {  // ran to its end: what its encoding delivered
      plan_.advisor->RecordOutcome(plan_.peer, plan_.dataset, plan_.shot.encoding,
                                   wire_.float32_bytes,
                                   absl::ToDoubleSeconds(wire_.last_done - wire_.started),
                                   plan_.shot.selection.tolerance);
    }
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
    if (stalled_ || stopped_ || !on_wire_ || now - wire_.chunk_since < timeout) return false;
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
      next_submit_ = slot.index;  // the cursor goes back to the first unit given back
      next_piece_ = slot.piece;
      window_.pop_back();
      ++units;
    }
    counters_->shots_held -= static_cast<int64_t>(units);
    held_bytes_ -= give_back;
    counters_->inflight_bytes -= static_cast<int64_t>(give_back);
    // A shot whose first piece went back is read again from its head.
    for (auto it = heads_.begin(); it != heads_.end();) {
      const bool again =
          it->first > next_submit_ || (it->first == next_submit_ && next_piece_ == 0);
      if (again) {
        heads_.erase(it++);
      } else {
        ++it;
      }
    }
    if (plan_.feed != nullptr) {
      // A job's shots go back to the job (any consumer may take them), and this stream's
      // later positions are taken afresh from the feed; a shot partly sent stays.
      const size_t ours = std::min(next_piece_ > 0 ? next_submit_ + 1 : next_submit_, ids_.size());
      fed_back.assign(ids_.begin() + ours, ids_.end());
      ids_.resize(ours);
    }
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
  return shots_done_;
}

uint64_t ShotWindow::bytes_sent() const {
  absl::MutexLock lock(&mu_);
  return bytes_sent_;
}

}  // namespace shotstream::stream

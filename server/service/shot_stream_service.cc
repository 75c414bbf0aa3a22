#include "server/service/shot_stream_service.h"

#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "wire/chunk_wire.h"
#include "server/service/grpc_status.h"
#include "server/stream/byte_budget.h"
#include "shotstream/v1/shotstream.grpc.pb.h"

namespace shotstream::service {
namespace {

namespace v1 = ::shotstream::v1;

// with_shots: shots [first, first + count) of the catalog (count 0: to the end).
void FillInfo(const DatasetEntry& e, bool with_shots, v1::DatasetInfo* info,
              uint64_t first = 0, uint64_t count = 0) {
  info->set_name(e.name);
  const std::shared_ptr<const dataset::Dataset> snapshot = e.dataset();
  if (snapshot == nullptr) {
    const bool rebuilding = e.state() == DatasetEntry::State::kRebuilding;
    info->set_state(rebuilding ? "REBUILDING" : "FAILED");
    info->set_error(std::string(e.status().message()));
    return;
  }
  const dataset::Dataset& d = *snapshot;
  info->set_state("READY");
  info->set_n_traces(d.catalog().n_traces());
  info->set_n_shots(d.catalog().shots().size());
  info->set_n_samples(d.n_samples());
  info->set_sample_interval_us(d.sample_interval_us());
  info->set_sample_format(d.sample_format());
  info->set_shot_key(d.spec().shot_key.name);
  info->set_n_files(static_cast<uint32_t>(d.n_files()));
  for (const std::string& h : segy::ServableHeaderNames()) info->add_header_fields(h);
  if (with_shots) {
    const auto& shots = d.catalog().shots();
    const uint64_t begin = std::min<uint64_t>(first, shots.size());
    const uint64_t end =
        count == 0 ? shots.size() : std::min<uint64_t>(shots.size(), begin + count);
    info->mutable_shot_ids()->Reserve(static_cast<int>(end - begin));
    info->mutable_shot_trace_counts()->Reserve(static_cast<int>(end - begin));
    for (uint64_t i = begin; i < end; ++i) {
      info->add_shot_ids(shots[i].shot_id);
      info->add_shot_trace_counts(shots[i].n_traces);
    }
    // source_xy: positions are by id 1..n, as the shots are.
    const auto& positions = d.catalog().source_positions();
    for (uint64_t i = begin; i < end && i < positions.size(); ++i) {
      v1::SourcePosition* out = info->add_source_positions();
      out->set_shot_id(positions[i].shot_id);
      out->set_x(positions[i].x);
      out->set_y(positions[i].y);
    }
    if (end < shots.size()) info->set_next_page_token(std::to_string(end));
  }
}

class StreamShotsReactor;

// The running streams, so that a shutdown can finish them with its own status.
struct StreamRegistry {
  absl::Mutex mu;
  std::set<StreamShotsReactor*> live ABSL_GUARDED_BY(mu);
};

// What a validated StreamShots request resolved to.
struct StreamPlan {
  std::shared_ptr<const dataset::Dataset> dataset;  // as it was when the stream began
  std::vector<int64_t> shot_ids;
  std::vector<segy::HeaderSelector> headers;
  uint32_t queue_depth = 2;
  uint64_t max_chunk_bytes = 1 << 20;
  std::optional<int64_t> corrupt_shot;  // testing only
  dataset::ZeroCopy zero_copy = dataset::ZeroCopy::kOff;
  bool raw_trace_headers = false;
  ServiceCounters* counters = nullptr;
  stream::ByteBudget* budget = nullptr;  // null: unlimited
  std::string dataset_name;
  std::string peer;
  int64_t stream_id = 0;
  bool log = false;
  // Called once when the stream is gone (releases the per-peer slot).
  std::function<void()> on_gone;
  StreamRegistry* registry = nullptr;  // where the stream is listed while it lives
};

void ObserveLatency(ServiceCounters* c, double seconds) {
  size_t b = 0;
  while (b < std::size(ServiceCounters::kLatencyBuckets) &&
         seconds > ServiceCounters::kLatencyBuckets[b]) {
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

// A StreamShots call refused before any data: finished at once, counted by its code
// (ServiceCounters::rejected_by_code) and logged like a finished stream.
//
// Thread-safe: gRPC calls OnDone once, after the Finish made here.
class RejectReactor final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  RejectReactor(const grpc::Status& error, ServiceCounters* counters, bool log,
                const std::string& peer, const std::string& dataset) {
    counters->rejected_by_code[error.error_code()]++;
    counters->streams_rejected++;
    if (log) {
      std::fprintf(stderr, "stream refused: peer %s dataset %s: %s: %s\n", peer.c_str(),
                   dataset.c_str(),
                   std::string(absl::StatusCodeToString(
                                   static_cast<absl::StatusCode>(error.error_code())))
                       .c_str(),
                   error.error_message().c_str());
    }
    Finish(error);
  }
  void OnDone() override { delete this; }
};

// One StreamShots call. Reads are submitted to the pool, at most queue_depth shots ahead
// of the shot being written; writes go one at a time from OnWriteDone or from the read
// that completes the next shot in request order.
//
// Thread-safe: reactions and pool callbacks synchronise on mu_. The reactor deletes
// itself once gRPC has called OnDone and no read is in flight.
class StreamShotsReactor final : public grpc::ServerWriteReactor<grpc::ByteBuffer>,
                                 public stream::ByteBudget::Waiter {
 public:
  StreamShotsReactor(StreamPlan plan, stream::ReaderPool* pool)
      : plan_(std::move(plan)), pool_(pool), counters_(plan_.counters), budget_(plan_.budget) {
    if (plan_.registry != nullptr) {
      absl::MutexLock lock(&plan_.registry->mu);
      plan_.registry->live.insert(this);
    }
    counters_->active_streams++;
    start_ = absl::Now();
    if (plan_.log) {
      std::fprintf(stderr, "stream %lld: peer %s dataset %s shots %zu queue_depth %u\n",
                   static_cast<long long>(plan_.stream_id), plan_.peer.c_str(),
                   plan_.dataset_name.c_str(), plan_.shot_ids.size(), plan_.queue_depth);
    }
    bool write = false;
    {
      absl::MutexLock lock(&mu_);
      SubmitReadsLocked();
      write = PrepareNextLocked();
    }
    Act(write);
  }

  // The server is shutting down: stop reading, and finish with `status` as soon as no
  // write is on the wire. Called with the registry's lock held, so the reactor is alive;
  // the finish runs on the reader pool (counted as a read in flight, so that the reactor
  // outlives it), never under that lock.
  void Cut(const grpc::Status& status) {
    absl::MutexLock lock(&mu_);
    if (finished_ || done_) return;
    cut_ = status;
    cancelled_ = true;
    ++reads_in_flight_;
    pool_->Submit([this] { FinishCut(); });
  }

  void OnWriteDone(bool ok) override {
    bool write = false;
    uint64_t release = 0;
    {
      absl::MutexLock lock(&mu_);
      release = release_after_write_;
      release_after_write_ = 0;
      TakeBackLocked(release);
    }
    // Outside our lock: releasing may grant (wake) other streams.
    if (budget_ != nullptr && release > 0) budget_->Release(release);
    {
      absl::MutexLock lock(&mu_);
      writing_ = false;
      if (!ok && !finished_) {
        // The stream broke (client gone): stop reading; finish once.
        cancelled_ = true;
        finished_ = true;
        pending_finish_ = grpc::Status(grpc::StatusCode::CANCELLED, "stream broken");
        write = true;
      } else {
        SubmitReadsLocked();
        write = PrepareNextLocked();
      }
    }
    Act(write);
  }

  void OnCancel() override {
    bool act = false;
    counters_->streams_cancelled++;
    {
      absl::MutexLock lock(&mu_);
      cancelled_ = true;
      if (!finished_ && !writing_) {
        finished_ = true;
        pending_finish_ = grpc::Status(grpc::StatusCode::CANCELLED, "cancelled by the client");
        act = true;
      }
    }
    Act(act);
  }

  void OnDone() override {
    bool destroy;
    {
      absl::MutexLock lock(&mu_);
      done_ = true;
      cancelled_ = true;
      if (waiting_ && budget_->Cancel(this)) waiting_ = false;
      destroy = reads_in_flight_ == 0 && !waiting_;
    }
    if (destroy) delete this;
  }

  // The budget granted the bytes of the shot we waited for.
  void Wake() override {
    bool destroy = false;
    {
      absl::MutexLock lock(&mu_);
      waiting_ = false;
      HoldLocked(waiting_bytes_);
      if (done_) {
        destroy = reads_in_flight_ == 0;
      } else if (!cancelled_) {
        SubmitOneLocked();
        SubmitReadsLocked();
      }
    }
    if (destroy) delete this;
  }

  ~StreamShotsReactor() override {
    if (plan_.registry != nullptr) {
      absl::MutexLock lock(&plan_.registry->mu);
      plan_.registry->live.erase(this);
    }
    counters_->active_streams--;
    counters_->shots_held -= static_cast<int64_t>(window_.size());
    const uint64_t held = held_bytes_;  // includes a shot still on the wire
    counters_->inflight_bytes -= static_cast<int64_t>(held);
    if (budget_ != nullptr && held > 0) budget_->Release(held);
    if (plan_.on_gone) plan_.on_gone();
    if (plan_.log) {
      const double secs = absl::ToDoubleSeconds(absl::Now() - start_);
      std::fprintf(stderr, "stream %lld: %s, %zu of %zu shots, %.1f MB in %.2f s%s%s\n",
                   static_cast<long long>(plan_.stream_id),
                   grpc_status_name_.c_str(), window_base_, plan_.shot_ids.size(),
                   bytes_sent_ / 1e6, secs, final_message_.empty() ? "" : ": ",
                   final_message_.c_str());
    }
  }

 private:
  struct Slot {
    bool ready = false;
    absl::StatusOr<dataset::ShotData> shot;
    size_t next_chunk = 0;
  };

  uint64_t ShotBytes(size_t index) const {
    const catalog::ShotEntry* e = plan_.dataset->catalog().Find(plan_.shot_ids[index]);
    return uint64_t{e->n_traces} * plan_.dataset->n_samples() * sizeof(float);
  }

  void HoldLocked(uint64_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    held_bytes_ += bytes;
    counters_->inflight_bytes += static_cast<int64_t>(bytes);
    RaiseMax(&counters_->inflight_bytes_peak, counters_->inflight_bytes.load());
  }

  void TakeBackLocked(uint64_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    held_bytes_ -= bytes;
    counters_->inflight_bytes -= static_cast<int64_t>(bytes);
  }

  // Reads ahead up to the queue depth, taking each shot's bytes from the budget first;
  // stops (waiting_) when the budget queues this stream.
  void SubmitReadsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    while (!cancelled_ && !waiting_ && next_submit_ < plan_.shot_ids.size() &&
           next_submit_ - window_base_ < plan_.queue_depth) {
      if (budget_ != nullptr) {
        const uint64_t bytes = ShotBytes(next_submit_);
        if (!budget_->TryAcquire(bytes, held_bytes_ == 0, this)) {
          waiting_ = true;
          waiting_bytes_ = bytes;
          return;
        }
        HoldLocked(bytes);
      }
      SubmitOneLocked();
    }
  }

  void SubmitOneLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    {
      const size_t index = next_submit_++;
      window_.emplace_back();
      ++reads_in_flight_;
      counters_->reads_in_flight++;
      counters_->shots_held++;
      RaiseMax(&counters_->max_shots_held_by_one_stream, static_cast<int64_t>(window_.size()));
      pool_->Submit([this, index] { Read(index); });
    }
  }

  void Read(size_t index) {
    bool skip;
    {
      absl::MutexLock lock(&mu_);
      skip = cancelled_;
    }
    io::ReadStats stats;
    const absl::Time t0 = absl::Now();
    absl::StatusOr<dataset::ShotData> shot =
        skip ? absl::CancelledError("stream cancelled")
             : plan_.dataset->ReadShot(plan_.shot_ids[index], plan_.headers,
                                       plan_.max_chunk_bytes, &stats,
                                       plan_.corrupt_shot == plan_.shot_ids[index]
                                           ? dataset::ZeroCopy::kOff  // its bytes get flipped
                                           : plan_.zero_copy,
                                       plan_.raw_trace_headers);
    if (!skip) {
      ObserveLatency(counters_, absl::ToDoubleSeconds(absl::Now() - t0));
      counters_->reads_issued += static_cast<int64_t>(stats.reads);
      counters_->bytes_read += static_cast<int64_t>(stats.bytes_read);
      counters_->bytes_wanted += static_cast<int64_t>(stats.bytes_wanted);
    }
    bool write = false;
    bool destroy = false;
    {
      absl::MutexLock lock(&mu_);
      --reads_in_flight_;
      counters_->reads_in_flight--;
      if (done_) {
        destroy = reads_in_flight_ == 0 && !waiting_;
      } else if (!cancelled_) {
        Slot& slot = window_[index - window_base_];
        slot.shot = std::move(shot);
        slot.ready = true;
        write = PrepareNextLocked();
      }
    }
    if (destroy) {
      delete this;
      return;
    }
    Act(write);
  }

  void FinishCut() {
    bool act = false;
    bool destroy = false;
    {
      absl::MutexLock lock(&mu_);
      --reads_in_flight_;
      if (done_) {
        destroy = reads_in_flight_ == 0 && !waiting_;
      } else if (!finished_ && !writing_) {
        finished_ = true;
        pending_finish_ = *cut_;
        act = true;
      }
    }
    if (destroy) {
      delete this;
      return;
    }
    Act(act);
  }

  // Decides the next action: a write of msg_ (writing_ set), or a finish
  // (pending_finish_ set). Returns true when the caller must act after unlocking.
  bool PrepareNextLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (writing_ || finished_) return false;
    if (cancelled_) {
      finished_ = true;
      pending_finish_ = cut_ ? *cut_ : grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
      return true;
    }
    if (window_.empty()) {
      if (window_base_ == plan_.shot_ids.size()) {
        finished_ = true;
        pending_finish_ = grpc::Status::OK;
        return true;
      }
      return false;
    }
    Slot& slot = window_.front();
    if (!slot.ready) return false;
    if (!slot.shot.ok()) {
      finished_ = true;
      pending_finish_ = ToGrpcStatus(slot.shot.status());
      return true;
    }
    dataset::ShotData& shot = *slot.shot;
    v1::ShotChunk meta;
    const size_t c = slot.next_chunk++;
    meta.set_index(static_cast<uint32_t>(window_base_));
    meta.set_shot_id(shot.shot_id);
    meta.set_n_traces(shot.n_traces);
    meta.set_n_samples(shot.n_samples);
    meta.set_sample_interval_us(plan_.dataset->sample_interval_us());
    meta.set_offset(chunk_offset_);
    meta.set_total_bytes(shot.total_bytes);
    if (c == 0) {
      for (auto& [name, values] : shot.headers) {
        v1::HeaderColumn* col = meta.add_headers();
        col->set_name(name);
        col->mutable_values()->Add(values.begin(), values.end());
      }
      if (!shot.trace_headers.empty()) meta.set_trace_headers(std::move(shot.trace_headers));
    }
    meta.set_big_endian(shot.big_endian);
    const bool last = slot.next_chunk == shot.n_chunks();
    if (last) meta.set_last(true);
    uint64_t size;
    if (!shot.stored.empty()) {
      // Slices over the file's mapping; the writer takes their CRC-32 just before the
      // write (Act), so that the kernel's copy to the socket finds them in cache.
      const size_t first = c * shot.traces_per_chunk;
      const size_t n = std::min<size_t>(shot.traces_per_chunk, shot.stored.size() - first);
      // Copied: the shot leaves the window below when this is its last chunk.
      send_.pending = true;
      send_.meta = std::move(meta);
      send_.traces.assign(shot.stored.begin() + first, shot.stored.begin() + first + n);
      send_.files.assign(shot.stored_file.begin() + first, shot.stored_file.begin() + first + n);
      size = uint64_t{shot.n_samples} * sizeof(float) * n;
      if (last) counters_->shots_sent_zero_copy++;
    } else {
      if (last) meta.set_crc32(shot.crc32);
      SampleBuffer samples = std::move(shot.chunks[c]);
      size = samples.size();
      if (c == 0 && plan_.corrupt_shot == shot.shot_id && !samples.empty()) {
        samples.data()[0] ^= 0x01;
      }
      // The samples go to gRPC as a slice over this buffer: no copy into the message.
      msg_ = EncodeShotChunk(meta, std::move(samples));
    }
    chunk_offset_ += size;
    counters_->bytes_sent += static_cast<int64_t>(size);
    bytes_sent_ += size;
    if (last) {
      if (budget_ != nullptr) release_after_write_ += shot.total_bytes;
      counters_->shots_sent++;
      counters_->shots_held--;
      window_.pop_front();
      ++window_base_;
      chunk_offset_ = 0;
    }
    writing_ = true;
    return true;
  }

  void Act(bool act) {
    if (!act) return;
    grpc::Status finish;
    bool is_finish;
    {
      absl::MutexLock lock(&mu_);
      is_finish = !writing_;
      if (is_finish) finish = pending_finish_;
    }
    if (is_finish) {
      counters_->finished_by_code[finish.error_code()]++;
      {
        absl::MutexLock lock(&mu_);
        grpc_status_name_ = absl::StatusCodeToString(
            static_cast<absl::StatusCode>(finish.error_code()));
        final_message_ = finish.error_message();
      }
      Finish(finish);
    } else {
      if (send_.pending && !EncodeStored()) return;
      StartWrite(&msg_);
    }
  }

  // The writer's half of a stored chunk (see PrepareNextLocked): its CRC-32, read from
  // the mapping under the SIGBUS guard, then the message over it. On a read error the
  // stream finishes with that error instead; returns false then. Runs without mu_: the
  // writer owns send_, send_crc_ and msg_ while writing_.
  bool EncodeStored() {
    send_.pending = false;
    absl::StatusOr<uint32_t> crc =
        plan_.dataset->StoredCrc(send_.meta.shot_id(), send_.traces, send_.files,
                                 send_.meta.offset() == 0 ? 0 : send_crc_);
    if (!crc.ok()) {
      {
        absl::MutexLock lock(&mu_);
        writing_ = false;
        cancelled_ = true;
        finished_ = true;
        pending_finish_ = ToGrpcStatus(crc.status());
      }
      Act(true);
      return false;
    }
    send_crc_ = *crc;
    if (send_.meta.last()) send_.meta.set_crc32(send_crc_);
    msg_ = EncodeStoredChunk(send_.meta, send_.traces,
                             size_t{send_.meta.n_samples()} * sizeof(float));
    return true;
  }

  const StreamPlan plan_;
  stream::ReaderPool* const pool_ = nullptr;
  ServiceCounters* const counters_ = nullptr;  // never null (the service always counts)
  stream::ByteBudget* const budget_ = nullptr;

  absl::Mutex mu_;
  std::deque<Slot> window_ ABSL_GUARDED_BY(mu_);  // shots window_base_.. in request order
  size_t window_base_ ABSL_GUARDED_BY(mu_) = 0;   // request index of window_.front()
  size_t next_submit_ ABSL_GUARDED_BY(mu_) = 0;   // request index of the next read
  uint64_t chunk_offset_ ABSL_GUARDED_BY(mu_) = 0;  // byte offset within the front shot
  int reads_in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  bool waiting_ ABSL_GUARDED_BY(mu_) = false;          // queued in the byte budget
  uint64_t waiting_bytes_ ABSL_GUARDED_BY(mu_) = 0;    // what we asked the budget for
  uint64_t held_bytes_ ABSL_GUARDED_BY(mu_) = 0;       // taken from the budget, not given back
  uint64_t release_after_write_ ABSL_GUARDED_BY(mu_) = 0;  // bytes of the shot on the wire
  bool writing_ ABSL_GUARDED_BY(mu_) = false;     // msg_ is owned by gRPC until OnWriteDone
  bool finished_ ABSL_GUARDED_BY(mu_) = false;    // Finish called or about to be
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;   // no more reads or writes
  bool done_ ABSL_GUARDED_BY(mu_) = false;        // OnDone called
  grpc::Status pending_finish_ ABSL_GUARDED_BY(mu_);
  std::optional<grpc::Status> cut_ ABSL_GUARDED_BY(mu_);  // the server's shutdown status
  grpc::ByteBuffer msg_;  // the message on the wire while writing_
  // A stored chunk prepared under mu_, for the writer to finish outside it.
  struct StoredSend {
    bool pending = false;
    v1::ShotChunk meta;  // a first chunk (offset 0) starts the shot's CRC-32 afresh
    std::vector<const uint8_t*> traces;  // this chunk's ShotData::stored
    std::vector<uint32_t> files;         // and stored_file
  };
  StoredSend send_;
  uint32_t send_crc_ = 0;  // CRC-32 of the stored shot's chunks sent so far
  // For the end-of-stream log line.
  absl::Time start_;
  uint64_t bytes_sent_ ABSL_GUARDED_BY(mu_) = 0;
  std::string grpc_status_name_ = "CANCELLED";
  std::string final_message_;
};

// StreamShots is served raw (ByteBuffer) so that samples reach gRPC without a copy; the
// other methods use the generated message types.
class ShotStreamServiceImpl final
    : public v1::ShotStream::WithRawCallbackMethod_StreamShots<v1::ShotStream::CallbackService> {
 public:
  ShotStreamServiceImpl(const std::vector<DatasetEntry>* datasets, stream::ReaderPool* pool,
                        const ServiceOptions& options)
      : datasets_(datasets),
        pool_(pool),
        options_(options),
        access_(options.tokens, options.access),
        counters_(options.counters != nullptr ? options.counters : &own_counters_),
        budget_(options.max_inflight_bytes > 0
                    ? std::make_unique<stream::ByteBudget>(options.max_inflight_bytes)
                    : nullptr) {}

  grpc::ServerUnaryReactor* ListDatasets(grpc::CallbackServerContext* ctx,
                                         const v1::ListDatasetsRequest*,
                                         v1::ListDatasetsResponse* response) override {
    auto* reactor = ctx->DefaultReactor();
    std::string who;
    if (absl::Status auth = Authenticate(ctx, &who); !auth.ok()) {
      reactor->Finish(ToGrpcStatus(auth));
      return reactor;
    }
    for (const DatasetEntry& e : *datasets_) {
      if (Allowed(who, e.name).ok()) FillInfo(e, false, response->add_datasets());
    }
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  grpc::ServerUnaryReactor* GetDataset(grpc::CallbackServerContext* ctx,
                                       const v1::GetDatasetRequest* request,
                                       v1::DatasetInfo* response) override {
    auto* reactor = ctx->DefaultReactor();
    std::string who;
    if (absl::Status auth = Authenticate(ctx, &who); !auth.ok()) {
      reactor->Finish(ToGrpcStatus(auth));
      return reactor;
    }
    const DatasetEntry* e = Find(request->name());
    uint64_t first = 0;
    if (e == nullptr) {
      reactor->Finish(ToGrpcStatus(UnknownDataset(request->name(), who)));
    } else if (absl::Status allowed = Allowed(who, request->name()); !allowed.ok()) {
      reactor->Finish(ToGrpcStatus(allowed));
    } else if (e->state() != DatasetEntry::State::kReady) {
      reactor->Finish(ToGrpcStatus(NotReadyError(*e)));
    } else if (!request->page_token().empty() &&
               !absl::SimpleAtoi(request->page_token(), &first)) {
      reactor->Finish(ToGrpcStatus(absl::InvalidArgumentError(
          absl::StrCat("page_token '", request->page_token(), "' is not one this server gave"))));
    } else {
      FillInfo(*e, true, response, first, request->page_size());
      reactor->Finish(grpc::Status::OK);
    }
    return reactor;
  }

  grpc::ServerWriteReactor<grpc::ByteBuffer>* StreamShots(
      grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* raw_request) override {
    v1::StreamShotsRequest parsed;
    {
      std::vector<grpc::Slice> slices;
      std::string bytes;
      if (raw_request->Dump(&slices).ok()) {
        for (const grpc::Slice& sl : slices) {
          bytes.append(reinterpret_cast<const char*>(sl.begin()), sl.size());
        }
      }
      if (!parsed.ParseFromString(bytes)) {
        return Reject(ctx, "?", absl::InvalidArgumentError("malformed StreamShotsRequest"));
      }
    }
    const v1::StreamShotsRequest* request = &parsed;
    std::string who;
    const std::string& name = request->dataset();
    if (absl::Status auth = Authenticate(ctx, &who); !auth.ok()) return Reject(ctx, name, auth);
    if (Find(name) == nullptr) return Reject(ctx, name, UnknownDataset(name, who));
    if (absl::Status allowed = Allowed(who, name); !allowed.ok()) {
      return Reject(ctx, name, allowed);
    }
    if (options_.draining != nullptr && options_.draining->load()) {
      return Reject(ctx, name, absl::UnavailableError("the server is shutting down; no new "
                                                      "streams (try another server)"));
    }
    absl::StatusOr<StreamPlan> plan = Validate(*request);
    if (!plan.ok()) return Reject(ctx, name, plan.status());
    // Limits last, so that a stream slot is taken only by a request that will run.
    const std::string peer = PeerAddress(ctx->peer());
    if (absl::Status s = TakeStreamSlot(peer); !s.ok()) return Reject(ctx, name, s);
    plan->peer = ctx->peer();
    plan->stream_id = ++counters_->streams_started;
    plan->log = options_.log_streams;
    plan->on_gone = [this, peer] { ReleaseStreamSlot(peer); };
    plan->registry = &registry_;
    return new StreamShotsReactor(*std::move(plan), pool_);
  }

 // Finishes every running stream with `status` (see StreamShotsReactor::Cut).
  void CutAllStreams(const grpc::Status& status) {
    absl::MutexLock lock(&registry_.mu);
    for (StreamShotsReactor* r : registry_.live) r->Cut(status);
  }

 private:
  const DatasetEntry* Find(const std::string& name) const {
    for (const DatasetEntry& e : *datasets_) {
      if (e.name == name) return &e;
    }
    return nullptr;
  }

  absl::Status Allowed(const std::string& who, const std::string& dataset) const {
    return access_.MayRead(who, dataset);
  }

  absl::Status Authenticate(grpc::CallbackServerContext* ctx, std::string* who) const {
    std::optional<absl::string_view> authorization;
    const auto& md = ctx->client_metadata();
    if (auto it = md.find("authorization"); it != md.end()) {
      authorization = absl::string_view(it->second.data(), it->second.size());
    }
    return access_.Authenticate(authorization, who);
  }

  // "ipv4:127.0.0.1:5555" -> "ipv4:127.0.0.1": streams are counted per address.
  static std::string PeerAddress(const std::string& peer) {
    const size_t colon = peer.rfind(':');
    const size_t first = peer.find(':');
    return colon != std::string::npos && colon != first ? peer.substr(0, colon) : peer;
  }

  absl::Status TakeStreamSlot(const std::string& peer) {
    absl::MutexLock lock(&mu_);
    if (active_ >= options_.max_streams) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the server runs ", active_, " streams, its limit (max_streams)"));
    }
    uint32_t& mine = per_peer_[peer];
    if (mine >= options_.max_streams_per_peer) {
      return absl::ResourceExhaustedError(absl::StrCat(
          peer, " runs ", mine, " streams, the limit per peer (max_streams_per_peer)"));
    }
    ++mine;
    ++active_;
    return absl::OkStatus();
  }

  void ReleaseStreamSlot(const std::string& peer) {
    absl::MutexLock lock(&mu_);
    --active_;
    auto it = per_peer_.find(peer);
    if (it != per_peer_.end() && --it->second == 0) per_peer_.erase(it);
  }

  // NOT_FOUND naming the datasets `who` may read (and the closest, for a typo).
  absl::Status UnknownDataset(const std::string& name, const std::string& who) const {
    std::vector<std::string> visible;
    for (const DatasetEntry& e : *datasets_) {
      if (Allowed(who, e.name).ok()) visible.push_back(e.name);
    }
    const std::string closest = segy::ClosestName(name, visible);
    return absl::NotFoundError(absl::StrCat(
        "unknown dataset '", name, "'",
        closest.empty() ? "" : absl::StrCat(": did you mean '", closest, "'?"),
        " (datasets here: ", visible.empty() ? "none you may read" : absl::StrJoin(visible, ", "),
        ")"));
  }

  grpc::ServerWriteReactor<grpc::ByteBuffer>* Reject(grpc::CallbackServerContext* ctx,
                                                     const std::string& dataset,
                                                     const absl::Status& status) {
    return new RejectReactor(ToGrpcStatus(status), counters_, options_.log_streams,
                             ctx->peer(), dataset);
  }

  // Everything a request can get wrong is found here, before any data is sent.
  absl::StatusOr<StreamPlan> Validate(const v1::StreamShotsRequest& r) const {
    RequestLimits limits;
    limits.max_shots_per_request = options_.max_shots_per_request;
    limits.max_queue_depth = options_.max_queue_depth;
    limits.default_queue_depth = options_.default_queue_depth;
    limits.default_chunk_bytes = options_.max_chunk_bytes;
    auto v = ValidateStreamRequest(r, *datasets_, limits);
    if (!v.ok()) return v.status();
    StreamPlan plan;
    plan.dataset = std::move(v->dataset);
    plan.raw_trace_headers = r.raw_trace_headers();
    plan.shot_ids = std::move(v->shot_ids);
    plan.headers = std::move(v->headers);
    plan.queue_depth = v->queue_depth;
    plan.max_chunk_bytes = v->max_chunk_bytes;
    plan.corrupt_shot = options_.corrupt_shot_for_testing;
    plan.zero_copy = !options_.zero_copy      ? dataset::ZeroCopy::kOff
                     : r.accept_big_endian() ? dataset::ZeroCopy::kAnyByteOrder
                                             : dataset::ZeroCopy::kLittleEndian;
    plan.counters = counters_;
    plan.budget = budget_.get();
    plan.dataset_name = r.dataset();
    return plan;
  }

  StreamRegistry registry_;
  const std::vector<DatasetEntry>* const datasets_;
  stream::ReaderPool* const pool_;
  const ServiceOptions options_;
  const AccessPolicy access_;
  ServiceCounters own_counters_;
  ServiceCounters* const counters_;
  const std::unique_ptr<stream::ByteBudget> budget_;
  absl::Mutex mu_;
  uint32_t active_ ABSL_GUARDED_BY(mu_) = 0;                      // streams holding a slot
  std::map<std::string, uint32_t> per_peer_ ABSL_GUARDED_BY(mu_);  // slots per peer address
};

}  // namespace

void CutAllStreams(grpc::Service* service, const absl::Status& status) {
  static_cast<ShotStreamServiceImpl*>(service)->CutAllStreams(ToGrpcStatus(status));
}

std::unique_ptr<grpc::Service> MakeShotStreamService(const std::vector<DatasetEntry>* datasets,
                                                     stream::ReaderPool* pool,
                                                     const ServiceOptions& options) {
  return std::make_unique<ShotStreamServiceImpl>(datasets, pool, options);
}

}  // namespace shotstream::service

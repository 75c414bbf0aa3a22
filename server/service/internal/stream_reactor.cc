#include "server/service/internal/stream_reactor.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <utility>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "server/service/grpc_status.h"
#include "wire/chunk_codec.h"
#include "wire/sample_encoding.h"

namespace shotstream::service {

void StreamRegistry::Add(StreamReactor* r) {
  absl::MutexLock lock(&mu_);
  live_.insert(r);
}

void StreamRegistry::Remove(StreamReactor* r) {
  absl::MutexLock lock(&mu_);
  live_.erase(r);
}

WriteTurn::Step WriteTurn::Next(stream::ShotWindow* window, grpc::ByteBuffer* msg,
                                absl::Status* end, Sizes* sizes) {
  stream::OutgoingChunk chunk;
  {
    absl::MutexLock lock(&mu_);
    if (writing_ || finished_) return Step::kNothing;
    const stream::ShotWindow::Pull pull = window->Next(&chunk, end);
    if (pull == stream::ShotWindow::Pull::kNotReady) return Step::kNothing;
    if (pull == stream::ShotWindow::Pull::kEnd) {
      finished_ = true;
      return Step::kFinish;
    }
    writing_ = true;
  }
  // This call set writing_: it alone owns *msg until WriteDone.
  if (sizes != nullptr) {
    const uint64_t trace_bytes = uint64_t{chunk.meta.n_samples()} * sizeof(float);
    sizes->wire = chunk.sample_bytes();
    sizes->float32 = chunk.meta.encoding() == v1::ENCODING_FLOAT32
                         ? chunk.sample_bytes()
                         : trace_bytes * chunk.meta.chunk_traces();
  }
  *msg = chunk.stored.empty()
             ? wire::EncodeShotChunk(chunk.meta, std::move(chunk.samples))
             : wire::EncodeStoredChunk(chunk.meta, chunk.stored, chunk.trace_bytes);
  return Step::kWrite;
}

void WriteTurn::WriteDone() {
  absl::MutexLock lock(&mu_);
  writing_ = false;
}

bool WriteTurn::TakeFinish() {
  absl::MutexLock lock(&mu_);
  if (finished_) return false;
  finished_ = true;
  return true;
}

namespace {

std::string CodeName(absl::StatusCode code) { return absl::StatusCodeToString(code); }

}  // namespace

// One StreamShots call. The window decides what is sent; this writes it.
//
// Thread-safe: Pump runs from gRPC's reactions and from the window's on_ready (on the
// executor); turn_ makes one of them the writer. Deleted after OnDone, once the window is
// closed (no on_ready running or to come).
class StreamReactor final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  StreamReactor(stream::WindowPlan plan, stream::Executor* executor, StreamContext context)
      : context_(std::move(context)),
        n_shots_(plan.shot_ids.size()),
        queue_depth_(plan.queue_depth),
        encoding_(plan.shot.encoding),
        start_(absl::Now()),
        window_(stream::ShotWindow::Create(std::move(plan), executor, [this] { Pump(); })) {
    context_.registry->Add(this);
    context_.counters->active_streams++;
    if (context_.log) {
      std::fprintf(stderr,
                   "stream %lld: peer %s dataset %s shots %zu queue_depth %u encoding %s\n",
                   static_cast<long long>(context_.stream_id), context_.peer.c_str(),
                   context_.dataset.c_str(), n_shots_, queue_depth_,
                   std::string(wire::EncodingName(encoding_)).c_str());
    }
    window_->Start();
    Pump();
  }

  ~StreamReactor() override {
    context_.registry->Remove(this);
    context_.counters->active_streams--;
    if (context_.on_gone) context_.on_gone();
    if (context_.advisor != nullptr) {
      context_.advisor->RecordLink(context_.peer_address, wire_bytes_,
                                   absl::ToDoubleSeconds(wire_time_));
      if (end_.ok()) {  // a stream that ran to its end: what its encoding delivered
        context_.advisor->RecordOutcome(context_.peer_address, context_.dataset, encoding_,
                                        float32_bytes_,
                                        absl::ToDoubleSeconds(last_write_done_ - first_write_));
      }
    }
    if (context_.log) {
      const double secs = absl::ToDoubleSeconds(absl::Now() - start_);
      std::fprintf(stderr, "stream %lld: %s, %zu of %zu shots, %.1f MB in %.2f s%s%s\n",
                   static_cast<long long>(context_.stream_id), CodeName(end_.code()).c_str(),
                   window_->shots_sent(), n_shots_, window_->bytes_sent() / 1e6, secs,
                   end_.message().empty() ? "" : ": ", std::string(end_.message()).c_str());
    }
  }

  // The server is shutting down: no more reads, and the finish with `status` comes once
  // no write is on the wire. Called under the registry's lock (so the reactor is alive).
  void Cut(const absl::Status& status) { window_->Stop(status); }

  void OnWriteDone(bool ok) override {
    last_write_done_ = absl::Now();  // only this reaction touches these now
    wire_time_ += last_write_done_ - write_start_;
    wire_bytes_ += write_bytes_;
    float32_bytes_ += write_float32_bytes_;
    window_->Sent();
    if (!ok) window_->Stop(absl::CancelledError("stream broken"));  // the client is gone
    turn_.WriteDone();
    Pump();
  }

  void OnCancel() override {
    context_.counters->streams_cancelled++;
    window_->Stop(absl::CancelledError("cancelled by the client"));
    Pump();
  }

  void OnDone() override {
    window_->Close();
    delete this;
  }

 private:
  // Writes the window's next chunk, or finishes with its end, unless a write is on the
  // wire or the call is finished.
  void Pump() {
    absl::Status end;
    WriteTurn::Sizes sizes;
    grpc::ByteBuffer msg;
    switch (turn_.Next(window_.get(), &msg, &end, &sizes)) {
      case WriteTurn::Step::kNothing:
        return;
      case WriteTurn::Step::kFinish:
        end_ = end;  // the finish is this call's alone
        context_.counters->finished_by_code[static_cast<int>(end.code())]++;
        Finish(ToGrpcStatus(end));
        return;
      case WriteTurn::Step::kWrite:
        // The write's own until OnWriteDone.
        msg_ = std::move(msg);
        write_bytes_ = sizes.wire;
        write_float32_bytes_ = sizes.float32;
        write_start_ = absl::Now();
        if (first_write_ == absl::InfinitePast()) first_write_ = write_start_;
        StartWrite(&msg_);
        return;
    }
  }

  const StreamContext context_;
  const size_t n_shots_;
  const uint32_t queue_depth_;
  const wire::Encoding encoding_;
  const absl::Time start_;
  const std::shared_ptr<stream::ShotWindow> window_;
  WriteTurn turn_;
  grpc::ByteBuffer msg_;                        // the message on the wire
  // Owned by whoever owns msg_ (the writer, then the OnWriteDone reaction).
  uint64_t write_bytes_ = 0;
  absl::Time write_start_;
  uint64_t wire_bytes_ = 0;
  absl::Duration wire_time_;
  uint64_t write_float32_bytes_ = 0;  // the samples of the chunk on the wire, as float32
  uint64_t float32_bytes_ = 0;
  absl::Time first_write_ = absl::InfinitePast();
  absl::Time last_write_done_ = absl::InfinitePast();
  absl::Status end_ = absl::CancelledError("");  // how the call finished, for the log
};

void StreamRegistry::CutAll(const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  for (StreamReactor* r : live_) r->Cut(status);
}

namespace {

// Thread-safe: gRPC calls OnDone once, after the Finish made here.
class RejectReactor final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  explicit RejectReactor(const grpc::Status& error) { Finish(error); }
  void OnDone() override { delete this; }
};

}  // namespace

grpc::ServerWriteReactor<grpc::ByteBuffer>* StartStream(stream::WindowPlan plan,
                                                        stream::Executor* executor,
                                                        StreamContext context) {
  return new StreamReactor(std::move(plan), executor, std::move(context));
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* RejectStream(const absl::Status& error,
                                                         ServiceCounters* counters, bool log,
                                                         const std::string& peer,
                                                         const std::string& dataset) {
  counters->rejected_by_code[static_cast<int>(error.code())]++;
  counters->streams_rejected++;
  if (log) {
    std::fprintf(stderr, "stream refused: peer %s dataset %s: %s: %s\n", peer.c_str(),
                 dataset.c_str(), CodeName(error.code()).c_str(),
                 std::string(error.message()).c_str());
  }
  return new RejectReactor(ToGrpcStatus(error));
}

}  // namespace shotstream::service

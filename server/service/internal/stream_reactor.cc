#include "server/service/internal/stream_reactor.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <utility>

#include "absl/strings/str_format.h"
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
                                absl::Status* end) {
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
  *msg = chunk.stored.empty()
             ? wire::EncodeShotChunk(chunk.meta, std::move(chunk.samples))
             : wire::EncodeStoredChunk(chunk.meta, chunk.stored, chunk.trace_bytes,
                                       chunk.stored_set, chunk.trace_gaps);
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
        stream_id_(context_.pass->id()),
        n_shots_(plan.shot_ids.size()),
        queue_depth_(plan.queue_depth),
        encoding_(plan.shot.encode.encoding),
        start_(absl::Now()),
        window_(stream::ShotWindow::Create(std::move(plan), executor, [this] { Pump(); })) {
    context_.registry->Add(this);
    if (context_.log) {
      std::fprintf(stderr,
                   "stream %lld: peer %s dataset %s shots %zu queue_depth %u encoding %s\n",
                   static_cast<long long>(stream_id_), context_.peer.c_str(),
                   context_.dataset.c_str(), n_shots_, queue_depth_,
                   std::string(wire::EncodingName(encoding_)).c_str());
    }
    window_->Start();
    Pump();
  }

  ~StreamReactor() override {
    context_.registry->Remove(this);
    std::string line;
    if (context_.log) {
      line = absl::StrFormat("stream %d: %s, %zu of %zu shots, %.1f MB in %.2f s%s%s",
                             stream_id_, CodeName(end_.code()), window_->shots_sent(), n_shots_,
                             window_->bytes_sent() / 1e6,
                             absl::ToDoubleSeconds(absl::Now() - start_),
                             end_.message().empty() ? "" : ": ", end_.message());
    }
    context_.pass->End(end_, line);
  }

  // The server is shutting down: no more reads, and the finish with `status` comes once
  // no write is on the wire. Called under the registry's lock (so the reactor is alive).
  void Cut(const absl::Status& status) { window_->Stop(status); }

  void OnWriteDone(bool ok) override {
    window_->Written();
    if (!ok) window_->Stop(absl::CancelledError("stream broken"));  // the client is gone
    turn_.WriteDone();
    Pump();
    // After the next write started (gRPC often writes it within Pump): the reads this
    // gives room for wake a reader off the path between one write and the next. (OnDone,
    // which ends the reactor, waits for this reaction to return.)
    window_->Refill();
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
  void Pump() { PumpWindow(this, &turn_, window_.get(), &msg_, &end_); }

  StreamContext context_;
  const int64_t stream_id_;
  const size_t n_shots_;
  const uint32_t queue_depth_;
  const wire::Encoding encoding_;
  const absl::Time start_;
  const std::shared_ptr<stream::ShotWindow> window_;
  WriteTurn turn_;
  grpc::ByteBuffer msg_;                          // the message on the wire
  absl::Status end_ = absl::CancelledError("");  // how the call finished
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

grpc::ServerWriteReactor<grpc::ByteBuffer>* RejectStream(const absl::Status& error) {
  return new RejectReactor(ToGrpcStatus(error));
}

}  // namespace shotstream::service

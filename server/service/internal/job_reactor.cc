#include "server/service/internal/job_reactor.h"

#include <cstdio>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "server/service/grpc_status.h"

namespace shotstream::service {
namespace {

// Thread-safe: the window calls Next under its lock; the job calls the wake (without its
// own lock) from whichever thread changed it.
class JobFeed final : public stream::ShotFeed,
                      public std::enable_shared_from_this<JobFeed> {
 public:
  JobFeed(std::shared_ptr<jobs::Job> job, size_t limit) : job_(std::move(job)), limit_(limit) {}
  absl::Status Join(const std::optional<jobs::Job::Resume>& resume, bool takeover,
                    int64_t* consumer) {
    std::weak_ptr<JobFeed> weak = shared_from_this();
    auto joined = job_->Join(
        [weak] {
          if (auto self = weak.lock()) self->Wake();
        },
        [weak](const absl::Status& why) {
          if (auto self = weak.lock()) self->Abort(why);
        },
        resume, takeover);
    if (!joined.ok()) return joined.status();
    consumer_ = *joined;
    *consumer = consumer_;
    return absl::OkStatus();
  }
  void SetStop(std::function<void(const absl::Status&)> stop) override {
    absl::Status aborted;
    {
      absl::MutexLock lock(&mu_);
      stop_ = stop;
      aborted = aborted_;
    }
    if (!aborted.ok() && stop) stop(aborted);  // aborted before the window started
  }
  Take Next(int64_t* shot_id) override {
    switch (job_->Next(consumer_, limit_, shot_id)) {
      case jobs::Job::Take::kShot: return Take::kShot;
      case jobs::Job::Take::kWait: return Take::kWait;
      case jobs::Job::Take::kEnd: return Take::kEnd;
    }
    return Take::kEnd;
  }
  void SetWake(std::function<void()> wake) override {
    absl::MutexLock lock(&mu_);
    wake_ = std::move(wake);
  }
  void GiveBack(const std::vector<int64_t>& shot_ids) override {
    job_->GiveBack(consumer_, shot_ids);
  }

 private:
  void Wake() {
    std::function<void()> wake;
    {
      absl::MutexLock lock(&mu_);
      wake = wake_;
    }
    if (wake) wake();
  }
  void Abort(const absl::Status& why) {
    std::function<void(const absl::Status&)> stop;
    {
      absl::MutexLock lock(&mu_);
      aborted_ = why;
      stop = stop_;
    }
    if (stop) stop(why);
  }

  const std::shared_ptr<jobs::Job> job_;
  const size_t limit_;
  int64_t consumer_ = 0;
  absl::Mutex mu_;
  std::function<void()> wake_ ABSL_GUARDED_BY(mu_);
  std::function<void(const absl::Status&)> stop_ ABSL_GUARDED_BY(mu_);
  absl::Status aborted_ ABSL_GUARDED_BY(mu_);  // by a rollback
};

// Parses one message of a raw call.
bool ParseRequest(grpc::ByteBuffer* bb, v1::JobRequest* request) {
  std::vector<grpc::Slice> slices;
  std::string bytes;
  if (bb->Dump(&slices).ok()) {
    for (const grpc::Slice& s : slices) {
      bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
    }
  }
  return request->ParseFromString(bytes);
}

// Thread-safe: Pump runs from gRPC's reactions and the window's on_ready; turn_ makes one
// of them the writer. One read is outstanding at a time (acks run one at a time); the
// start runs on the disk executor while no read is outstanding, and the reactor is
// deleted only once it has returned (Begun).
class JobReactor final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  JobReactor(JobStarter starter, JobRefusal refuse, stream::Executor* readers,
             stream::Executor* disk, StreamContext context)
      : starter_(std::move(starter)),
        refuse_(std::move(refuse)),
        readers_(readers),
        disk_(disk),
        context_(std::move(context)) {
    StartRead(&in_);
  }

  ~JobReactor() override {
    const std::shared_ptr<stream::ShotWindow> w = window();
    if (w == nullptr) return;  // never admitted: the gate counted the refusal
    std::string line;
    if (context_.log) {
      line = absl::StrFormat("job stream %d: %s, %zu shots, %.1f MB%s%s", stream_id_,
                             absl::StatusCodeToString(end_.code()), w->shots_sent(),
                             w->bytes_sent() / 1e6, end_.message().empty() ? "" : ": ",
                             end_.message());
    }
    context_.pass->End(end_, line);
  }

  void OnReadDone(bool ok) override {
    const std::shared_ptr<stream::ShotWindow> w = window();
    if (!ok) {  // the consumer has said all it will say
      if (w == nullptr) {
        FinishNow(refuse_(absl::InvalidArgumentError(
            "the StreamJob ended before its first message (`start`, naming the job)")));
      }
      return;
    }
    v1::JobRequest request;
    const bool parsed = ParseRequest(&in_, &request);
    if (w == nullptr) {
      if (!parsed || !request.has_start()) {
        return FinishNow(refuse_(absl::InvalidArgumentError(
            parsed ? "the first JobRequest of a StreamJob must be `start`, naming the job"
                   : "malformed JobRequest")));
      }
      {
        absl::MutexLock lock(&mu_);
        beginning_ = true;  // OnDone leaves the delete to Begin until it returns
      }
      disk_->Submit([this, start = std::move(*request.mutable_start())] {
        Begin(start);
        Begun();
      });
      return;  // the next read starts once the job runs
    }
    if (!parsed || !request.has_progress()) {
      w->Stop(absl::InvalidArgumentError(
          parsed ? "a StreamJob's JobRequests after the first must be `progress`"
                 : "malformed JobRequest"));
      Pump();
      return;
    }
    Ack(request.progress().done());
    StartRead(&in_);
  }

  void OnWriteDone(bool ok) override {
    const std::shared_ptr<stream::ShotWindow> w = window();
    w->Written();
    if (!ok) w->Stop(absl::CancelledError("stream broken"));
    turn_.WriteDone();
    Pump();
    w->Refill();  // after the next write started, as StreamReactor does
  }

  void OnCancel() override {
    std::shared_ptr<stream::ShotWindow> window;
    {
      absl::MutexLock lock(&mu_);
      window = window_;
      cancelled_ = true;
    }
    if (window != nullptr) {
      context_.counters->streams_cancelled++;
      window->Stop(absl::CancelledError("cancelled by the client"));
    }
    Pump();
  }

  void OnDone() override {
    {
      absl::MutexLock lock(&mu_);
      if (beginning_) {  // Begin still runs on the disk executor: Begun() ends the call
        done_ = true;
        return;
      }
    }
    End();
  }

 private:
  void End() {
    if (const auto w = window(); w != nullptr) w->Close();
    if (job_ != nullptr) job_->Leave(consumer_);  // what it held and had not done goes back
    delete this;
  }

  // After Begin, on the disk executor. A refusal, or a window that ends at once and the
  // read it fails, can make gRPC call OnDone while Begin still runs: the delete waits for
  // it here.
  void Begun() {
    bool done;
    {
      absl::MutexLock lock(&mu_);
      beginning_ = false;
      done = done_;
    }
    if (done) End();
  }

  // On the disk executor: the start through the gate and the job registry, then the window.
  void Begin(const v1::JobStart& start) {
    absl::StatusOr<JobStream> started = starter_(start);
    if (!started.ok()) return FinishNow(started.status());
    job_ = started->job;
    consumer_ = started->consumer;
    context_.pass = std::move(started->pass);
    stream_id_ = context_.pass->id();
    if (context_.log) {
      std::fprintf(stderr, "job stream %lld: peer %s dataset %s job %s epoch %llu\n",
                   static_cast<long long>(stream_id_), context_.peer.c_str(),
                   start.dataset().c_str(), start.job().c_str(),
                   static_cast<unsigned long long>(start.epoch()));
    }
    auto window =
        stream::ShotWindow::Create(std::move(started->plan), readers_, [this] { Pump(); });
    bool cancelled;
    {
      absl::MutexLock lock(&mu_);
      window_ = window;
      cancelled = cancelled_;
    }
    // The read first: it holds the call until the stream ends. A Pump can finish the
    // stream (a job with no shot left for this consumer ends at once), and after the
    // Finish gRPC may end the call, which a read started then would find gone.
    StartRead(&in_);
    if (cancelled) window->Stop(absl::CancelledError("cancelled by the client"));
    window->Start();
    Pump();
  }

  std::shared_ptr<stream::ShotWindow> window() {
    absl::MutexLock lock(&mu_);
    return window_;
  }

  // The consumer is done with the stream's first `done` shots.
  void Ack(uint64_t done) {
    const std::shared_ptr<stream::ShotWindow> w = window();
    const uint64_t upto = std::min<uint64_t>(done, w->shots_sent());
    if (upto <= acked_) return;
    for (int64_t id : w->shot_ids(acked_, upto - acked_)) job_->Done(consumer_, id);
    acked_ = upto;
  }

  // Before any data (the refusal was counted).
  void FinishNow(const absl::Status& s) {
    if (!turn_.TakeFinish()) return;
    Finish(ToGrpcStatus(s));
  }

  void Pump() {
    const std::shared_ptr<stream::ShotWindow> w = window();
    if (w != nullptr) PumpWindow(this, &turn_, w.get(), &msg_, &end_);
  }

  const JobStarter starter_;
  const JobRefusal refuse_;
  stream::Executor* const readers_;
  stream::Executor* const disk_;
  StreamContext context_;
  grpc::ByteBuffer in_;  // the message being read
  // Set by the start (window_ under mu_: OnCancel may run beside it).
  std::shared_ptr<stream::ShotWindow> window_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<jobs::Job> job_;
  int64_t consumer_ = 0;
  int64_t stream_id_ = 0;
  uint64_t acked_ = 0;  // shots of this stream reported done to the job
  WriteTurn turn_;
  absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  bool beginning_ ABSL_GUARDED_BY(mu_) = false;  // Begin is queued or running
  bool done_ ABSL_GUARDED_BY(mu_) = false;       // OnDone came while it was
  grpc::ByteBuffer msg_;
  absl::Status end_ = absl::CancelledError("");
};

}  // namespace

absl::StatusOr<std::shared_ptr<stream::ShotFeed>> MakeJobFeed(
    std::shared_ptr<jobs::Job> job, size_t limit,
    const std::optional<jobs::Job::Resume>& resume, bool takeover, int64_t* consumer) {
  auto feed = std::make_shared<JobFeed>(std::move(job), limit);
  if (absl::Status s = feed->Join(resume, takeover, consumer); !s.ok()) return s;
  return feed;
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* StartJobStream(
    JobStarter starter, JobRefusal refuse, stream::Executor* readers, stream::Executor* disk,
    StreamContext context) {
  return new JobReactor(std::move(starter), std::move(refuse), readers, disk,
                        std::move(context));
}

}  // namespace shotstream::service

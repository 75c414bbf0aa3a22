#include "shotstream/client/client.h"

#include <arpa/inet.h>
#include <sched.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "shotstream/client/grpc_tuning.h"
#include "client/retry_budget.h"
#include "common/crc32.h"
#include "common/status_macros.h"
#include "wire/encoding_proto.h"
#include "wire/chunk_codec.h"
#include "wire/chunk_cut.h"
#include "wire/job_token.h"
#include "client/shot_assembler.h"
#include "wire/sample_encoding.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/support/sync_stream.h"
#include "shotstream/v1/shotstream.grpc.pb.h"

namespace shotstream::client {
namespace {

namespace v1 = ::shotstream::v1;

constexpr char kStreamShotsMethod[] = "/shotstream.v1.ShotStream/StreamShots";
constexpr char kStreamJobMethod[] = "/shotstream.v1.ShotStream/StreamJob";

// The one place where grpc::Status becomes absl::Status on the client. gRPC's own words
// for a server that cancelled its calls at the end of its shutdown are put in ours, and so
// are its words for a connection reset under a stream (a server that exited with bytes
// unread: the reset can overtake the cancellation, which is then never read).
absl::Status FromGrpc(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  if (s.error_code() == grpc::StatusCode::UNAVAILABLE &&
      s.error_message() == "Cancelling all calls") {
    return absl::UnavailableError(
        "the server is shutting down: its grace period ended while this stream's data "
        "waited for the consumer to read it (gRPC: Cancelling all calls); resume on another "
        "server");
  }
  if (s.error_code() == grpc::StatusCode::UNAVAILABLE &&
      absl::StrContains(s.error_message(), "Connection reset by peer")) {
    return absl::UnavailableError(absl::StrCat(
        "the connection to the server was reset: the server exited (a shutdown whose grace "
        "period ended before this stream's data was read) or the network failed (gRPC: ",
        s.error_message(), "); resume on another server"));
  }
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

// READY, FAILED, REBUILDING or LOADING (the proto's DatasetState without its prefix).
std::string StateName(v1::DatasetState state) {
  const std::string& name = v1::DatasetState_Name(state);
  constexpr absl::string_view kPrefix = "DATASET_STATE_";
  return absl::StartsWith(name, kPrefix) ? name.substr(kPrefix.size()) : name;
}

DatasetSummary ToSummary(const v1::DatasetInfo& info) {
  DatasetSummary d;
  d.name = info.name();
  d.state = StateName(info.state());
  d.loading_traces_done = info.loading_traces_done();
  d.loading_traces_total = info.loading_traces_total();
  d.format = info.format();
  d.error = info.error();
  d.n_traces = info.n_traces();
  d.n_shots = info.n_shots();
  d.n_samples = info.n_samples();
  d.sample_interval_us = info.sample_interval_us();
  d.sample_format = info.sample_format();
  d.shot_key = info.shot_key();
  d.n_files = info.n_files();
  d.bad_files.assign(info.bad_files().begin(), info.bad_files().end());
  d.shot_ids.assign(info.shot_ids().begin(), info.shot_ids().end());
  d.shot_trace_counts.assign(info.shot_trace_counts().begin(), info.shot_trace_counts().end());
  d.header_fields.assign(info.header_fields().begin(), info.header_fields().end());
  for (const v1::SourcePosition& p : info.source_positions()) {
    d.source_positions.push_back({p.shot_id(), p.x(), p.y()});
  }
  return d;
}

// The request's ShotSelection from a stream's options; INVALID_ARGUMENT for an unknown
// encoding name.
absl::StatusOr<v1::ShotSelection> SelectionOf(const StreamOptions& options) {
  v1::ShotSelection s;
  for (const std::string& h : options.headers) s.add_headers(h);
  s.set_max_chunk_bytes(options.max_chunk_bytes);
  s.set_accept_big_endian(options.accept_big_endian);
  s.set_accept_trace_gaps(options.accept_trace_gaps);
  s.set_raw_trace_headers(options.raw_trace_headers);
  if (options.window.has_value()) {
    s.mutable_window()->set_start(options.window->first);
    s.mutable_window()->set_stop(options.window->second);
  }
  for (const StreamOptions::TraceCondition& c : options.where) {
    v1::TraceCondition* w = s.add_where();
    w->set_header(c.header);
    w->set_low(c.low);
    w->set_high(c.high);
  }
  absl::StatusOr<wire::Encoding> encoding = wire::EncodingFromName(options.encoding);
  if (!encoding.ok()) return encoding.status();
  s.set_encoding(wire::ToProto(*encoding));
  s.set_tolerance(options.tolerance);
  return s;
}

struct Target {
  std::string address;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::ShotStream::Stub> stub;
};

}  // namespace

struct Client::Impl {
  ClientOptions options;
  std::vector<Target> targets;
  std::unique_ptr<gpu::PinnedBufferPool> own_pool;
  gpu::PinnedBufferPool* pool = nullptr;

  void Prepare(grpc::ClientContext* ctx) const {
    if (!options.token.empty()) ctx->AddMetadata("authorization", "Bearer " + options.token);
  }

  // A metadata call's context: Prepare's, with ClientOptions::call_timeout's deadline.
  void PrepareCall(grpc::ClientContext* ctx) const {
    Prepare(ctx);
    if (options.call_timeout != absl::InfiniteDuration()) {
      ctx->set_deadline(absl::ToChronoTime(absl::Now() + options.call_timeout));
    }
  }

  // OK once target t's channel is connected, after waiting up to connect_timeout;
  // otherwise UNAVAILABLE naming the target.
  absl::Status Reach(size_t t) const {
    const auto& ch = targets[t].channel;
    if (ch->GetState(/*try_to_connect=*/true) == GRPC_CHANNEL_READY) return absl::OkStatus();
    if (ch->WaitForConnected(std::chrono::system_clock::now() +
                             absl::ToChronoMilliseconds(options.connect_timeout))) {
      return absl::OkStatus();
    }
    return absl::UnavailableError(absl::StrCat(
        targets[t].address, ": cannot connect within ",
        absl::FormatDuration(options.connect_timeout), " (is a server running there?)"));
  }

  // GetDataset on every target; NOT_FOUND only when no target has it.
  absl::StatusOr<std::vector<std::optional<v1::DatasetInfo>>> PerTarget(const std::string& name) {
    std::vector<std::optional<v1::DatasetInfo>> out(targets.size());
    absl::Status last;
    bool any = false;
    for (size_t t = 0; t < targets.size(); ++t) {
      if (absl::Status reach = Reach(t); !reach.ok()) {
        if (last.ok() || absl::IsNotFound(last)) last = reach;
        continue;
      }
      v1::DatasetInfo info;
      grpc::Status s;
      std::string token;
      do {  // page through datasets with millions of shots
        grpc::ClientContext ctx;
        PrepareCall(&ctx);
        v1::GetDatasetRequest request;
        request.set_name(name);
        request.set_page_size(250'000);
        request.set_page_token(token);
        v1::DatasetInfo page;
        s = targets[t].stub->GetDataset(&ctx, request, &page);
        if (!s.ok()) break;
        if (token.empty()) {
          info = std::move(page);
        } else {
          info.mutable_shot_ids()->MergeFrom(page.shot_ids());
          info.mutable_shot_trace_counts()->MergeFrom(page.shot_trace_counts());
          info.mutable_source_positions()->MergeFrom(page.source_positions());
        }
        token = page.next_page_token();
      } while (!token.empty());
      if (s.ok()) {
        info.clear_next_page_token();
        out[t] = std::move(info);
        any = true;
      } else if (last.ok() || absl::IsNotFound(last)) {
        last = FromGrpc(s);  // a target's real reason wins over another's NOT_FOUND
      }
    }
    if (!any) return last;
    return out;
  }

  // Each of a job's shots by target: target 0 alone, or the first that holds it.
  absl::StatusOr<std::vector<std::vector<int64_t>>> SplitJob(const std::string& dataset,
                                                             const std::vector<int64_t>& ids) {
    std::vector<std::vector<int64_t>> per(targets.size());
    if (targets.size() == 1) {
      per[0] = ids;
      return per;
    }
    auto infos = PerTarget(dataset);
    if (!infos.ok()) return infos.status();
    std::vector<absl::flat_hash_set<int64_t>> held(infos->size());
    for (size_t t = 0; t < infos->size(); ++t) {
      if ((*infos)[t]) held[t].insert((*infos)[t]->shot_ids().begin(), (*infos)[t]->shot_ids().end());
    }
    for (int64_t id : ids) {
      size_t t = 0;
      while (t < held.size() && !held[t].contains(id)) ++t;
      if (t == held.size()) {
        return absl::NotFoundError(absl::StrCat("no target holds shot ", id, " of '", dataset, "'"));
      }
      per[t].push_back(id);
    }
    return per;
  }

  // CommitJob of `trained` at `step` on target t.
  absl::Status CommitOn(size_t t, const JobCommit& job, int64_t step,
                        const std::vector<int64_t>& trained) {
    if (absl::Status reach = Reach(t); !reach.ok()) return reach;
    grpc::ClientContext ctx;
    PrepareCall(&ctx);
    v1::JobCommit request;
    request.set_dataset(job.dataset);
    request.set_job(job.job);
    request.set_epoch(job.epoch);
    request.set_seed(job.seed);
    request.set_step(step);
    request.mutable_shot_ids()->Add(trained.begin(), trained.end());
    request.set_resume(job.resume);
    v1::JobCommitted answer;
    return FromGrpc(targets[t].stub->CommitJob(&ctx, request, &answer));
  }
};

namespace {

// The token of `job` committed at `step`.
absl::StatusOr<std::string> TokenOf(const JobCommit& job, int64_t step) {
  return wire::EncodeJobToken(
      {job.dataset, job.job, job.epoch, step, job.seed, wire::JobFingerprint(job.shot_ids)});
}

// OK when `job.resume` (if any) is a token of this job: INVALID_ARGUMENT naming what
// differs (the servers check the rest: the step on record).
absl::Status CheckResume(const JobCommit& job) {
  if (job.resume.empty()) return absl::OkStatus();
  absl::StatusOr<wire::JobToken> t = wire::DecodeJobToken(job.resume);
  if (!t.ok()) return t.status();
  auto differs = [&](const std::string& what, const std::string& token, const std::string& here) {
    return absl::InvalidArgumentError(absl::StrCat("resume: the token is for ", what, " ",
                                                   token, ", this job is ", here));
  };
  if (t->dataset != job.dataset) return differs("dataset", t->dataset, job.dataset);
  if (t->job != job.job) return differs("job", t->job, job.job);
  if (t->epoch != job.epoch) return differs("epoch", absl::StrCat(t->epoch), absl::StrCat(job.epoch));
  if (t->seed != job.seed) return differs("seed", absl::StrCat(t->seed), absl::StrCat(job.seed));
  if (t->fingerprint != wire::JobFingerprint(job.shot_ids)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "resume: the token is for another set of shot ids than the ", job.shot_ids.size(),
        " given (its fingerprint differs)"));
  }
  return absl::OkStatus();
}

// wire::ShotAssembler (the shot protocol's assembler), handing out this API's Shots.
// Thread-compatible: one receive thread.
class ShotAssembler {
 public:
  ShotAssembler(gpu::PinnedBufferPool* pool, bool raw_trace_headers, bool pieces)
      : assembler_(pool, raw_trace_headers, pieces) {}

  absl::StatusOr<bool> Add(const wire::ReceivedChunk& raw, Shot* out) {
    wire::AssembledShot shot;
    SS_ASSIGN_OR_RETURN(const bool complete, assembler_.Add(raw, &shot));
    if (!complete) return false;
    out->shot_id = shot.shot_id;
    out->n_traces = shot.n_traces;
    out->first_trace = shot.first_trace;
    out->shot_traces = shot.shot_traces;
    out->last_piece = shot.last_piece;
    out->n_samples = shot.n_samples;
    out->sample_interval_us = shot.sample_interval_us;
    out->samples = std::move(shot.samples);  // the previous buffer goes back to the pool
    out->headers = std::move(shot.headers);
    out->trace_headers = std::move(shot.trace_headers);
    out->encoding = std::string(wire::EncodingName(shot.encoding));
    return true;
  }

  // The receive loop both readers share: reads `call`'s messages until the call ends,
  // each checked and assembled; every complete shot (or piece) goes to `take`, which may
  // move it away. The first bad message's error, or `take`'s (which stops the loop).
  template <typename Call>
  absl::Status Receive(Call* call, const std::function<absl::Status(Shot&)>& take) {
    grpc::ByteBuffer bb;
    wire::ReceivedChunk raw;
    Shot shot;
    while (call->Read(&bb)) {
      SS_RETURN_IF_ERROR(raw.Parse(&bb));
      SS_ASSIGN_OR_RETURN(const bool complete, Add(raw, &shot));
      if (complete) SS_RETURN_IF_ERROR(take(shot));
    }
    return absl::OkStatus();
  }

  bool in_shot() const { return assembler_.in_shot(); }
  uint64_t shot_wire_bytes() const { return assembler_.shot_wire_bytes(); }
  wire::Encoding shot_encoding() const { return assembler_.shot_encoding(); }

 private:
  wire::ShotAssembler assembler_;
};

// Receives on its own thread; at most queue_depth assembled shots wait in ready_.
class GrpcShotReader final : public ShotReader {
 public:
  GrpcShotReader(Client::Impl* client, std::string dataset, std::vector<int64_t> ids,
                 StreamOptions options)
      : client_(client),
        dataset_(std::move(dataset)),
        ids_(std::move(ids)),
        options_(std::move(options)),
        depth_(std::max<uint32_t>(1, options_.queue_depth)) {
    thread_ = std::thread([this] { Run(); });
  }

  ~GrpcShotReader() override {
    Cancel();
    thread_.join();
  }

  absl::StatusOr<bool> Next(Shot* shot) override {
    absl::MutexLock lock(&mu_);
    auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return !ready_.empty() || ended_ || cancelled_;
    };
    mu_.Await(absl::Condition(&ready));
    if (!ready_.empty()) {
      *shot = std::move(ready_.front());  // the old buffer goes back to the pool
      ready_.pop_front();
      return true;
    }
    if (!ended_) return absl::CancelledError("stream cancelled by the client");
    if (!end_status_.ok()) return end_status_;
    return false;
  }

  void Cancel() override {
    absl::MutexLock lock(&mu_);
    cancelled_ = true;
    if (context_ != nullptr) context_->TryCancel();
  }

  int reconnects() const override {
    absl::MutexLock lock(&mu_);
    return reconnects_;
  }

  uint64_t checksums_verified() const override {
    absl::MutexLock lock(&mu_);
    return checksums_verified_;
  }

  uint64_t wire_bytes() const override {
    absl::MutexLock lock(&mu_);
    return wire_bytes_;
  }

  std::string last_encoding() const override {
    absl::MutexLock lock(&mu_);
    return last_encoding_;
  }

 private:
  // Target index per shot: a server that holds it, spreading shots held by several.
  absl::StatusOr<std::vector<size_t>> Route() {
    std::vector<size_t> route(ids_.size(), 0);
    if (client_->targets.size() == 1) return route;
    auto per = client_->PerTarget(dataset_);
    if (!per.ok()) return per.status();
    std::map<int64_t, std::vector<size_t>>& holders = holders_;
    for (size_t t = 0; t < per->size(); ++t) {
      if (!(*per)[t]) continue;
      for (int64_t id : (*per)[t]->shot_ids()) holders[id].push_back(t);
    }
    for (size_t k = 0; k < ids_.size(); ++k) {
      auto it = holders.find(ids_[k]);
      if (it == holders.end()) {
        return absl::NotFoundError(
            absl::StrCat("dataset '", dataset_, "' has no shot ", ids_[k], " on any target"));
      }
      route[k] = it->second[k % it->second.size()];
    }
    return route;
  }

  void Run() {
    // SCHED_BATCH: when the consumer takes a shot and so makes room, this thread wakes
    // without preempting the consumer (on 2 cores the consumer otherwise lost ~1.5 ms, one
    // shot's copy, at such hand-overs; docs/performance.md). Unprivileged; best effort.
    sched_param batch{};
    sched_setscheduler(0, SCHED_BATCH, &batch);
    absl::Status status = Receive();
    absl::MutexLock lock(&mu_);
    end_status_ = status;
    ended_ = true;
  }

  // Shots from `from` on that were routed to `failed` go to another target that holds
  // them, where there is one; true if any moved.
  bool Reroute(size_t from, size_t failed, std::vector<size_t>* route) {
    failed_targets_.insert(failed);
    bool moved = false;
    for (size_t k = from; k < route->size(); ++k) {
      if ((*route)[k] != failed) continue;
      auto it = holders_.find(ids_[k]);
      if (it == holders_.end()) continue;
      std::vector<size_t> others;
      for (size_t t : it->second) {
        if (failed_targets_.count(t) == 0) others.push_back(t);
      }
      if (others.empty()) continue;
      (*route)[k] = others[k % others.size()];
      moved = true;
    }
    return moved;
  }

  // The retry rule (the same in the Python client): a stream that breaks transiently
  // (UNAVAILABLE, or CANCELLED by the server or the transport, as when a server goes
  // away) is resumed at the first shot not yet delivered: on another target that holds
  // the shots where there is one, at once; else on the same target once it is back
  // (waiting up to reconnect_timeout), after a backoff. RetryBudget bounds the failures
  // in a row: each delivered shot resets the count. A target that cannot be reached at all
  // within connect_timeout, before anything came from it, fails the stream at once.
  absl::Status Receive() {
    if (ids_.empty()) return CheckSelection();
    auto route = Route();
    if (!route.ok()) return route.status();
    size_t delivered = 0;
    size_t delivered_at_failure = 0;
    RetryBudget budget(client_->options.retries);
    std::set<size_t> reached;
    while (delivered < ids_.size()) {
      // One stream per run of consecutive shots on the same target, in request order.
      size_t k = delivered;
      const size_t target = (*route)[k];
      size_t j = k;
      while (j < ids_.size() && (*route)[j] == target) ++j;
      absl::Status s;
      if (reached.count(target) == 0) {
        s = client_->Reach(target);
        if (s.ok()) reached.insert(target);
      }
      const bool unreachable = !s.ok();
      if (s.ok()) s = StreamRun(target, k, j, &delivered);
      if (s.ok()) {
        if (delivered < j) {
          return absl::DataLossError(absl::StrCat("stream ended after ", delivered - k, " of ",
                                                  j - k, " shots"));
        }
        continue;
      }
      {
        absl::MutexLock lock(&mu_);
        if (cancelled_) return absl::CancelledError("stream cancelled by the client");
      }
      const bool transient = s.code() == absl::StatusCode::kUnavailable ||
                             s.code() == absl::StatusCode::kCancelled;
      if (!transient) return s;
      if (Reroute(delivered, target, &*route)) {  // another server holds the shots
        absl::MutexLock lock(&mu_);
        ++reconnects_;
        continue;
      }
      if (unreachable) return s;
      if (delivered > delivered_at_failure) budget.Delivered();  // failures in a row
      delivered_at_failure = delivered;
      const std::optional<absl::Duration> backoff = budget.Failed();
      if (!backoff.has_value()) return s;
      {
        absl::MutexLock lock(&mu_);
        ++reconnects_;
      }
      // Back off, then wait (bounded) for the target to come back, then resume at
      // `delivered`; a Cancel ends either wait.
      if (WaitUnlessCancelled(*backoff)) {
        return absl::CancelledError("stream cancelled by the client");
      }
      const auto& ch = client_->targets[(*route)[delivered]].channel;
      const absl::Time deadline = absl::Now() + client_->options.reconnect_timeout;
      while (absl::Now() < deadline) {
        const absl::Time slice = std::min(deadline, absl::Now() + absl::Milliseconds(100));
        if (ch->WaitForConnected(absl::ToChronoTime(slice))) break;
        absl::MutexLock lock(&mu_);
        if (cancelled_) return absl::CancelledError("stream cancelled by the client");
      }
    }
    return absl::OkStatus();
  }

  // A request of no shot still goes to the servers that hold the dataset (the first
  // target where none does), which check the dataset and the selection: what they refuse
  // is the stream's status, and nothing is read.
  absl::Status CheckSelection() {
    std::vector<size_t> targets = {0};
    if (client_->targets.size() > 1) {
      auto per = client_->PerTarget(dataset_);
      if (!per.ok()) return per.status();
      targets.clear();
      for (size_t t = 0; t < per->size(); ++t) {
        if ((*per)[t]) targets.push_back(t);
      }
      if (targets.empty()) targets.push_back(0);
    }
    size_t delivered = 0;
    for (size_t t : targets) {
      SS_RETURN_IF_ERROR(client_->Reach(t));
      SS_RETURN_IF_ERROR(StreamRun(t, 0, 0, &delivered));
    }
    return absl::OkStatus();
  }

  // Sleeps for `d` unless (or until) the stream is cancelled; true when cancelled.
  bool WaitUnlessCancelled(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(&cancelled_), d);
    return cancelled_;
  }

  // Streams ids_[k, j) from one target; each completed shot is queued and counted.
  absl::Status StreamRun(size_t target, size_t k, size_t j, size_t* delivered) {
    v1::StreamShotsRequest request;
    request.set_dataset(dataset_);
    request.mutable_shot_ids()->Add(ids_.begin() + k, ids_.begin() + j);
    request.set_queue_depth(options_.queue_depth);
    absl::StatusOr<v1::ShotSelection> selection = SelectionOf(options_);
    if (!selection.ok()) return selection.status();
    *request.mutable_selection() = *std::move(selection);
    grpc::ClientContext ctx;
    client_->Prepare(&ctx);
    {
      absl::MutexLock lock(&mu_);
      if (cancelled_) return absl::CancelledError("stream cancelled by the client");
      context_ = &ctx;
    }
    // Raw messages: the samples go from gRPC's slices to the shot buffer in one copy.
    const std::string bytes = request.SerializeAsString();
    grpc::Slice slice(bytes);
    grpc::ByteBuffer raw_request(&slice, 1);
    const auto& channel = client_->targets[target].channel;
    grpc::internal::RpcMethod method(kStreamShotsMethod,
                                     grpc::internal::RpcMethod::SERVER_STREAMING, channel);
    std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> reader(
        grpc::internal::ClientReaderFactory<grpc::ByteBuffer>::Create(channel.get(), method, &ctx,
                                                                      raw_request));
    bool broke_inside_shot = false;
    absl::Status error = ReadChunks(reader.get(), delivered, &broke_inside_shot);
    if (!error.ok() && !broke_inside_shot) ctx.TryCancel();
    grpc::Status status = reader->Finish();
    {
      absl::MutexLock lock(&mu_);
      context_ = nullptr;
    }
    // A stream that ended inside a shot says why in its status (a server shutting down,
    // a read error); only an OK status there is our own error.
    if (broke_inside_shot && !status.ok()) return FromGrpc(status);
    if (!error.ok()) return error;
    return FromGrpc(status);
  }

  absl::Status ReadChunks(grpc::ClientReader<grpc::ByteBuffer>* reader, size_t* delivered,
                          bool* broke_inside_shot) {
    ShotAssembler assembler(client_->pool, options_.raw_trace_headers, options_.pieces);
    uint64_t counted = 0;  // of the shot being received: wire bytes counted so far
    SS_RETURN_IF_ERROR(assembler.Receive(reader, [&](Shot& shot) -> absl::Status {
      shot.index = static_cast<uint32_t>(*delivered);
      // A shot resumed after a break: the parts delivered before it are not again.
      if (shot.first_trace + shot.n_traces <= parts_delivered_ && !shot.last_piece) {
        return absl::OkStatus();
      }
      if (shot.first_trace < parts_delivered_) TrimFront(&shot, parts_delivered_);
      const size_t shot_floats = shot.samples.size();
      size_t prefill = 0;  // buffers to have ready once this shot is handed over
      {
        absl::MutexLock lock(&mu_);
        if (shot.last_piece) ++checksums_verified_;  // the shot's CRC-32 matched the server's
        wire_bytes_ += assembler.shot_wire_bytes() - counted;
        counted = shot.last_piece ? 0 : assembler.shot_wire_bytes();
        last_encoding_ = std::string(wire::EncodingName(assembler.shot_encoding()));
        auto room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return ready_.size() < depth_ || cancelled_;
        };
        mu_.Await(absl::Condition(&room));
        if (cancelled_) return absl::CancelledError("stream cancelled by the client");
        const bool last = shot.last_piece;
        parts_delivered_ = last ? 0 : shot.first_trace + shot.n_traces;
        ready_.push_back(std::move(shot));
        if (last) ++*delivered;
        // Whole shots: after the first, the buffers the stream will hold at its fullest (the
        // queue, the shot being received; the consumer holds this one), for the shots left.
        if (last && !prefilled_ && !options_.pieces) {
          prefilled_ = true;
          prefill = std::min(depth_ + 1, ids_.size() - std::min(ids_.size(), *delivered));
        }
      }
      if (prefill > 0) client_->pool->Prefill(shot_floats, prefill);
      return absl::OkStatus();
    }));
    if (assembler.in_shot()) {
      *broke_inside_shot = true;
      return absl::UnavailableError("stream broke inside a shot");
    }
    return absl::OkStatus();
  }

  // Drops the part's traces before `from` (delivered before a break), in a buffer of its own.
  void TrimFront(Shot* part, uint32_t from) {
    const uint32_t drop = from - part->first_trace;
    const uint64_t ns = part->n_samples;
    gpu::HostBuffer rest = client_->pool->Acquire((part->n_traces - drop) * ns);
    if (rest.data() != nullptr) {
      std::memcpy(rest.data(), part->samples.data() + drop * ns,
                  (part->n_traces - drop) * ns * sizeof(float));
    }
    part->samples = std::move(rest);
    part->n_traces -= drop;
    part->first_trace = from;
    part->headers.clear();
    part->trace_headers.clear();
  }

  Client::Impl* const client_;
  const std::string dataset_;
  const std::vector<int64_t> ids_;
  const StreamOptions options_;
  const size_t depth_;
  bool prefilled_ = false;  // the receive thread's own: the pool was prefilled (Prefill)
  std::thread thread_;
  mutable absl::Mutex mu_;
  std::deque<Shot> ready_ ABSL_GUARDED_BY(mu_);  // received, verified, not yet taken
  bool ended_ ABSL_GUARDED_BY(mu_) = false;      // the receive thread is done
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status end_status_ ABSL_GUARDED_BY(mu_);
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;  // the running call
  int reconnects_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t checksums_verified_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t wire_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  std::string last_encoding_ ABSL_GUARDED_BY(mu_);
  // The receive thread's own: which targets hold each shot (several targets only), and
  // the targets given up on in this stream.
  std::map<int64_t, std::vector<size_t>> holders_;
  std::set<size_t> failed_targets_;
  // With pieces: traces of the shot at `delivered` already delivered (0 between shots).
  uint32_t parts_delivered_ = 0;
};


// One consumer of a job: a StreamJob call to each target that holds some of the shots (a
// shot held by several goes to the first), a receive thread each, their shots merged in
// arrival order. Next() tells the target of the shot handed out before it that the
// consumer is done with that one. Next() is for one thread; Cancel from any.
class JobShotReader final : public JobReader {
 public:
  JobShotReader(Client::Impl* client, std::string dataset, std::string job,
                std::vector<int64_t> ids, uint64_t epoch, uint64_t seed, JobOptions options)
      : client_(client), options_(std::move(options)),
        depth_(std::max<uint32_t>(1, options_.queue_depth)) {
    job_ = JobCommit{dataset, job, ids, epoch, seed, options_.resume};
    request_.set_dataset(dataset);
    request_.set_job(job);
    request_.set_epoch(epoch);
    request_.set_seed(seed);
    request_.set_queue_depth(options_.queue_depth);
    request_.set_resume(options_.resume);
    request_.set_no_takeover(!options_.takeover);
    absl::StatusOr<v1::ShotSelection> selection = SelectionOf(options_);
    if (selection.ok() && options_.pieces) {
      selection = absl::InvalidArgumentError(
          "StreamOptions::pieces is for Stream; a job's shots come whole");
    }
    if (absl::Status resume = CheckResume(job_); selection.ok() && !resume.ok()) {
      selection = resume;
    }
    if (!selection.ok()) {
      absl::MutexLock lock(&mu_);
      end_status_ = selection.status();
      running_ = 0;
      return;
    }
    *request_.mutable_selection() = *std::move(selection);
    absl::StatusOr<std::vector<std::vector<int64_t>>> per = client_->SplitJob(dataset, ids);
    if (!per.ok()) {
      absl::MutexLock lock(&mu_);
      end_status_ = per.status();
      running_ = 0;
      return;
    }
    uncommitted_.resize(client_->targets.size());
    streams_.resize(client_->targets.size());
    for (size_t t = 0; t < per->size(); ++t) {
      if ((*per)[t].empty()) continue;
      streams_[t] = std::make_unique<Stream>();
      ++running_;
    }
    for (size_t t = 0; t < per->size(); ++t) {
      if (streams_[t] == nullptr) continue;
      threads_.emplace_back([this, t, mine = std::move((*per)[t])] { Run(t, mine); });
    }
  }

  ~JobShotReader() override {
    Cancel();
    for (auto& th : threads_) th.join();
  }

  absl::StatusOr<bool> Next(Shot* shot) override {
    if (last_target_ >= 0) {  // asking for the next one: done with the last
      Stream& st = *streams_[last_target_];
      v1::JobRequest ack;
      ack.mutable_progress()->set_done(++st.taken);
      Write(&st, ack);
      last_target_ = -1;
    }
    absl::MutexLock lock(&mu_);
    auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return !ready_.empty() || running_ == 0 || cancelled_ || !end_status_.ok();
    };
    mu_.Await(absl::Condition(&ready));
    if (!end_status_.ok()) return end_status_;
    if (!ready_.empty()) {
      last_target_ = static_cast<int>(ready_.front().first);
      *shot = std::move(ready_.front().second);
      shot->index = static_cast<uint32_t>(handed_++);
      uncommitted_[last_target_].push_back(shot->shot_id);
      ready_.pop_front();
      return true;
    }
    if (cancelled_) return absl::CancelledError("stream cancelled by the client");
    return false;
  }

  void Cancel() override {
    absl::MutexLock lock(&mu_);
    cancelled_ = true;
    for (auto& st : streams_) {
      if (st != nullptr) st->ctx.TryCancel();
    }
  }

  int reconnects() const override { return 0; }
  uint64_t checksums_verified() const override {
    absl::MutexLock lock(&mu_);
    return checksums_verified_;
  }
  uint64_t wire_bytes() const override {
    absl::MutexLock lock(&mu_);
    return wire_bytes_;
  }
  std::string last_encoding() const override {
    absl::MutexLock lock(&mu_);
    return last_encoding_;
  }

  absl::StatusOr<std::string> Commit(int64_t step) override {
    {
      absl::MutexLock lock(&mu_);
      if (streams_.empty() && !end_status_.ok()) return end_status_;  // never started
    }
    for (size_t t = 0; t < streams_.size(); ++t) {
      if (streams_[t] == nullptr) continue;  // runs none of the job
      absl::Status s = client_->CommitOn(t, job_, step, uncommitted_[t]);
      if (!s.ok()) return s;  // what was not committed stays for the next Commit
      uncommitted_[t].clear();
    }
    return TokenOf(job_, step);
  }

 private:
  struct Stream {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>> call;
    absl::Mutex write_mu;  // the first message (receive thread) and acks (Next)
    uint64_t taken = 0;    // shots of this stream handed out by Next (Next's own)
  };

  static void Write(Stream* st, const v1::JobRequest& m) {
    const std::string bytes = m.SerializeAsString();
    grpc::Slice slice(bytes);
    grpc::ByteBuffer bb(&slice, 1);
    absl::MutexLock lock(&st->write_mu);
    if (st->call != nullptr) st->call->Write(bb);  // a broken call says so in Read/Finish
  }

  void Run(size_t t, std::vector<int64_t> mine) {
    Stream& st = *streams_[t];
    absl::Status status = client_->Reach(t);
    if (status.ok()) {
      client_->Prepare(&st.ctx);
      const auto& channel = client_->targets[t].channel;
      grpc::internal::RpcMethod method(kStreamJobMethod,
                                       grpc::internal::RpcMethod::BIDI_STREAMING, channel);
      {
        absl::MutexLock lock(&st.write_mu);
        st.call.reset(grpc::internal::ClientReaderWriterFactory<
                      grpc::ByteBuffer, grpc::ByteBuffer>::Create(channel.get(), method, &st.ctx));
      }
      v1::JobRequest first;
      *first.mutable_start() = request_;
      first.mutable_start()->mutable_shot_ids()->Add(mine.begin(), mine.end());
      Write(&st, first);
      status = Receive(t, st.call.get());
    }
    absl::MutexLock lock(&mu_);
    if (!status.ok() && end_status_.ok() && !cancelled_) {
      end_status_ = status;
      for (auto& other : streams_) {
        if (other != nullptr) other->ctx.TryCancel();
      }
    }
    --running_;
  }

  absl::Status Receive(size_t t, grpc::ClientReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>* call) {
    ShotAssembler assembler(client_->pool, options_.raw_trace_headers, /*pieces=*/false);
    absl::Status error = assembler.Receive(call, [&](Shot& shot) -> absl::Status {
      absl::MutexLock lock(&mu_);
      ++checksums_verified_;
      wire_bytes_ += assembler.shot_wire_bytes();
      last_encoding_ = std::string(wire::EncodingName(assembler.shot_encoding()));
      auto room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return ready_.size() < depth_ || cancelled_;
      };
      mu_.Await(absl::Condition(&room));
      // (Cancelled: Run leaves the consumer's end status as Cancel set it.)
      if (cancelled_) return absl::CancelledError("stream cancelled by the client");
      ready_.emplace_back(t, std::move(shot));
      return absl::OkStatus();
    });
    if (!error.ok()) streams_[t]->ctx.TryCancel();
    {
      absl::MutexLock lock(&streams_[t]->write_mu);
      call->WritesDone();
    }
    grpc::Status status = call->Finish();
    if (!error.ok()) return error;
    return FromGrpc(status);
  }

  Client::Impl* const client_;
  const JobOptions options_;
  const size_t depth_;
  JobCommit job_;         // what its commits name
  v1::JobStart request_;  // the job, without its shots
  std::vector<std::unique_ptr<Stream>> streams_;  // by target; null where it holds none
  std::vector<std::thread> threads_;
  int last_target_ = -1;  // Next's own: the target of the shot it handed out last
  // Next's and Commit's own: by target, the shots handed out and not yet committed.
  std::vector<std::vector<int64_t>> uncommitted_;
  size_t handed_ = 0;     // Next's own
  mutable absl::Mutex mu_;
  std::deque<std::pair<size_t, Shot>> ready_ ABSL_GUARDED_BY(mu_);
  std::string last_encoding_ ABSL_GUARDED_BY(mu_);
  int running_ ABSL_GUARDED_BY(mu_) = 0;  // receive threads not done
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status end_status_ ABSL_GUARDED_BY(mu_);
  uint64_t checksums_verified_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t wire_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace

absl::Status CheckTarget(absl::string_view target) {
  if (absl::StartsWith(target, "unix:")) return absl::OkStatus();
  const size_t colon = target.rfind(':');
  const absl::string_view port = colon == absl::string_view::npos ? "" : target.substr(colon + 1);
  int n = 0;
  const bool bracketed = absl::StartsWith(target, "[");
  if (target.empty() || colon == absl::string_view::npos || colon == 0 ||
      !absl::SimpleAtoi(port, &n) || n <= 0 || n > 65535 ||
      (bracketed && target[colon - 1] != ']')) {
    return absl::InvalidArgumentError(absl::StrCat(
        "target '", target, "': expected HOST:PORT with a port number (e.g. 127.0.0.1:50051, "
        "[::1]:50051, dns:///storage-1:50051)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> ExpandTargets(const std::vector<std::string>& targets) {
  std::vector<std::string> out;
  for (const std::string& t : targets) {
    constexpr absl::string_view kDns = "dns:///";
    if (!absl::StartsWith(t, kDns)) {
      out.push_back(t);
      continue;
    }
    const std::string hostport = t.substr(kDns.size());
    const size_t colon = hostport.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      return absl::InvalidArgumentError(absl::StrCat("target '", t, "': expected dns:///NAME:PORT"));
    }
    std::string host = hostport.substr(0, colon);
    const std::string port = hostport.substr(colon + 1);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
    }
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0 || res == nullptr) {
      return absl::UnavailableError(absl::StrCat("target '", t, "': cannot resolve ", host));
    }
    const size_t before = out.size();
    for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
      char ip[INET6_ADDRSTRLEN];
      const void* addr = a->ai_family == AF_INET6
                             ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr)
                             : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr);
      if (inet_ntop(a->ai_family, addr, ip, sizeof(ip)) == nullptr) continue;
      const std::string target = a->ai_family == AF_INET6 ? absl::StrCat("[", ip, "]:", port)
                                                          : absl::StrCat(ip, ":", port);
      if (std::find(out.begin() + before, out.end(), target) == out.end()) out.push_back(target);
    }
    freeaddrinfo(res);
  }
  return out;
}

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(const std::vector<std::string>& given,
                                                        const ClientOptions& options) {
  auto expanded = ExpandTargets(given);
  if (!expanded.ok()) return expanded.status();
  const std::vector<std::string>& targets = *expanded;
  if (targets.empty()) return absl::InvalidArgumentError("no target; expected HOST:PORT");
  const grpc::ChannelArguments args = LargeMessageChannelArguments();
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
  if (options.tls_cert_pem.empty() != options.tls_key_pem.empty()) {
    return absl::InvalidArgumentError(
        "mutual TLS needs both the client's certificate (tls_cert_pem) and its key "
        "(tls_key_pem)");
  }
  if (options.tls || !options.tls_root_pem.empty() || !options.tls_cert_pem.empty()) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = options.tls_root_pem;  // empty: the system's roots
    ssl.pem_cert_chain = options.tls_cert_pem;
    ssl.pem_private_key = options.tls_key_pem;
    creds = grpc::SslCredentials(ssl);
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  for (const std::string& t : targets) {
    if (absl::Status s = CheckTarget(t); !s.ok()) return s;
    Target target;
    target.address = t;
    target.channel = grpc::CreateCustomChannel(t, creds, args);
    target.stub = v1::ShotStream::NewStub(target.channel);
    impl->targets.push_back(std::move(target));
  }
  if (options.pool != nullptr) {
    impl->pool = options.pool;
  } else {
    impl->own_pool = std::make_unique<gpu::PinnedBufferPool>();
    impl->pool = impl->own_pool.get();
  }
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

gpu::PinnedBufferPool& Client::pool() { return *impl_->pool; }

absl::StatusOr<std::vector<DatasetSummary>> Client::ListDatasets() {
  std::vector<DatasetSummary> out;
  std::set<std::string> several;  // names more than one target holds
  for (size_t i = 0; i < impl_->targets.size(); ++i) {
    const Target& t = impl_->targets[i];
    if (absl::Status reach = impl_->Reach(i); !reach.ok()) return reach;
    grpc::ClientContext ctx;
    impl_->PrepareCall(&ctx);
    v1::ListDatasetsResponse response;
    grpc::Status s = t.stub->ListDatasets(&ctx, v1::ListDatasetsRequest(), &response);
    if (!s.ok()) return FromGrpc(s);
    for (const v1::DatasetInfo& info : response.datasets()) {
      bool seen = false;
      for (const DatasetSummary& d : out) seen |= d.name == info.name();
      if (seen) {
        several.insert(info.name());  // their union, below
      } else {
        out.push_back(ToSummary(info));
      }
    }
  }
  // A dataset several targets hold: its shots and traces are their union (GetDataset's),
  // as `info` reports them; shots can span targets, so the counts cannot just be added.
  for (DatasetSummary& d : out) {
    if (!several.count(d.name)) continue;
    absl::StatusOr<DatasetSummary> merged = GetDataset(d.name);
    if (!merged.ok()) return merged.status();
    d.n_shots = merged->n_shots;
    d.n_traces = merged->n_traces;
  }
  return out;
}

absl::StatusOr<DatasetSummary> Client::Write(const std::string& name,
                                             const WriteOptions& options,
                                             const NextShotToWrite& next) {
  SS_RETURN_IF_ERROR(impl_->Reach(0));
  grpc::ClientContext ctx;
  impl_->Prepare(&ctx);
  v1::WriteShotsResponse response;
  std::unique_ptr<grpc::ClientWriter<v1::WriteShotsRequest>> writer =
      impl_->targets[0].stub->WriteShots(&ctx, &response);
  v1::WriteShotsRequest m;
  m.mutable_start()->set_dataset(name);
  m.mutable_start()->set_sample_interval_us(options.sample_interval_us);
  m.mutable_start()->set_sample_format(options.sample_format);
  if (!options.parts_write_id.empty()) {
    v1::WriteParts& parts = *m.mutable_start()->mutable_parts();
    parts.set_write_id(options.parts_write_id);
    parts.set_count(options.parts_count);
    parts.set_index(options.part_index);
    parts.set_commit(options.commit_parts);
  }
  bool open = writer->Write(m);  // false: the server finished early (its status says why)
  absl::Status failed;
  ShotToWrite shot;
  while (open) {
    absl::StatusOr<bool> more = next(&shot);
    if (!more.ok()) {
      failed = more.status();
      break;
    }
    if (!*more) break;
    const uint64_t trace_bytes = uint64_t{shot.n_samples} * sizeof(float);
    const uint64_t per = wire::TracesPerChunk(options.max_chunk_bytes, trace_bytes);
    uint32_t crc = 0;
    for (uint64_t t = 0; open && (t < shot.n_traces || t == 0); t += per) {
      const uint64_t n = std::min<uint64_t>(per, shot.n_traces - std::min<uint64_t>(t, shot.n_traces));
      m.Clear();
      v1::ShotPart& part = *m.mutable_shot();
      if (t == 0) {
        part.set_shot_id(shot.shot_id);
        part.set_n_traces(shot.n_traces);
        part.set_n_samples(shot.n_samples);
        for (const auto& [header, values] : shot.headers) {
          v1::HeaderColumn* c = part.add_headers();
          c->set_name(header);
          c->mutable_values()->Add(values.begin(), values.end());
        }
      }
      const char* bytes = reinterpret_cast<const char*>(shot.samples) + t * trace_bytes;
      part.set_samples(bytes, n * trace_bytes);
      crc = Crc32(crc, bytes, n * trace_bytes);
      if (t + per >= shot.n_traces) {
        part.set_shot_end(true);
        part.set_crc32(crc);
      }
      open = writer->Write(m);
      if (shot.n_traces == 0) break;
    }
  }
  if (!failed.ok()) {
    ctx.TryCancel();  // the server keeps nothing
    writer->Finish();
    return failed;
  }
  if (open) {
    m.Clear();
    m.mutable_finish();
    writer->Write(m);
    writer->WritesDone();
  }
  const grpc::Status s = writer->Finish();
  if (!s.ok()) return FromGrpc(s);
  DatasetSummary written = ToSummary(response.dataset());
  written.write_max_error = response.max_error();
  written.write_max_header_error = response.max_header_error();
  written.write_max_header_error_at = response.max_header_error_at();
  written.written_shots = response.shots();
  written.written_bytes = response.sample_bytes();
  return written;
}

absl::StatusOr<DatasetSummary> Client::GetDataset(const std::string& name) {
  auto per = impl_->PerTarget(name);
  if (!per.ok()) return per.status();
  std::optional<DatasetSummary> merged;
  std::map<int64_t, uint32_t> counts;
  uint64_t traces = 0;
  for (const auto& info : *per) {
    if (!info) continue;
    if (!merged) merged = ToSummary(*info);
    traces += info->n_traces();
    for (int i = 0; i < info->shot_ids_size(); ++i) {
      counts[info->shot_ids(i)] += info->shot_trace_counts(i);
    }
  }
  merged->shot_ids.clear();
  merged->shot_trace_counts.clear();
  for (const auto& [id, n] : counts) {
    merged->shot_ids.push_back(id);
    merged->shot_trace_counts.push_back(n);
  }
  merged->n_shots = counts.size();
  merged->n_traces = traces;
  return *merged;
}

absl::StatusOr<DatasetSummary> Client::GetDatasetPage(const std::string& name,
                                                      uint32_t page_size,
                                                      std::string* page_token) {
  // Our token: "TARGET/SERVER_TOKEN", the target being paged and its server's own token.
  size_t t = 0;
  std::string inner;
  const bool first = page_token->empty();
  if (!first) {
    const size_t slash = page_token->find('/');
    if (slash == std::string::npos || !absl::SimpleAtoi(page_token->substr(0, slash), &t) ||
        t >= impl_->targets.size()) {
      return absl::InvalidArgumentError(absl::StrCat("page token '", *page_token,
                                                     "' is not one GetDatasetPage gave"));
    }
    inner = page_token->substr(slash + 1);
  }
  absl::Status last = absl::NotFoundError(absl::StrCat("no server has dataset '", name, "'"));
  for (; t < impl_->targets.size(); ++t, inner.clear()) {
    SS_RETURN_IF_ERROR(impl_->Reach(t));
    grpc::ClientContext ctx;
    impl_->PrepareCall(&ctx);
    v1::GetDatasetRequest request;
    request.set_name(name);
    request.set_page_size(std::max<uint32_t>(1, page_size));
    request.set_page_token(inner);
    v1::DatasetInfo page;
    const grpc::Status s = impl_->targets[t].stub->GetDataset(&ctx, request, &page);
    if (s.error_code() == grpc::StatusCode::NOT_FOUND) {
      last = FromGrpc(s);
      continue;  // not on this target: the next one
    }
    if (!s.ok()) return FromGrpc(s);
    DatasetSummary summary = ToSummary(page);
    *page_token = !page.next_page_token().empty() ? absl::StrCat(t, "/", page.next_page_token())
                  : t + 1 < impl_->targets.size() ? absl::StrCat(t + 1, "/")
                                                  : std::string();
    return summary;
  }
  if (first) return last;
  page_token->clear();  // the targets after the last that had it do not: no more pages
  DatasetSummary none;
  none.name = name;
  return none;
}

std::unique_ptr<ShotReader> Client::Stream(const std::string& dataset,
                                           std::vector<int64_t> shot_ids,
                                           const StreamOptions& options) {
  return std::make_unique<GrpcShotReader>(impl_.get(), dataset, std::move(shot_ids), options);
}

std::unique_ptr<JobReader> Client::StreamJob(const std::string& dataset, const std::string& job,
                                             std::vector<int64_t> shot_ids, uint64_t epoch,
                                             uint64_t seed, const JobOptions& options) {
  return std::make_unique<JobShotReader>(impl_.get(), dataset, job, std::move(shot_ids), epoch,
                                         seed, options);
}

absl::StatusOr<std::string> Client::CommitJob(const JobCommit& job, int64_t step,
                                              const std::vector<int64_t>& trained) {
  if (absl::Status s = CheckResume(job); !s.ok()) return s;
  absl::StatusOr<std::vector<std::vector<int64_t>>> runs = impl_->SplitJob(job.dataset, job.shot_ids);
  if (!runs.ok()) return runs.status();
  std::vector<std::vector<int64_t>> per(impl_->targets.size());
  if (impl_->targets.size() == 1) {
    per[0] = trained;
  } else {
    absl::flat_hash_map<int64_t, size_t> target_of;
    for (size_t t = 0; t < runs->size(); ++t) {
      for (int64_t id : (*runs)[t]) target_of[id] = t;
    }
    for (int64_t id : trained) {
      auto it = target_of.find(id);
      if (it == target_of.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("commit: shot ", id, " is not one of the job's shot ids"));
      }
      per[it->second].push_back(id);
    }
  }
  for (size_t t = 0; t < per.size(); ++t) {
    if ((*runs)[t].empty()) continue;  // runs none of the job
    if (absl::Status s = impl_->CommitOn(t, job, step, per[t]); !s.ok()) return s;
  }
  return TokenOf(job, step);
}

}  // namespace shotstream::client

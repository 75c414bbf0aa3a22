#include "server/service/shot_stream_service.h"

#include <cstdio>
#include <optional>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"
#include "server/service/grpc_status.h"
#include "wire/job_token.h"
#include "server/service/internal/job_reactor.h"
#include "server/service/internal/stream_reactor.h"
#include "server/service/internal/write_reactor.h"
#include "server/write/write_session.h"
#include "server/stream/dataset_shot_source.h"
#include "server/stream/stream_plan.h"
#include "shotstream/v1/shotstream.grpc.pb.h"

namespace shotstream::service {
namespace {

namespace v1 = ::shotstream::v1;

// with_shots: shots [first, first + count) of the catalog, and next_page_token where more
// follow.
void FillInfo(const DatasetEntry& e, bool with_shots, v1::DatasetInfo* info,
              uint64_t first, uint64_t count) {
  info->set_name(e.name);
  const std::shared_ptr<const dataset::Dataset> snapshot = e.dataset();
  if (snapshot == nullptr) {
    switch (e.state()) {
      case DatasetEntry::State::kRebuilding:
        info->set_state(v1::DATASET_STATE_REBUILDING);
        break;
      case DatasetEntry::State::kLoading: {
        info->set_state(v1::DATASET_STATE_LOADING);
        const DatasetEntry::LoadProgress p = e.progress();
        info->set_loading_traces_done(p.traces_done);
        info->set_loading_traces_total(p.traces_total);
        break;
      }
      default:
        info->set_state(v1::DATASET_STATE_FAILED);
    }
    info->set_error(std::string(e.status().message()));
    return;
  }
  const dataset::Dataset& d = *snapshot;
  info->set_state(v1::DATASET_STATE_READY);
  info->set_format(d.format());
  info->set_n_traces(d.catalog().n_traces());
  info->set_n_shots(d.catalog().shots().size());
  info->set_n_samples(d.n_samples());
  info->set_sample_interval_us(d.sample_interval_us());
  info->set_sample_format(d.sample_format());
  info->set_shot_key(d.spec().shot_key);
  info->set_n_files(static_cast<uint32_t>(d.n_files()));
  for (const std::string& bad : d.bad_files()) info->add_bad_files(bad);
  for (const std::string& h : d.header_fields()) info->add_header_fields(h);
  if (with_shots) {
    const auto& shots = d.catalog().shots();
    const uint64_t begin = std::min<uint64_t>(first, shots.size());
    const uint64_t end = std::min<uint64_t>(shots.size(), begin + count);
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

Caller CallerOf(const grpc::CallbackServerContext* ctx) {
  Caller c;
  const auto& md = ctx->client_metadata();
  if (auto it = md.find("authorization"); it != md.end()) {
    c.authorization = std::string(it->second.data(), it->second.size());
  }
  c.peer = ctx->peer();
  return c;
}

template <typename Message>
bool ParseRaw(const grpc::ByteBuffer* raw, Message* out) {
  std::vector<grpc::Slice> slices;
  std::string bytes;
  if (raw->Dump(&slices).ok()) {
    for (const grpc::Slice& s : slices) {
      bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
    }
  }
  return out->ParseFromString(bytes);
}

// A JobStart's resume token, checked against the start (dataset, job, epoch, seed, ids):
// none, the step and lineage to resume from, or INVALID_ARGUMENT naming what differs.
absl::StatusOr<std::optional<jobs::Job::Resume>> ResumeOf(const v1::JobStart& start) {
  if (start.resume().empty()) return std::nullopt;
  absl::StatusOr<wire::JobToken> t = wire::DecodeJobToken(start.resume());
  if (!t.ok()) return t.status();
  auto differs = [&](const char* what, const std::string& token, const std::string& here) {
    return absl::InvalidArgumentError(absl::StrCat("resume: the token is for ", what, " ",
                                                   token, ", this stream names ", here));
  };
  if (t->dataset != start.dataset()) {
    return differs("dataset", "'" + t->dataset + "'", "'" + start.dataset() + "'");
  }
  if (t->job != start.job()) return differs("job", "'" + t->job + "'", "'" + start.job() + "'");
  if (t->epoch != start.epoch()) {
    return differs("epoch", absl::StrCat(t->epoch), absl::StrCat(start.epoch()));
  }
  if (t->seed != start.seed()) {
    return differs("seed", absl::StrCat(t->seed), absl::StrCat(start.seed()));
  }
  if (t->fingerprint != wire::JobFingerprint({start.shot_ids().begin(), start.shot_ids().end()})) {
    return absl::InvalidArgumentError(absl::StrCat(
        "resume: the token is for another set of shot ids than the ", start.shot_ids_size(),
        " this stream names (its fingerprint differs)"));
  }
  return jobs::Job::Resume{t->step, wire::JobLineage(start.resume())};
}

// StreamShots and StreamJob are served raw (ByteBuffer) so that samples reach gRPC without
// a copy; the other methods use the generated message types. (StreamJob's typed and raw
// methods take the same arguments, so the service is composed here rather than from
// CallbackService.) Each handler: the call's caller and first message, the gate, its
// reactor.
class ShotStreamServiceImpl final
    : public v1::ShotStream::WithCallbackMethod_ListDatasets<
          v1::ShotStream::WithCallbackMethod_GetDataset<
              v1::ShotStream::WithRawCallbackMethod_StreamShots<
                  v1::ShotStream::WithRawCallbackMethod_StreamJob<
                      v1::ShotStream::WithCallbackMethod_WriteShots<
                          v1::ShotStream::WithCallbackMethod_CommitJob<
                              v1::ShotStream::Service>>>>>> {
 public:
  explicit ShotStreamServiceImpl(const ServiceParts& parts) : parts_(parts) {}

  grpc::ServerUnaryReactor* ListDatasets(grpc::CallbackServerContext* ctx,
                                         const v1::ListDatasetsRequest*,
                                         v1::ListDatasetsResponse* response) override {
    auto* reactor = ctx->DefaultReactor();
    auto pass = parts_.gate->Enter(Rpc::kListDatasets, CallerOf(ctx));
    if (!pass.ok()) {
      reactor->Finish(ToGrpcStatus(pass.status()));
      return reactor;
    }
    for (const DatasetEntry* e : parts_.datasets->All()) {
      if (parts_.gate->MayRead((*pass)->who(), e->name)) {
        FillInfo(*e, false, response->add_datasets(), 0, 0);
      }
    }
    (*pass)->End(absl::OkStatus());
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  grpc::ServerUnaryReactor* GetDataset(grpc::CallbackServerContext* ctx,
                                       const v1::GetDatasetRequest* request,
                                       v1::DatasetInfo* response) override {
    auto* reactor = ctx->DefaultReactor();
    uint64_t first = 0;
    auto pass = parts_.gate->Enter(Rpc::kGetDataset, CallerOf(ctx), request->name(), [&] {
      if (request->page_token().empty() || absl::SimpleAtoi(request->page_token(), &first)) {
        return absl::OkStatus();
      }
      return absl::InvalidArgumentError(
          absl::StrCat("page_token '", request->page_token(), "' is not one this server gave"));
    });
    if (!pass.ok()) {
      reactor->Finish(ToGrpcStatus(pass.status()));
      return reactor;
    }
    const uint32_t page = request->page_size() == 0
                              ? parts_.max_page_shots
                              : std::min(request->page_size(), parts_.max_page_shots);
    FillInfo(*parts_.datasets->Find(request->name()), true, response, first, page);
    (*pass)->End(absl::OkStatus());
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  grpc::ServerWriteReactor<grpc::ByteBuffer>* StreamShots(
      grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* raw_request) override {
    const Caller caller = CallerOf(ctx);
    v1::StreamShotsRequest request;
    if (!ParseRaw(raw_request, &request)) {
      return RejectStream(parts_.gate->Refuse(Rpc::kStreamShots, caller, "?",
                                              absl::InvalidArgumentError(
                                                  "malformed StreamShotsRequest")));
    }
    std::optional<stream::WindowPlan> plan;
    auto pass = parts_.gate->Enter(Rpc::kStreamShots, caller, request.dataset(), [&] {
      absl::StatusOr<ValidatedRequest> v =
          ValidateStreamRequest(request, *parts_.datasets, parts_.limits);
      if (!v.ok()) return v.status();
      plan = PlanWindow(*std::move(v), caller, request.dataset());
      return absl::OkStatus();
    });
    if (!pass.ok()) return RejectStream(pass.status());
    return StartStream(*std::move(plan), parts_.readers,
                       Context(caller, request.dataset(), *std::move(pass)));
  }

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* StreamJob(
      grpc::CallbackServerContext* ctx) override {
    const Caller caller = CallerOf(ctx);
    // Runs on the job executor (the job may read its file).
    auto starter = [this, caller](const v1::JobStart& start) -> absl::StatusOr<JobStream> {
      JobStream out;
      auto pass = parts_.gate->Enter(Rpc::kStreamJob, caller, start.dataset(), [&] {
        absl::StatusOr<ValidatedRequest> v =
            ValidateJobStart(start, *parts_.datasets, parts_.limits);
        if (!v.ok()) return v.status();
        jobs::JobSpec spec{start.dataset(), start.job(), start.epoch(), start.seed(),
                           std::vector<int64_t>(start.shot_ids().begin(),
                                                start.shot_ids().end())};
        absl::StatusOr<std::optional<jobs::Job::Resume>> resume = ResumeOf(start);
        if (!resume.ok()) return resume.status();
        out.resume = *resume;
        absl::StatusOr<std::shared_ptr<jobs::Job>> job =
            parts_.jobs->Find(spec, out.resume.has_value());
        if (!job.ok()) return job.status();
        if (out.resume.has_value()) {
          if (absl::Status s = (*job)->CheckStep(out.resume->step); !s.ok()) return s;
        }
        out.job = *std::move(job);
        out.plan = PlanWindow(*std::move(v), caller, start.dataset());
        return absl::OkStatus();
      });
      if (!pass.ok()) return pass.status();
      out.pass = *std::move(pass);
      out.plan.shot_ids.clear();
      absl::StatusOr<std::shared_ptr<stream::ShotFeed>> feed =
          MakeJobFeed(out.job, out.plan.queue_depth + 1, out.resume, !start.no_takeover(),
                      &out.consumer);
      if (!feed.ok()) {
        out.pass->End(feed.status());  // admitted, then ended before its first shot
        return feed.status();
      }
      out.plan.feed = *std::move(feed);
      return out;
    };
    auto refuse = [this, caller](absl::Status why) {
      return parts_.gate->Refuse(Rpc::kStreamJob, caller, "?", std::move(why));
    };
    return StartJobStream(std::move(starter), std::move(refuse), parts_.readers, parts_.job_disk,
                          Context(caller, "", nullptr));
  }

  // A commit: the gate's checks here, the job's durable record on the job executor.
  grpc::ServerUnaryReactor* CommitJob(grpc::CallbackServerContext* ctx,
                                      const v1::JobCommit* request,
                                      v1::JobCommitted* response) override {
    auto* reactor = ctx->DefaultReactor();
    auto pass = parts_.gate->Enter(Rpc::kCommitJob, CallerOf(ctx), request->dataset());
    if (!pass.ok()) {
      reactor->Finish(ToGrpcStatus(pass.status()));
      return reactor;
    }
    std::shared_ptr<Gate::Pass> admitted = *std::move(pass);
    parts_.job_disk->Submit([this, reactor, request, response, admitted] {
      absl::StatusOr<std::shared_ptr<jobs::Job>> job = parts_.jobs->Held(
          request->dataset(), request->job(), request->epoch(), request->seed());
      absl::StatusOr<jobs::Job::Committed> done =
          job.ok() ? (*job)->Commit(request->step(),
                                    std::vector<int64_t>(request->shot_ids().begin(),
                                                         request->shot_ids().end()),
                                    wire::JobLineage(request->resume()))
                   : absl::StatusOr<jobs::Job::Committed>(job.status());
      std::string line;
      if (done.ok()) {
        response->set_shots_committed(done->shots_committed);
        response->set_shots_left(done->shots_left);
      } else {
        line = absl::StrCat("commit of job ", request->job(), " step ", request->step(),
                            " refused: ", done.status().message());
      }
      admitted->End(done.status(), line);
      reactor->Finish(ToGrpcStatus(done.status()));
    });
    return reactor;
  }

  grpc::ServerReadReactor<v1::WriteShotsRequest>* WriteShots(
      grpc::CallbackServerContext* ctx, v1::WriteShotsResponse* response) override {
    const Caller caller = CallerOf(ctx);
    auto pass = parts_.gate->Enter(Rpc::kWriteShots, caller, "",
                                   [this] { return write::WritingEnabled(parts_.write_dir); });
    write::SessionContext context{parts_.datasets, parts_.write_dir,
                                  pass.ok() ? (*pass)->who() : "", parts_.load_written,
                                  parts_.written_published};
    // The pass (its write slot) lives as long as the write; its End counts and logs it.
    std::shared_ptr<Gate::Pass> admitted;
    if (pass.ok()) admitted = *std::move(pass);
    WriteHooks hooks;
    hooks.committed = [response, page = parts_.max_page_shots](
                          const write::WriteSession& session, const DatasetEntry* entry) {
      if (entry != nullptr) {
        FillInfo(*entry, /*with_shots=*/true, response->mutable_dataset(), 0, page);
      } else {
        response->mutable_dataset()->set_name(session.name());
      }
      response->set_max_error(session.max_error());
      response->set_max_header_error(session.max_header_error());
      response->set_max_header_error_at(session.max_header_error_at());
      response->set_shots(session.written_shots());
      response->set_sample_bytes(session.written_sample_bytes());
    };
    hooks.ended = [this, admitted, peer = caller.peer](const absl::Status& status,
                                                       const write::WriteSession& session) {
      ServiceCounters* c = parts_.counters;
      c->shots_written += static_cast<int64_t>(session.shots());
      c->bytes_written += static_cast<int64_t>(session.sample_bytes());
      admitted->End(
          status,
          absl::StrCat("write ", session.name().empty() ? "(unnamed)" : session.name(),
                       " from ", peer, ": ",
                       status.ok() ? "created"
                                   : absl::StrCat("FAILED ",
                                                  absl::StatusCodeToString(status.code())),
                       ", ", status.ok() ? "" : "received ", session.shots(), " shots, ",
                       session.sample_bytes(), " bytes", status.ok() ? "" : ": ",
                       status.message()));
    };
    return StartWrite(admitted != nullptr ? absl::OkStatus() : pass.status(),
                      std::move(context), parts_.disk, std::move(hooks));
  }

  void CutAllStreams(const absl::Status& status) { registry_.CutAll(status); }

 private:
  // A validated stream's window: its shots planned once (encoding, zero copy).
  stream::WindowPlan PlanWindow(ValidatedRequest v, const Caller& caller,
                                const std::string& dataset) {
    stream::WindowPlan plan;
    const std::string peer = StreamAdmission::PeerAddress(caller.peer);
    plan.shot = stream::PlanShots(v.selection, v.dataset->sample_format(), parts_.zero_copy,
                                  parts_.advisor, peer, dataset);
    plan.advisor = parts_.advisor;
    plan.dataset = dataset;
    plan.peer = peer;
    plan.source = stream::MakeDatasetShotSource(std::move(v.dataset));
    plan.shot_ids = std::move(v.shot_ids);
    plan.queue_depth = v.queue_depth;
    plan.piece_bytes = parts_.piece_bytes;
    plan.corrupt_shot = parts_.corrupt_shot_for_testing;
    plan.counters = parts_.counters;
    plan.budget = parts_.budget;
    plan.stall_watch = parts_.stall_watch;
    return plan;
  }

  StreamContext Context(const Caller& caller, const std::string& dataset,
                        std::unique_ptr<Gate::Pass> pass) {
    StreamContext context;
    context.counters = parts_.counters;
    context.registry = &registry_;
    context.peer = caller.peer;
    context.dataset = dataset;
    context.log = parts_.log_streams;
    context.pass = std::move(pass);
    return context;
  }

  const ServiceParts parts_;
  StreamRegistry registry_;  // running streams, for the shutdown's cut
};

}  // namespace

void CutAllStreams(grpc::Service* service, const absl::Status& status) {
  static_cast<ShotStreamServiceImpl*>(service)->CutAllStreams(status);
}

std::unique_ptr<grpc::Service> MakeShotStreamService(const ServiceParts& parts) {
  return std::make_unique<ShotStreamServiceImpl>(parts);
}

}  // namespace shotstream::service

#include "server/service/shot_stream_service.h"

#include <cstdio>
#include <map>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "server/service/grpc_status.h"
#include "server/jobs/job_registry.h"
#include "server/service/internal/job_reactor.h"
#include "server/service/internal/write_reactor.h"
#include "server/service/internal/stream_reactor.h"
#include "server/service/stream_admission.h"
#include "server/stream/byte_budget.h"
#include "server/stream/dataset_shot_source.h"
#include "server/stream/encoding_advisor.h"
#include "server/stream/stream_plan.h"
#include "wire/sample_encoding.h"
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
    info->set_state(rebuilding ? v1::DATASET_STATE_REBUILDING : v1::DATASET_STATE_FAILED);
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
  for (const std::string& h : d.header_fields()) info->add_header_fields(h);
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

// StreamShots and StreamJob are served raw (ByteBuffer) so that samples reach gRPC without
// a copy; the other methods use the generated message types.
// (StreamJob's typed and raw methods take the same arguments, so the service is composed
// here rather than from CallbackService.)
class ShotStreamServiceImpl final
    : public v1::ShotStream::WithCallbackMethod_ListDatasets<
          v1::ShotStream::WithCallbackMethod_GetDataset<
              v1::ShotStream::WithRawCallbackMethod_StreamShots<
                  v1::ShotStream::WithRawCallbackMethod_StreamJob<
                      v1::ShotStream::WithCallbackMethod_WriteShots<
                          v1::ShotStream::Service>>>>> {
 public:
  ShotStreamServiceImpl(dataset::DatasetRegistry* datasets, stream::ReaderPool* pool,
                        const ServiceOptions& options)
      : datasets_(datasets),
        pool_(pool),
        options_(options),
        access_(options.tokens, options.access),
        admission_(options.max_streams, options.max_streams_per_peer),
        counters_(options.counters != nullptr ? options.counters : &own_counters_),
        budget_(options.max_inflight_bytes > 0
                    ? std::make_unique<stream::ByteBudget>(options.max_inflight_bytes)
                    : nullptr),
        jobs_(options.job_dir, options.job_idle_timeout, &counters_->jobs) {}

  grpc::ServerUnaryReactor* ListDatasets(grpc::CallbackServerContext* ctx,
                                         const v1::ListDatasetsRequest*,
                                         v1::ListDatasetsResponse* response) override {
    auto* reactor = ctx->DefaultReactor();
    std::string who;
    if (absl::Status auth = Authenticate(ctx, &who); !auth.ok()) {
      reactor->Finish(ToGrpcStatus(auth));
      return reactor;
    }
    for (const DatasetEntry* e : datasets_->All()) {
      if (Allowed(who, e->name).ok()) FillInfo(*e, false, response->add_datasets());
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
    const std::string peer = StreamAdmission::PeerAddress(ctx->peer());
    absl::StatusOr<stream::WindowPlan> plan = Validate(*request, peer);
    if (!plan.ok()) return Reject(ctx, name, plan.status());
    // Limits last, so that a stream slot is taken only by a request that will run.
    if (absl::Status s = admission_.Admit(peer); !s.ok()) return Reject(ctx, name, s);
    StreamContext context;
    context.counters = counters_;
    context.registry = &registry_;
    context.peer = ctx->peer();
    context.dataset = name;
    context.stream_id = ++counters_->streams_started;
    context.log = options_.log_streams;
    context.on_gone = [this, peer] { admission_.Release(peer); };
    context.advisor = &advisor_;
    context.peer_address = peer;
    return StartStream(*std::move(plan), pool_, std::move(context));
  }

  // One consumer of a job: checked as a StreamShots request of the job's shots would be,
  // then joined to the job (jobs::JobRegistry), its shots fed to a window as it has room.
  grpc::ServerReadReactor<v1::WriteShotsRequest>* WriteShots(
      grpc::CallbackServerContext* ctx, v1::WriteShotsResponse* response) override {
    std::string who;
    absl::Status refused = Authenticate(ctx, &who);
    if (refused.ok()) refused = access_.MayWrite(who);
    if (refused.ok() && options_.draining != nullptr && options_.draining->load()) {
      refused = absl::UnavailableError("the server is shutting down; no new writes");
    }
    write::SessionContext context{datasets_, options_.write_dir, who, options_.load_written,
                                  options_.written_published};
    const std::string peer = ctx->peer();
    auto on_end = [this, response, peer](const absl::Status& status,
                                         const write::WriteSession& session,
                                         const DatasetEntry* entry) {
      counters_->shots_written += static_cast<int64_t>(session.shots());
      counters_->bytes_written += static_cast<int64_t>(session.sample_bytes());
      if (status.ok()) {
        ++counters_->writes_committed;
        FillInfo(*entry, /*with_shots=*/true, response->mutable_dataset());
        response->set_max_error(session.max_error());
        response->set_shots(session.shots());
        response->set_sample_bytes(session.sample_bytes());
      } else {
        ++counters_->writes_failed_by_code[static_cast<int>(status.code()) % 17];
      }
      if (options_.log_streams) {
        std::fprintf(stderr, "write %s from %s: %s, %llu shots, %llu bytes%s%s\n",
                     session.name().empty() ? "(unnamed)" : session.name().c_str(),
                     peer.c_str(), status.ok() ? "created" : "FAILED",
                     static_cast<unsigned long long>(session.shots()),
                     static_cast<unsigned long long>(session.sample_bytes()),
                     status.ok() ? "" : ": ", std::string(status.message()).c_str());
      }
    };
    return StartWrite(std::move(refused), std::move(context), std::move(on_end));
  }

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* StreamJob(
      grpc::CallbackServerContext* ctx) override {
    std::string who;
    const absl::Status auth = Authenticate(ctx, &who);
    const bool draining = options_.draining != nullptr && options_.draining->load();
    const std::string peer = StreamAdmission::PeerAddress(ctx->peer());
    auto starter = [this, who, auth, draining, peer](
                       const v1::JobStart& r) -> absl::StatusOr<JobStream> {
      if (!auth.ok()) return auth;
      if (Find(r.dataset()) == nullptr) return UnknownDataset(r.dataset(), who);
      if (absl::Status allowed = Allowed(who, r.dataset()); !allowed.ok()) return allowed;
      if (draining) {
        return absl::UnavailableError("the server is shutting down; no new streams");
      }
      auto v = ValidateJobStart(r, *datasets_, options_.limits);
      if (!v.ok()) return v.status();
      absl::StatusOr<stream::WindowPlan> plan = PlanWindow(*std::move(v), peer, r.dataset());
      if (!plan.ok()) return plan.status();
      jobs::JobSpec spec{r.dataset(), r.job(), r.epoch(), r.seed(),
                         std::vector<int64_t>(r.shot_ids().begin(), r.shot_ids().end())};
      absl::StatusOr<std::shared_ptr<jobs::Job>> job = jobs_.Find(spec);
      if (!job.ok()) return job.status();
      if (absl::Status s = admission_.Admit(peer); !s.ok()) return s;
      JobStream out;
      out.job = *job;
      out.plan = *std::move(plan);
      out.plan.shot_ids.clear();
      out.plan.feed = MakeJobFeed(*job, out.plan.queue_depth + 1, &out.consumer);
      return out;
    };
    StreamContext context;
    context.counters = counters_;
    context.registry = &registry_;
    context.peer = ctx->peer();
    context.stream_id = ++counters_->streams_started;
    context.log = options_.log_streams;
    context.on_gone = [this, peer] { admission_.Release(peer); };
    return StartJobStream(std::move(starter), pool_, std::move(context));
  }

  // Finishes every running stream with `status` (see StreamRegistry::CutAll).
  void CutAllStreams(const absl::Status& status) { registry_.CutAll(status); }

 private:
  const DatasetEntry* Find(const std::string& name) const {
    return datasets_->Find(name);
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

  // NOT_FOUND naming the datasets `who` may read (and the closest, for a typo).
  absl::Status UnknownDataset(const std::string& name, const std::string& who) const {
    std::vector<std::string> visible;
    for (const DatasetEntry* e : datasets_->All()) {
      if (Allowed(who, e->name).ok()) visible.push_back(e->name);
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
    return RejectStream(status, counters_, options_.log_streams, ctx->peer(), dataset);
  }

  // Everything a request can get wrong is found here, before any data is sent.
  absl::StatusOr<stream::WindowPlan> Validate(const v1::StreamShotsRequest& r,
                                              const std::string& peer) {
    auto v = ValidateStreamRequest(r, *datasets_, options_.limits);
    if (!v.ok()) return v.status();
    return PlanWindow(*std::move(v), peer, r.dataset());
  }

  // A validated stream's window: its shots planned once (encoding, zero copy).
  absl::StatusOr<stream::WindowPlan> PlanWindow(ValidatedRequest v, const std::string& peer,
                                                const std::string& dataset) {
    stream::WindowPlan plan;
    plan.shot = stream::PlanShots(v.selection, v.dataset->sample_format(), options_.zero_copy,
                                  &advisor_, peer, dataset);
    plan.advisor = &advisor_;
    plan.dataset = dataset;
    plan.source = stream::MakeDatasetShotSource(std::move(v.dataset));
    plan.shot_ids = std::move(v.shot_ids);
    plan.queue_depth = v.queue_depth;
    plan.corrupt_shot = options_.corrupt_shot_for_testing;
    plan.counters = counters_;
    plan.budget = budget_.get();
    return plan;
  }

  StreamRegistry registry_;
  dataset::DatasetRegistry* const datasets_;
  stream::ReaderPool* const pool_;
  const ServiceOptions options_;
  const AccessPolicy access_;
  StreamAdmission admission_;  // max_streams, max_streams_per_peer
  ServiceCounters own_counters_;
  ServiceCounters* const counters_;
  const std::unique_ptr<stream::ByteBudget> budget_;
  stream::EncodingAdvisor advisor_{pool_->threads()};  // ENCODING_AUTO's measurements
  jobs::JobRegistry jobs_;
};

}  // namespace

void CutAllStreams(grpc::Service* service, const absl::Status& status) {
  static_cast<ShotStreamServiceImpl*>(service)->CutAllStreams(status);
}

std::unique_ptr<grpc::Service> MakeShotStreamService(dataset::DatasetRegistry* datasets,
                                                     stream::ReaderPool* pool,
                                                     const ServiceOptions& options) {
  return std::make_unique<ShotStreamServiceImpl>(datasets, pool, options);
}

}  // namespace shotstream::service

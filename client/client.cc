#include "client/client.h"

#include <zlib.h>

#include <cstring>
#include <deque>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "shotstream/v1/shotstream.grpc.pb.h"

namespace shotstream::client {
namespace {

namespace v1 = ::shotstream::v1;

// The one place where grpc::Status becomes absl::Status on the client.
absl::Status FromGrpc(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

DatasetSummary ToSummary(const v1::DatasetInfo& info) {
  DatasetSummary d;
  d.name = info.name();
  d.state = info.state();
  d.error = info.error();
  d.n_traces = info.n_traces();
  d.n_shots = info.n_shots();
  d.n_samples = info.n_samples();
  d.sample_interval_us = info.sample_interval_us();
  d.sample_format = info.sample_format();
  d.shot_key = info.shot_key();
  d.n_files = info.n_files();
  d.shot_ids.assign(info.shot_ids().begin(), info.shot_ids().end());
  d.shot_trace_counts.assign(info.shot_trace_counts().begin(), info.shot_trace_counts().end());
  return d;
}

// Receives on its own thread; at most queue_depth assembled shots wait in ready_.
class GrpcShotReader final : public ShotReader {
 public:
  GrpcShotReader(v1::ShotStream::Stub* stub, v1::StreamShotsRequest request)
      : depth_(std::max<uint32_t>(1, request.queue_depth())) {
    thread_ = std::thread([this, stub, request = std::move(request)] { Receive(stub, request); });
  }

  ~GrpcShotReader() override {
    Cancel();
    thread_.join();
  }

  absl::StatusOr<bool> Next(Shot* shot) override {
    absl::MutexLock lock(&mu_);
    auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !ready_.empty() || ended_; };
    mu_.Await(absl::Condition(&ready));
    if (!ready_.empty()) {
      // The caller's previous buffer comes back for the next shot: no allocation per
      // shot in steady state when the caller reuses its Shot.
      std::vector<float> old = std::move(shot->samples);
      *shot = std::move(ready_.front());
      ready_.pop_front();
      if (old.capacity() > 0 && free_.size() < depth_ + 1) free_.push_back(std::move(old));
      return true;
    }
    if (!end_status_.ok()) return end_status_;
    return false;
  }

  void Cancel() override {
    absl::MutexLock lock(&mu_);
    cancelled_ = true;
    context_.TryCancel();
  }

 private:
  void Receive(v1::ShotStream::Stub* stub, const v1::StreamShotsRequest& request) {
    std::unique_ptr<grpc::ClientReader<v1::ShotChunk>> reader =
        stub->StreamShots(&context_, request);
    v1::ShotChunk chunk;
    Shot shot;
    uint32_t crc = 0;
    bool in_shot = false;
    absl::Status error;
    while (error.ok() && reader->Read(&chunk)) {
      if (!in_shot) {
        shot = Shot();
        shot.index = chunk.index();
        shot.shot_id = chunk.shot_id();
        shot.n_traces = chunk.n_traces();
        shot.n_samples = chunk.n_samples();
        shot.sample_interval_us = chunk.sample_interval_us();
        const uint64_t expect = uint64_t{shot.n_traces} * shot.n_samples * sizeof(float);
        if (chunk.total_bytes() != expect) {
          error = absl::DataLossError(absl::StrCat("shot ", shot.shot_id, ": total_bytes ",
                                                   chunk.total_bytes(), " != ", expect));
          break;
        }
        {
          absl::MutexLock lock(&mu_);
          if (!free_.empty()) {
            shot.samples = std::move(free_.back());
            free_.pop_back();
          }
        }
        shot.samples.resize(expect / sizeof(float));
        for (const v1::HeaderColumn& col : chunk.headers()) {
          shot.headers.emplace_back(col.name(), std::vector<double>(col.values().begin(),
                                                                    col.values().end()));
        }
        crc = 0;
        in_shot = true;
      }
      const std::string& data = chunk.samples();
      const uint64_t total = shot.samples.size() * sizeof(float);
      if (chunk.offset() > total || data.size() > total - chunk.offset()) {
        error = absl::DataLossError(absl::StrCat("shot ", shot.shot_id, ": chunk at ",
                                                 chunk.offset(), " overruns the shot"));
        break;
      }
      std::memcpy(reinterpret_cast<char*>(shot.samples.data()) + chunk.offset(), data.data(),
                  data.size());
      crc = Crc32(crc, data.data(), data.size());
      if (chunk.last()) {
        in_shot = false;
        if (crc != chunk.crc32()) {
          error = absl::DataLossError(absl::StrCat("shot ", shot.shot_id,
                                                   ": checksum mismatch (CRC-32 ", crc,
                                                   " received, ", chunk.crc32(), " sent)"));
          break;
        }
        absl::MutexLock lock(&mu_);
        auto room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return ready_.size() < depth_ || cancelled_;
        };
        mu_.Await(absl::Condition(&room));
        if (cancelled_) break;
        ready_.push_back(std::move(shot));
      }
    }
    if (!error.ok()) context_.TryCancel();
    grpc::Status status = reader->Finish();
    absl::MutexLock lock(&mu_);
    if (!error.ok()) {
      end_status_ = error;
    } else if (!status.ok()) {
      end_status_ = FromGrpc(status);
    } else if (in_shot) {
      end_status_ = absl::DataLossError("stream ended inside a shot");
    }
    ended_ = true;
  }

  const size_t depth_;
  grpc::ClientContext context_;
  std::thread thread_;
  absl::Mutex mu_;
  std::deque<Shot> ready_ ABSL_GUARDED_BY(mu_);  // received, verified, not yet taken
  std::vector<std::vector<float>> free_ ABSL_GUARDED_BY(mu_);  // buffers to reuse
  bool ended_ ABSL_GUARDED_BY(mu_) = false;      // the receive thread is done
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status end_status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

struct Client::Impl {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::ShotStream::Stub> stub;
};

uint32_t Crc32(uint32_t crc, const void* data, size_t size) {
  return static_cast<uint32_t>(::crc32_z(crc, static_cast<const Bytef*>(data), size));
}

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(const std::string& target) {
  if (target.empty()) return absl::InvalidArgumentError("empty target; expected HOST:PORT");
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_FRAME_SIZE, 16 * 1024 * 1024 - 1);
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 64 * 1024 * 1024);
  args.SetInt(GRPC_ARG_HTTP2_WRITE_BUFFER_SIZE, 8 * 1024 * 1024);
  auto impl = std::make_unique<Impl>();
  impl->channel = grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
  if (impl->channel == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("cannot create a channel to '", target, "'"));
  }
  impl->stub = v1::ShotStream::NewStub(impl->channel);
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

absl::StatusOr<std::vector<DatasetSummary>> Client::ListDatasets() {
  grpc::ClientContext ctx;
  v1::ListDatasetsResponse response;
  grpc::Status s = impl_->stub->ListDatasets(&ctx, v1::ListDatasetsRequest(), &response);
  if (!s.ok()) return FromGrpc(s);
  std::vector<DatasetSummary> out;
  for (const v1::DatasetInfo& info : response.datasets()) out.push_back(ToSummary(info));
  return out;
}

absl::StatusOr<DatasetSummary> Client::GetDataset(const std::string& name) {
  grpc::ClientContext ctx;
  v1::GetDatasetRequest request;
  request.set_name(name);
  v1::DatasetInfo info;
  grpc::Status s = impl_->stub->GetDataset(&ctx, request, &info);
  if (!s.ok()) return FromGrpc(s);
  return ToSummary(info);
}

std::unique_ptr<ShotReader> Client::Stream(const std::string& dataset,
                                           std::vector<int64_t> shot_ids,
                                           const StreamOptions& options) {
  v1::StreamShotsRequest request;
  request.set_dataset(dataset);
  request.mutable_shot_ids()->Add(shot_ids.begin(), shot_ids.end());
  request.set_queue_depth(options.queue_depth);
  for (const std::string& h : options.headers) request.add_headers(h);
  request.set_max_chunk_bytes(options.max_chunk_bytes);
  return std::make_unique<GrpcShotReader>(impl_->stub.get(), std::move(request));
}

}  // namespace shotstream::client

// grpc_ceiling: what gRPC itself moves on this machine with shotstream's channel
// arguments, so that the benchmark can say which share of the time is ours.
//
//   grpc_ceiling serve --listen=127.0.0.1:0 [--n_traces=480 --n_samples=4000
//                      --shots_in_memory=1 --trace_gap=0]
//     Serves ShotStream.StreamShots from memory: shot id k is samples buffer
//     (k - 1) mod --shots_in_memory, sent as a slice over it (no file, no decode, no copy),
//     its CRC-32 computed once at start-up. With one buffer (the default) a shot of a few
//     MB stays in the CPU's last-level cache; with as many as the dataset's shots the
//     bytes come from memory, as a server's page cache gives them. With --trace_gap=240
//     the traces lie as in a SEG-Y file (a header's room before each) and go out as the
//     server sends them, a slice a trace or, to a client that takes trace gaps, one slice
//     over a chunk's traces and the headers between: gRPC's cost for that layout, without
//     our server.
//     Messages are real ShotChunks (chunked as the request asks, 1 MiB
//     by default like shotstream_server), so `shotstream bench --shots=1,2,...` streams
//     from it and verifies every checksum. Prints "grpc_ceiling listening on HOST:PORT".
//
//   grpc_ceiling receive --target=HOST:PORT --shots=N [--dataset=D --repeat=R --warmup_shots=W --copy]
//     Streams shots 1..N R times after W untimed shots and drops every message unread:
//     the client side of gRPC alone. With --copy, each chunk's samples are copied into one
//     reused buffer with their CRC-32 checked, as the client library does (trace gaps
//     taken and skipped as it does). Prints a JSON
//     line with "gbps" and "cpu_seconds" (this process's CPU over the timed passes) like
//     `shotstream bench`.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "shotstream/client/grpc_tuning.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/impl/client_unary_call.h"
#include "grpcpp/support/sync_stream.h"
#include "common/crc32.h"
#include "common/malloc_tuning.h"
#include "common/process_cpu.h"
#include "wire/chunk_codec.h"
#include "wire/chunk_cut.h"
#include "shotstream/v1/shotstream.grpc.pb.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:0", "serve: address to listen on");
ABSL_FLAG(int, n_traces, 480, "serve: traces per shot");
ABSL_FLAG(int, n_samples, 4000, "serve: samples per trace");
ABSL_FLAG(int, shots_in_memory, 1, "serve: distinct shots held (shot id k gets (k-1) mod N)");
ABSL_FLAG(int, trace_gap, 0,
          "serve: bytes between traces in memory (240: as a SEG-Y file lays them out, each "
          "trace then its own slice); 0: a shot's samples are one buffer, a slice a message");
ABSL_FLAG(std::string, target, "", "receive: HOST:PORT");
ABSL_FLAG(std::string, dataset, "ceiling", "receive: dataset to ask for (serve answers any)");
ABSL_FLAG(int, shots, 40, "receive: shots 1..N per pass");
ABSL_FLAG(int, repeat, 1, "receive: passes over the shots");
ABSL_FLAG(int, warmup_shots, 0, "receive: shots streamed untimed first");
ABSL_FLAG(bool, copy, false, "receive: copy each chunk's samples out with their CRC-32");

namespace {

using shotstream::v1::ShotChunk;
using shotstream::v1::ShotStream;
using shotstream::v1::StreamShotsRequest;

// A shot served from memory. Immutable after construction; shared by all streams.
struct SyntheticShot {
  uint32_t n_traces = 0, n_samples = 0;
  size_t gap = 0;              // bytes before each trace's samples
  std::vector<uint8_t> bytes;  // trace i's samples at trace_at(i)
  uint32_t crc32 = 0;
  size_t trace_bytes() const { return size_t{n_samples} * sizeof(float); }
  size_t trace_at(size_t i) const { return gap + i * (gap + trace_bytes()); }
};

// Writes the requested shots one message at a time, each from OnWriteDone.
class CeilingReactor final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  CeilingReactor(const std::vector<SyntheticShot>* shots, StreamShotsRequest request)
      : shots_(shots), request_(std::move(request)) {
    const uint64_t trace_bytes = shots_->front().trace_bytes();
    const uint64_t asked = request_.selection().max_chunk_bytes();
    const uint64_t limit = asked > 0 ? asked : 1 << 20;
    // As the server cuts them (a client that takes trace gaps gets the file's layout's
    // chunks cut so that the gaps fit too).
    const bool gapped = shots_->front().gap > 0 && request_.selection().accept_trace_gaps();
    chunk_bytes_ = (gapped ? shotstream::wire::TracesPerGappedChunk(limit, trace_bytes)
                           : shotstream::wire::TracesPerChunk(limit, trace_bytes)) *
                   trace_bytes;
    Next();
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "stream broken"));
      return;
    }
    Next();
  }
  void OnDone() override { delete this; }

 private:
  void Next() {
    if (index_ == static_cast<size_t>(request_.shot_ids_size())) {
      Finish(grpc::Status::OK);
      return;
    }
    const int64_t id = request_.shot_ids(static_cast<int>(index_));
    const int64_t n_shots = static_cast<int64_t>(shots_->size());
    const SyntheticShot* shot =
        &(*shots_)[static_cast<size_t>(((id - 1) % n_shots + n_shots) % n_shots)];
    const uint64_t total = uint64_t{shot->n_traces} * shot->trace_bytes();
    const uint64_t n = std::min(chunk_bytes_, total - offset_);
    ShotChunk meta;
    meta.set_index(static_cast<uint32_t>(index_));
    meta.set_shot_id(id);
    meta.set_n_traces(shot->n_traces);
    meta.set_n_samples(shot->n_samples);
    meta.set_sample_interval_us(4000);
    meta.set_offset(offset_);
    meta.set_total_bytes(total);
    const bool last = offset_ + n == total;
    if (last) {
      meta.set_last(true);
      meta.set_crc32(shot->crc32);
    }
    if (shot->gap == 0) {  // one slice over the chunk's bytes
      const uint8_t* base = shot->bytes.data() + offset_;
      msg_ = shotstream::wire::EncodeStoredChunk(meta, {&base, 1}, n, nullptr);
    } else {  // as the server sends a file's traces (chunks are whole traces): a slice a
              // trace, or one over the traces and their headers where the client takes gaps
      const size_t first = offset_ / shot->trace_bytes();
      traces_.clear();
      for (size_t i = first; i < first + n / shot->trace_bytes(); ++i) {
        traces_.push_back(shot->bytes.data() + shot->trace_at(i));
      }
      msg_ = shotstream::wire::EncodeStoredChunk(meta, traces_, shot->trace_bytes(), nullptr,
                                                 request_.selection().accept_trace_gaps());
    }
    offset_ = last ? 0 : offset_ + n;
    index_ += last;
    StartWrite(&msg_);
  }

  const std::vector<SyntheticShot>* const shots_;
  const StreamShotsRequest request_;
  uint64_t chunk_bytes_ = 0;
  std::vector<const uint8_t*> traces_;  // the chunk's traces, with --trace_gap
  size_t index_ = 0;     // request position of the shot being sent
  uint64_t offset_ = 0;  // byte offset of the next chunk within it
  grpc::ByteBuffer msg_;
};

class CeilingService final
    : public ShotStream::WithRawCallbackMethod_StreamShots<ShotStream::CallbackService> {
 public:
  explicit CeilingService(const std::vector<SyntheticShot>* shots) : shots_(shots) {}
  grpc::ServerWriteReactor<grpc::ByteBuffer>* StreamShots(
      grpc::CallbackServerContext*, const grpc::ByteBuffer* raw_request) override {
    std::vector<grpc::Slice> slices;
    std::string bytes;
    if (raw_request->Dump(&slices).ok()) {
      for (const grpc::Slice& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
    }
    StreamShotsRequest request;
    request.ParseFromString(bytes);
    return new CeilingReactor(shots_, std::move(request));
  }

 private:
  const std::vector<SyntheticShot>* const shots_;
};

int Serve() {
  std::vector<SyntheticShot> shots(std::max(1, absl::GetFlag(FLAGS_shots_in_memory)));
  for (size_t s = 0; s < shots.size(); ++s) {
    SyntheticShot& shot = shots[s];
    shot.n_traces = absl::GetFlag(FLAGS_n_traces);
    shot.n_samples = absl::GetFlag(FLAGS_n_samples);
    shot.gap = static_cast<size_t>(std::max(0, absl::GetFlag(FLAGS_trace_gap)));
    shot.bytes.assign(shot.n_traces * (shot.gap + shot.trace_bytes()), 0);
    for (size_t t = 0; t < shot.n_traces; ++t) {
      uint8_t* samples = shot.bytes.data() + shot.trace_at(t);
      for (size_t i = 0; i < shot.n_samples; ++i) {
        const float v = static_cast<float>((t * shot.n_samples + i + 7 * s) % 1000);
        std::memcpy(samples + 4 * i, &v, sizeof v);  // (a gap leaves the samples unaligned)
      }
      shot.crc32 = shotstream::Crc32(shot.crc32, samples, shot.trace_bytes());
    }
  }
  CeilingService service(&shots);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(absl::GetFlag(FLAGS_listen), grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  builder.SetMaxSendMessageSize(-1);
  // As shotstream_server (server/main.cc).
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_FRAME_SIZE, 16 * 1024 * 1024 - 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_WRITE_BUFFER_SIZE, 8 * 1024 * 1024);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 64 * 1024 * 1024);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::fprintf(stderr, "grpc_ceiling: cannot listen on %s\n", absl::GetFlag(FLAGS_listen).c_str());
    return 1;
  }
  const std::string listen = absl::GetFlag(FLAGS_listen);
  std::printf("grpc_ceiling listening on %s:%d\n", listen.substr(0, listen.rfind(':')).c_str(),
              port);
  std::fflush(stdout);
  server->Wait();
  return 0;
}

// Streams `ids` once; adds the sample bytes received to *bytes.
bool StreamOnce(grpc::Channel* channel, const std::vector<int64_t>& ids, bool copy,
                std::vector<uint8_t>* dst, uint64_t* bytes) {
  StreamShotsRequest request;
  request.set_dataset(absl::GetFlag(FLAGS_dataset));
  request.mutable_selection()->set_accept_big_endian(true);  // ReceivedChunk swaps in its copy, as the client does
  // and skips the gaps (a dropping client counts what came, so it takes none)
  request.mutable_selection()->set_accept_trace_gaps(copy);
  for (int64_t id : ids) request.add_shot_ids(id);
  const std::string raw = request.SerializeAsString();
  grpc::Slice slice(raw);
  grpc::ByteBuffer raw_request(&slice, 1);
  grpc::ClientContext ctx;
  grpc::internal::RpcMethod method("/shotstream.v1.ShotStream/StreamShots",
                                   grpc::internal::RpcMethod::SERVER_STREAMING);
  std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> reader(
      grpc::internal::ClientReaderFactory<grpc::ByteBuffer>::Create(channel, method, &ctx,
                                                                    raw_request));
  grpc::ByteBuffer bb;
  shotstream::wire::ReceivedChunk chunk;
  uint32_t crc = 0;
  bool ok = true;
  while (reader->Read(&bb)) {
    if (!copy) {
      *bytes += bb.Length();
      continue;
    }
    if (!chunk.Parse(&bb).ok()) return false;
    const ShotChunk& meta = chunk.meta();
    if (dst->size() < meta.total_bytes()) dst->resize(meta.total_bytes());
    if (meta.offset() + chunk.samples_size() > dst->size()) return false;
    if (meta.offset() == 0) crc = 0;
    crc = chunk.CopySamples(dst->data() + meta.offset(), crc);
    *bytes += chunk.samples_size();
    if (meta.last() && crc != meta.crc32()) {
      std::fprintf(stderr, "grpc_ceiling: checksum mismatch on shot %lld\n",
                   static_cast<long long>(meta.shot_id()));
      ok = false;
    }
  }
  const grpc::Status status = reader->Finish();
  if (!status.ok()) std::fprintf(stderr, "grpc_ceiling: %s\n", status.error_message().c_str());
  return ok && status.ok();
}

int Receive() {
  const grpc::ChannelArguments args = shotstream::client::LargeMessageChannelArguments();
  auto channel = grpc::CreateCustomChannel(absl::GetFlag(FLAGS_target),
                                           grpc::InsecureChannelCredentials(), args);
  std::vector<int64_t> ids;
  for (int i = 1; i <= absl::GetFlag(FLAGS_shots); ++i) ids.push_back(i);
  const bool copy = absl::GetFlag(FLAGS_copy);
  std::vector<uint8_t> dst;
  uint64_t bytes = 0;
  const int warm = std::min<int>(absl::GetFlag(FLAGS_warmup_shots), ids.size());
  if (warm > 0 && !StreamOnce(channel.get(), {ids.begin(), ids.begin() + warm}, copy, &dst,
                              &bytes)) {
    return 1;
  }
  bytes = 0;
  const double cpu_start = shotstream::ProcessCpuSeconds();
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < absl::GetFlag(FLAGS_repeat); ++r) {
    if (!StreamOnce(channel.get(), ids, copy, &dst, &bytes)) return 1;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double cpu_seconds = shotstream::ProcessCpuSeconds() - cpu_start;
  std::printf("{\"bytes\": %llu, \"seconds\": %.6f, \"gbps\": %.4f, \"copy\": %s, "
              "\"cpu_seconds\": %.6f}\n",
              static_cast<unsigned long long>(bytes), seconds, bytes / seconds / 1e9,
              copy ? "true" : "false", cpu_seconds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  shotstream::TuneMallocForLargeBuffers();
  shotstream::client::TuneGrpcForLargeMessages();
  std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  const std::string command = rest.size() > 1 ? rest[1] : "";
  if (command == "serve") return Serve();
  if (command == "receive") return Receive();
  std::fprintf(stderr, "usage: grpc_ceiling serve|receive [flags] (see tools/grpc_ceiling.cc)\n");
  return 2;
}

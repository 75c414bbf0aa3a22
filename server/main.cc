// shotstream_server: serves SEG-Y shot gathers over gRPC.
//
//   shotstream_server --listen=0.0.0.0:50051 --dataset=line1=/data/line1/*.sgy
//
// Prints exactly one line "shotstream listening on HOST:PORT" on stdout when ready.
// SIGTERM/SIGINT: stop accepting streams, let running ones finish within --grace_period,
// exit 0.
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "server/common/malloc_tuning.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/impl/codegen/service_type.h"
#include "server/dataset/dataset.h"
#include "server/service/shot_stream_service.h"
#include "server/stream/reader_pool.h"

ABSL_FLAG(std::string, listen, "0.0.0.0:50051", "HOST:PORT to listen on; port 0 picks one");
ABSL_FLAG(std::string, shot_key, "field_record",
          "trace header field that identifies a shot: field_record, energy_source_point, "
          "inline, crossline or byte:N");
ABSL_FLAG(std::string, byte_order, "auto", "auto (detect per file), big or little");
ABSL_FLAG(std::string, catalog_dir, "", "where catalogs are kept (created if missing)");
ABSL_FLAG(bool, index_only, false,
          "build (or check) the catalogs, print a summary per dataset, and exit");
ABSL_FLAG(int, readers, 0, "reader threads shared by all streams (0: number of cores)");
ABSL_FLAG(uint32_t, default_queue_depth, 2, "shots read ahead per stream when not asked");
ABSL_FLAG(uint32_t, max_queue_depth, 16, "largest queue depth a client may ask for");
ABSL_FLAG(uint64_t, max_chunk_bytes, 4 << 20, "largest sample payload per message");
ABSL_FLAG(uint64_t, max_gap_bytes, 64 * 1024, "coalesce reads across gaps up to this");
ABSL_FLAG(std::string, testing_corrupt_shot, "",
          "testing only: corrupt one byte of this shot id's samples after its checksum");
ABSL_FLAG(absl::Duration, grace_period, absl::Seconds(30),
          "on SIGTERM, how long running streams may take to finish");

namespace {

using shotstream::service::DatasetEntry;

// --dataset may repeat; absl's vector flags split on commas, which globs may hold, so
// the occurrences are taken out of argv before absl parses the rest.
std::vector<std::string> TakeDatasetFlags(int* argc, char** argv) {
  std::vector<std::string> values;
  int out = 1;
  for (int i = 1; i < *argc; ++i) {
    absl::string_view a = argv[i];
    if (absl::StartsWith(a, "--dataset=")) {
      values.emplace_back(a.substr(10));
    } else if (a == "--dataset" && i + 1 < *argc) {
      values.emplace_back(argv[++i]);
    } else {
      argv[out++] = argv[i];
    }
  }
  *argc = out;
  argv[out] = nullptr;
  return values;
}

// --index_only: one summary line per dataset on stdout.
void PrintSummary(const shotstream::dataset::Dataset& d, absl::Duration took) {
  std::vector<uint32_t> per_shot;
  for (const auto& s : d.catalog().shots()) per_shot.push_back(s.n_traces);
  std::sort(per_shot.begin(), per_shot.end());
  uint64_t bytes = 0;
  for (size_t i = 0; i < d.n_files(); ++i) bytes += d.file(i).size();
  std::printf("%s: files %zu  traces %llu  shots %zu  traces/shot min %u median %u max %u  "
              "bytes %llu  seconds %.3f  catalog %s\n",
              d.name().c_str(), d.n_files(),
              static_cast<unsigned long long>(d.catalog().n_traces()), per_shot.size(),
              per_shot.empty() ? 0 : per_shot.front(),
              per_shot.empty() ? 0 : per_shot[per_shot.size() / 2],
              per_shot.empty() ? 0 : per_shot.back(), static_cast<unsigned long long>(bytes),
              absl::ToDoubleSeconds(took), d.catalog_origin().c_str());
  std::fflush(stdout);
}

int Fail(const std::string& message) {
  std::cerr << "shotstream_server: " << message << std::endl;
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  shotstream::TuneMallocForLargeBuffers();
  absl::SetProgramUsageMessage(
      "shotstream_server --listen=HOST:PORT --dataset=NAME=GLOB [--dataset=...] [flags]");
  std::vector<std::string> dataset_flags = TakeDatasetFlags(&argc, argv);
  absl::ParseCommandLine(argc, argv);

  // Signals are taken by a dedicated thread; block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  if (dataset_flags.empty()) return Fail("no dataset: pass --dataset=NAME=GLOB");
  auto key = shotstream::segy::ParseShotKey(absl::GetFlag(FLAGS_shot_key));
  if (!key.ok()) return Fail(std::string(key.status().message()));
  std::optional<shotstream::segy::ByteOrder> order;
  const std::string order_flag = absl::GetFlag(FLAGS_byte_order);
  if (order_flag == "big") {
    order = shotstream::segy::ByteOrder::kBigEndian;
  } else if (order_flag == "little") {
    order = shotstream::segy::ByteOrder::kLittleEndian;
  } else if (order_flag != "auto") {
    return Fail("--byte_order must be auto, big or little");
  }
  const std::string catalog_dir = absl::GetFlag(FLAGS_catalog_dir);
  if (!catalog_dir.empty() && ::mkdir(catalog_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return Fail("--catalog_dir=" + catalog_dir + ": cannot create: " + std::strerror(errno));
  }

  std::vector<DatasetEntry> datasets;
  for (const std::string& flag : dataset_flags) {
    auto split = shotstream::dataset::SplitDatasetFlag(flag);
    if (!split.ok()) return Fail(std::string(split.status().message()));
    for (const DatasetEntry& e : datasets) {
      if (e.name == split->first) return Fail("dataset '" + e.name + "' is given twice");
    }
    shotstream::dataset::DatasetSpec spec;
    spec.name = split->first;
    spec.globs = absl::StrSplit(split->second, ',', absl::SkipEmpty());
    spec.shot_key = *key;
    spec.byte_order = order;
    spec.coalesce.max_gap_bytes = absl::GetFlag(FLAGS_max_gap_bytes);
    spec.catalog_dir = catalog_dir;
    const absl::Time start = absl::Now();
    absl::Time last_report = start;
    auto progress = [&](uint64_t done, uint64_t total) {
      const absl::Time now = absl::Now();
      if (now - last_report < absl::Seconds(1) && done != total) return;
      if (now - start < absl::Seconds(1)) return;
      last_report = now;
      const double secs = absl::ToDoubleSeconds(now - start);
      const double rate = done / std::max(secs, 1e-9);
      std::fprintf(stderr, "catalog %s: %llu/%llu traces, %.0f traces/s, ETA %.0f s\n",
                   spec.name.c_str(), static_cast<unsigned long long>(done),
                   static_cast<unsigned long long>(total), rate,
                   (total - done) / std::max(rate, 1.0));
    };
    DatasetEntry entry;
    entry.name = spec.name;
    auto loaded = shotstream::dataset::Dataset::Load(spec, progress);
    if (loaded.ok()) {
      entry.dataset = std::move(*loaded);
      std::fprintf(stderr, "dataset %s: %zu files, %llu traces, %zu shots; catalog %s (%.2f s)\n",
                   spec.name.c_str(), entry.dataset->n_files(),
                   static_cast<unsigned long long>(entry.dataset->catalog().n_traces()),
                   entry.dataset->catalog().shots().size(),
                   entry.dataset->catalog_origin().c_str(),
                   absl::ToDoubleSeconds(absl::Now() - start));
      if (absl::GetFlag(FLAGS_index_only)) PrintSummary(*entry.dataset, absl::Now() - start);
    } else {
      // The server still serves the other datasets; this one reports its error.
      entry.status = loaded.status();
      std::fprintf(stderr, "dataset %s FAILED: %s\n", spec.name.c_str(),
                   std::string(loaded.status().message()).c_str());
    }
    datasets.push_back(std::move(entry));
  }

  if (absl::GetFlag(FLAGS_index_only)) {
    for (const DatasetEntry& e : datasets) {
      if (e.dataset == nullptr) return 1;
    }
    return 0;
  }

  int readers = absl::GetFlag(FLAGS_readers);
  if (readers <= 0) readers = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  shotstream::stream::ReaderPool pool(readers);
  shotstream::service::ServiceOptions options;
  options.default_queue_depth = absl::GetFlag(FLAGS_default_queue_depth);
  options.max_queue_depth = absl::GetFlag(FLAGS_max_queue_depth);
  options.max_chunk_bytes = absl::GetFlag(FLAGS_max_chunk_bytes);
  if (const std::string c = absl::GetFlag(FLAGS_testing_corrupt_shot); !c.empty()) {
    int64_t id;
    if (!absl::SimpleAtoi(c, &id)) return Fail("--testing_corrupt_shot needs a shot id");
    options.corrupt_shot_for_testing = id;
  }
  std::unique_ptr<grpc::Service> service =
      shotstream::service::MakeShotStreamService(&datasets, &pool, options);

  const std::string listen = absl::GetFlag(FLAGS_listen);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(service.get());
  builder.SetMaxSendMessageSize(-1);
  builder.SetMaxReceiveMessageSize(16 << 20);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_FRAME_SIZE, 16 * 1024 * 1024 - 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_WRITE_BUFFER_SIZE, 8 * 1024 * 1024);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 64 * 1024 * 1024);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) return Fail("cannot listen on " + listen);
  const std::string host = listen.substr(0, listen.rfind(':'));
  std::printf("shotstream listening on %s:%d\n", host.c_str(), port);
  std::fflush(stdout);

  int sig = 0;
  sigwait(&signals, &sig);
  std::fprintf(stderr, "shotstream_server: signal %d, draining streams (grace %s)\n", sig,
               absl::FormatDuration(absl::GetFlag(FLAGS_grace_period)).c_str());
  server->Shutdown(std::chrono::system_clock::now() +
                   absl::ToChronoSeconds(absl::GetFlag(FLAGS_grace_period)));
  server->Wait();
  return 0;
}

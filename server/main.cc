// shotstream_server: serves SEG-Y shot gathers over gRPC.
//
//   shotstream_server --listen=0.0.0.0:50051 --dataset=line1=/data/line1/*.sgy
//   shotstream_server --config=/etc/shotstream/config.yaml [flags override the file]
//
// Prints exactly one line "shotstream listening on HOST:PORT" on stdout when ready.
// SIGTERM/SIGINT: health NOT_SERVING, no new streams, running ones finish within
// --grace_period, exit 0. SIGHUP: reload the bearer tokens.
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/impl/codegen/service_type.h"
#include "server/common/heap_trimmer.h"
#include "server/common/listen_probe.h"
#include "server/common/malloc_tuning.h"
#include "server/config/server_config.h"
#include "server/dataset/dataset.h"
#include "server/metrics/metrics.h"
#include "server/service/shot_stream_service.h"
#include "server/service/token_store.h"
#include "server/stream/reader_pool.h"

// Flags left at their "unset" value do not override --config.
ABSL_FLAG(std::string, config, "", "YAML configuration file (flags given here override it)");
ABSL_FLAG(std::string, listen, "", "HOST:PORT to listen on; port 0 picks one "
          "(default 0.0.0.0:50051)");
ABSL_FLAG(std::string, shot_key, "",
          "for --dataset flags: trace header field that identifies a shot: field_record "
          "(default), energy_source_point, inline, crossline or byte:N");
ABSL_FLAG(std::string, byte_order, "", "for --dataset flags: auto (default), big or little");
ABSL_FLAG(std::string, io, "",
          "for --dataset flags: auto (default: mmap on local filesystems, pread on network "
          "ones), pread or mmap");
ABSL_FLAG(std::string, catalog_dir, "", "where catalogs are kept (created if missing)");
ABSL_FLAG(std::string, metrics_listen, "", "HOST:PORT for Prometheus metrics on /metrics");
ABSL_FLAG(std::string, auth_token_file, "", "bearer tokens, one per line; reloaded on SIGHUP");
ABSL_FLAG(std::string, tls_cert, "", "server certificate (PEM)");
ABSL_FLAG(std::string, tls_key, "", "server private key (PEM)");
ABSL_FLAG(std::string, tls_client_ca, "", "require client certificates signed by this CA");
ABSL_FLAG(bool, check_config, false,
          "validate the configuration (file and flags), print a summary, and exit");
ABSL_FLAG(bool, index_only, false,
          "build (or check) the catalogs, print a summary per dataset, and exit");
ABSL_FLAG(int, readers, -1, "reader threads shared by all streams (0: number of cores)");
ABSL_FLAG(int64_t, default_queue_depth, -1, "shots read ahead per stream when not asked (2)");
ABSL_FLAG(int64_t, max_queue_depth, -1, "largest queue depth a client may ask for (16)");
ABSL_FLAG(int64_t, max_chunk_bytes, -1, "largest sample payload per message (1 MiB)");
ABSL_FLAG(bool, check_trace_lengths, false,
          "for --dataset flags: strict mode: refuse files whose trace headers (bytes 115-116) "
          "give another sample count than the binary header (default: read at the binary "
          "header's length when the file size agrees, and say so once)");
ABSL_FLAG(int64_t, max_gap_bytes, -1, "for --dataset flags: coalesce across gaps up to this");
ABSL_FLAG(int64_t, max_read_bytes, -1,
          "for --dataset flags: largest coalesced read (1 MiB; raise for network storage)");
ABSL_FLAG(int64_t, max_streams, -1, "concurrent streams, all peers (256)");
ABSL_FLAG(int64_t, max_streams_per_peer, -1, "concurrent streams from one address (64)");
ABSL_FLAG(int64_t, max_shots_per_request, -1, "shot ids in one request (1000000)");
ABSL_FLAG(int64_t, max_inflight_bytes, -1,
          "decoded shot bytes all streams may hold at once, shared round robin (1 GiB)");
ABSL_FLAG(std::string, grace_period, "", "on SIGTERM, how long running streams may take (30s)");
ABSL_FLAG(std::string, drain_delay, "1s",
          "on SIGTERM, how long health says NOT_SERVING (and new streams are refused) before "
          "the listener closes, so that load balancers notice");
ABSL_FLAG(bool, zero_copy, true,
          "send samples that need no decoding (IEEE float of mapped files: little-endian, and "
          "big-endian to clients that accept it) from the file mapping, without a copy");
ABSL_FLAG(bool, log_streams, true, "one stderr line when each stream starts and ends");
ABSL_FLAG(std::string, testing_corrupt_shot, "",
          "testing only: corrupt one byte of this shot id's samples after its checksum");

namespace {

using shotstream::config::DatasetConfig;
using shotstream::config::ServerConfig;
using shotstream::service::DatasetEntry;

constexpr char kServiceName[] = "shotstream.v1.ShotStream";

// The flags that apply to each --dataset flag (not to datasets of --config).
constexpr absl::string_view kPerDatasetFlags[] = {"shot_key",      "byte_order",
                                                  "io",            "max_gap_bytes",
                                                  "max_read_bytes", "check_trace_lengths"};

// --dataset may repeat; absl's vector flags split on commas, which globs may hold, so
// the occurrences are taken out of argv before absl parses the rest. A per-dataset flag
// given between two --dataset flags is refused: it would apply to both, which is not
// what its place suggests (different settings per dataset go in --config).
absl::Status TakeDatasetFlags(int* argc, char** argv, std::vector<std::string>* values) {
  int out = 1;
  std::string between;  // a per-dataset flag seen after a --dataset flag
  for (int i = 1; i < *argc; ++i) {
    absl::string_view a = argv[i];
    const bool dataset = absl::StartsWith(a, "--dataset=") || a == "--dataset";
    if (dataset && !between.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          between, " stands between --dataset flags, but per-dataset flags apply to every "
          "--dataset flag alike; give them once, or put datasets with different settings in "
          "--config"));
    }
    if (absl::StartsWith(a, "--dataset=")) {
      values->emplace_back(a.substr(10));
      continue;
    }
    if (a == "--dataset" && i + 1 < *argc) {
      values->emplace_back(argv[++i]);
      continue;
    }
    if (!values->empty()) {
      for (absl::string_view f : kPerDatasetFlags) {
        if (absl::StartsWith(a, absl::StrCat("--", f, "=")) || a == absl::StrCat("--", f) ||
            a == absl::StrCat("--no", f)) {
          between = std::string(a);
        }
      }
    }
    argv[out++] = argv[i];
  }
  *argc = out;
  argv[out] = nullptr;
  return absl::OkStatus();
}

int Fail(const std::string& message) {
  std::cerr << "shotstream_server: " << message << std::endl;
  return 2;
}

template <typename T>
void OverrideIfSet(int64_t flag, T* field) {
  if (flag >= 0) *field = static_cast<T>(flag);
}
void OverrideIfSet(const std::string& flag, std::string* field) {
  if (!flag.empty()) *field = flag;
}

// Defaults, then the YAML file, then the flags that were given.
absl::StatusOr<ServerConfig> BuildConfig(const std::vector<std::string>& dataset_flags) {
  ServerConfig c;
  if (const std::string path = absl::GetFlag(FLAGS_config); !path.empty()) {
    auto loaded = shotstream::config::LoadServerConfig(path);
    if (!loaded.ok()) return loaded.status();
    c = *std::move(loaded);
  }
  OverrideIfSet(absl::GetFlag(FLAGS_listen), &c.listen);
  OverrideIfSet(absl::GetFlag(FLAGS_catalog_dir), &c.catalog_dir);
  OverrideIfSet(absl::GetFlag(FLAGS_metrics_listen), &c.metrics_listen);
  OverrideIfSet(absl::GetFlag(FLAGS_auth_token_file), &c.auth_token_file);
  OverrideIfSet(absl::GetFlag(FLAGS_tls_cert), &c.tls_cert);
  OverrideIfSet(absl::GetFlag(FLAGS_tls_key), &c.tls_key);
  OverrideIfSet(absl::GetFlag(FLAGS_tls_client_ca), &c.tls_client_ca);
  OverrideIfSet(absl::GetFlag(FLAGS_readers), &c.readers);
  OverrideIfSet(absl::GetFlag(FLAGS_default_queue_depth), &c.default_queue_depth);
  OverrideIfSet(absl::GetFlag(FLAGS_max_queue_depth), &c.max_queue_depth);
  OverrideIfSet(absl::GetFlag(FLAGS_max_chunk_bytes), &c.max_chunk_bytes);
  OverrideIfSet(absl::GetFlag(FLAGS_max_streams), &c.max_streams);
  OverrideIfSet(absl::GetFlag(FLAGS_max_streams_per_peer), &c.max_streams_per_peer);
  OverrideIfSet(absl::GetFlag(FLAGS_max_shots_per_request), &c.max_shots_per_request);
  OverrideIfSet(absl::GetFlag(FLAGS_max_inflight_bytes), &c.max_inflight_bytes);
  if (const std::string g = absl::GetFlag(FLAGS_grace_period); !g.empty()) {
    if (!absl::ParseDuration(g, &c.grace_period)) {
      return absl::InvalidArgumentError("--grace_period: bad duration '" + g + "'");
    }
  }
  for (const std::string& flag : dataset_flags) {
    auto split = shotstream::dataset::SplitDatasetFlag(flag);
    if (!split.ok()) return split.status();
    DatasetConfig d;
    d.name = split->first;
    d.files = absl::StrSplit(split->second, ',', absl::SkipEmpty());
    OverrideIfSet(absl::GetFlag(FLAGS_shot_key), &d.shot_key);
    OverrideIfSet(absl::GetFlag(FLAGS_byte_order), &d.byte_order);
    OverrideIfSet(absl::GetFlag(FLAGS_io), &d.io);
    OverrideIfSet(absl::GetFlag(FLAGS_max_gap_bytes), &d.max_gap_bytes);
    OverrideIfSet(absl::GetFlag(FLAGS_max_read_bytes), &d.max_read_bytes);
    d.check_trace_lengths = absl::GetFlag(FLAGS_check_trace_lengths);
    c.datasets.push_back(std::move(d));
  }
  if (absl::Status s = shotstream::config::ValidateServerConfig(c); !s.ok()) return s;
  return c;
}

// Token names the configuration refers to: each must be in the token file.
std::vector<std::string> TokenNamesOf(const ServerConfig& c) {
  std::vector<std::string> names;
  for (const auto& [name, sets] : c.auth_allow) names.push_back(name);
  return names;
}

// --check_config: every pattern of every dataset matches a file, and every file opens as
// the format its dataset says (headers only; no catalog is built).
absl::Status CheckDatasetFiles(const ServerConfig& c) {
  for (const DatasetConfig& d : c.datasets) {
    shotstream::segy::OpenOptions options;
    if (d.byte_order == "big") options.byte_order = shotstream::segy::ByteOrder::kBigEndian;
    if (d.byte_order == "little") options.byte_order = shotstream::segy::ByteOrder::kLittleEndian;
    for (const std::string& pattern : d.files) {
      auto paths = shotstream::dataset::ExpandGlob(pattern);
      if (!paths.ok()) {
        return absl::Status(paths.status().code(),
                            absl::StrCat("dataset '", d.name, "': ", paths.status().message()));
      }
      for (const std::string& path : *paths) {
        auto file = shotstream::segy::SegyFile::Open(path, options);
        if (!file.ok()) {
          return absl::Status(file.status().code(), absl::StrCat("dataset '", d.name, "': ",
                                                                 file.status().message()));
        }
      }
    }
  }
  return absl::OkStatus();
}

// Health: "" and "shotstream.v1.ShotStream" SERVING while any dataset is READY (and the
// server is not draining); "shotstream.v1.ShotStream/NAME" per dataset.
void SetHealth(grpc::HealthCheckServiceInterface* health,
               const std::vector<DatasetEntry>& datasets, bool draining) {
  bool any_ready = false;
  for (const DatasetEntry& e : datasets) any_ready |= e.dataset() != nullptr && !draining;
  health->SetServingStatus(any_ready);  // every name registered so far, "" too
  health->SetServingStatus(kServiceName, any_ready);
  for (const DatasetEntry& e : datasets) {
    health->SetServingStatus(absl::StrCat(kServiceName, "/", e.name),
                             e.dataset() != nullptr && !draining);
  }
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

// Loads one dataset into *entry, with its start-up lines on stderr.
void LoadDataset(const DatasetConfig& dc, const std::string& catalog_dir, DatasetEntry* entry) {
  shotstream::dataset::DatasetSpec spec;
  spec.name = dc.name;
  spec.globs = dc.files;
  spec.shot_key = *shotstream::segy::ParseShotKey(dc.shot_key);  // validated
  if (dc.byte_order == "big") spec.byte_order = shotstream::segy::ByteOrder::kBigEndian;
  if (dc.byte_order == "little") spec.byte_order = shotstream::segy::ByteOrder::kLittleEndian;
  spec.io = *shotstream::segy::ParseIoMode(dc.io);  // validated with the config
  spec.coalesce.max_gap_bytes = dc.max_gap_bytes;
  spec.coalesce.max_read_bytes = dc.max_read_bytes;
  spec.catalog_dir = catalog_dir;
  spec.check_trace_lengths = dc.check_trace_lengths;
  const absl::Time start = absl::Now();
  absl::Time last_report = start;
  auto progress = [&](uint64_t done, uint64_t total) {
    const absl::Time now = absl::Now();
    if (now - start < absl::Seconds(1) || (now - last_report < absl::Seconds(1) && done != total)) {
      return;
    }
    last_report = now;
    const double rate = done / std::max(absl::ToDoubleSeconds(now - start), 1e-9);
    std::fprintf(stderr, "catalog %s: %llu/%llu traces, %.0f traces/s, ETA %.0f s\n",
                 spec.name.c_str(), static_cast<unsigned long long>(done),
                 static_cast<unsigned long long>(total), rate,
                 (total - done) / std::max(rate, 1.0));
  };
  entry->name = spec.name;
  const absl::Status loaded = entry->Load(spec, progress);
  if (loaded.ok()) {
    const std::shared_ptr<const shotstream::dataset::Dataset> d = entry->dataset();
    size_t mapped = 0;
    for (size_t f = 0; f < d->n_files(); ++f) mapped += d->file(f).mapped();
    const size_t n_files = d->n_files();
    const std::string io = mapped == n_files ? "mmap"
                           : mapped == 0     ? "pread"
                                             : absl::StrCat("mmap ", mapped, ", pread ",
                                                            n_files - mapped);
    std::fprintf(stderr,
                 "dataset %s: %zu files (read by %s), %llu traces, %zu shots; catalog %s "
                 "(%.2f s)\n",
                 spec.name.c_str(), n_files, io.c_str(),
                 static_cast<unsigned long long>(d->catalog().n_traces()),
                 d->catalog().shots().size(), d->catalog_origin().c_str(),
                 absl::ToDoubleSeconds(absl::Now() - start));
    for (const std::string& note : d->notes()) {
      std::fprintf(stderr, "dataset %s: note: %s\n", spec.name.c_str(), note.c_str());
    }
    if (absl::GetFlag(FLAGS_index_only)) PrintSummary(*d, absl::Now() - start);
  } else {
    // The server still serves the other datasets; this one reports its error.
    std::fprintf(stderr, "dataset %s FAILED: %s\n", spec.name.c_str(),
                 std::string(loaded.message()).c_str());
  }
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(path + ": cannot read");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> Credentials(const ServerConfig& c) {
  if (c.tls_cert.empty()) return grpc::InsecureServerCredentials();
  auto cert = ReadFile(c.tls_cert);
  if (!cert.ok()) return cert.status();
  auto key = ReadFile(c.tls_key);
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions opts(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  opts.pem_key_cert_pairs.push_back({*key, *cert});
  if (!c.tls_client_ca.empty()) {
    auto ca = ReadFile(c.tls_client_ca);
    if (!ca.ok()) return ca.status();
    opts.pem_root_certs = *ca;
    opts.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(opts);
}

}  // namespace

int main(int argc, char** argv) {
  shotstream::TuneMallocForLargeBuffers();
  absl::SetProgramUsageMessage(
      "shotstream_server --listen=HOST:PORT --dataset=NAME=GLOB [--dataset=...] [flags]\n"
      "   or: shotstream_server --config=FILE.yaml [flags]\n\n"
      "--dataset=NAME=GLOB serves the files GLOB matches (sorted by name; several patterns "
      "with commas). The flags marked 'for --dataset flags' (--shot_key, --byte_order, "
      "--io, --max_gap_bytes, --max_read_bytes, --check_trace_lengths) apply to every "
      "--dataset flag alike, not to the datasets of --config; datasets with different "
      "settings go in --config. Every other flag overrides the same setting of --config.");
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = [](absl::string_view file) {
    return absl::EndsWith(file, "server/main.cc");
  };
  usage.contains_helpshort_flags = usage.contains_help_flags;
  absl::SetFlagsUsageConfig(usage);
  std::vector<std::string> dataset_flags;
  if (absl::Status s = TakeDatasetFlags(&argc, argv, &dataset_flags); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  absl::ParseCommandLine(argc, argv);

  // Signals are taken by this thread with sigwait; block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto config = BuildConfig(dataset_flags);
  if (!config.ok()) return Fail(std::string(config.status().message()));
  const ServerConfig& cfg = *config;

  std::unique_ptr<shotstream::service::TokenStore> tokens;
  if (!cfg.auth_token_file.empty()) {
    auto loaded = shotstream::service::TokenStore::Load(cfg.auth_token_file,
                                                        TokenNamesOf(cfg));
    if (!loaded.ok()) return Fail(std::string(loaded.status().message()));
    tokens = std::move(*loaded);
  }
  if (absl::GetFlag(FLAGS_check_config)) {
    if (absl::Status files = CheckDatasetFiles(cfg); !files.ok()) {
      return Fail(std::string(files.message()));
    }
    std::printf("config OK: listen %s, %zu datasets:", cfg.listen.c_str(), cfg.datasets.size());
    for (const DatasetConfig& d : cfg.datasets) std::printf(" %s", d.name.c_str());
    std::printf("\n");
    return 0;
  }
  if (!cfg.catalog_dir.empty() && ::mkdir(cfg.catalog_dir.c_str(), 0755) != 0 &&
      errno != EEXIST) {
    return Fail("catalog_dir " + cfg.catalog_dir + ": cannot create: " + std::strerror(errno));
  }

  auto creds = Credentials(cfg);
  if (!creds.ok()) return Fail(std::string(creds.status().message()));

  // A dataset whose files change under it is rebuilt in the background; each change of
  // state is said on stderr and moves the health status (once the server runs).
  std::vector<DatasetEntry> datasets(cfg.datasets.size());
  // The health service while the server lives; rebuild threads set health under the lock.
  absl::Mutex health_mu;
  grpc::HealthCheckServiceInterface* health_service = nullptr;  // guarded by health_mu
  std::atomic<bool> draining{false};
  for (size_t i = 0; i < cfg.datasets.size(); ++i) {
    datasets[i].set_on_change([&](const DatasetEntry& e) {
      const absl::Status s = e.status();
      std::fprintf(stderr, "dataset %s: %s%s\n", e.name.c_str(),
                   e.state() == DatasetEntry::State::kRebuilding ? ""
                   : s.ok()                                      ? "READY again, rebuilt"
                                                                 : "FAILED on rebuild: ",
                   std::string(s.message()).c_str());
      absl::MutexLock lock(&health_mu);
      if (health_service != nullptr) SetHealth(health_service, datasets, draining.load());
    });
    LoadDataset(cfg.datasets[i], cfg.catalog_dir, &datasets[i]);
  }
  if (absl::GetFlag(FLAGS_index_only)) {
    for (const DatasetEntry& e : datasets) {
      if (e.dataset() == nullptr) return 1;
    }
    return 0;
  }

  const int readers = cfg.readers > 0
                          ? cfg.readers
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  shotstream::stream::ReaderPool pool(readers);
  shotstream::service::ServiceCounters counters;
  shotstream::service::ServiceOptions options;
  options.default_queue_depth = cfg.default_queue_depth;
  options.max_queue_depth = cfg.max_queue_depth;
  options.max_chunk_bytes = cfg.max_chunk_bytes;
  options.max_shots_per_request = cfg.max_shots_per_request;
  options.max_streams = cfg.max_streams;
  options.max_streams_per_peer = cfg.max_streams_per_peer;
  options.max_inflight_bytes = cfg.max_inflight_bytes;
  options.counters = &counters;
  options.tokens = tokens.get();
  for (const auto& [name, sets] : cfg.auth_allow) {
    options.access.allow[name] = std::set<std::string>(sets.begin(), sets.end());
  }
  options.access.default_deny = cfg.auth_default_deny;
  options.log_streams = absl::GetFlag(FLAGS_log_streams);
  options.zero_copy = absl::GetFlag(FLAGS_zero_copy);
  options.draining = &draining;
  absl::Duration drain_delay;
  if (!absl::ParseDuration(absl::GetFlag(FLAGS_drain_delay), &drain_delay)) {
    return Fail("--drain_delay: bad duration");
  }
  if (const std::string c = absl::GetFlag(FLAGS_testing_corrupt_shot); !c.empty()) {
    int64_t id;
    if (!absl::SimpleAtoi(c, &id)) return Fail("--testing_corrupt_shot needs a shot id");
    options.corrupt_shot_for_testing = id;
  }
  std::unique_ptr<grpc::Service> service =
      shotstream::service::MakeShotStreamService(&datasets, &pool, options);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(cfg.listen, *creds, &port);
  builder.RegisterService(service.get());
  builder.SetMaxSendMessageSize(-1);
  // Requests are bounded at the transport: a StreamShotsRequest of max_shots_per_request
  // ids takes at most 10 bytes an id, plus the rest of the message.
  builder.SetMaxReceiveMessageSize(static_cast<int>(std::min<uint64_t>(
      INT32_MAX, cfg.max_shots_per_request * 10 + (1 << 20))));
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_FRAME_SIZE, 16 * 1024 * 1024 - 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_WRITE_BUFFER_SIZE, 8 * 1024 * 1024);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 64 * 1024 * 1024);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS,
                             static_cast<int>(absl::ToInt64Milliseconds(cfg.keepalive_time)));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
                             static_cast<int>(absl::ToInt64Milliseconds(cfg.keepalive_timeout)));
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 5000);
  // Exclusive: gRPC turns SO_REUSEPORT on by default, and a second server on the same
  // port would then start and silently take half the connections.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    absl::Status why = shotstream::ProbeListen(cfg.listen);
    return Fail(why.ok() ? "cannot listen on " + cfg.listen : std::string(why.message()));
  }
  grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService();
  SetHealth(health, datasets, /*draining=*/false);
  {
    absl::MutexLock lock(&health_mu);
    health_service = health;
  }

  std::unique_ptr<shotstream::metrics::MetricsHttpServer> metrics;
  if (!cfg.metrics_listen.empty()) {
    auto started = shotstream::metrics::MetricsHttpServer::Start(cfg.metrics_listen, [&] {
      return shotstream::metrics::RenderPrometheus(counters, datasets);
    });
    if (!started.ok()) return Fail(std::string(started.status().message()));
    metrics = std::move(*started);
    std::fprintf(stderr, "metrics on http://%s/metrics (port %d)\n", cfg.metrics_listen.c_str(),
                 metrics->port());
  }

  // While no stream runs, freed heap goes back to the system (a burst such as a refused
  // oversized request would otherwise stay resident: malloc is tuned never to shrink).
  shotstream::HeapTrimmer trimmer([&] { return counters.active_streams.load() == 0; });

  const std::string host = cfg.listen.substr(0, cfg.listen.rfind(':'));
  std::printf("shotstream listening on %s:%d\n", host.c_str(), port);
  std::fflush(stdout);

  for (;;) {
    int sig = 0;
    sigwait(&signals, &sig);
    if (sig == SIGHUP) {
      if (tokens != nullptr) {
        absl::Status s = tokens->Reload();
        if (s.ok()) {
          std::fprintf(stderr, "SIGHUP: tokens reloaded (%zu)\n", tokens->size());
        } else {
          std::fprintf(stderr, "SIGHUP: token file not reloaded, the old tokens stay: %s\n",
                       std::string(s.message()).c_str());
        }
      }
      continue;
    }
    std::fprintf(stderr, "shotstream_server: signal %d: NOT_SERVING, draining streams (grace %s)\n",
                 sig, absl::FormatDuration(cfg.grace_period).c_str());
    break;
  }
  {
    absl::MutexLock lock(&health_mu);
    draining = true;
    SetHealth(health, datasets, /*draining=*/true);
  }
  absl::SleepFor(drain_delay);
  // Running streams get the grace period; then they are finished with a status that says
  // why (clients with retries resume elsewhere), and gRPC cancels whatever is left.
  absl::Notification shut_down;
  std::thread cutter([&] {
    if (shut_down.WaitForNotificationWithTimeout(cfg.grace_period)) return;
    shotstream::service::CutAllStreams(
        service.get(), absl::UnavailableError("the server is shutting down (its grace period "
                                              "is over); resume on another server"));
  });
  server->Shutdown(std::chrono::system_clock::now() +
                   absl::ToChronoMilliseconds(cfg.grace_period + absl::Milliseconds(900)));
  shut_down.Notify();
  cutter.join();
  std::thread stop_metrics([&] { metrics.reset(); });  // civetweb takes up to a second
  server->Wait();
  {
    absl::MutexLock lock(&health_mu);
    health_service = nullptr;  // the server goes before the datasets and their rebuilds
  }
  std::fprintf(stderr, "shotstream_server: stopped (%lld shots sent)\n",
               static_cast<long long>(counters.shots_sent.load()));
  stop_metrics.join();
  return 0;
}

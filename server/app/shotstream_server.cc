#include "server/app/shotstream_server.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "server/write/dataset_writer.h"
#include "server/write/write_parts.h"
#include "grpcpp/impl/service_type.h"
#include "server/common/fd_limit.h"
#include "server/common/heap_trimmer.h"
#include "server/common/listen_probe.h"
#include "server/dataset/dataset.h"
#include "server/io/open_file_cache.h"
#include "server/io/trace_crcs.h"
#include "server/metrics/metrics.h"
#include "server/formats/formats.h"
#include "server/service/shot_stream_service.h"
#include "server/service/gate.h"
#include "server/service/token_store.h"
#include "server/stream/reader_pool.h"
#include "server/stream/stall_watch.h"

namespace shotstream::server {
namespace {

// Threads of the disk executors, off gRPC's threads and apart, so that a write's commit
// (fsyncs, rename, catalog scan) never holds up a job's start: write sessions (appends,
// commits), and job starts, commits and job files.
constexpr int kWriteThreads = 2;
constexpr int kJobThreads = 2;

using config::DatasetConfig;
using config::ServerConfig;
using dataset::DatasetEntry;

constexpr char kServiceName[] = "shotstream.v1.ShotStream";

// Token names the configuration refers to: each must be in the token file.
std::vector<service::RequiredName> TokenNamesOf(const ServerConfig& c) {
  std::vector<service::RequiredName> names;
  for (const auto& [name, sets] : c.auth_allow) names.push_back({name, "auth.allow"});
  for (const std::string& name : c.auth_writers) names.push_back({name, "auth.writers"});
  return names;
}

// Health: "" and "shotstream.v1.ShotStream" SERVING while any dataset is READY, or while
// it takes writes (write_dir: a server that only receives modelled gathers is of use before
// it holds any), and the server is not draining; "shotstream.v1.ShotStream/NAME" per
// dataset, SERVING while READY; NOT_SERVING for the names of datasets a reload removed.
void SetHealth(grpc::HealthCheckServiceInterface* health,
               const dataset::DatasetRegistry& registry, bool writes, bool draining,
               const std::set<std::string>& removed) {
  const std::vector<const DatasetEntry*> datasets = registry.All();
  // SERVING once a dataset is READY; a server that only takes writes, once nothing is
  // LOADING.
  bool serving = writes;
  for (const DatasetEntry* e : datasets) {
    if (e->state() == DatasetEntry::State::kLoading) serving = false;
  }
  for (const DatasetEntry* e : datasets) serving |= e->dataset() != nullptr;
  serving &= !draining;
  health->SetServingStatus(serving);  // every name registered so far, "" too
  health->SetServingStatus(kServiceName, serving);
  for (const DatasetEntry* e : datasets) {
    health->SetServingStatus(absl::StrCat(kServiceName, "/", e->name),
                             e->dataset() != nullptr && !draining);
  }
  for (const std::string& name : removed) {
    health->SetServingStatus(absl::StrCat(kServiceName, "/", name), false);
  }
}

// --index_only: one summary line per dataset on stdout.
void PrintSummary(const dataset::Dataset& d, absl::Duration took) {
  std::vector<uint32_t> per_shot;
  for (const auto& s : d.catalog().shots()) per_shot.push_back(s.n_traces);
  std::sort(per_shot.begin(), per_shot.end());
  const uint64_t bytes = d.file_bytes();
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

// The dataset a configuration entry describes, under the server's settings `c`.
dataset::DatasetSpec SpecOf(const DatasetConfig& dc, const ServerConfig& c) {
  dataset::DatasetSpec spec;
  spec.name = dc.name;
  spec.globs = dc.files;
  spec.shot_key = dc.shot_key;  // checked against its format (CheckFormats)
  spec.format = dc.format;
  if (dc.byte_order == "big") spec.byte_order = segy::ByteOrder::kBigEndian;
  if (dc.byte_order == "little") spec.byte_order = segy::ByteOrder::kLittleEndian;
  spec.io = *io::ParseIoMode(dc.io);  // validated with the config
  spec.coalesce.max_gap_bytes = dc.max_gap_bytes;
  spec.coalesce.max_read_bytes = dc.max_read_bytes;
  spec.catalog_dir = c.catalog_dir;
  spec.skip_bad_files = config::OnBadFile(c, dc) == "skip";
  spec.check_trace_lengths = dc.check_trace_lengths;
  // HDF5 reads /data by default; a Zarr store finds its array (amplitude, data, itself).
  spec.array_path = !dc.array_path.empty() ? dc.array_path : dc.h5_path == "/data" ? "" : dc.h5_path;
  spec.sample_interval_us = dc.sample_interval_us;
  return spec;
}

// The files a dataset left out (on_bad_file: skip), a line each on stderr.
void PrintBadFiles(const dataset::Dataset& d) {
  for (const std::string& bad : d.bad_files()) {
    std::fprintf(stderr, "dataset %s: left out (on_bad_file: skip): %s\n", d.name().c_str(),
                 bad.c_str());
  }
}

// Loads one dataset into *entry, with its start-up lines on stderr.
void LoadDataset(const DatasetConfig& dc, const ServerConfig& c, bool print_summary,
                 DatasetEntry* entry) {
  const dataset::DatasetSpec spec = SpecOf(dc, c);
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
  // What the scan freed goes back to the system now, not at the first idle moment (malloc
  // is tuned never to shrink the heap by itself): after start-up the server holds its
  // catalogs, not their scans' scratch.
  HeapTrimmer::TrimIfWorthIt(1 << 20);
  if (loaded.ok()) {
    const std::shared_ptr<const dataset::Dataset> d = entry->dataset();
    const size_t n_files = d->n_files();
    const std::string& io = d->info().read_by;
    const uint64_t n_traces = d->catalog().n_traces();
    const uint64_t resident = d->catalog().ResidentBytes();
    const uint64_t mapped = d->catalog().MappedBytes();
    const std::string in_mapping =
        mapped == 0 ? "" : absl::StrFormat(" + %.1f MB read from the saved file", mapped / 1e6);
    std::fprintf(stderr,
                 "dataset %s: %zu files (read by %s), %llu traces, %zu shots; catalog %s "
                 "(%.2f s; %.1f MB in memory%s, %.2f bytes a trace)\n",
                 spec.name.c_str(), n_files, io.c_str(), static_cast<unsigned long long>(n_traces),
                 d->catalog().shots().size(), d->catalog_origin().c_str(),
                 absl::ToDoubleSeconds(absl::Now() - start), resident / 1e6, in_mapping.c_str(),
                 n_traces > 0 ? static_cast<double>(resident + mapped) / n_traces : 0.0);
    for (const std::string& note : d->notes()) {
      std::fprintf(stderr, "dataset %s: note: %s\n", spec.name.c_str(), note.c_str());
    }
    PrintBadFiles(*d);
    if (print_summary) PrintSummary(*d, absl::Now() - start);
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

// --check_config: every pattern of every dataset matches a file, and every file opens as
// the format its dataset says (headers only; no catalog is built).
absl::Status CheckDatasetFiles(const ServerConfig& c) {
  for (const DatasetConfig& d : c.datasets) {
    ServerConfig no_catalog = c;
    no_catalog.catalog_dir.clear();
    const dataset::DatasetSpec spec = SpecOf(d, no_catalog);
    size_t good = 0;
    absl::Status first_bad;
    for (const std::string& pattern : d.files) {
      auto paths = dataset::ExpandGlob(pattern);
      if (!paths.ok()) {
        return absl::Status(paths.status().code(),
                            absl::StrCat("dataset '", d.name, "': ", paths.status().message()));
      }
      for (const std::string& path : *paths) {
        absl::Status s = dataset::CheckDatasetFile(spec, path);
        if (s.ok()) {
          ++good;
        } else if (!spec.skip_bad_files) {
          return s;
        } else if (first_bad.ok()) {
          first_bad = std::move(s);
        }
      }
    }
    // on_bad_file: skip serves what is good; with nothing good the dataset would fail.
    if (good == 0 && !first_bad.ok()) return first_bad;
  }
  return absl::OkStatus();
}

// A directory setting (`what`: write_dir, catalog_dir, job_dir): a directory the server can
// write into, or one start-up can make (mkdir: its parent exists, a writable directory).
// The same checks start-up makes, so --check_config says what start-up would.
absl::Status CheckDirectory(const char* what, const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) {
      return absl::FailedPreconditionError(
          absl::StrCat(what, " ", dir, ": ", std::strerror(errno)));
    }
    const size_t slash = dir.find_last_of('/', dir.size() > 1 ? dir.size() - 2 : 0);
    const std::string parent = slash == std::string::npos ? "." : slash == 0 ? "/" : dir.substr(0, slash);
    if (::stat(parent.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
        ::access(parent.c_str(), W_OK | X_OK) != 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          what, " ", dir, ": cannot be created: ", parent,
          ::stat(parent.c_str(), &st) != 0  ? absl::StrCat(": ", std::strerror(errno))
          : !S_ISDIR(st.st_mode)           ? std::string(" is not a directory")
                                           : std::string(" is not writable by this user")));
    }
    return absl::OkStatus();  // made at start-up
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, " ", dir, ": not a directory (it is a file); name a directory"));
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, " ", dir, ": not writable by this user: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckFormats(const ServerConfig& config) {
  for (size_t i = 0; i < config.datasets.size(); ++i) {
    const DatasetConfig& d = config.datasets[i];
    const std::string where = absl::StrCat("datasets[", i, "] (", d.name, ")");
    absl::StatusOr<const source::Format*> format = source::FindFormat(d.format);
    if (!format.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ".", format.status().message()));
    }
    // Under auto, the format the file names suggest (SEG-Y where they suggest none).
    const source::Format& f = *format != nullptr ? **format : source::SuggestedFormat(d.files);
    if (absl::Status k = f.check_shot_key(d.shot_key); !k.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ".shot_key: ", k.message()));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckConfig(const ServerConfig& config) {
  if (absl::Status s = CheckFormats(config); !s.ok()) return s;
  for (const auto& [what, dir] : {std::pair<const char*, const std::string&>{
                                       "write_dir", config.write_dir},
                                   {"catalog_dir", config.catalog_dir},
                                   {"job_dir", config.job_dir}}) {
    if (dir.empty()) continue;
    if (absl::Status s = CheckDirectory(what, dir); !s.ok()) return s;
  }
  if (!config.auth_token_file.empty()) {
    auto tokens = service::TokenStore::Load(config.auth_token_file, TokenNamesOf(config));
    if (!tokens.ok()) return tokens.status();
  }
  return CheckDatasetFiles(config);
}

// Raises the descriptor limit to the hard one and sizes the open-file cache from it (or
// from open_files), saying both on stderr; sets the budget of the trace CRC-32s kept.
static void SetUpOpenFiles(const ServerConfig& cfg) {
  io::TraceCrcBudget::Default().SetLimit(cfg.crc_cache_bytes);
  const FdLimit limit = RaiseFdLimit();
  const size_t open = cfg.open_files > 0 ? static_cast<size_t>(cfg.open_files)
                                         : io::OpenFileCache::DefaultCapacity();
  io::OpenFileCache::Default().SetCapacity(open);
  std::fprintf(stderr, "open files: %s; up to %zu data files held open%s\n",
               limit.Describe().c_str(), open,
               cfg.open_files == 0 ? "" : open >= limit.now ? " (open_files, at or above the "
                                                              "descriptor limit: reads will "
                                                              "fail UNAVAILABLE when none are "
                                                              "left)"
                                                            : " (open_files)");
}

bool ShotStreamServer::IndexOnly(const ServerConfig& config) {
  if (absl::Status s = CheckFormats(config); !s.ok()) {
    std::fprintf(stderr, "shotstream_server: %s\n", std::string(s.message()).c_str());
    return false;
  }
  SetUpOpenFiles(config);
  if (!config.catalog_dir.empty()) ::mkdir(config.catalog_dir.c_str(), 0755);
  dataset::DatasetRegistry datasets(config.datasets.size());
  bool all = true;
  for (size_t i = 0; i < config.datasets.size(); ++i) {
    LoadDataset(config.datasets[i], config, /*print_summary=*/true, &datasets.at(i));
    all &= datasets.at(i).dataset() != nullptr;
  }
  return all;
}

absl::StatusOr<std::unique_ptr<ShotStreamServer>> ShotStreamServer::Start(
    const ServerConfig& cfg, const RunOptions& run) {
  if (absl::Status formats = CheckFormats(cfg); !formats.ok()) return formats;
  SetUpOpenFiles(cfg);
  std::unique_ptr<ShotStreamServer> s(new ShotStreamServer());
  s->config_ = cfg;
  s->options_ = run;
  if (!cfg.auth_token_file.empty()) {
    auto loaded = service::TokenStore::Load(cfg.auth_token_file, TokenNamesOf(cfg));
    if (!loaded.ok()) return loaded.status();
    s->tokens_ = std::move(*loaded);
  }
  for (const auto& [what, dir] : {std::pair<const char*, const std::string&>{
                                       "job_dir", cfg.job_dir},
                                   {"catalog_dir", cfg.catalog_dir}}) {
    if (dir.empty()) continue;
    if (absl::Status s = CheckDirectory(what, dir); !s.ok()) return s;
  }
  if (!cfg.job_dir.empty() && ::mkdir(cfg.job_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::FailedPreconditionError(absl::StrCat("job_dir ", cfg.job_dir,
                                                      ": cannot create: ", std::strerror(errno)));
  }
  if (!cfg.catalog_dir.empty() && ::mkdir(cfg.catalog_dir.c_str(), 0755) != 0 &&
      errno != EEXIST) {
    return absl::FailedPreconditionError(absl::StrCat(
        "catalog_dir ", cfg.catalog_dir, ": cannot create: ", std::strerror(errno)));
  }
  auto creds = Credentials(cfg);
  if (!creds.ok()) return creds.status();

  // A dataset whose files change under it is rebuilt in the background; each change of
  // state is said on stderr and moves the health status (once the server runs).
  s->datasets_ = std::make_unique<dataset::DatasetRegistry>(cfg.datasets.size());
  ShotStreamServer* self = s.get();
  auto on_change = [self](const DatasetEntry& e) {
    const absl::Status st = e.status();
    const DatasetEntry::State state = e.state();
    const std::string load = e.last_load();  // rebuilt, loaded again, reloaded
    if (state == DatasetEntry::State::kRebuilding || state == DatasetEntry::State::kLoading) {
      std::fprintf(stderr, "dataset %s: %s\n", e.name.c_str(), std::string(st.message()).c_str());
    } else if (state == DatasetEntry::State::kReady) {
      std::fprintf(stderr, "dataset %s: READY again, %s\n", e.name.c_str(), load.c_str());
      if (const auto d = e.dataset()) PrintBadFiles(*d);
    } else {
      std::fprintf(stderr, "dataset %s: FAILED, %s: %s\n", e.name.c_str(), load.c_str(),
                   std::string(st.message()).c_str());
    }
    absl::MutexLock lock(&self->health_mu_);
    self->SetHealthLocked();
  };
  s->on_change_ = on_change;
  // Every dataset is LOADING until the loader thread (started once the server listens)
  // has loaded it; requests meanwhile get UNAVAILABLE saying so.
  std::vector<std::pair<DatasetEntry*, DatasetConfig>> to_load;
  for (size_t i = 0; i < cfg.datasets.size(); ++i) {
    DatasetEntry* entry = &s->datasets_->at(i);
    entry->name = cfg.datasets[i].name;
    entry->set_on_change(on_change);
    entry->MarkLoading();
    to_load.emplace_back(entry, cfg.datasets[i]);
  }
  // Written datasets: loaded like the configured ones; health follows once published.
  auto load_written = [self, on_change](DatasetEntry* entry, const std::string& path) {
    DatasetConfig dc;
    dc.name = entry->name;
    dc.files = {path};
    entry->set_on_change(on_change);
    LoadDataset(dc, self->config_, /*print_summary=*/false, entry);
  };
  if (!cfg.write_dir.empty()) {
    if (absl::Status s = CheckDirectory("write_dir", cfg.write_dir); !s.ok()) return s;
    if (::mkdir(cfg.write_dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return absl::FailedPreconditionError(absl::StrCat(
          "write_dir ", cfg.write_dir, ": cannot create: ", std::strerror(errno)));
    }
    for (const std::string& t : write::RemoveTemporaries(cfg.write_dir)) {
      std::fprintf(stderr, "write_dir %s: removed %s, left by a write that did not finish\n",
                   cfg.write_dir.c_str(), t.c_str());
    }
    for (const std::string& t : write::RemoveParts(cfg.write_dir)) {
      std::fprintf(stderr, "write_dir %s: removed %s, the parts of a multi-part write not "
                   "committed (its commit now names them missing)\n",
                   cfg.write_dir.c_str(), t.c_str());
    }
    // Datasets written before this start are served again, by their names.
    std::vector<std::string> foreign;
    for (const auto& [name, path] : write::FindWritten(cfg.write_dir, &foreign)) {
      if (!s->datasets_->Reserve(name).ok()) {
        std::fprintf(stderr, "write_dir %s: %s not served: a configured dataset has the name\n",
                     cfg.write_dir.c_str(), path.c_str());
        continue;
      }
      DatasetEntry* entry = s->datasets_->Add(name);
      DatasetConfig dc;
      dc.name = name;
      dc.files = {path};
      entry->set_on_change(on_change);
      entry->MarkLoading();
      to_load.emplace_back(entry, std::move(dc));
      s->datasets_->Publish(entry);
    }
    for (const std::string& f : foreign) {
      std::fprintf(stderr, "write_dir %s: %s: not served (name it in a --dataset to serve it)\n",
                   cfg.write_dir.c_str(), f.c_str());
    }
  }

  // The service's parts, built here and owned by the server (members in the order that
  // destroys what serves before what it serves from).
  const int readers = cfg.readers > 0
                          ? cfg.readers
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  s->counters_ = std::make_unique<service::ServiceCounters>();
  if (cfg.max_inflight_bytes > 0) {
    s->budget_ = std::make_unique<stream::ByteBudget>(cfg.max_inflight_bytes);
  }
  s->stall_watch_ = std::make_unique<stream::StallWatch>(cfg.stall_timeout);
  s->advisor_ = std::make_unique<stream::EncodingAdvisor>(readers);
  s->disk_ = std::make_unique<stream::ReaderPool>(kWriteThreads);
  s->job_disk_ = std::make_unique<stream::ReaderPool>(kJobThreads);
  s->jobs_ = std::make_unique<jobs::JobRegistry>(cfg.job_dir, cfg.job_idle_timeout,
                                                 &s->counters_->jobs, s->job_disk_.get());
  s->pool_ = std::make_unique<stream::ReaderPool>(readers);
  service::Gate::Options gate;
  gate.tokens = s->tokens_.get();
  for (const auto& [name, sets] : cfg.auth_allow) {
    gate.access.allow[name] = std::set<std::string>(sets.begin(), sets.end());
  }
  gate.access.default_deny = cfg.auth_default_deny;
  gate.access.writers = std::set<std::string>(cfg.auth_writers.begin(), cfg.auth_writers.end());
  gate.draining = &s->draining_;
  gate.max_streams = cfg.max_streams;
  gate.max_streams_per_peer = cfg.max_streams_per_peer;
  gate.max_writes = cfg.max_writes;
  gate.log = cfg.log_streams;
  s->gate_ = std::make_unique<service::Gate>(s->datasets_.get(), s->counters_.get(), gate);
  service::ServiceParts parts;
  parts.datasets = s->datasets_.get();
  parts.gate = s->gate_.get();
  parts.readers = s->pool_.get();
  parts.disk = s->disk_.get();
  parts.job_disk = s->job_disk_.get();
  parts.budget = s->budget_.get();
  parts.piece_bytes = cfg.piece_bytes;
  if (cfg.stall_timeout > absl::ZeroDuration()) parts.stall_watch = s->stall_watch_.get();
  parts.advisor = s->advisor_.get();
  parts.jobs = s->jobs_.get();
  parts.counters = s->counters_.get();
  parts.limits.default_queue_depth = cfg.default_queue_depth;
  parts.limits.max_queue_depth = cfg.max_queue_depth;
  parts.limits.default_chunk_bytes = config::ResolvedDefaultChunkBytes(cfg);
  parts.limits.max_chunk_bytes = cfg.max_chunk_bytes;
  parts.limits.max_shots_per_request = cfg.max_shots_per_request;
  parts.zero_copy = cfg.zero_copy;
  parts.log_streams = cfg.log_streams;
  parts.write_dir = cfg.write_dir;
  parts.load_written = load_written;
  parts.written_published = [self](const DatasetEntry&) {
    absl::MutexLock lock(&self->health_mu_);
    self->SetHealthLocked();
  };
  parts.corrupt_shot_for_testing = run.corrupt_shot_for_testing;
  s->service_ = service::MakeShotStreamService(parts);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(cfg.listen, *creds, &s->port_);
  builder.RegisterService(s->service_.get());
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
  s->server_ = builder.BuildAndStart();
  if (s->server_ == nullptr || s->port_ == 0) {
    absl::Status why = ProbeListen(cfg.listen);
    s->drained_ = true;
    return why.ok() ? absl::UnavailableError("cannot listen on " + cfg.listen) : why;
  }
  {
    absl::MutexLock lock(&s->health_mu_);
    s->health_ = s->server_->GetHealthCheckService();
    s->SetHealthLocked();
  }
  if (!cfg.metrics_listen.empty()) {
    auto started = metrics::MetricsHttpServer::Start(cfg.metrics_listen, [self] {
      return metrics::RenderPrometheus(*self->counters_, self->datasets_->All());
    });
    if (!started.ok()) {
      s->Drain();
      return started.status();
    }
    s->metrics_ = std::move(*started);
    std::fprintf(stderr, "metrics on http://%s/metrics (port %d)\n", cfg.metrics_listen.c_str(),
                 s->metrics_->port());
  }
  {
    absl::MutexLock lock(&s->reload_mu_);
    s->reloaded_ = cfg;
  }
  // FAILED datasets (and files skipped) are looked at every heal_interval.
  s->healer_ = std::make_unique<dataset::DatasetHealer>(s->datasets_.get(), cfg.heal_interval);
  // While no stream runs, freed heap goes back to the system (a burst such as a refused
  // oversized request would otherwise stay resident: malloc is tuned never to shrink).
  s->trimmer_ = std::make_unique<HeapTrimmer>(
      [self] { return self->counters_->active_streams.load() == 0; });
  s->loader_ = std::thread([self, to_load = std::move(to_load)] { self->LoadAll(to_load); });
  return s;
}

void ShotStreamServer::LoadAll(const std::vector<std::pair<DatasetEntry*, DatasetConfig>>& all) {
  int ready = 0;
  int failed = 0;
  bool all_loaded = true;
  for (const auto& [entry, dc] : all) {
    if (draining_.load()) {
      all_loaded = false;
      break;
    }
    LoadDataset(dc, config_, /*print_summary=*/false, entry);
    (entry->dataset() != nullptr ? ready : failed) += 1;
    absl::MutexLock lock(&health_mu_);
    SetHealthLocked();
  }
  // The healer's first look at the files of those unwell, as they failed (before the
  // "datasets loaded" line: a file mended after it is a change).
  healer_->Check(/*force=*/false);
  {
    absl::MutexLock lock(&load_mu_);
    load_summary_ = all_loaded ? absl::StrCat(ready, " READY, ", failed, " FAILED") : "";
  }
  loaded_.Notify();
}

std::optional<std::string> ShotStreamServer::AwaitLoaded() {
  loaded_.WaitForNotification();
  absl::MutexLock lock(&load_mu_);
  if (load_summary_.empty()) return std::nullopt;
  return load_summary_;
}

ShotStreamServer::~ShotStreamServer() {
  if (!drained_) Drain();
}

std::string ShotStreamServer::address() const {
  return absl::StrCat(config_.listen.substr(0, config_.listen.rfind(':')), ":", port_);
}

absl::Status ShotStreamServer::ReloadTokens() {
  return tokens_ == nullptr ? absl::OkStatus() : tokens_->Reload();
}

std::vector<std::string> ShotStreamServer::Reload(const ServerConfig& next) {
  if (absl::Status s = CheckFormats(next); !s.ok()) {
    return {absl::StrCat("configuration not reloaded, the old one stays: ", s.message())};
  }
  if (!loaded_.HasBeenNotified()) {
    return {"configuration not reloaded: the datasets are still loading (the first load "
            "of each); send SIGHUP again once the 'datasets loaded' line is out"};
  }
  std::vector<std::string> said;
  absl::MutexLock lock(&reload_mu_);
  for (const std::string& name : healer_->Check(/*force=*/true)) {
    said.push_back(absl::StrCat("dataset ", name, ": retried"));
  }
  // Where catalogs live is a start-up setting: reloads keep config_'s.
  ServerConfig effective = next;
  effective.catalog_dir = config_.catalog_dir;
  std::map<std::string, const DatasetConfig*> before;
  for (const DatasetConfig& d : reloaded_.datasets) before[d.name] = &d;
  std::set<std::string> after;
  for (const DatasetConfig& d : next.datasets) after.insert(d.name);
  std::vector<std::string> removed;
  for (const auto& [name, d] : before) {
    if (after.count(name) == 0 && datasets_->Remove(name)) {
      removed.push_back(name);
      said.push_back(absl::StrCat("dataset ", name, ": removed"));
    }
  }
  for (const DatasetConfig& d : next.datasets) {
    const dataset::DatasetSpec spec = SpecOf(d, effective);
    auto it = before.find(d.name);
    if (it == before.end()) {
      if (absl::Status r = datasets_->Reserve(d.name); !r.ok()) {
        said.push_back(absl::StrCat("dataset ", d.name, ": not added: ", r.message()));
        continue;
      }
      DatasetEntry* entry = datasets_->Add(d.name);
      entry->set_on_change(on_change_);
      entry->Reload(spec, "added on SIGHUP");  // REBUILDING before anyone can see it
      datasets_->Publish(entry);
      said.push_back(absl::StrCat("dataset ", d.name, ": added"));
      continue;
    }
    if (*it->second == d && config::OnBadFile(reloaded_, d) == config::OnBadFile(next, d)) {
      continue;
    }
    for (DatasetEntry* entry : datasets_->AllToChange()) {
      if (entry->name != d.name) continue;
      entry->Reload(spec, "its configuration changed");
      said.push_back(absl::StrCat("dataset ", d.name, ": changed"));
    }
  }
  const std::vector<std::string> later = config::SettingsThatDiffer(config_, next);
  if (!later.empty()) {
    said.push_back(absl::StrCat("take effect at a restart: ", absl::StrJoin(later, ", ")));
  }
  reloaded_ = next;
  absl::MutexLock health(&health_mu_);
  for (const std::string& name : removed) removed_.insert(name);
  for (const DatasetConfig& d : next.datasets) removed_.erase(d.name);
  SetHealthLocked();
  return said;
}

size_t ShotStreamServer::token_count() const { return tokens_ == nullptr ? 0 : tokens_->size(); }

int64_t ShotStreamServer::shots_sent() const { return counters_->shots_sent.load(); }

void ShotStreamServer::SetHealthLocked() {
  if (health_ != nullptr) {
    SetHealth(health_, *datasets_, !config_.write_dir.empty(), draining_.load(), removed_);
  }
}

void ShotStreamServer::Drain() {
  if (drained_ || server_ == nullptr) return;  // drained, or never started
  drained_ = true;
  {
    absl::MutexLock lock(&health_mu_);
    draining_ = true;
    SetHealthLocked();
  }
  absl::SleepFor(config_.drain_delay);
  // Running streams get the grace period; a little before its end (the linger) they are
  // finished with a status that says why (clients with retries resume elsewhere), and the
  // process stays until the grace period is over, so that a consumer still reading gets
  // the status: its trailers queue behind the chunks already in the connection, and a
  // process that exits at once resets the connection and loses them ("Connection reset
  // by peer"). gRPC cancels whatever is left when the grace period ends (a stream whose
  // client is more than the linger behind: its write cannot finish, so no status can
  // follow it), and the process exits then.
  const absl::Duration linger = std::min(config_.grace_period / 4, absl::Milliseconds(500));
  const absl::Time grace_end = absl::Now() + config_.grace_period;
  absl::Notification shut_down;
  bool cut = false;
  std::thread cutter([&] {
    if (shut_down.WaitForNotificationWithTimeout(config_.grace_period - linger)) return;
    cut = true;
    service::CutAllStreams(service_.get(),
                           absl::UnavailableError("the server is shutting down (its grace "
                                                  "period is over); resume on another server"));
  });
  server_->Shutdown(absl::ToChronoTime(grace_end));
  const bool cancelled = absl::Now() >= grace_end;  // gRPC cancelled what was left
  shut_down.Notify();
  cutter.join();
  // A bounded lingering close (as TCP's SO_LINGER): nothing to wait on tells that a
  // client has read what the kernel holds for it. Cancelled calls' RST_STREAMs are
  // written by gRPC's threads after Shutdown returns: a process that exits at once can
  // lose them, and a client then sees "Broken pipe" instead of the cancellation (seen
  // under load in //tests:operations_test), so they get a moment too.
  if (cut) absl::SleepFor(grace_end - absl::Now());
  if (cancelled) absl::SleepFor(absl::Milliseconds(200));
  metrics_.reset();  // quick: see ~MetricsHttpServer
  server_->Wait();
  // The loader stops between datasets once draining; a dataset it is loading finishes.
  if (loader_.joinable()) loader_.join();
  {
    absl::MutexLock lock(&health_mu_);
    health_ = nullptr;  // the server goes before the datasets and their rebuilds
  }
  stopped_.Notify();
}

}  // namespace shotstream::server

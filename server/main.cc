// shotstream_server: serves SEG-Y shot gathers over gRPC.
//   shotstream_server --listen=0.0.0.0:50051 --dataset=line1=/data/line1/*.sgy
//   shotstream_server --config=/etc/shotstream/config.yaml [flags override the file]
// Prints one line "shotstream listening on HOST:PORT" on stdout when ready. SIGTERM/SIGINT:
// drain (ShotStreamServer::Drain), exit 0. SIGHUP: reload the tokens.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "server/app/shotstream_server.h"
#include "common/malloc_tuning.h"
#include "common/status_macros.h"
#include "server/config/dataset_flags.h"
#include "server/config/server_config.h"
#include "server/dataset/dataset.h"

// Flags left at their "unset" value do not override --config.
ABSL_FLAG(std::string, config, "", "YAML configuration file (flags given here override it)");
ABSL_FLAG(std::string, listen, "", "HOST:PORT to listen on, 0 picks a port (0.0.0.0:50051)");
ABSL_FLAG(std::string, shot_key, "", "for --dataset flags: the shot's header field (field_record)");
ABSL_FLAG(std::string, byte_order, "", "for --dataset flags: auto (default), big or little");
ABSL_FLAG(std::string, io, "", "for --dataset flags: auto (mmap if local), pread or mmap");
ABSL_FLAG(std::string, catalog_dir, "", "where catalogs are kept (created if missing)");
ABSL_FLAG(std::string, metrics_listen, "", "HOST:PORT for Prometheus metrics on /metrics");
ABSL_FLAG(std::string, auth_token_file, "", "bearer tokens, one per line; reloaded on SIGHUP");
ABSL_FLAG(std::string, tls_cert, "", "server certificate (PEM)");  // with --tls_key
ABSL_FLAG(std::string, tls_key, "", "server private key (PEM)");
ABSL_FLAG(std::string, tls_client_ca, "", "require client certificates signed by this CA");
ABSL_FLAG(bool, check_config, false, "validate the configuration and its files, and exit");
ABSL_FLAG(bool, index_only, false, "build or check the catalogs, print a summary, and exit");
ABSL_FLAG(int, readers, -1, "reader threads shared by all streams (0: number of cores)");
ABSL_FLAG(int64_t, default_queue_depth, -1, "shots read ahead per stream when not asked (2)");
ABSL_FLAG(int64_t, max_queue_depth, -1, "largest queue depth a client may ask for (16)");
ABSL_FLAG(int64_t, max_chunk_bytes, -1, "largest sample payload per message (1 MiB)");
ABSL_FLAG(bool, check_trace_lengths, false, "for --dataset flags: strict: refuse files whose "
          "trace headers (bytes 115-116) give another sample count than the binary header");
ABSL_FLAG(int64_t, max_gap_bytes, -1, "for --dataset flags: coalesce across gaps up to this");
ABSL_FLAG(int64_t, max_read_bytes, -1, "for --dataset flags: largest coalesced read (1 MiB)");
ABSL_FLAG(int64_t, max_streams, -1, "concurrent streams, all peers (256)");
ABSL_FLAG(int64_t, max_streams_per_peer, -1, "concurrent streams from one address (64)");
ABSL_FLAG(int64_t, max_shots_per_request, -1, "shot ids in one request (1000000)");
ABSL_FLAG(int64_t, max_inflight_bytes, -1, "decoded shot bytes all streams may hold (1 GiB)");
ABSL_FLAG(std::string, grace_period, "", "on SIGTERM, how long running streams may take (30s)");
ABSL_FLAG(std::string, drain_delay, "1s", "on SIGTERM, NOT_SERVING this long before closing");
ABSL_FLAG(bool, zero_copy, true, "send IEEE samples of mapped files from the mapping itself");
ABSL_FLAG(bool, log_streams, true, "one stderr line when each stream starts and ends");
ABSL_FLAG(std::string, testing_corrupt_shot, "", "testing only: corrupt this shot's samples");

namespace {

using shotstream::config::DatasetConfig;
using shotstream::config::ServerConfig;

int Fail(const std::string& message) {
  std::cerr << "shotstream_server: " << message << std::endl;
  return 2;
}

template <typename T>
void OverrideIfSet(int64_t flag, T* field) { if (flag >= 0) *field = static_cast<T>(flag); }
void OverrideIfSet(const std::string& flag, std::string* f) { if (!flag.empty()) *f = flag; }

// Defaults, then the YAML file, then the flags that were given.
absl::StatusOr<ServerConfig> BuildConfig(const std::vector<std::string>& dataset_flags) {
  ServerConfig c;
  if (const std::string path = absl::GetFlag(FLAGS_config); !path.empty()) {
    SS_ASSIGN_OR_RETURN(c, shotstream::config::LoadServerConfig(path));
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
  const std::string g = absl::GetFlag(FLAGS_grace_period);
  if (!g.empty() && !absl::ParseDuration(g, &c.grace_period)) {
    return absl::InvalidArgumentError("--grace_period: bad duration '" + g + "'");
  }
  for (const std::string& flag : dataset_flags) {
    SS_ASSIGN_OR_RETURN(auto split, shotstream::dataset::SplitDatasetFlag(flag));
    DatasetConfig d;
    d.name = split.first;
    d.files = absl::StrSplit(split.second, ',', absl::SkipEmpty());
    OverrideIfSet(absl::GetFlag(FLAGS_shot_key), &d.shot_key);
    OverrideIfSet(absl::GetFlag(FLAGS_byte_order), &d.byte_order);
    OverrideIfSet(absl::GetFlag(FLAGS_io), &d.io);
    OverrideIfSet(absl::GetFlag(FLAGS_max_gap_bytes), &d.max_gap_bytes);
    OverrideIfSet(absl::GetFlag(FLAGS_max_read_bytes), &d.max_read_bytes);
    d.check_trace_lengths = absl::GetFlag(FLAGS_check_trace_lengths);
    c.datasets.push_back(std::move(d));
  }
  SS_RETURN_IF_ERROR(shotstream::config::ValidateServerConfig(c));
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  shotstream::TuneMallocForLargeBuffers();
  absl::SetProgramUsageMessage(
      "shotstream_server --listen=HOST:PORT --dataset=NAME=GLOB [--dataset=...] [flags]\n   or: "
      "shotstream_server --config=FILE.yaml [flags]\n\n--dataset=NAME=GLOB serves the files "
      "GLOB matches (sorted; patterns with commas). The flags 'for --dataset flags' (--shot_key: "
      "field_record, energy_source_point, inline, crossline, byte:N or source_xy; --byte_order, "
      "--io, --max_gap_bytes, --max_read_bytes, --check_trace_lengths) apply to every --dataset "
      "flag alike; datasets with different settings go in --config, which every other flag "
      "overrides.");
  absl::FlagsUsageConfig usage;  // --help: this file's flags
  usage.contains_help_flags = [](absl::string_view f) {
    return absl::EndsWith(f, "server/main.cc");
  };
  usage.contains_helpshort_flags = usage.contains_help_flags;
  absl::SetFlagsUsageConfig(usage);
  std::vector<std::string> dataset_flags;
  absl::Status taken = shotstream::config::TakeDatasetFlags(&argc, argv, &dataset_flags);
  if (!taken.ok()) return Fail(std::string(taken.message()));
  absl::ParseCommandLine(argc, argv);

  // Signals are taken by this thread with sigwait; block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&signals, sig);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto config = BuildConfig(dataset_flags);
  if (!config.ok()) return Fail(std::string(config.status().message()));
  const ServerConfig& cfg = *config;
  if (absl::GetFlag(FLAGS_check_config)) {
    absl::Status s = shotstream::server::CheckConfig(cfg);
    if (!s.ok()) return Fail(std::string(s.message()));
    std::printf("config OK: listen %s, %zu datasets:", cfg.listen.c_str(), cfg.datasets.size());
    for (const DatasetConfig& d : cfg.datasets) std::printf(" %s", d.name.c_str());
    std::printf("\n");
    return 0;
  }
  using shotstream::server::ShotStreamServer;
  if (absl::GetFlag(FLAGS_index_only)) return ShotStreamServer::IndexOnly(cfg) ? 0 : 1;

  shotstream::server::RunOptions run;
  if (!absl::ParseDuration(absl::GetFlag(FLAGS_drain_delay), &run.drain_delay)) {
    return Fail("--drain_delay: bad duration");
  }
  run.zero_copy = absl::GetFlag(FLAGS_zero_copy);
  run.log_streams = absl::GetFlag(FLAGS_log_streams);
  int64_t corrupt = 0;
  if (const std::string c = absl::GetFlag(FLAGS_testing_corrupt_shot); !c.empty()) {
    if (!absl::SimpleAtoi(c, &corrupt)) return Fail("--testing_corrupt_shot needs a shot id");
    run.corrupt_shot_for_testing = corrupt;
  }
  auto server = ShotStreamServer::Start(cfg, run);
  if (!server.ok()) return Fail(std::string(server.status().message()));
  std::printf("shotstream listening on %s\n", (*server)->address().c_str());
  std::fflush(stdout);

  for (;;) {
    int sig = 0;
    sigwait(&signals, &sig);
    if (sig != SIGHUP) break;
    const absl::Status s = (*server)->ReloadTokens();
    std::cerr << (s.ok() ? absl::StrCat("SIGHUP: tokens reloaded (", (*server)->token_count(), ")")
                         : absl::StrCat("SIGHUP: token file not reloaded, the old tokens stay: ",
                                        s.message()))
              << std::endl;
  }
  std::fprintf(stderr, "shotstream_server: signal: NOT_SERVING, draining streams (grace %s)\n",
               absl::FormatDuration(cfg.grace_period).c_str());
  (*server)->Drain();
  std::fprintf(stderr, "shotstream_server: stopped (%lld shots sent)\n",
               static_cast<long long>((*server)->shots_sent()));
  // Exit now: gRPC's shutdown in ~Server joins threads that poll every 10 s (it kept a
  // stopped server up to 10 s more). Sanitizer builds run every destructor, for checks.
  std::fflush(nullptr);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  std::_Exit(0);
#endif
  return 0;
}

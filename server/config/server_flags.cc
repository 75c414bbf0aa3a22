#include "server/config/server_flags.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "server/config/dataset_flags.h"

// Flags left at their "unset" value do not override --config.
ABSL_FLAG(std::string, config, "", "YAML configuration file (flags given here override it)");
ABSL_FLAG(std::string, listen, "", "HOST:PORT to listen on, 0 picks a port (0.0.0.0:50051)");
ABSL_FLAG(std::string, shot_key, "", "for --dataset flags: the shot's header field (field_record)");
ABSL_FLAG(std::string, byte_order, "", "for --dataset flags: auto (default), big or little");
ABSL_FLAG(std::string, io, "", "for --dataset flags: auto (mmap if local), pread or mmap");
ABSL_FLAG(std::string, catalog_dir, "", "where catalogs are kept (created if missing)");
ABSL_FLAG(std::string, job_dir, "",
          "where jobs record their progress, to resume after a restart (created if missing)");
ABSL_FLAG(std::string, write_dir, "",
          "where WriteShots creates NAME.sgy (created if missing); unset: writing is off");
ABSL_FLAG(std::string, auth_writers, "", "NAME,NAME,...: the tokens that may write datasets");
ABSL_FLAG(std::string, metrics_listen, "", "HOST:PORT for Prometheus metrics on /metrics");
ABSL_FLAG(std::string, auth_token_file, "", "bearer tokens, one per line; reloaded on SIGHUP");
ABSL_FLAG(std::string, auth_default, "", "allow or deny: what tokens not in --auth_allow read (allow)");
ABSL_FLAG(std::string, auth_allow, "", "NAME:DATASET+DATASET,...: the only datasets a token reads");
ABSL_FLAG(std::string, tls_cert, "", "server certificate (PEM)");  // with --tls_key
ABSL_FLAG(std::string, tls_key, "", "server private key (PEM)");
ABSL_FLAG(std::string, tls_client_ca, "", "require client certificates signed by this CA");
ABSL_FLAG(bool, check_config, false, "validate the configuration and its files, and exit");
ABSL_FLAG(bool, index_only, false, "build or check the catalogs, print a summary, and exit");
ABSL_FLAG(int, readers, -1, "reader threads shared by all streams (0: number of cores)");
ABSL_FLAG(int64_t, default_queue_depth, -1, "shots read ahead per stream when not asked (2)");
ABSL_FLAG(int64_t, max_queue_depth, -1, "largest queue depth a client may ask for (16)");
ABSL_FLAG(int64_t, default_chunk_bytes, -1, "sample bytes per message when not asked (1 MiB)");
ABSL_FLAG(int64_t, max_chunk_bytes, -1, "largest sample payload per message a client may ask "
          "(64 MiB); alone, it caps the default too");
ABSL_FLAG(bool, check_trace_lengths, false, "for --dataset flags: strict: refuse files whose "
          "trace headers (bytes 115-116) give another sample count than the binary header");
ABSL_FLAG(std::string, format, "", "for --dataset flags: auto (by name), segy, npy, hdf5 or zarr");
ABSL_FLAG(std::string, h5_path, "", "for --dataset flags: HDF5: the dataset of samples (/data)");
ABSL_FLAG(std::string, array_path, "",
          "for --dataset flags: the samples array inside a Zarr store (amplitude, data) or an "
          "HDF5 file");
ABSL_FLAG(double, sample_interval_us, -1, "for --dataset flags: the sample interval of files "
          "that do not say (.npy, HDF5 without the attribute)");
ABSL_FLAG(int64_t, max_gap_bytes, -1, "for --dataset flags: coalesce across gaps up to this");
ABSL_FLAG(int64_t, max_read_bytes, -1, "for --dataset flags: largest coalesced read (1 MiB)");
ABSL_FLAG(int64_t, max_streams, -1, "concurrent streams, all peers (256)");
ABSL_FLAG(int64_t, max_streams_per_peer, -1, "concurrent streams from one address (64)");
ABSL_FLAG(int64_t, max_writes, -1, "concurrent WriteShots calls, all peers (16)");
ABSL_FLAG(int64_t, max_shots_per_request, -1, "shot ids in one request (1000000)");
ABSL_FLAG(int64_t, max_inflight_bytes, -1, "decoded shot bytes all streams may hold (1 GiB)");
ABSL_FLAG(int64_t, piece_bytes, -1,
          "shots of more float32 bytes are read and sent in pieces of about this size "
          "(8 MiB; 0: every shot whole)");
ABSL_FLAG(int64_t, open_files, -1,
          "data files held open at once, least recently used closed first (0: half the "
          "descriptor limit)");
ABSL_FLAG(int64_t, crc_cache_bytes, -1,
          "bytes of CRC-32s kept for traces sent as stored, 8 a trace (256 MiB; 0: none)");
ABSL_FLAG(std::string, grace_period, "", "on SIGTERM, how long running streams may take (30s)");
ABSL_FLAG(std::string, on_bad_file, "", "a dataset with a file that does not open or scan: "
          "fail (the dataset is FAILED; the default) or skip (served without it, listed in "
          "DatasetInfo.bad_files)");
ABSL_FLAG(std::string, heal_interval, "", "how often FAILED datasets' files are looked at, "
          "to load them again once changed (10s); 0: only on SIGHUP");
ABSL_FLAG(std::string, drain_delay, "", "on SIGTERM, NOT_SERVING this long before closing (1s)");
ABSL_FLAG(std::string, stall_timeout, "", "a stream whose consumer takes nothing this long "
          "gives back its read-ahead, read again when it reads on (30s; 0s: never)");
ABSL_FLAG(std::string, keepalive_time, "", "HTTP/2 keepalive ping interval (60s)");
ABSL_FLAG(std::string, keepalive_timeout, "", "close a connection whose ping is unanswered (20s)");
ABSL_FLAG(std::optional<bool>, zero_copy, std::nullopt,
          "send IEEE samples of mapped files from the mapping itself (true)");
ABSL_FLAG(std::optional<bool>, log_streams, std::nullopt,
          "one stderr line when each stream starts and ends (true)");
ABSL_FLAG(std::string, testing_corrupt_shot, "", "testing only: corrupt this shot's samples");

namespace shotstream::config {
namespace {

template <typename T>
void OverrideIfSet(int64_t flag, T* field) {
  if (flag >= 0) *field = static_cast<T>(flag);
}
void OverrideIfSet(const std::string& flag, std::string* field) {
  if (!flag.empty()) *field = flag;
}
void OverrideIfSet(const std::optional<bool>& flag, bool* field) {
  if (flag.has_value()) *field = *flag;
}
absl::Status OverrideDuration(const char* name, const std::string& flag, absl::Duration* field) {
  if (flag.empty() || absl::ParseDuration(flag, field)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("--", name, ": bad duration '", flag, "' (e.g. 30s, 500ms)"));
}

// "alice:line1+line2,bob:line3" -> {alice: [line1, line2], bob: [line3]}.
absl::Status OverrideAllow(const std::string& flag,
                           std::map<std::string, std::vector<std::string>>* allow) {
  if (flag.empty()) return absl::OkStatus();
  allow->clear();
  for (absl::string_view entry : absl::StrSplit(flag, ',', absl::SkipEmpty())) {
    std::vector<std::string> parts = absl::StrSplit(entry, absl::MaxSplits(':', 1));
    if (parts.size() != 2 || parts[0].empty() || parts[1].empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--auth_allow: '", entry, "': expected NAME:DATASET[+DATASET...]"));
    }
    (*allow)[parts[0]] = absl::StrSplit(parts[1], '+', absl::SkipEmpty());
  }
  return absl::OkStatus();
}

// The --dataset flags of the command line, kept for RebuildServerConfig.
std::vector<std::string>& DatasetFlagsSeen() {
  static auto* flags = new std::vector<std::string>();
  return *flags;
}

absl::StatusOr<ServerConfig> BuildConfig(const std::vector<std::string>& dataset_flags) {
  ServerConfig c;
  if (const std::string path = absl::GetFlag(FLAGS_config); !path.empty()) {
    SS_ASSIGN_OR_RETURN(c, LoadServerConfig(path));
  }
  OverrideIfSet(absl::GetFlag(FLAGS_listen), &c.listen);
  OverrideIfSet(absl::GetFlag(FLAGS_catalog_dir), &c.catalog_dir);
  OverrideIfSet(absl::GetFlag(FLAGS_job_dir), &c.job_dir);
  OverrideIfSet(absl::GetFlag(FLAGS_write_dir), &c.write_dir);
  if (!absl::GetFlag(FLAGS_auth_writers).empty()) {
    c.auth_writers = absl::StrSplit(absl::GetFlag(FLAGS_auth_writers), ',', absl::SkipEmpty());
  }
  OverrideIfSet(absl::GetFlag(FLAGS_metrics_listen), &c.metrics_listen);
  OverrideIfSet(absl::GetFlag(FLAGS_auth_token_file), &c.auth_token_file);
  if (const std::string d = absl::GetFlag(FLAGS_auth_default); !d.empty()) {
    if (d != "allow" && d != "deny") {
      return absl::InvalidArgumentError("--auth_default: '" + d + "': expected allow or deny");
    }
    c.auth_default_deny = d == "deny";
  }
  SS_RETURN_IF_ERROR(OverrideAllow(absl::GetFlag(FLAGS_auth_allow), &c.auth_allow));
  OverrideIfSet(absl::GetFlag(FLAGS_tls_cert), &c.tls_cert);
  OverrideIfSet(absl::GetFlag(FLAGS_tls_key), &c.tls_key);
  OverrideIfSet(absl::GetFlag(FLAGS_tls_client_ca), &c.tls_client_ca);
  OverrideIfSet(absl::GetFlag(FLAGS_readers), &c.readers);
  OverrideIfSet(absl::GetFlag(FLAGS_default_queue_depth), &c.default_queue_depth);
  OverrideIfSet(absl::GetFlag(FLAGS_max_queue_depth), &c.max_queue_depth);
  OverrideIfSet(absl::GetFlag(FLAGS_default_chunk_bytes), &c.default_chunk_bytes);
  OverrideIfSet(absl::GetFlag(FLAGS_max_chunk_bytes), &c.max_chunk_bytes);
  OverrideIfSet(absl::GetFlag(FLAGS_max_streams), &c.max_streams);
  OverrideIfSet(absl::GetFlag(FLAGS_max_streams_per_peer), &c.max_streams_per_peer);
  OverrideIfSet(absl::GetFlag(FLAGS_max_writes), &c.max_writes);
  OverrideIfSet(absl::GetFlag(FLAGS_max_shots_per_request), &c.max_shots_per_request);
  OverrideIfSet(absl::GetFlag(FLAGS_max_inflight_bytes), &c.max_inflight_bytes);
  OverrideIfSet(absl::GetFlag(FLAGS_open_files), &c.open_files);
  OverrideIfSet(absl::GetFlag(FLAGS_crc_cache_bytes), &c.crc_cache_bytes);
  OverrideIfSet(absl::GetFlag(FLAGS_piece_bytes), &c.piece_bytes);
  SS_RETURN_IF_ERROR(
      OverrideDuration("grace_period", absl::GetFlag(FLAGS_grace_period), &c.grace_period));
  SS_RETURN_IF_ERROR(
      OverrideDuration("drain_delay", absl::GetFlag(FLAGS_drain_delay), &c.drain_delay));
  SS_RETURN_IF_ERROR(
      OverrideDuration("heal_interval", absl::GetFlag(FLAGS_heal_interval), &c.heal_interval));
  OverrideIfSet(absl::GetFlag(FLAGS_on_bad_file), &c.on_bad_file);
  SS_RETURN_IF_ERROR(
      OverrideDuration("stall_timeout", absl::GetFlag(FLAGS_stall_timeout), &c.stall_timeout));
  SS_RETURN_IF_ERROR(OverrideDuration("keepalive_time", absl::GetFlag(FLAGS_keepalive_time),
                                      &c.keepalive_time));
  SS_RETURN_IF_ERROR(OverrideDuration(
      "keepalive_timeout", absl::GetFlag(FLAGS_keepalive_timeout), &c.keepalive_timeout));
  OverrideIfSet(absl::GetFlag(FLAGS_zero_copy), &c.zero_copy);
  OverrideIfSet(absl::GetFlag(FLAGS_log_streams), &c.log_streams);
  for (const std::string& flag : dataset_flags) {
    SS_ASSIGN_OR_RETURN(auto split, SplitDatasetFlag(flag));
    DatasetConfig d;
    d.name = split.first;
    d.files = absl::StrSplit(split.second, ',', absl::SkipEmpty());
    OverrideIfSet(absl::GetFlag(FLAGS_shot_key), &d.shot_key);
    OverrideIfSet(absl::GetFlag(FLAGS_byte_order), &d.byte_order);
    OverrideIfSet(absl::GetFlag(FLAGS_io), &d.io);
    OverrideIfSet(absl::GetFlag(FLAGS_max_gap_bytes), &d.max_gap_bytes);
    OverrideIfSet(absl::GetFlag(FLAGS_max_read_bytes), &d.max_read_bytes);
    d.check_trace_lengths = absl::GetFlag(FLAGS_check_trace_lengths);
    OverrideIfSet(absl::GetFlag(FLAGS_format), &d.format);
    OverrideIfSet(absl::GetFlag(FLAGS_h5_path), &d.h5_path);
    OverrideIfSet(absl::GetFlag(FLAGS_array_path), &d.array_path);
    if (absl::GetFlag(FLAGS_sample_interval_us) >= 0) {
      d.sample_interval_us = absl::GetFlag(FLAGS_sample_interval_us);
    }
    c.datasets.push_back(std::move(d));
  }
  SS_RETURN_IF_ERROR(ValidateServerConfig(c));
  return c;
}

}  // namespace

absl::StatusOr<CommandLine> ParseServerCommandLine(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "shotstream_server --listen=HOST:PORT --dataset=NAME=GLOB [--dataset=...] [flags]\n   or: "
      "shotstream_server --config=FILE.yaml [flags]\n\n--dataset=NAME=GLOB serves the files "
      "GLOB matches (sorted; patterns with commas). The flags 'for --dataset flags' (--shot_key: "
      "field_record, energy_source_point, inline, crossline, byte:N or source_xy; --byte_order, "
      "--io, --max_gap_bytes, --max_read_bytes, --check_trace_lengths, --format, --h5_path, "
      "--array_path, --sample_interval_us) apply to every --dataset "
      "flag alike; datasets with different settings go in --config, which every other flag "
      "overrides.");
  absl::FlagsUsageConfig usage;  // --help: this file's flags
  usage.contains_help_flags = [](absl::string_view f) {
    return absl::EndsWith(f, "server/config/server_flags.cc");
  };
  usage.contains_helpshort_flags = usage.contains_help_flags;
  absl::SetFlagsUsageConfig(usage);
  std::vector<std::string>& dataset_flags = DatasetFlagsSeen();
  SS_RETURN_IF_ERROR(TakeDatasetFlags(&argc, argv, &dataset_flags));
  absl::ParseCommandLine(argc, argv);

  CommandLine out;
  SS_ASSIGN_OR_RETURN(out.config, BuildConfig(dataset_flags));
  out.check_config = absl::GetFlag(FLAGS_check_config);
  out.index_only = absl::GetFlag(FLAGS_index_only);
  if (const std::string c = absl::GetFlag(FLAGS_testing_corrupt_shot); !c.empty()) {
    int64_t id = 0;
    if (!absl::SimpleAtoi(c, &id)) {
      return absl::InvalidArgumentError("--testing_corrupt_shot needs a shot id");
    }
    out.corrupt_shot_for_testing = id;
  }
  return out;
}

absl::StatusOr<ServerConfig> RebuildServerConfig() { return BuildConfig(DatasetFlagsSeen()); }

}  // namespace shotstream::config

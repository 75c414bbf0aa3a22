// The server's settings: defaults, then a YAML file (--config), then command-line flags.
//
// Thread-compatible value types; parsing is pure.
#ifndef SHOTSTREAM_SERVER_CONFIG_SERVER_CONFIG_H_
#define SHOTSTREAM_SERVER_CONFIG_SERVER_CONFIG_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/config/defaults.h"

namespace shotstream::config {

struct DatasetConfig {
  std::string name;
  std::vector<std::string> files;  // glob patterns
  std::string shot_key = "field_record";
  std::string io = "auto";         // auto (mmap on local filesystems, else pread), pread, mmap
  std::string byte_order = "auto";  // auto, big or little
  uint64_t max_gap_bytes = 64 * 1024;
  uint64_t max_read_bytes = 1 << 20;  // largest coalesced read
  bool check_trace_lengths = false;  // strict: refuse traces whose header gives another length
  std::string format = "auto";       // auto (by name and content), segy, npy, hdf5 or zarr
  std::string h5_path = "/data";     // HDF5: the dataset of samples
  // The samples array inside a store or file (Zarr: "amplitude", "seismic/data"; HDF5: as
  // h5_path); empty: the format's default.
  std::string array_path;
  double sample_interval_us = 0;     // for files that do not say (.npy); 0: unknown
  // fail (the dataset is FAILED by one bad file) or skip (served without its bad files,
  // listed in DatasetInfo.bad_files); empty: the server's on_bad_file.
  std::string on_bad_file;
};

struct ServerConfig {
  std::string listen = "0.0.0.0:50051";
  std::string catalog_dir;
  // Where jobs (StreamJob) record their progress, to resume after a restart (created if
  // missing); empty: in memory only. Jobs with no consumer for job_idle_timeout are dropped.
  std::string job_dir;
  absl::Duration job_idle_timeout = absl::Minutes(30);
  // A stream whose consumer has taken nothing for this long gives back the shots it read
  // ahead (read again when it reads on); 0: never.
  absl::Duration stall_timeout = absl::Seconds(30);
  std::string metrics_listen;  // HOST:PORT for Prometheus text on /metrics; empty: off
  int readers = 0;             // 0: number of cores
  uint32_t default_queue_depth = defaults::kDefaultQueueDepth;
  uint32_t max_queue_depth = defaults::kMaxQueueDepth;
  // Sample bytes per message when a request does not ask, and the most it may ask. A
  // configuration that sets only max_chunk_bytes (its meaning before the split) gets
  // default_chunk_bytes = min(its default, max_chunk_bytes): see ResolveChunkBytes.
  uint64_t default_chunk_bytes = 0;  // 0: not set
  uint64_t max_chunk_bytes = defaults::kMaxChunkBytes;
  uint64_t max_shots_per_request = defaults::kMaxShotsPerRequest;
  uint32_t max_streams = defaults::kMaxStreams;                   // all peers
  uint32_t max_streams_per_peer = defaults::kMaxStreamsPerPeer;   // one peer address
  uint32_t max_writes = defaults::kMaxWrites;                     // WriteShots at once
  uint64_t max_inflight_bytes = defaults::kMaxInflightBytes;      // decoded, all streams
  // Shots of more float32 bytes are read, encoded and sent in pieces of about this size
  // (whole chunks), so that a stream holds pieces, not gigabyte gathers; 0: never.
  uint64_t piece_bytes = defaults::kPieceBytes;
  // Data files (SEG-Y, SU, .npy) held open at once, least recently used closed first;
  // 0: half the descriptor limit (raised to the hard limit at start), 16..32768.
  uint64_t open_files = 0;
  // Bytes of the CRC-32s kept for traces sent as stored (8 a trace, in blocks of a file:
  // server/io/trace_crcs.h); a file refused a block has its CRCs computed on every send.
  uint64_t crc_cache_bytes = uint64_t{256} << 20;
  absl::Duration grace_period = absl::Seconds(30);
  // On SIGTERM: how long health says NOT_SERVING (and new streams are refused) before
  // the listener closes, so that load balancers move on first.
  absl::Duration drain_delay = absl::Seconds(1);
  // Send IEEE samples of mapped files from the mapping itself (docs/server.md).
  bool zero_copy = true;
  bool log_streams = true;  // a stderr line when each stream starts and ends
  absl::Duration keepalive_time = absl::Seconds(60);
  absl::Duration keepalive_timeout = absl::Seconds(20);
  // TLS: server certificate and key (PEM); with client_ca, clients must present a
  // certificate signed by it (mTLS).
  std::string tls_cert;
  std::string tls_key;
  std::string tls_client_ca;
  std::string auth_token_file;  // bearer tokens, one per line: TOKEN or NAME TOKEN
  // auth.allow: per token name, the only datasets that token may read.
  std::map<std::string, std::vector<std::string>> auth_allow;
  // auth.default: "allow" (tokens not named under auth.allow read every dataset) or
  // "deny" (they read nothing).
  bool auth_default_deny = false;
  // auth.writers: the token names that may create datasets (WriteShots); with tokens on
  // and none named, no token may.
  std::vector<std::string> auth_writers;
  // Where WriteShots creates NAME.sgy (created if missing); empty: writing is off. Its
  // NAME.sgy files are served as datasets NAME at start-up.
  std::string write_dir;
  std::vector<DatasetConfig> datasets;
  // What a dataset with a file that does not open or scan does: fail or skip (see
  // DatasetConfig::on_bad_file, which overrides it per dataset).
  std::string on_bad_file = "fail";
  // How often a FAILED dataset's files (or those skipped) are looked at: changed, it is
  // loaded again; 0: only on SIGHUP.
  absl::Duration heal_interval = absl::Seconds(10);
};

// Every field alike.
bool operator==(const DatasetConfig& a, const DatasetConfig& b);

// The keys of the settings other than datasets and on_bad_file whose values differ
// between `a` and `b` ("listen", "limits.max_streams", ...): those a SIGHUP reload does
// not apply.
std::vector<std::string> SettingsThatDiffer(const ServerConfig& a, const ServerConfig& b);

// The on_bad_file that holds for `d` under `c`.
inline const std::string& OnBadFile(const ServerConfig& c, const DatasetConfig& d) {
  return d.on_bad_file.empty() ? c.on_bad_file : d.on_bad_file;
}

// Parses YAML text. Errors name the source, the key path (e.g. datasets[1].shot_key) and
// the reason; unknown keys are errors, so typos do not pass silently.
absl::StatusOr<ServerConfig> ParseServerConfig(const std::string& yaml, const std::string& source);
absl::StatusOr<ServerConfig> LoadServerConfig(const std::string& path);

// The chunk sizes a finished configuration means: default_chunk_bytes, when not set,
// becomes min(defaults::kDefaultChunkBytes, max_chunk_bytes).
uint64_t ResolvedDefaultChunkBytes(const ServerConfig& config);

// Checks a finished configuration (after flags were applied): at least one dataset (or a
// write_dir: a server that only receives writes at first),
// unique valid names, known modes, limits > 0, TLS cert and key together. Formats and
// shot keys are checked by the server against its formats (server/app CheckFormats).
absl::Status ValidateServerConfig(const ServerConfig& config);

}  // namespace shotstream::config

#endif  // SHOTSTREAM_SERVER_CONFIG_SERVER_CONFIG_H_

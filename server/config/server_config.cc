#include "server/config/server_config.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <tuple>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/config/dataset_flags.h"
#include "server/io/io_mode.h"
#include "yaml-cpp/yaml.h"

namespace shotstream::config {
namespace {

absl::Status KeyError(const std::string& source, const std::string& key, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": ", key, ": ", why));
}

absl::Status CheckKeys(const YAML::Node& node, const std::string& source,
                       const std::string& where, const std::set<std::string>& known) {
  if (!node.IsMap()) return KeyError(source, where.empty() ? "(top)" : where, "expected a map");
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    if (!known.count(key)) {
      return KeyError(source, where.empty() ? key : absl::StrCat(where, ".", key),
                      absl::StrCat("unknown key (known: ", absl::StrJoin(known, ", "), ")"));
    }
  }
  return absl::OkStatus();
}

// Reads node[key] into *out when present, with the key path in any error.
template <typename T>
absl::Status Get(const YAML::Node& node, const std::string& key, const std::string& source,
                 const std::string& where, T* out) {
  const YAML::Node v = node[key];
  if (!v) return absl::OkStatus();
  try {
    *out = v.as<T>();
  } catch (const YAML::Exception& e) {
    return KeyError(source, where.empty() ? key : absl::StrCat(where, ".", key),
                    absl::StrCat("bad value '", YAML::Dump(v), "'"));
  }
  return absl::OkStatus();
}

absl::Status GetDuration(const YAML::Node& node, const std::string& key,
                         const std::string& source, absl::Duration* out) {
  std::string text;
  if (absl::Status s = Get(node, key, source, "", &text); !s.ok()) return s;
  if (text.empty()) return absl::OkStatus();
  if (!absl::ParseDuration(text, out)) {
    return KeyError(source, key, absl::StrCat("bad duration '", text, "' (e.g. 30s, 500ms)"));
  }
  return absl::OkStatus();
}

#define SS_CFG(expr)                  \
  do {                                \
    absl::Status s_ = (expr);         \
    if (!s_.ok()) return s_;          \
  } while (0)

}  // namespace

absl::StatusOr<ServerConfig> ParseServerConfig(const std::string& yaml, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": line ", e.mark.line + 1,
                                                   ": YAML syntax: ", e.msg));
  }
  ServerConfig c;
  if (!root || root.IsNull()) return c;
  SS_CFG(CheckKeys(root, source, "",
                   {"listen", "catalog_dir", "metrics_listen", "readers", "limits", "tls",
                    "auth", "datasets", "grace_period", "drain_delay", "keepalive",
                    "zero_copy", "log_streams", "job_dir", "job_idle_timeout", "write_dir",
                    "stall_timeout", "on_bad_file", "heal_interval"}));
  SS_CFG(Get(root, "listen", source, "", &c.listen));
  SS_CFG(Get(root, "catalog_dir", source, "", &c.catalog_dir));
  SS_CFG(Get(root, "metrics_listen", source, "", &c.metrics_listen));
  SS_CFG(Get(root, "readers", source, "", &c.readers));
  SS_CFG(GetDuration(root, "grace_period", source, &c.grace_period));
  SS_CFG(GetDuration(root, "drain_delay", source, &c.drain_delay));
  SS_CFG(Get(root, "zero_copy", source, "", &c.zero_copy));
  SS_CFG(Get(root, "log_streams", source, "", &c.log_streams));
  SS_CFG(Get(root, "job_dir", source, "", &c.job_dir));
  SS_CFG(Get(root, "write_dir", source, "", &c.write_dir));
  SS_CFG(GetDuration(root, "job_idle_timeout", source, &c.job_idle_timeout));
  SS_CFG(GetDuration(root, "stall_timeout", source, &c.stall_timeout));
  SS_CFG(Get(root, "on_bad_file", source, "", &c.on_bad_file));
  SS_CFG(GetDuration(root, "heal_interval", source, &c.heal_interval));
  if (const YAML::Node k = root["keepalive"]) {
    SS_CFG(CheckKeys(k, source, "keepalive", {"time", "timeout"}));
    SS_CFG(GetDuration(k, "time", source, &c.keepalive_time));
    SS_CFG(GetDuration(k, "timeout", source, &c.keepalive_timeout));
  }
  if (const YAML::Node l = root["limits"]) {
    SS_CFG(CheckKeys(l, source, "limits",
                     {"default_queue_depth", "max_queue_depth", "default_chunk_bytes",
                      "max_chunk_bytes",
                      "max_shots_per_request", "max_streams", "max_streams_per_peer", "max_writes",
                      "max_inflight_bytes", "piece_bytes", "open_files", "crc_cache_bytes"}));
    SS_CFG(Get(l, "default_queue_depth", source, "limits", &c.default_queue_depth));
    SS_CFG(Get(l, "max_queue_depth", source, "limits", &c.max_queue_depth));
    SS_CFG(Get(l, "default_chunk_bytes", source, "limits", &c.default_chunk_bytes));
    SS_CFG(Get(l, "max_chunk_bytes", source, "limits", &c.max_chunk_bytes));
    SS_CFG(Get(l, "max_shots_per_request", source, "limits", &c.max_shots_per_request));
    SS_CFG(Get(l, "max_streams", source, "limits", &c.max_streams));
    SS_CFG(Get(l, "max_streams_per_peer", source, "limits", &c.max_streams_per_peer));
    SS_CFG(Get(l, "max_writes", source, "limits", &c.max_writes));
    SS_CFG(Get(l, "max_inflight_bytes", source, "limits", &c.max_inflight_bytes));
    SS_CFG(Get(l, "open_files", source, "limits", &c.open_files));
    SS_CFG(Get(l, "crc_cache_bytes", source, "limits", &c.crc_cache_bytes));
    SS_CFG(Get(l, "piece_bytes", source, "limits", &c.piece_bytes));
  }
  if (const YAML::Node t = root["tls"]) {
    SS_CFG(CheckKeys(t, source, "tls", {"cert", "key", "client_ca"}));
    SS_CFG(Get(t, "cert", source, "tls", &c.tls_cert));
    SS_CFG(Get(t, "key", source, "tls", &c.tls_key));
    SS_CFG(Get(t, "client_ca", source, "tls", &c.tls_client_ca));
  }
  if (const YAML::Node a = root["auth"]) {
    SS_CFG(CheckKeys(a, source, "auth", {"token_file", "allow", "default", "writers"}));
    SS_CFG(Get(a, "writers", source, "auth", &c.auth_writers));
    SS_CFG(Get(a, "token_file", source, "auth", &c.auth_token_file));
    std::string default_rule = "allow";
    SS_CFG(Get(a, "default", source, "auth", &default_rule));
    if (default_rule != "allow" && default_rule != "deny") {
      return KeyError(source, "auth.default",
                      absl::StrCat("'", default_rule, "': expected allow or deny"));
    }
    c.auth_default_deny = default_rule == "deny";
    if (const YAML::Node allow = a["allow"]) {
      if (!allow.IsMap()) return KeyError(source, "auth.allow", "expected a map NAME: [datasets]");
      for (const auto& kv : allow) {
        const std::string name = kv.first.as<std::string>();
        std::vector<std::string> sets;
        SS_CFG(Get(allow, name, source, "auth.allow", &sets));
        c.auth_allow[name] = sets;
      }
    }
  }
  if (const YAML::Node ds = root["datasets"]) {
    if (!ds.IsSequence()) return KeyError(source, "datasets", "expected a list");
    for (size_t i = 0; i < ds.size(); ++i) {
      const std::string where = absl::StrCat("datasets[", i, "]");
      const YAML::Node d = ds[i];
      SS_CFG(CheckKeys(d, source, where,
                       {"name", "files", "shot_key", "io", "byte_order", "max_gap_bytes",
                        "max_read_bytes", "check_trace_lengths", "format", "h5_path",
                        "array_path", "sample_interval_us", "on_bad_file"}));
      DatasetConfig dc;
      SS_CFG(Get(d, "name", source, where, &dc.name));
      if (const YAML::Node f = d["files"]) {
        if (f.IsScalar()) {
          dc.files.push_back(f.as<std::string>());
        } else {
          SS_CFG(Get(d, "files", source, where, &dc.files));
        }
      }
      SS_CFG(Get(d, "shot_key", source, where, &dc.shot_key));
      SS_CFG(Get(d, "io", source, where, &dc.io));
      SS_CFG(Get(d, "byte_order", source, where, &dc.byte_order));
      SS_CFG(Get(d, "max_gap_bytes", source, where, &dc.max_gap_bytes));
      SS_CFG(Get(d, "max_read_bytes", source, where, &dc.max_read_bytes));
      SS_CFG(Get(d, "check_trace_lengths", source, where, &dc.check_trace_lengths));
      SS_CFG(Get(d, "format", source, where, &dc.format));
      SS_CFG(Get(d, "h5_path", source, where, &dc.h5_path));
      SS_CFG(Get(d, "array_path", source, where, &dc.array_path));
      SS_CFG(Get(d, "sample_interval_us", source, where, &dc.sample_interval_us));
      SS_CFG(Get(d, "on_bad_file", source, where, &dc.on_bad_file));
      if (dc.name.empty()) return KeyError(source, where + ".name", "missing");
      if (dc.files.empty()) return KeyError(source, where + ".files", "missing");
      c.datasets.push_back(std::move(dc));
    }
  }
  return c;
}

bool operator==(const DatasetConfig& a, const DatasetConfig& b) {
  auto fields = [](const DatasetConfig& d) {
    return std::tie(d.name, d.files, d.shot_key, d.io, d.byte_order, d.max_gap_bytes,
                    d.max_read_bytes, d.check_trace_lengths, d.format, d.h5_path, d.array_path,
                    d.sample_interval_us, d.on_bad_file);
  };
  return fields(a) == fields(b);
}

std::vector<std::string> SettingsThatDiffer(const ServerConfig& a, const ServerConfig& b) {
  const std::pair<const char*, bool> settings[] = {
      {"listen", a.listen != b.listen},
      {"catalog_dir", a.catalog_dir != b.catalog_dir},
      {"job_dir", a.job_dir != b.job_dir},
      {"job_idle_timeout", a.job_idle_timeout != b.job_idle_timeout},
      {"stall_timeout", a.stall_timeout != b.stall_timeout},
      {"metrics_listen", a.metrics_listen != b.metrics_listen},
      {"readers", a.readers != b.readers},
      {"limits.default_queue_depth", a.default_queue_depth != b.default_queue_depth},
      {"limits.max_queue_depth", a.max_queue_depth != b.max_queue_depth},
      {"limits.default_chunk_bytes", a.default_chunk_bytes != b.default_chunk_bytes},
      {"limits.max_chunk_bytes", a.max_chunk_bytes != b.max_chunk_bytes},
      {"limits.max_shots_per_request", a.max_shots_per_request != b.max_shots_per_request},
      {"limits.max_streams", a.max_streams != b.max_streams},
      {"limits.max_streams_per_peer", a.max_streams_per_peer != b.max_streams_per_peer},
      {"limits.max_writes", a.max_writes != b.max_writes},
      {"limits.max_inflight_bytes", a.max_inflight_bytes != b.max_inflight_bytes},
      {"limits.piece_bytes", a.piece_bytes != b.piece_bytes},
      {"limits.open_files", a.open_files != b.open_files},
      {"limits.crc_cache_bytes", a.crc_cache_bytes != b.crc_cache_bytes},
      {"grace_period", a.grace_period != b.grace_period},
      {"drain_delay", a.drain_delay != b.drain_delay},
      {"zero_copy", a.zero_copy != b.zero_copy},
      {"log_streams", a.log_streams != b.log_streams},
      {"keepalive.time", a.keepalive_time != b.keepalive_time},
      {"keepalive.timeout", a.keepalive_timeout != b.keepalive_timeout},
      {"tls", a.tls_cert != b.tls_cert || a.tls_key != b.tls_key ||
                  a.tls_client_ca != b.tls_client_ca},
      {"auth.token_file", a.auth_token_file != b.auth_token_file},
      {"auth.allow", a.auth_allow != b.auth_allow},
      {"auth.default", a.auth_default_deny != b.auth_default_deny},
      {"auth.writers", a.auth_writers != b.auth_writers},
      {"write_dir", a.write_dir != b.write_dir},
      {"heal_interval", a.heal_interval != b.heal_interval},
  };
  std::vector<std::string> differ;
  for (const auto& [key, differs] : settings) {
    if (differs) differ.push_back(key);
  }
  return differ;
}

absl::StatusOr<ServerConfig> LoadServerConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot read config file"));
  std::stringstream text;
  text << in.rdbuf();
  return ParseServerConfig(text.str(), path);
}

absl::Status ValidateServerConfig(const ServerConfig& c) {
  if (c.datasets.empty() && c.write_dir.empty()) {
    return absl::InvalidArgumentError(
        "no dataset: pass --dataset=NAME=GLOB, list datasets in --config, or give "
        "--write_dir=DIR for a server that receives datasets (WriteShots)");
  }
  std::set<std::string> names;
  for (size_t i = 0; i < c.datasets.size(); ++i) {
    const DatasetConfig& d = c.datasets[i];
    const std::string where = absl::StrCat("datasets[", i, "] (", d.name, ")");
    if (absl::Status s = ValidateDatasetName(d.name); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ".name: ", s.message()));
    }
    if (!names.insert(d.name).second) {
      return absl::InvalidArgumentError(absl::StrCat(where, ".name: given twice"));
    }
    // The format and the shot key are the format registry's to check (server/app).
    if (d.shot_key.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ".shot_key: empty"));
    }
    if (d.format.empty()) return absl::InvalidArgumentError(absl::StrCat(where, ".format: empty"));
    if (auto m = io::ParseIoMode(d.io); !m.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ".", m.status().message()));
    }
    if (!(d.sample_interval_us >= 0) || !std::isfinite(d.sample_interval_us)) {
      return absl::InvalidArgumentError(absl::StrCat(where, ".sample_interval_us: ",
                                                     d.sample_interval_us, " (expected >= 0)"));
    }
    if (!d.on_bad_file.empty() && d.on_bad_file != "fail" && d.on_bad_file != "skip") {
      return absl::InvalidArgumentError(absl::StrCat(where, ".on_bad_file: '", d.on_bad_file,
                                                     "' (expected fail or skip)"));
    }
    if (d.h5_path.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ".h5_path: empty"));
    }
    if (d.byte_order != "auto" && d.byte_order != "big" && d.byte_order != "little") {
      return absl::InvalidArgumentError(absl::StrCat(where, ".byte_order: '", d.byte_order,
                                                     "' (expected auto, big or little)"));
    }
  }
  if (c.max_queue_depth == 0 || c.default_queue_depth == 0 ||
      c.default_queue_depth > c.max_queue_depth) {
    return absl::InvalidArgumentError(
        "limits: need 0 < default_queue_depth <= max_queue_depth");
  }
  if (c.max_chunk_bytes < 1024) {
    return absl::InvalidArgumentError("limits.max_chunk_bytes: at least 1024");
  }
  if (c.piece_bytes != 0 && c.piece_bytes < 1024) {
    return absl::InvalidArgumentError("limits.piece_bytes: 0 (never) or at least 1024");
  }
  if (c.default_chunk_bytes != 0 &&
      (c.default_chunk_bytes < 1024 || c.default_chunk_bytes > c.max_chunk_bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "limits.default_chunk_bytes: ", c.default_chunk_bytes,
        " must be at least 1024 and at most limits.max_chunk_bytes (", c.max_chunk_bytes, ")"));
  }
  if (c.drain_delay < absl::ZeroDuration() || c.grace_period < absl::ZeroDuration() ||
      c.stall_timeout < absl::ZeroDuration() || c.heal_interval < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "drain_delay, grace_period, stall_timeout and heal_interval must not be negative");
  }
  if (c.on_bad_file != "fail" && c.on_bad_file != "skip") {
    return absl::InvalidArgumentError(
        absl::StrCat("on_bad_file: '", c.on_bad_file, "' (expected fail or skip)"));
  }
  if (c.max_streams == 0 || c.max_streams_per_peer == 0 || c.max_shots_per_request == 0 ||
      c.max_inflight_bytes == 0 || c.max_writes == 0) {
    return absl::InvalidArgumentError("limits: max_streams, max_streams_per_peer, max_writes, "
                                      "max_shots_per_request and max_inflight_bytes must be > 0");
  }
  for (const auto& [name, sets] : c.auth_allow) {
    for (const std::string& d : sets) {
      if (!names.count(d)) {
        return absl::InvalidArgumentError(absl::StrCat("auth.allow.", name, ": unknown dataset '",
                                                       d, "'"));
      }
    }
  }
  if (!c.auth_writers.empty() && c.auth_token_file.empty()) {
    return absl::InvalidArgumentError("auth.writers needs auth.token_file");
  }
  if (!c.auth_allow.empty() && c.auth_token_file.empty()) {
    return absl::InvalidArgumentError("auth.allow needs auth.token_file");
  }
  if (c.auth_default_deny && c.auth_token_file.empty()) {
    return absl::InvalidArgumentError("auth.default: deny needs auth.token_file");
  }
  for (const auto& [key, value] : {std::pair<const char*, const std::string&>{"listen", c.listen},
                                   {"metrics_listen", c.metrics_listen}}) {
    if (value.empty() && std::string(key) == "metrics_listen") continue;
    const size_t colon = value.rfind(':');
    int port = -1;
    if (colon == std::string::npos || !absl::SimpleAtoi(value.substr(colon + 1), &port) ||
        port < 0 || port > 65535) {
      return absl::InvalidArgumentError(absl::StrCat(
          key, " '", value, "': expected HOST:PORT with a port number (0 picks a free one)"));
    }
  }
  if (c.tls_cert.empty() != c.tls_key.empty()) {
    return absl::InvalidArgumentError("tls: cert and key go together");
  }
  if (!c.tls_client_ca.empty() && c.tls_cert.empty()) {
    return absl::InvalidArgumentError("tls.client_ca needs tls.cert and tls.key");
  }
  return absl::OkStatus();
}

uint64_t ResolvedDefaultChunkBytes(const ServerConfig& c) {
  return c.default_chunk_bytes != 0 ? c.default_chunk_bytes
                                    : std::min(defaults::kDefaultChunkBytes, c.max_chunk_bytes);
}

}  // namespace shotstream::config

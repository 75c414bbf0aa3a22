// The server's command line: its flags, and the configuration they make (defaults, then
// --config's YAML, then every flag given; a flag not given overrides nothing). Every
// setting of ServerConfig has a flag here and a key in the YAML.
//
// Not thread-safe: call once, from main, before any thread starts.
#ifndef SHOTSTREAM_SERVER_CONFIG_SERVER_FLAGS_H_
#define SHOTSTREAM_SERVER_CONFIG_SERVER_FLAGS_H_

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "server/config/server_config.h"

namespace shotstream::config {

struct CommandLine {
  ServerConfig config;  // validated
  bool check_config = false;
  bool index_only = false;
  std::optional<int64_t> corrupt_shot_for_testing;
};

// Parses argv (--help prints the flags of this file and exits). Errors name the flag or
// the YAML key, and the reason.
absl::StatusOr<CommandLine> ParseServerCommandLine(int argc, char** argv);

// SIGHUP: the configuration made again from the same command line, --config's file read
// anew. Call after ParseServerCommandLine, from the thread that called it.
absl::StatusOr<ServerConfig> RebuildServerConfig();

}  // namespace shotstream::config

#endif  // SHOTSTREAM_SERVER_CONFIG_SERVER_FLAGS_H_

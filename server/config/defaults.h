// Every default of the server's limits, in one place: ServerConfig, the service's options
// and the request limits all start from these.
#ifndef SHOTSTREAM_SERVER_CONFIG_DEFAULTS_H_
#define SHOTSTREAM_SERVER_CONFIG_DEFAULTS_H_

#include <cstdint>

namespace shotstream::defaults {

inline constexpr uint32_t kDefaultQueueDepth = 2;   // shots read ahead when not asked
inline constexpr uint32_t kMaxQueueDepth = 16;      // the most a request may ask
// Sample bytes per message when a request does not ask (1 MiB: docs/server.md), and the
// most a request may ask.
inline constexpr uint64_t kDefaultChunkBytes = uint64_t{1} << 20;
inline constexpr uint64_t kMaxChunkBytes = uint64_t{64} << 20;
inline constexpr uint64_t kMaxShotsPerRequest = 1'000'000;
inline constexpr uint32_t kMaxStreams = 256;         // concurrent streams, all peers
inline constexpr uint32_t kMaxStreamsPerPeer = 64;   // from one peer address
inline constexpr uint32_t kMaxWrites = 16;           // concurrent WriteShots calls
inline constexpr uint64_t kMaxInflightBytes = uint64_t{1} << 30;  // decoded bytes held
// Shots of more float32 bytes go in pieces of about this size (docs/server.md).
inline constexpr uint64_t kPieceBytes = uint64_t{8} << 20;

}  // namespace shotstream::defaults

#endif  // SHOTSTREAM_SERVER_CONFIG_DEFAULTS_H_

// The chunk cut, written once: how many whole traces one message of a shot holds, for the
// server's reads (Dataset: each chunk's traces) and the clients' writes (each ShotPart).
// The Python fallback's writes mirror it (shotstream/fallback.py). Thread-safe.
#ifndef SHOTSTREAM_WIRE_CHUNK_CUT_H_
#define SHOTSTREAM_WIRE_CHUNK_CUT_H_

#include <algorithm>
#include <cstdint>

namespace shotstream::wire {

// Traces of `trace_bytes` each that fit in `max_chunk_bytes`: at least one (a trace larger
// than the limit goes alone), whole traces only.
inline uint64_t TracesPerChunk(uint64_t max_chunk_bytes, uint64_t trace_bytes) {
  return std::max<uint64_t>(1, max_chunk_bytes / std::max<uint64_t>(trace_bytes, 1));
}

}  // namespace shotstream::wire

#endif  // SHOTSTREAM_WIRE_CHUNK_CUT_H_

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

// The largest gap a trace of `trace_bytes` may be sent with (ShotChunk.trace_gap, the
// stored header that follows it): 1/32 of it, so that the headers sent along cost a link
// at most about 3% of its bytes.
inline uint64_t MaxTraceGap(uint64_t trace_bytes) { return trace_bytes / 32; }

// The same, for traces that may go with gaps of up to MaxTraceGap between them: k traces
// take k x trace_bytes + (k - 1) x gap, within `max_chunk_bytes` still (so that a message
// fits the client's socket reads as one without gaps does).
inline uint64_t TracesPerGappedChunk(uint64_t max_chunk_bytes, uint64_t trace_bytes) {
  const uint64_t gap = MaxTraceGap(trace_bytes);
  return std::max<uint64_t>(1, (max_chunk_bytes + gap) / std::max<uint64_t>(trace_bytes + gap, 1));
}

}  // namespace shotstream::wire

#endif  // SHOTSTREAM_WIRE_CHUNK_CUT_H_

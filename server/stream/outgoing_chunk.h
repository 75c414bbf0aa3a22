// OutgoingChunk: one chunk as the window hands it to the writer, and TakeChunk, which
// cuts chunk c out of a read unit and frames it (wire::ChunkWriter).
//
// Plain data; TakeChunk is thread-compatible (it moves the chunk's samples out of the shot).
#ifndef SHOTSTREAM_SERVER_STREAM_OUTGOING_CHUNK_H_
#define SHOTSTREAM_SERVER_STREAM_OUTGOING_CHUNK_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/sample_buffer.h"
#include "server/dataset/shot_data.h"
#include "server/io/stored_traces.h"
#include "wire/chunk_writer.h"
#include "shotstream/v1/shotstream.pb.h"

namespace shotstream::stream {

// One chunk to send: `meta` is a ShotChunk without samples; the samples are either
// decoded (`samples`) or stored traces (`stored`, `trace_bytes` each, in file mappings
// that `stored_set` holds open, as the message's slices do until written: traces
// [stored_first, + stored.size()) of `stored_set`; with `trace_gaps`, float32 traces
// that lie evenly spaced may go with the gaps between them, wire::EncodeStoredChunk).
struct OutgoingChunk {
  v1::ShotChunk meta;
  SampleBuffer samples;
  std::vector<const uint8_t*> stored;
  size_t trace_bytes = 0;
  std::shared_ptr<const io::StoredTraces> stored_set;
  size_t stored_first = 0;
  bool trace_gaps = false;
  uint64_t sample_bytes() const {
    return stored.empty() ? samples.size() : uint64_t{trace_bytes} * stored.size();
  }
};

// Where the chunk lies in the stream: the shot's position, and the unit's piece.
struct ChunkAt {
  size_t index = 0;
  uint32_t piece = 0;
  size_t chunk = 0;  // within the unit
  double sample_interval_us = 0;
};

// Cuts chunk `at.chunk` of unit `shot` into `out` (its samples moved out of the shot, or
// its stored traces' addresses) and frames it with `writer`, sealed with its CRC-32 where
// the shot has its chunks' (chunk_crc32: decoded chunks, and stored ones whose traces'
// CRC-32s were all kept); else unsealed (the caller takes the CRC-32, then Seal).
// A shot's first chunk carries its header columns (moved out of a shot read whole) and
// raw trace headers. `trace_gaps`: the client set accept_trace_gaps. Returns the chunk's
// traces.
uint32_t TakeChunk(dataset::ShotData& shot, const ChunkAt& at, bool last, bool trace_gaps,
                   wire::ChunkWriter* writer, OutgoingChunk* out);

}  // namespace shotstream::stream

#endif  // SHOTSTREAM_SERVER_STREAM_OUTGOING_CHUNK_H_

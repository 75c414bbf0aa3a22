// ChunkWriter: frames one stream's chunks, shot after shot, in the order they are sent:
// each chunk's place in its shot (the traces framed before it), its CRC-32, and, on a
// shot's last chunk, the shot's CRC-32 (the join of its chunks'). What each chunk
// carries is chunk_plan.h's rule; this keeps the running state that rule needs, so the
// server's window keeps none of it.
//
// Thread-compatible: one writer frames and seals, a chunk at a time.
#ifndef SHOTSTREAM_WIRE_CHUNK_WRITER_H_
#define SHOTSTREAM_WIRE_CHUNK_WRITER_H_

#include <cstdint>

#include "wire/chunk_plan.h"
#include "shotstream/v1/shotstream.pb.h"

namespace shotstream::wire {

class ChunkWriter {
 public:
  // Frames the next chunk of the shot `frame` into `meta` (cleared first, PlanChunk):
  // `traces` whole traces after those framed so far of this shot (from trace 0 when
  // `first_of_shot`), carrying `payload_bytes` of samples; `last`: the shot's last chunk.
  // Seal() must follow before the next Frame().
  void Frame(const ShotFrame& frame, bool first_of_shot, uint32_t traces,
             uint64_t payload_bytes, bool last, v1::ShotChunk* meta);

  // Seals the chunk Frame() filled: its chunk_crc32 is `chunk_crc`, joined into the
  // shot's; a last chunk carries the shot's crc32 too.
  void Seal(uint32_t chunk_crc, v1::ShotChunk* meta);

  // Traces framed so far of the current shot.
  uint32_t traces_framed() const { return next_trace_; }

 private:
  uint32_t next_trace_ = 0;  // the first trace of the next chunk of the current shot
  uint32_t shot_crc_ = 0;    // of the current shot's sealed chunks
  uint64_t covered_ = 0;     // what the framed chunk's CRC-32 covers (CrcCoveredBytes)
  bool last_ = false;        // the framed chunk is its shot's last
};

}  // namespace shotstream::wire

#endif  // SHOTSTREAM_WIRE_CHUNK_WRITER_H_

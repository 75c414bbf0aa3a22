#include "wire/chunk_writer.h"

#include "common/crc32.h"

namespace shotstream::wire {

void ChunkWriter::Frame(const ShotFrame& frame, bool first_of_shot, uint32_t traces,
                        uint64_t payload_bytes, bool last, v1::ShotChunk* meta) {
  if (first_of_shot) {
    next_trace_ = 0;
    shot_crc_ = 0;
  }
  PlanChunk(frame, next_trace_, traces, last, meta);
  covered_ = CrcCoveredBytes(frame.encoding, traces, frame.n_samples, payload_bytes);
  last_ = last;
  next_trace_ += traces;
}

void ChunkWriter::Seal(uint32_t chunk_crc, v1::ShotChunk* meta) {
  meta->set_chunk_crc32(chunk_crc);
  shot_crc_ = Crc32Combine(shot_crc_, chunk_crc, covered_);
  if (last_) meta->set_crc32(shot_crc_);
}

}  // namespace shotstream::wire

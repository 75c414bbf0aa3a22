// The assembler: a stream's ShotChunks back into shots, by the plan of wire/chunk_plan.h.
// Samples land in `pool` buffers (pinned where CUDA is there), decoded from their encoding;
// each chunk's CRC-32 (where the server sent one) and each shot's are verified before a
// shot or part is handed out. With `pieces`, every chunk that carries its own CRC-32 is a
// part of its own (AssembledShot's first_trace .. first_trace + n_traces), handed out once
// it matched; a shot without chunk CRC-32s comes whole. ZFP bytes are verified before
// libzfp sees them: by their chunk's CRC-32, else kept until the shot's matched.
//
// The C++ client's readers run one per stream; the Python fallback mirrors it
// (shotstream/wire.py). Thread-compatible: one receive thread.
#ifndef SHOTSTREAM_CLIENT_SHOT_ASSEMBLER_H_
#define SHOTSTREAM_CLIENT_SHOT_ASSEMBLER_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "shotstream/gpu/pinned_buffer_pool.h"
#include "wire/chunk_codec.h"
#include "wire/encoding.h"

namespace shotstream::wire {

// A verified shot, or with pieces a verified part of one.
struct AssembledShot {
  int64_t shot_id = 0;
  uint32_t n_traces = 0;     // in `samples`
  uint32_t first_trace = 0;  // pieces: where the part starts in its shot
  uint32_t shot_traces = 0;  // the whole shot's
  bool last_piece = true;    // the shot's last part (a whole shot: true)
  uint32_t n_samples = 0;
  double sample_interval_us = 0;
  gpu::HostBuffer samples;   // float32 [n_traces][n_samples], little-endian
  std::vector<std::pair<std::string, std::vector<double>>> headers;  // first part only
  std::string trace_headers;  // with raw trace headers asked for; first part only
  Encoding encoding = Encoding::kFloat32;  // how its samples travelled (the last chunk's)
};

class ShotAssembler {
 public:
  ShotAssembler(gpu::PinnedBufferPool* pool, bool raw_trace_headers, bool pieces)
      : pool_(pool), raw_trace_headers_(raw_trace_headers), pieces_(pieces) {}

  // Adds a received chunk: true with *out filled when it completed a verified shot (or,
  // with pieces, a verified part of one); DATA_LOSS naming the shot (and the traces of a
  // chunk) for what does not check out, RESOURCE_EXHAUSTED when the pool has no memory.
  absl::StatusOr<bool> Add(const ReceivedChunk& raw, AssembledShot* out);

  bool in_shot() const { return in_shot_; }
  uint64_t shot_wire_bytes() const { return wire_bytes_; }  // of the last shot, so far
  Encoding shot_encoding() const { return encoding_; }

 private:
  absl::Status Start(const v1::ShotChunk& chunk);
  absl::Status CheckChunk(const v1::ShotChunk& chunk, uint32_t first, uint32_t traces,
                          uint32_t crc) const;
  absl::Status Decode(const v1::ShotChunk& chunk, const uint8_t* payload, size_t size,
                      uint8_t* at) const;

  gpu::PinnedBufferPool* const pool_;
  const bool raw_trace_headers_;
  const bool pieces_;
  AssembledShot shot_;
  bool in_shot_ = false;
  bool piecewise_ = false;   // this shot is handed out a chunk at a time
  bool first_part_ = false;  // its next part is its first (the headers go with it)
  uint32_t crc_ = 0;
  uint64_t wire_bytes_ = 0;
  Encoding encoding_ = Encoding::kFloat32;
  std::vector<std::pair<v1::ShotChunk, std::string>> zfp_;  // kept until the CRC matched
  std::vector<uint8_t> scratch_;  // an exact chunk's payload split across slices
};

}  // namespace shotstream::wire

#endif  // SHOTSTREAM_CLIENT_SHOT_ASSEMBLER_H_

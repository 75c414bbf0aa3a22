// The plan of a shot's chunks: which ShotChunk carries what, written once for the server
// (which fills each chunk by it) and the C++ client's assembler (which checks each chunk
// against it). The Python fallback's mirror is shotstream/wire.py; both are pinned by the
// golden chunk stream in client/testdata/ (golden_chunks.bin, read by the C++ and the
// Python tests).
//
// The rules (the proto's ShotChunk comments say the same):
// - every chunk carries the shot's frame: index, shot_id, n_traces, n_samples,
//   sample_interval_us, total_bytes (= n_traces x n_samples x 4), its encoding,
//   sample_format (NATIVE only) and big_endian;
// - a chunk holds whole traces: offset = its first trace x n_samples x 4 (the byte it
//   starts at in the shot's float32 samples) and, for every encoding but FLOAT32,
//   chunk_traces; FLOAT32 chunks say their traces by their size;
// - the first chunk of a shot carries the header columns and the raw trace headers;
// - chunk_crc32 is the CRC-32 of the bytes a FLOAT32 chunk carries (big-endian where
//   big_endian), of the float32 samples a NATIVE or LOSSLESS chunk decodes to, and of the
//   bytes a lossy chunk (INT16, ZFP, QUANTIZED) carries; the last chunk (last = true)
//   carries the shot's crc32, the join of its chunks' CRC-32s (CrcCoveredBytes).
//
// Functions are thread-safe.
#ifndef SHOTSTREAM_WIRE_CHUNK_PLAN_H_
#define SHOTSTREAM_WIRE_CHUNK_PLAN_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "wire/encoding.h"
#include "shotstream/v1/shotstream.pb.h"

namespace shotstream::wire {

// What every chunk of one shot (or of one piece of it) carries alike.
struct ShotFrame {
  uint32_t index = 0;  // the shot's position in the request
  int64_t shot_id = 0;
  uint32_t n_traces = 0;  // the whole shot's
  uint32_t n_samples = 0;
  double sample_interval_us = 0;
  Encoding encoding = Encoding::kFloat32;
  int sample_format = 0;  // SEG-Y's, sent with NATIVE
  bool big_endian = false;
};

// Fills `meta` (cleared first) for the chunk of `traces` traces from `first_trace`;
// `last`: the shot's last chunk (its crc32 is the caller's to set, once known). The
// header columns and trace headers of a first chunk are the caller's to add.
void PlanChunk(const ShotFrame& shot, uint32_t first_trace, uint32_t traces, bool last,
               v1::ShotChunk* meta);

// How many bytes a chunk's CRC-32 covers, for joining it into the shot's (Crc32Combine):
// the float32 samples of its traces for exact encodings, the bytes it carries otherwise.
uint64_t CrcCoveredBytes(Encoding e, uint32_t traces, uint32_t n_samples,
                         uint64_t payload_bytes);

// Where a received chunk lies in its shot.
struct ChunkPlace {
  uint32_t first_trace = 0;
  uint32_t traces = 0;
  uint64_t float32_bytes = 0;  // what its traces take as float32
};

// The place of `chunk` (carrying `payload_bytes` of samples) in a shot of `shot_traces`
// x `n_samples`: DATA_LOSS naming the shot and the byte where it overruns the shot or
// splits a trace.
absl::StatusOr<ChunkPlace> PlaceChunk(const v1::ShotChunk& chunk, uint32_t shot_traces,
                                      uint32_t n_samples, uint64_t payload_bytes);

}  // namespace shotstream::wire

#endif  // SHOTSTREAM_WIRE_CHUNK_PLAN_H_

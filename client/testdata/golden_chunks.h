// The golden chunk stream (client/testdata/golden_chunks.bin): shots in every encoding,
// chunked by wire/chunk_plan.h as the server sends them, each chunk framed exactly as on
// the wire (wire::EncodeShotChunk). The C++ assembler (//client:golden_chunks_test) and
// the Python fallback's (client/python/wire_test.py) both read the checked-in file; the
// test also makes the stream again and checks the plan's metadata against it.
//
// File: for each chunk, its length (uint32 little-endian), then its ShotChunk bytes.
// golden_chunks.txt lists the shots, one a line: shot_id encoding n_traces n_samples
// divisor bound (the largest |decoded - original| allowed; 0: exact). Originals:
// GoldenSample.
// Functions are thread-safe.
#ifndef SHOTSTREAM_CLIENT_TESTDATA_GOLDEN_CHUNKS_H_
#define SHOTSTREAM_CLIENT_TESTDATA_GOLDEN_CHUNKS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "wire/encoding.h"

namespace shotstream::golden {

// A shot's original sample: ((t * 131 + s * 17 + shot_id * 7) mod 2001 - 1000) / divisor,
// exact in float32 and IBM float (divisor 8; 1, integral, for the int16 shot).
float GoldenSample(int64_t shot_id, uint32_t trace, uint32_t sample, int divisor);

struct GoldenShot {
  int64_t shot_id;
  wire::Encoding encoding;
  int sample_format;  // NATIVE: SEG-Y's format (1 IBM, 3 int16)
  bool big_endian;    // FLOAT32 and NATIVE: the samples travel big-endian
  uint32_t n_traces;
  uint32_t n_samples;
  uint32_t traces_per_chunk;
  int divisor;   // GoldenSample's
  double bound;  // the largest |decoded - original| allowed
};

std::vector<GoldenShot> GoldenShots();

// Every chunk of the golden stream, as the wire carries it.
absl::StatusOr<std::vector<std::string>> MakeGoldenChunks();

// golden_chunks.txt's text.
std::string GoldenShotList();

}  // namespace shotstream::golden

#endif  // SHOTSTREAM_CLIENT_TESTDATA_GOLDEN_CHUNKS_H_

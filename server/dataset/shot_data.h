// ShotData: one shot as a read delivers it, and which shots may stay as stored bytes.
// Plain data; no behaviour beyond n_chunks().
#ifndef SHOTSTREAM_SERVER_DATASET_SHOT_DATA_H_
#define SHOTSTREAM_SERVER_DATASET_SHOT_DATA_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/sample_buffer.h"

namespace shotstream::dataset {

// One shot: samples split into chunks of whole traces (float32, trace-major), the header
// columns asked for, and the CRC-32 of all sample bytes as they will be sent.
//
// Either decoded (little-endian, in `chunks`, crc32 set), or, where the stored bytes need
// no decoding, located: `stored[i]` points at trace i's samples inside the mapping of file
// `stored_file[i]` (which lives as long as the Dataset), sent without a copy,
// traces_per_chunk traces a chunk, big-endian when `big_endian`; ReadShot leaves crc32 0
// for them (Dataset::StoredCrc takes it; the stream window does so on a reader thread).
struct ShotData {
  int64_t shot_id = 0;
  uint32_t n_traces = 0;
  uint32_t n_samples = 0;
  uint64_t total_bytes = 0;
  std::vector<SampleBuffer> chunks;
  std::vector<const uint8_t*> stored;
  std::vector<uint32_t> stored_file;
  uint32_t traces_per_chunk = 0;
  bool big_endian = false;
  std::vector<std::pair<std::string, std::vector<double>>> headers;
  // With raw_trace_headers: n_traces * 240 bytes, each trace header big-endian.
  std::string trace_headers;
  uint32_t crc32 = 0;

  size_t n_chunks() const {
    return stored.empty() ? chunks.size()
                          : (stored.size() + traces_per_chunk - 1) / traces_per_chunk;
  }
};

// Which shots ReadShot may leave as stored (see ShotData) rather than decode: those whose
// traces are all in mapped files of IEEE float32, little-endian ones only, or of either
// byte order (for clients that accept big-endian samples).
enum class ZeroCopy { kOff, kLittleEndian, kAnyByteOrder };

}  // namespace shotstream::dataset

#endif  // SHOTSTREAM_SERVER_DATASET_SHOT_DATA_H_

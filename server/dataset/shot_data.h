// ShotData: one shot as a read delivers it, and which shots may stay as stored bytes.
// Plain data; no behaviour beyond n_chunks().
#ifndef SHOTSTREAM_SERVER_DATASET_SHOT_DATA_H_
#define SHOTSTREAM_SERVER_DATASET_SHOT_DATA_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/sample_buffer.h"
#include "segy/trace_header.h"
#include "wire/encoding.h"

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
  // What `chunks` hold: float32 (decoded), or kNative (samples as stored, SEG-Y format
  // `sample_format`, big-endian when big_endian), or what the stream's encoder made of
  // them; chunk_traces[c] traces in chunk c (every encoding but stored float32).
  wire::Encoding encoding = wire::Encoding::kFloat32;
  int sample_format = 5;
  std::vector<uint32_t> chunk_traces;

  size_t n_chunks() const {
    return stored.empty() ? chunks.size()
                          : (stored.size() + traces_per_chunk - 1) / traces_per_chunk;
  }
};

// low <= value <= high of a trace header field (its HeaderColumn value).
struct TraceCondition {
  segy::HeaderSelector header;
  double low = 0;
  double high = 0;
};

// Which part of a shot a read delivers: samples [start, start + count) of every trace
// (count 0: to the end), the traces that meet every condition, and whether integer and
// IBM samples stay as stored (ENCODING_NATIVE) rather than decoded.
struct TraceSelection {
  uint32_t start = 0;
  uint32_t count = 0;
  std::vector<TraceCondition> where;
  bool native = false;
};

// Which shots ReadShot may leave as stored (see ShotData) rather than decode: those whose
// traces are all in mapped files of IEEE float32, little-endian ones only, or of either
// byte order (for clients that accept big-endian samples).
enum class ZeroCopy { kOff, kLittleEndian, kAnyByteOrder };

}  // namespace shotstream::dataset

#endif  // SHOTSTREAM_SERVER_DATASET_SHOT_DATA_H_

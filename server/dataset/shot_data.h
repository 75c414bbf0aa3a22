// ShotData: one shot as a read delivers it. Plain data; no behaviour beyond n_chunks().
#ifndef SHOTSTREAM_SERVER_DATASET_SHOT_DATA_H_
#define SHOTSTREAM_SERVER_DATASET_SHOT_DATA_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/sample_buffer.h"
#include "server/io/stored_traces.h"
#include "wire/encoding.h"

namespace shotstream::dataset {

// One shot: samples split into chunks of whole traces (float32, trace-major), the header
// columns asked for, and the CRC-32 of all sample bytes as they will be sent.
//
// Either decoded (little-endian, in `chunks`, crc32 set), or, where the stored bytes need
// no decoding, located: `stored` says where each trace's samples are in a file mapping
// (which lives as long as the source), sent without a copy, traces_per_chunk traces a
// chunk, big-endian when `big_endian`; ReadShot leaves crc32 0 for them (the stream window
// takes it chunk by chunk, as each is sent: StoredTraces::Crc).
struct ShotData {
  int64_t shot_id = 0;
  uint32_t n_traces = 0;
  uint32_t n_samples = 0;
  uint64_t total_bytes = 0;
  std::vector<SampleBuffer> chunks;
  std::shared_ptr<io::StoredTraces> stored;  // null unless located
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

  bool is_stored() const { return stored != nullptr && stored->size() > 0; }
  size_t n_chunks() const {
    return !is_stored() ? chunks.size()
                        : (stored->size() + traces_per_chunk - 1) / traces_per_chunk;
  }
};

}  // namespace shotstream::dataset

#endif  // SHOTSTREAM_SERVER_DATASET_SHOT_DATA_H_

// ShotSource: what a stream window reads shots from. The server's is a dataset
// (MakeDatasetShotSource); the window's tests use a fake.
//
// Implementations must be thread-safe: reads of one stream run on several reader threads.
#ifndef SHOTSTREAM_SERVER_STREAM_SHOT_SOURCE_H_
#define SHOTSTREAM_SERVER_STREAM_SHOT_SOURCE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "server/dataset/shot_data.h"
#include "segy/trace_header.h"

namespace shotstream::stream {

// How one stream wants its shots read.
struct ShotReadOptions {
  absl::Span<const segy::HeaderSelector> headers;  // header columns
  uint64_t max_chunk_bytes = 1 << 20;               // chunks of whole traces up to this
  dataset::ZeroCopy zero_copy = dataset::ZeroCopy::kOff;
  bool raw_trace_headers = false;  // the 240-byte trace headers too
  dataset::TraceSelection selection;  // a window of samples, trace conditions, native
};

// What a read cost on disk (coalescing: reads issued, bytes read with gaps, bytes wanted).
struct ShotReadCost {
  uint64_t reads = 0;
  uint64_t bytes_read = 0;
  uint64_t bytes_wanted = 0;
};

class ShotSource {
 public:
  virtual ~ShotSource() = default;
  virtual double sample_interval_us() const = 0;
  // Decoded bytes of shot `shot_id` with `samples_per_trace` samples a trace (0: all):
  // n_traces x samples x 4, what the byte budget holds for it. REQUIRES: the shot exists
  // (the request was validated).
  virtual uint64_t ShotBytes(int64_t shot_id, uint32_t samples_per_trace) const = 0;
  virtual absl::StatusOr<dataset::ShotData> ReadShot(int64_t shot_id,
                                                     const ShotReadOptions& options,
                                                     ShotReadCost* cost) const = 0;
  // The first touch of a stored shot's traces (ShotData::stored, stored_file): every page
  // brought into memory (from disk if need be). Fails when the file was truncated.
  // `n_samples`: samples per trace sent (ShotData::n_samples).
  virtual absl::Status TouchStored(int64_t shot_id, absl::Span<const uint8_t* const> traces,
                                   absl::Span<const uint32_t> files, uint32_t n_samples) const = 0;
  // The CRC-32 of stored traces continued from `crc`; fails as TouchStored does.
  virtual absl::StatusOr<uint32_t> StoredCrc(int64_t shot_id,
                                             absl::Span<const uint8_t* const> traces,
                                             absl::Span<const uint32_t> files,
                                             uint32_t n_samples, uint32_t crc) const = 0;
};

}  // namespace shotstream::stream

#endif  // SHOTSTREAM_SERVER_STREAM_SHOT_SOURCE_H_

// ShotSource: what a stream window reads shots from. The server's is a dataset
// (MakeDatasetShotSource); the window's tests use a fake.
//
// Implementations must be thread-safe: reads of one stream run on several reader threads.
#ifndef SHOTSTREAM_SERVER_STREAM_SHOT_SOURCE_H_
#define SHOTSTREAM_SERVER_STREAM_SHOT_SOURCE_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "server/dataset/shot_data.h"
#include "server/dataset/shot_plan.h"

namespace shotstream::stream {

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
  // Reads shot `shot_id` as the stream's plan says (Dataset::ReadShot). A shot located in
  // a file mapping (ShotData::stored) is touched and checksummed through its StoredTraces.
  virtual absl::StatusOr<dataset::ShotData> ReadShot(int64_t shot_id,
                                                     const dataset::ReadPlan& plan,
                                                     ShotReadCost* cost) const = 0;
  // A shot larger than the stream's piece size, read in pieces (Dataset::ReadShotHead
  // and ReadPiece): its head once, then its pieces, each as ReadShot reads a shot.
  virtual absl::StatusOr<dataset::ShotHead> ReadShotHead(int64_t shot_id,
                                                         const dataset::ReadPlan& plan,
                                                         uint64_t piece_bytes,
                                                         ShotReadCost* cost) const = 0;
  virtual absl::StatusOr<dataset::ShotData> ReadPiece(const dataset::ShotHead& head,
                                                      size_t piece,
                                                      const dataset::ReadPlan& plan,
                                                      ShotReadCost* cost) const = 0;
};

}  // namespace shotstream::stream

#endif  // SHOTSTREAM_SERVER_STREAM_SHOT_SOURCE_H_

// The pieces of a SEG-Y rev 1 file as shotstream writes it (big-endian, fixed-length
// traces): the file header, one shot's trace headers from its header columns, and samples
// encoded in format 5 (IEEE float32), 1 (IBM float) or 3 (int16). Used by the client's
// export (fetch --format=segy) and by the server's WriteShots, so that both write alike.
//
// Thread-safe: pure functions; ShotTraceHeaders is immutable after Make.
#ifndef SHOTSTREAM_SEGY_SEGY_WRITER_H_
#define SHOTSTREAM_SEGY_SEGY_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "segy/trace_header.h"

namespace shotstream::segy {

inline constexpr uint32_t kMaxSegyTraceSamples = 65535;  // rev 1: a 2-byte count

// INVALID_ARGUMENT unless `format` is one these writers write (1, 3, 5).
absl::Status CheckWritableFormat(int format);
int WrittenBytesPerSample(int format);  // 4, 2 or 4

// The 3600-byte file header: `lines` (at most 40, each cut to 80 characters, "C nn "
// prefixed) as EBCDIC, then the binary header (interval, sample count, format, rev 1.0,
// fixed-length traces).
std::string FileHeader(const std::vector<std::string>& lines, uint32_t n_samples,
                       double sample_interval_us, int format);

// Encodes `n` samples big-endian in `format` at `dst` (n * WrittenBytesPerSample bytes);
// returns the largest |stored - given| (0 for format 5).
double EncodeTraceSamples(const float* src, size_t n, int format, uint8_t* dst);

// One shot's trace headers: field_record = the shot id, trace sequence numbers, sample
// count and interval, and every header column at its standard position. Scaled fields
// (coordinates, elevations) get the smallest power-of-ten scalar (bytes 71-72 / 69-70)
// that stores every value of the shot exactly, up to 1/10000.
class ShotTraceHeaders {
 public:
  // INVALID_ARGUMENT naming a column that is not a SEG-Y field (with the closest name)
  // or that has another count than n_traces.
  static absl::StatusOr<ShotTraceHeaders> Make(
      int64_t shot_id, uint32_t n_traces, uint32_t n_samples, double sample_interval_us,
      const std::vector<std::pair<std::string, std::vector<double>>>& headers);

  // Writes trace t's 240 bytes at `dst`; `sequence` is its 1-based place in the file.
  void Fill(uint32_t t, uint64_t sequence, uint8_t* dst) const;

 private:
  struct Column {
    HeaderSelector selector;
    std::vector<double> values;
  };
  int64_t shot_id_ = 0;
  uint32_t n_samples_ = 0;
  int interval_ = 0;
  int coordinate_scalar_ = 1;
  int elevation_scalar_ = 1;
  std::vector<Column> columns_;
};

}  // namespace shotstream::segy

#endif  // SHOTSTREAM_SEGY_SEGY_WRITER_H_

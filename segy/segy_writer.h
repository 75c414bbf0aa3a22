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
// count and interval, and every header column at its standard position. Each trace's
// coordinates (source and group x/y, CDP x/y: bytes 71-72) and elevations and depths
// (bytes 69-70) share a scalar chosen for that trace: the first of 1, /10 .. /10000,
// x10 .. x10000 that stores each of them exactly, else the one of least error (reported
// by max_error). Values of unscaled fields are rounded to integers (error reported too).
class ShotTraceHeaders {
 public:
  // INVALID_ARGUMENT naming a column that is not a SEG-Y field (with the closest name),
  // that has another count than n_traces, or a value (shot, trace, header, value) that no
  // scalar fits in its field, or NaN or infinite: never a wrapped integer.
  static absl::StatusOr<ShotTraceHeaders> Make(
      int64_t shot_id, uint32_t n_traces, uint32_t n_samples, double sample_interval_us,
      const std::vector<std::pair<std::string, std::vector<double>>>& headers);

  // Writes trace t's 240 bytes at `dst`; `sequence` is its 1-based place in the file.
  void Fill(uint32_t t, uint64_t sequence, uint8_t* dst) const;

  // The largest |value read back - value given| over every header value, and where it
  // is ("shot S, trace T, NAME V stored as W"; empty when 0).
  double max_error() const { return max_error_; }
  const std::string& worst() const { return worst_; }

 private:
  struct Column {
    HeaderSelector selector;
    std::string name;             // as given
    std::vector<int64_t> stored;  // a trace's integer, its scalar applied
  };
  int64_t shot_id_ = 0;
  uint32_t n_samples_ = 0;
  int interval_ = 0;
  std::vector<int16_t> coordinate_scalars_;  // a trace's
  std::vector<int16_t> elevation_scalars_;
  std::vector<Column> columns_;
  double max_error_ = 0;
  std::string worst_;
};

}  // namespace shotstream::segy

#endif  // SHOTSTREAM_SEGY_SEGY_WRITER_H_

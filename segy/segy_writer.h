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

// A header value to place in a trace header: its field (name, place, scale) and value.
struct TraceValue {
  const HeaderSelector* selector;
  double value;
};

// Places one trace's header values into `trace` (240 bytes, big-endian) as SEG-Y
// integers. The coordinates (scale kCoordinate: source and group x/y, sharing bytes 71-72)
// and the elevations (kElevation: bytes 69-70) each get the first scalar of 1, /10 ..
// /10000, x10 .. x10000 that stores every one of them exactly, else the one of least
// error; other fields are rounded. Returns the largest |read back - value| (`*worst`: the
// index of that value); INVALID_ARGUMENT ("header NAME is V, past what ...") for NaN,
// infinity or a value no scalar fits into its field: never a wrapped integer. Fields not
// in `values` are left as they are, except both scalars, which are always written.
absl::StatusOr<double> PutTraceValues(const std::vector<TraceValue>& values, uint8_t* trace,
                                      size_t* worst);

// One shot's trace headers: field_record = the shot id, trace sequence numbers, sample
// count and interval, and every header column at its standard position, each trace's
// values placed by PutTraceValues (so a trace's scalars are its own, as SEG-Y allows).
class ShotTraceHeaders {
 public:
  // INVALID_ARGUMENT naming a column that is not a SEG-Y field (with the closest name),
  // that has another count than n_traces, or (shot S, trace T: header NAME is V ...) a
  // value PutTraceValues refuses.
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
    HeaderSelector selector;  // named as given
    std::vector<double> values;
  };
  std::vector<TraceValue> TraceValues(uint32_t t) const;

  int64_t shot_id_ = 0;
  uint32_t n_samples_ = 0;
  int interval_ = 0;
  std::vector<Column> columns_;
  double max_error_ = 0;
  std::string worst_;
};

}  // namespace shotstream::segy

#endif  // SHOTSTREAM_SEGY_SEGY_WRITER_H_

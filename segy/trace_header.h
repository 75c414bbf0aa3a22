// Trace header fields by name, and the contract's derived header values.
//
// Thread-safe: pure functions over caller-owned bytes.
#ifndef SHOTSTREAM_SERVER_SEGY_TRACE_HEADER_H_
#define SHOTSTREAM_SERVER_SEGY_TRACE_HEADER_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "segy/sample_format.h"

namespace shotstream::segy {

inline constexpr int kTraceHeaderBytes = 240;

// A standard rev 1 trace header field: 1-based byte position and size (2 or 4 bytes,
// signed integers).
struct HeaderField {
  absl::string_view name;
  int byte;  // 1-based within the 240-byte trace header
  int size;  // 2 or 4
};

// Every standard SEG-Y rev 1 trace header field (bytes 1-240), snake_case names.
const std::vector<HeaderField>& StandardTraceHeaderFields();

// Copies a 240-byte trace header stored in `order` to `dst` in big-endian order: every
// standard field swapped for little-endian files, the other bytes copied as they are.
void TraceHeaderToBigEndian(const uint8_t* header, ByteOrder order, uint8_t* dst);

// Reads a signed integer of `size` bytes (2 or 4) at 1-based `byte` of `header`. Inline:
// catalog scans call it for every trace.
inline int64_t ReadHeaderInt(const uint8_t* header, int byte, int size, ByteOrder order) {
  const uint8_t* p = header + (byte - 1);
  if (size == 2) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    if (order == ByteOrder::kBigEndian) v = __builtin_bswap16(v);
    return static_cast<int16_t>(v);
  }
  uint32_t v;
  std::memcpy(&v, p, 4);
  if (order == ByteOrder::kBigEndian) v = __builtin_bswap32(v);
  return static_cast<int32_t>(v);
}

// A field to return with a shot: a standard field (raw integer value) or one of the
// contract's scaled fields (coordinates with bytes 71-72 applied, elevations with bytes
// 69-70 applied).
struct HeaderSelector {
  std::string name;
  int byte = 0;
  int size = 0;
  enum class Scale { kNone, kCoordinate, kElevation } scale = Scale::kNone;
};

// The name in `known` closest to `name` by edit distance, if close enough to be a typo
// (at most max(2, len/3) edits); empty otherwise.
std::string ClosestName(absl::string_view name, const std::vector<std::string>& known);

// Resolves a header name, or INVALID_ARGUMENT naming it and the closest known name.
absl::StatusOr<HeaderSelector> ResolveHeader(absl::string_view name);

// The value of `selector` in `header`, with its scalar applied (negative divides, zero
// means 1, as SEG-Y rev 1 says).
double HeaderValue(const HeaderSelector& selector, const uint8_t* header, ByteOrder order);

// The names a dataset can return: the contract's fields, then every standard field.
std::vector<std::string> ServableHeaderNames();

// The trace header field that identifies a shot: one of field_record, energy_source_point,
// inline, crossline (or any other 4-byte standard field by its name), byte:N (a 4-byte signed integer at 1-based byte N, 1..237), or
// source_xy: a shot per distinct source position (bytes 73-80, coordinate scalar applied),
// ids 1, 2, ... in order of first appearance.
struct ShotKey {
  std::string name;
  int byte = 9;
  bool source_xy = false;
};
absl::StatusOr<ShotKey> ParseShotKey(absl::string_view text);

}  // namespace shotstream::segy

#endif  // SHOTSTREAM_SERVER_SEGY_TRACE_HEADER_H_

// Writes a shot as a SEG-Y rev 1 file (big-endian, IEEE or IBM float) with the trace
// header fields the shot carries, so that any SEG-Y reader (segyio) reads it back.
//
// Thread-compatible: a pure function over its arguments.
#ifndef SHOTSTREAM_CLIENT_SEGY_WRITER_H_
#define SHOTSTREAM_CLIENT_SEGY_WRITER_H_

#include <string>

#include "absl/status/status.h"
#include "shotstream/client/client.h"

namespace shotstream::client {

struct SegyWriteOptions {
  int format = 5;  // 5: IEEE float32 (exact); 1: IBM float (rounded to nearest)
};

// Trace headers: the shot's raw trace headers (Shot::trace_headers) byte for byte where it
// has them; otherwise field_record = the shot id, trace sequence numbers, sample count and
// interval, and every header column of the shot at its standard position. Scaled fields
// (coordinates, elevations) get the smallest power-of-ten scalar (bytes 71-72 / 69-70)
// that stores every value of the shot exactly, up to 1/10000.
absl::Status WriteShotSegy(const std::string& path, const Shot& shot,
                           const SegyWriteOptions& options = {});

}  // namespace shotstream::client

#endif  // SHOTSTREAM_CLIENT_SEGY_WRITER_H_

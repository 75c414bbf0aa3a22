// The NumPy .npy source: arrays [shots, traces, samples] (shots 1.. continuing across the
// files in name order) or [traces, samples] (one shot a file) read as fixed-length traces
// without headers: mmap or pread, coalescing, zero copy for float32 little-endian, NATIVE
// integers, windows and everything else of io::TraceFiles. Header fields: field_record (the
// shot id) and trace_number (1.. within the shot).
//
// Thread-safe after Open (source::Source).
#ifndef SHOTSTREAM_SERVER_NPY_NPY_SOURCE_H_
#define SHOTSTREAM_SERVER_NPY_NPY_SOURCE_H_

#include "server/source/source.h"

namespace shotstream::npy {

// format: npy. Claims .npy names and files that begin with NumPy's magic string.
const source::Format& NpyFormat();

}  // namespace shotstream::npy

#endif  // SHOTSTREAM_SERVER_NPY_NPY_SOURCE_H_

// TraceRef: where a trace starts (its first header byte) in a dataset's files. A value.
#ifndef SHOTSTREAM_SERVER_IO_TRACE_REF_H_
#define SHOTSTREAM_SERVER_IO_TRACE_REF_H_

#include <cstdint>

namespace shotstream::io {

struct TraceRef {
  uint32_t file_id = 0;
  uint64_t offset = 0;
  bool operator==(const TraceRef& o) const { return file_id == o.file_id && offset == o.offset; }
};

}  // namespace shotstream::io

#endif  // SHOTSTREAM_SERVER_IO_TRACE_REF_H_

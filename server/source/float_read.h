// FloatRead: a source::TraceRead of float32 samples with the buffers it points into, for
// tests of sources: `traces` of shot `shot_id`, samples [start, start + count) of each,
// trace t's at out[t * count], its CRC-32 at crc[t]. Not copyable (read points into it).
#ifndef SHOTSTREAM_SERVER_SOURCE_FLOAT_READ_H_
#define SHOTSTREAM_SERVER_SOURCE_FLOAT_READ_H_

#include <cstdint>
#include <vector>

#include "server/source/source.h"

namespace shotstream::source {

struct FloatRead {
  FloatRead(int64_t shot_id, std::vector<io::TraceRef> of, uint32_t start, uint32_t count)
      : traces(std::move(of)), out(traces.size() * count), dst(traces.size()),
        crc(traces.size()) {
    for (size_t t = 0; t < traces.size(); ++t) {
      dst[t] = reinterpret_cast<uint8_t*>(out.data() + size_t{count} * t);
    }
    read.shot_id = shot_id;
    read.traces = traces;
    read.range = {start, count};
    read.dst = dst.data();
    read.trace_crc = crc.data();
  }
  FloatRead(const FloatRead&) = delete;
  FloatRead& operator=(const FloatRead&) = delete;

  std::vector<io::TraceRef> traces;
  std::vector<float> out;
  std::vector<uint8_t*> dst;
  std::vector<uint32_t> crc;
  TraceRead read;
};

}  // namespace shotstream::source

#endif  // SHOTSTREAM_SERVER_SOURCE_FLOAT_READ_H_

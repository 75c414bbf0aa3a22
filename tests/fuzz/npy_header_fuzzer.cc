// Fuzzes .npy header parsing, alone and as the server opens such files (the layout of
// traces without headers), and decodes every trace the input holds when it parses.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "npy/npy_header.h"
#include "server/npy/npy_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shotstream;
  auto header = npy::ParseNpyHeader("fuzz.npy", data, size, size);
  if (header.ok() && header->data_offset + header->data_bytes != size) __builtin_trap();
  std::vector<uint64_t> shape;
  auto layout = npy::ParseNpyLayout("fuzz.npy", data, size, size, 0, &shape);
  if (!layout.ok()) return 0;
  const io::TraceLayout& l = *layout;
  // Everything the layout promises must be inside the input, and headers must agree.
  if (!header.ok() || l.header_bytes() != 0) __builtin_trap();
  if (l.first_trace_offset + l.n_traces * l.trace_bytes > size) __builtin_trap();
  std::vector<float> out(l.n_samples);
  for (uint64_t t = 0; t < l.n_traces && t < 64; ++t) {
    segy::DecodeSamples(data + l.TraceOffset(t), l.n_samples, l.format, l.byte_order,
                        out.data());
  }
  return 0;
}

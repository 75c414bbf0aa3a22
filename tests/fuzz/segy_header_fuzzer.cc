// Fuzzes SEG-Y / Seismic Unix header parsing and, when the headers parse, the decoding
// of every trace the input holds, through the same code the server uses.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "server/segy/segy_file.h"
#include "segy/trace_header.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shotstream::segy;
  // The first byte picks the name's suffix (.sgy or .su) and the byte-order override.
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  ++data;
  --size;
  const std::string path = (mode & 1) ? "fuzz.su" : "fuzz.sgy";
  OpenOptions options;
  if (mode & 2) options.byte_order = (mode & 4) ? ByteOrder::kLittleEndian : ByteOrder::kBigEndian;
  auto layout = ParseSegyHeaders(path, data, size, size, options);
  if (!layout.ok()) return 0;
  const SegyLayout& l = *layout;
  // Everything the layout promises must be inside the input.
  if (l.first_trace_offset + l.n_traces * l.trace_bytes > size) __builtin_trap();
  std::vector<float> out(l.n_samples);
  for (uint64_t t = 0; t < l.n_traces && t < 64; ++t) {
    const uint8_t* trace = data + l.TraceOffset(t);
    DecodeSamples(trace + l.header_bytes(), l.n_samples, l.format, l.byte_order, out.data());
    for (const std::string& name : ServableHeaderNames()) {
      auto sel = ResolveHeader(name);
      if (sel.ok()) (void)HeaderValue(*sel, trace, l.byte_order);
    }
  }
  return 0;
}

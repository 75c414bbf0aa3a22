#include "server/segy/test_writer.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace shotstream::segy {
namespace {

void PutBytes(uint64_t v, int size, ByteOrder order, uint8_t* dst) {
  for (int i = 0; i < size; ++i) {
    const int shift = order == ByteOrder::kBigEndian ? 8 * (size - 1 - i) : 8 * i;
    dst[i] = static_cast<uint8_t>(v >> shift);
  }
}

}  // namespace

void EncodeSample(float value, int format, ByteOrder order, uint8_t* dst) {
  uint64_t bits = 0;
  const int size = BytesPerSample(format);
  switch (format) {
    case 1: bits = FloatToIbm(value); break;
    case 5: { uint32_t b; std::memcpy(&b, &value, 4); bits = b; break; }
    case 6: { double d = value; std::memcpy(&bits, &d, 8); break; }
    case 2: case 3: case 7: case 8: case 9:
      bits = static_cast<uint64_t>(static_cast<int64_t>(value));
      break;
    default:
      bits = static_cast<uint64_t>(value);
      break;
  }
  PutBytes(bits, size, order, dst);
}

std::vector<uint8_t> MakeSegyBytes(const TestFileSpec& spec) {
  const int bps = BytesPerSample(spec.format);
  const uint64_t trace_bytes = 240 + uint64_t{spec.n_samples} * bps;
  std::vector<uint8_t> out(3600 + trace_bytes * spec.traces.size(), 0);
  std::memset(out.data(), 0x40, 3200);  // EBCDIC spaces
  uint8_t* bin = out.data() + 3200;
  PutBytes(static_cast<uint16_t>(spec.interval_us), 2, spec.order, bin + 16);
  const bool ext = spec.n_samples > 65535;
  PutBytes(ext ? 0 : spec.n_samples, 2, spec.order, bin + 20);
  PutBytes(spec.format, 2, spec.order, bin + 24);
  if (ext) PutBytes(spec.n_samples, 4, spec.order, bin + 68);  // 3269
  bin[300] = ext ? 2 : 1;  // revision major, byte 3501
  if (spec.write_order_word) PutBytes(0x01020304u, 4, spec.order, bin + 96);
  uint8_t* p = out.data() + 3600;
  for (const TestTrace& t : spec.traces) {
    PutBytes(spec.n_samples, 2, spec.order, p + 114);
    PutBytes(static_cast<uint16_t>(spec.interval_us), 2, spec.order, p + 116);
    for (const TestTrace::Field& f : t.fields) {
      PutBytes(static_cast<uint64_t>(f.value), f.size, spec.order, p + f.byte - 1);
    }
    for (uint32_t i = 0; i < spec.n_samples; ++i) {
      const float v = i < t.samples.size() ? t.samples[i] : 0.0f;
      EncodeSample(v, spec.format, spec.order, p + 240 + uint64_t{i} * bps);
    }
    p += trace_bytes;
  }
  return out;
}

void WriteSegyFile(const std::string& path, const TestFileSpec& spec) {
  const std::vector<uint8_t> bytes = MakeSegyBytes(spec);
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::abort();
  }
  std::fclose(f);
}

}  // namespace shotstream::segy

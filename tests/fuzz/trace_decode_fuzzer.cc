// Fuzzes sample decoding of every format and byte order, and IBM conversion against its
// documented rule.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "segy/sample_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shotstream::segy;
  static const int kCodes[] = {1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 15, 16};
  if (size < 1) return 0;
  const int code = kCodes[data[0] % 13];
  const ByteOrder order = (data[0] & 0x80) ? ByteOrder::kLittleEndian : ByteOrder::kBigEndian;
  ++data;
  --size;
  const int bps = BytesPerSample(code);
  const size_t n = size / bps;
  std::vector<float> out(n + 1, 123.0f);
  DecodeSamples(data, n, static_cast<SampleFormat>(code), order, out.data());
  if (out[n] != 123.0f) __builtin_trap();  // wrote past the end
  if (code == 1) {
    for (size_t i = 0; i < n; ++i) {
      uint32_t w;
      std::memcpy(&w, data + 4 * i, 4);
      if (order == ByteOrder::kBigEndian) w = __builtin_bswap32(w);
      const float f = IbmToFloat(w);
      if (std::isnan(f)) __builtin_trap();                   // IBM has no NaN
      if (std::signbit(f) != ((w >> 31) != 0)) __builtin_trap();  // sign kept
    }
  }
  return 0;
}

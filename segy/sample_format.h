// SEG-Y sample formats and their decoding to float32.
//
// Thread-safe: every function here is pure.
#ifndef SHOTSTREAM_SERVER_SEGY_SAMPLE_FORMAT_H_
#define SHOTSTREAM_SERVER_SEGY_SAMPLE_FORMAT_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace shotstream::segy {

enum class ByteOrder { kBigEndian, kLittleEndian };

absl::string_view ByteOrderName(ByteOrder order);

// SEG-Y rev 2 data sample format codes (binary header bytes 3225-3226).
enum class SampleFormat : int {
  kIbmFloat32 = 1,
  kInt32 = 2,
  kInt16 = 3,
  kFixedPointGain = 4,  // obsolete: int16 mantissa * 2^-gain
  kIeeeFloat32 = 5,
  kIeeeFloat64 = 6,
  kInt24 = 7,
  kInt8 = 8,
  kInt64 = 9,
  kUInt32 = 10,
  kUInt16 = 11,
  kUInt64 = 12,
  kUInt24 = 15,
  kUInt8 = 16,
};

// Bytes per sample of a format code, or 0 when the code is not a SEG-Y format.
int BytesPerSample(int format_code);

// The format for a code, or an error that names the code and why it is refused
// (codes that are not SEG-Y formats).
absl::StatusOr<SampleFormat> SampleFormatFromCode(int format_code);

// Human-readable name ("IBM float32", "int16", ...).
absl::string_view SampleFormatName(SampleFormat format);

// IBM System/360 single precision -> IEEE float32 bits, bit-exact with segyio's
// ibm2ieee: truncation (no rounding) of values below float32's normal range down to
// denormals, then to a signed zero below 2^-149; +-infinity above FLT_MAX; the sign of
// zero kept. `ibm` is the word in native order.
uint32_t IbmToIeeeBits(uint32_t ibm);
float IbmToFloat(uint32_t ibm);

// Decodes `n` samples at `src` (file bytes in `order`) into float32 at `dst`.
// REQUIRES: src holds n * BytesPerSample(format) bytes.
void DecodeSamples(const uint8_t* src, size_t n, SampleFormat format, ByteOrder order,
                   float* dst);

// Encodes float32 samples as IEEE float32 or IBM float, big-endian (for the SEG-Y
// writer). IBM encoding rounds to nearest and saturates at the IBM range.
uint32_t FloatToIbm(float value);
void EncodeSamplesBigEndian(const float* src, size_t n, SampleFormat format, uint8_t* dst);

}  // namespace shotstream::segy

#endif  // SHOTSTREAM_SERVER_SEGY_SAMPLE_FORMAT_H_

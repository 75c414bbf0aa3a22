// The inner loops of the sample encodings (INT16, QUANTIZED) and of the statistics their
// error bounds need, over any run of float32 samples (a trace, a chunk).
//
// Two paths give identical results: AVX2 code, chosen at run time where the CPU has it
// (the build stays x86-64 baseline), and portable loops everywhere else; where the CPU
// has GFNI too, the bit shuffles' 8x8 bit transposes are one instruction (kAvx2Gfni).
// Rounding is to nearest, ties to even (nearbyint in the default rounding mode) on both.
// The environment variable SHOTSTREAM_SIMD=portable (or =avx2: no GFNI), or ForcePath,
// makes the other loops run (tests, benchmarks, a CPU that misbehaves). Thread-safe;
// ForcePath is for tests and benchmarks and must not race with encoding.
#ifndef SHOTSTREAM_WIRE_SAMPLE_KERNELS_H_
#define SHOTSTREAM_WIRE_SAMPLE_KERNELS_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace shotstream::wire::kernels {

enum class Path { kAuto, kPortable, kAvx2, kAvx2Gfni };

// The path that runs now (kPortable, kAvx2 or kAvx2Gfni), and its name ("portable",
// "avx2", "avx2+gfni").
Path ActivePath();
absl::string_view PathName(Path path);
// The name as a test's parameter may spell it ("avx2_gfni").
std::string TestName(Path path);
// kAuto: the best the CPU has, unless SHOTSTREAM_SIMD says otherwise. Forcing a path the
// CPU lacks gives the best below it.
void ForcePath(Path path);

// Bits of a float32 at or above which |x| is infinity or NaN.
inline constexpr uint32_t kNonFiniteBits = 0x7f800000u;

// The largest |x[i]|, as the bits of a non-negative float32 (0 for n == 0): at least
// kNonFiniteBits where a NaN or an infinity is among them.
uint32_t PeakBits(const float* x, size_t n);

// PeakBits and the sum of x[i]^2 (in double, summed in the same order on both paths) in
// one pass. sum_squares is meaningless where peak_bits >= kNonFiniteBits.
struct SampleStats {
  uint32_t peak_bits = 0;
  double sum_squares = 0;
};
SampleStats Stats(const float* x, size_t n);

// dst[i] = nearbyint(x[i] * inv) clamped to [-32767, 32767], as n little-endian int16
// at `dst` (any alignment). REQUIRES: x finite.
void ScaleToInt16(const float* x, size_t n, float inv, uint8_t* dst);
// dst[i] = float(q[i]) * scale for n little-endian int16 at `q` (any alignment).
void Int16ToFloat(const uint8_t* q, size_t n, float scale, float* dst);

// Zigzag-coded quantisation: q = nearbyint(x[i] * inv), z = (q << 1) ^ (q >> 31), stored as
// n little-endian unsigned integers of `width` bytes (1, 2 or 4) at `dst` (any
// alignment). REQUIRES: x finite, |x[i] * inv| < 2^21, and every z fits the width.
void Quantize(const float* x, size_t n, float inv, int width, uint8_t* dst);
// The inverse: dst[i] = float(q) * step, q = (z >> 1) ^ -(z & 1), for n zigzag integers
// of `width` bytes at `z` (any alignment).
void Dequantize(const uint8_t* z, size_t n, int width, float step, float* dst);

// c-blosc's bit shuffle of n 4-byte elements (bitshuffle's layout, as c-blosc 1.x writes
// and reads it): bit k of byte j of element i goes to bit i % 8 of byte
// (8 j + k) x n / 8 + i / 8 of dst. BitUnshuffle4 is its inverse. Both AVX2 (64 elements
// a step: one gather of each element's bytes, 8x8 bit transposes, a byte transpose) and
// portable; the unshuffle's AVX2 stores stream past the cache where dst is 32-byte aligned
// (a shot's buffer, not read again soon by this core). REQUIRES: n % 8 == 0; src and dst
// do not overlap.
void BitShuffle4(const uint8_t* src, size_t n, uint8_t* dst);
void BitUnshuffle4(const uint8_t* src, size_t n, uint8_t* dst);

}  // namespace shotstream::wire::kernels

#endif  // SHOTSTREAM_WIRE_SAMPLE_KERNELS_H_

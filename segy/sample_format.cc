#include "segy/sample_format.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace shotstream::segy {
namespace {

inline uint64_t Load64(const uint8_t* p, ByteOrder order) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return order == ByteOrder::kBigEndian ? __builtin_bswap64(v) : v;
}
inline uint32_t Load24(const uint8_t* p, ByteOrder order) {
  return order == ByteOrder::kBigEndian
             ? (uint32_t{p[0]} << 16) | (uint32_t{p[1]} << 8) | p[2]
             : (uint32_t{p[2]} << 16) | (uint32_t{p[1]} << 8) | p[0];
}

// The hot loops are written so that the compiler vectorises them (no branches, no
// table lookups), and compiled twice: for AVX2 and for the x86-64 baseline, picked at
// load time (GCC target_clones). Measured with //segy:sample_format_benchmark.
// Not under TSan: its instrumentation of the clones' resolver runs before the TSan
// runtime is up (the binary dies in the dynamic loader).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_THREAD__)
#define SS_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define SS_VECTOR_CLONES
#endif

inline uint32_t Bswap32(uint32_t v) {
  return (v >> 24) | ((v >> 8) & 0xff00u) | ((v << 8) & 0xff0000u) | (v << 24);
}

SS_VECTOR_CLONES void DecodeIeee32Swap(const uint8_t* __restrict src, size_t n,
                                       float* __restrict dst) {
  uint32_t* out = reinterpret_cast<uint32_t*>(dst);
  for (size_t i = 0; i < n; ++i) {
    uint32_t v;
    std::memcpy(&v, src + 4 * i, 4);
    out[i] = Bswap32(v);
  }
}

// IBM -> IEEE without branches, in exact float arithmetic: the 24-bit fraction converts
// exactly to float, and 16^(exp-64) * 2^-24 = 2^(4*exp - 280) is applied as
// 2^-26 * s * s with s = 2^(2*exp - 127), a float whose bits are the IBM word's exponent
// bits kept in place (w & 0x7f000000). Each product is a power of two times a 24-bit
// integer, so it is exact while it stays in float's normal range, which holds for every
// nonzero word with 39 <= exp <= 96. The loop keeps the smallest and largest nonzero
// magnitude it saw; when a block holds words outside that range (underflow to denormals
// or zero, overflow to infinity) they are redone by the scalar rule (truncation, as
// segyio does) in a second pass. Few operations per sample, all vectorisable.
constexpr uint32_t kIbmExactLow = 39u << 24;   // smallest magnitude of the exact path
constexpr uint32_t kIbmExactHigh = 97u << 24;  // first magnitude past it

template <bool kSwap>
__attribute__((always_inline)) inline bool DecodeIbmBody(const uint8_t* __restrict src,
                                                         size_t n, float* __restrict dst) {
  uint32_t largest = 0;              // largest magnitude
  uint32_t smallest_m1 = ~0u;        // smallest nonzero magnitude, minus one
  for (size_t i = 0; i < n; ++i) {
    uint32_t w;
    std::memcpy(&w, src + 4 * i, 4);
    if (kSwap) w = Bswap32(w);
    const uint32_t magnitude = w & 0x7fffffffu;
    largest = std::max(largest, magnitude);
    smallest_m1 = std::min(smallest_m1, magnitude - 1u);  // zero wraps to the top
    const float fraction = static_cast<float>(static_cast<int32_t>(w & 0x00ffffffu));
    const uint32_t scale_bits = w & 0x7f000000u;
    float scale;
    std::memcpy(&scale, &scale_bits, 4);
    const float value = fraction * 0x1p-26f * scale * scale;
    uint32_t bits;
    std::memcpy(&bits, &value, 4);
    bits |= w & 0x80000000u;
    std::memcpy(dst + i, &bits, 4);
  }
  return largest >= kIbmExactHigh || smallest_m1 < kIbmExactLow - 1u;
}

// One clone set per byte order: target_clones does not apply to templates.
SS_VECTOR_CLONES bool DecodeIbmSwap(const uint8_t* __restrict src, size_t n,
                                    float* __restrict dst) {
  return DecodeIbmBody<true>(src, n, dst);
}
SS_VECTOR_CLONES bool DecodeIbmNative(const uint8_t* __restrict src, size_t n,
                                      float* __restrict dst) {
  return DecodeIbmBody<false>(src, n, dst);
}

template <bool kSwap>
void DecodeIbm(const uint8_t* src, size_t n, float* dst) {
  // Blocks that stay in L1 between the vector pass, the check and the (rare) fix-up.
  constexpr size_t kBlock = 2048;
  for (size_t start = 0; start < n; start += kBlock) {
    const size_t m = std::min(kBlock, n - start);
    const uint8_t* s = src + 4 * start;
    float* d = dst + start;
    const bool outside = kSwap ? DecodeIbmSwap(s, m, d) : DecodeIbmNative(s, m, d);
    if (!outside) continue;
    // Words outside the exact range: the documented scalar rule.
    uint32_t* out = reinterpret_cast<uint32_t*>(d);
    for (size_t i = 0; i < m; ++i) {
      uint32_t w;
      std::memcpy(&w, s + 4 * i, 4);
      if (kSwap) w = Bswap32(w);
      const uint32_t magnitude = w & 0x7fffffffu;
      if (magnitude != 0 && (magnitude < kIbmExactLow || magnitude >= kIbmExactHigh)) {
        out[i] = IbmToIeeeBits(w);
      }
    }
  }
}

template <typename T, bool kSwap>
__attribute__((always_inline)) inline void DecodeInt(const uint8_t* __restrict src, size_t n,
                                                     float* __restrict dst) {
  for (size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, src + sizeof(T) * i, sizeof(T));
    if constexpr (kSwap && sizeof(T) == 2) v = static_cast<T>(__builtin_bswap16(v));
    if constexpr (kSwap && sizeof(T) == 4) v = static_cast<T>(__builtin_bswap32(v));
    if constexpr (kSwap && sizeof(T) == 8) v = static_cast<T>(__builtin_bswap64(v));
    dst[i] = static_cast<float>(v);
  }
}

// The common big-endian integer formats, cloned for AVX2 like the float ones.
SS_VECTOR_CLONES void DecodeInt32Swap(const uint8_t* __restrict src, size_t n,
                                      float* __restrict dst) {
  DecodeInt<int32_t, true>(src, n, dst);
}
SS_VECTOR_CLONES void DecodeInt16Swap(const uint8_t* __restrict src, size_t n,
                                      float* __restrict dst) {
  DecodeInt<int16_t, true>(src, n, dst);
}

}  // namespace

absl::string_view ByteOrderName(ByteOrder order) {
  return order == ByteOrder::kBigEndian ? "big-endian" : "little-endian";
}

int BytesPerSample(int code) {
  switch (code) {
    case 1: case 2: case 4: case 5: case 10: return 4;
    case 3: case 11: return 2;
    case 6: case 9: case 12: return 8;
    case 7: case 15: return 3;
    case 8: case 16: return 1;
    default: return 0;
  }
}

absl::StatusOr<SampleFormat> SampleFormatFromCode(int code) {
  if (BytesPerSample(code) == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sample format code ", code,
        " is not a SEG-Y format (expected 1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 15 or 16)"));
  }
  return static_cast<SampleFormat>(code);
}

absl::string_view SampleFormatName(SampleFormat format) {
  switch (format) {
    case SampleFormat::kIbmFloat32: return "IBM float32";
    case SampleFormat::kInt32: return "int32";
    case SampleFormat::kInt16: return "int16";
    case SampleFormat::kFixedPointGain: return "fixed point with gain";
    case SampleFormat::kIeeeFloat32: return "IEEE float32";
    case SampleFormat::kIeeeFloat64: return "IEEE float64";
    case SampleFormat::kInt24: return "int24";
    case SampleFormat::kInt8: return "int8";
    case SampleFormat::kInt64: return "int64";
    case SampleFormat::kUInt32: return "uint32";
    case SampleFormat::kUInt16: return "uint16";
    case SampleFormat::kUInt64: return "uint64";
    case SampleFormat::kUInt24: return "uint24";
    case SampleFormat::kUInt8: return "uint8";
  }
  return "unknown";
}

uint32_t IbmToIeeeBits(uint32_t ibm) {
  const uint32_t sign = ibm & 0x80000000u;
  uint32_t frac = ibm & 0x00ffffffu;
  if (frac == 0) return sign;  // signed zero, whatever the exponent
  const int lz = __builtin_clz(frac) - 8;  // leading zero bits of the 24-bit fraction
  int exp = static_cast<int>((ibm >> 24) & 0x7f) * 4 - 130 - lz;
  uint32_t fr = frac << (8 + lz);  // normalised: top bit set
  if (exp <= 0) {
    if (exp < -24) return sign;  // complete underflow
    fr >>= -exp;                 // denormal, truncated
    return sign | (fr >> 9);
  }
  if (exp >= 255) return sign | 0x7f800000u;  // overflow: infinity
  return sign | (static_cast<uint32_t>(exp) << 23) | ((fr << 1) >> 9);
}

float IbmToFloat(uint32_t ibm) {
  const uint32_t bits = IbmToIeeeBits(ibm);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

void DecodeSamples(const uint8_t* src, size_t n, SampleFormat format, ByteOrder order,
                   float* dst) {
  const bool be = order == ByteOrder::kBigEndian;
  switch (format) {
    case SampleFormat::kIeeeFloat32:
      if (be) {
        DecodeIeee32Swap(src, n, dst);
      } else {
        std::memcpy(dst, src, n * 4);
      }
      return;
    case SampleFormat::kIbmFloat32:
      be ? DecodeIbm<true>(src, n, dst) : DecodeIbm<false>(src, n, dst);
      return;
    case SampleFormat::kInt32:
      be ? DecodeInt32Swap(src, n, dst) : DecodeInt<int32_t, false>(src, n, dst);
      return;
    case SampleFormat::kInt16:
      be ? DecodeInt16Swap(src, n, dst) : DecodeInt<int16_t, false>(src, n, dst);
      return;
    case SampleFormat::kInt8:
      DecodeInt<int8_t, false>(src, n, dst);
      return;
    case SampleFormat::kUInt8:
      DecodeInt<uint8_t, false>(src, n, dst);
      return;
    case SampleFormat::kInt64:
      be ? DecodeInt<int64_t, true>(src, n, dst) : DecodeInt<int64_t, false>(src, n, dst);
      return;
    case SampleFormat::kUInt32:
      be ? DecodeInt<uint32_t, true>(src, n, dst) : DecodeInt<uint32_t, false>(src, n, dst);
      return;
    case SampleFormat::kUInt16:
      be ? DecodeInt<uint16_t, true>(src, n, dst) : DecodeInt<uint16_t, false>(src, n, dst);
      return;
    case SampleFormat::kUInt64:
      be ? DecodeInt<uint64_t, true>(src, n, dst) : DecodeInt<uint64_t, false>(src, n, dst);
      return;
    case SampleFormat::kIeeeFloat64:
      for (size_t i = 0; i < n; ++i) {
        const uint64_t bits = Load64(src + 8 * i, order);
        double d;
        std::memcpy(&d, &bits, 8);
        dst[i] = static_cast<float>(d);
      }
      return;
    case SampleFormat::kInt24:
      for (size_t i = 0; i < n; ++i) {
        uint32_t v = Load24(src + 3 * i, order);
        dst[i] = static_cast<float>(static_cast<int32_t>(v << 8) >> 8);
      }
      return;
    case SampleFormat::kUInt24:
      for (size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(Load24(src + 3 * i, order));
      return;
    case SampleFormat::kFixedPointGain:
      // Obsolete format 4: a zero byte, a gain exponent byte and an int16 mantissa, in
      // one 32-bit word of the file's byte order; value = mantissa * 2^-gain.
      for (size_t i = 0; i < n; ++i) {
        uint32_t w;
        std::memcpy(&w, src + 4 * i, 4);
        if (be) w = Bswap32(w);
        const int gain = static_cast<int>((w >> 16) & 0xffu);
        const int16_t mantissa = static_cast<int16_t>(w & 0xffffu);
        dst[i] = static_cast<float>(std::ldexp(static_cast<double>(mantissa), -gain));
      }
      return;
  }
  // Unreachable for validated formats; never leave the destination uninitialised.
  std::memset(dst, 0, n * sizeof(float));
}

uint32_t FloatToIbm(float value) {
  if (value == 0.0f || std::isnan(value)) {
    return std::signbit(value) ? 0x80000000u : 0u;
  }
  const uint32_t sign = std::signbit(value) ? 0x80000000u : 0u;
  double a = std::fabs(static_cast<double>(value));
  int e2;
  double m = std::frexp(a, &e2);  // a = m * 2^e2, m in [0.5, 1)
  // Base-16 exponent: a = f * 16^e16 with f in [1/16, 1).
  int e16 = static_cast<int>(std::ceil(e2 / 4.0));
  double f = std::ldexp(m, e2 - 4 * e16);
  uint64_t frac = static_cast<uint64_t>(std::llround(std::ldexp(f, 24)));
  if (frac >= (1u << 24)) {  // rounding carried into a new hex digit
    frac >>= 4;
    ++e16;
  }
  int biased = e16 + 64;
  if (biased > 127) return sign | 0x7fffffffu;  // saturate
  if (biased < 0) return sign;                  // underflow to zero
  return sign | (static_cast<uint32_t>(biased) << 24) | static_cast<uint32_t>(frac);
}

void EncodeSamplesBigEndian(const float* src, size_t n, SampleFormat format, uint8_t* dst) {
  if (format != SampleFormat::kIbmFloat32) {  // a byte swap alone: one vectorized loop
    for (size_t i = 0; i < n; ++i) {
      uint32_t bits;
      std::memcpy(&bits, src + i, 4);
      bits = __builtin_bswap32(bits);
      std::memcpy(dst + 4 * i, &bits, 4);
    }
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits;
    if (format == SampleFormat::kIbmFloat32) {
      bits = FloatToIbm(src[i]);
    } else {
      std::memcpy(&bits, src + i, 4);
    }
    bits = __builtin_bswap32(bits);
    std::memcpy(dst + 4 * i, &bits, 4);
  }
}

}  // namespace shotstream::segy

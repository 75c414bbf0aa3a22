#include "wire/sample_kernels.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#define SHOTSTREAM_HAVE_AVX2_CODE 1
#endif

namespace shotstream::wire::kernels {
namespace {

uint32_t Bits(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
}

// Both paths keep 8 running sums (sample i goes to sum i % 8) and add them up in this
// order, so that the RMS, and every step taken from it, is the same on either.
double AddUp(const double acc[8]) {
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

// Rounds to nearest, ties to even, in the default rounding mode, for |v| < 2^22: adding
// 1.5 x 2^23 leaves no fraction bits (nearbyint's result, without a libm call per sample).
float RoundEven(float v) {
  constexpr float kMagic = 0x1.8p23f;  // (not folded away: the build never sets -ffast-math)
  return (v + kMagic) - kMagic;
}

// The portable loops (also the tails of the vector ones: from sample `i` on).

SampleStats StatsFrom(const float* x, size_t i, size_t n, uint32_t peak, double acc[8]) {
  for (; i < n; ++i) {
    peak = std::max(peak, Bits(x[i]) & 0x7fffffffu);
    const double d = x[i];
    acc[i % 8] += d * d;
  }
  return {peak, AddUp(acc)};
}

uint32_t PeakBitsFrom(const float* x, size_t i, size_t n, uint32_t peak) {
  for (; i < n; ++i) peak = std::max(peak, Bits(x[i]) & 0x7fffffffu);
  return peak;
}

void ScaleToInt16From(const float* x, size_t i, size_t n, float inv, uint8_t* dst) {
  for (; i < n; ++i) {
    const float v = std::clamp(RoundEven(x[i] * inv), -32767.0f, 32767.0f);
    const int16_t q = static_cast<int16_t>(v);
    std::memcpy(dst + 2 * i, &q, 2);
  }
}

void Int16ToFloatFrom(const uint8_t* q, size_t i, size_t n, float scale, float* dst) {
  for (; i < n; ++i) {
    int16_t v;
    std::memcpy(&v, q + 2 * i, 2);
    dst[i] = static_cast<float>(v) * scale;
  }
}

void QuantizeFrom(const float* x, size_t i, size_t n, float inv, int width, uint8_t* dst) {
  for (; i < n; ++i) {
    const int32_t q = static_cast<int32_t>(RoundEven(x[i] * inv));
    const uint32_t z = (static_cast<uint32_t>(q) << 1) ^ static_cast<uint32_t>(q >> 31);
    if (width == 1) {
      dst[i] = static_cast<uint8_t>(z);
    } else if (width == 2) {
      const uint16_t w = static_cast<uint16_t>(z);
      std::memcpy(dst + 2 * i, &w, 2);
    } else {
      std::memcpy(dst + 4 * i, &z, 4);
    }
  }
}

void DequantizeFrom(const uint8_t* z, size_t i, size_t n, int width, float step, float* dst) {
  for (; i < n; ++i) {
    uint32_t v = 0;
    if (width == 1) {
      v = z[i];
    } else if (width == 2) {
      uint16_t w;
      std::memcpy(&w, z + 2 * i, 2);
      v = w;
    } else {
      std::memcpy(&v, z + 4 * i, 4);
    }
    const int32_t q = static_cast<int32_t>((v >> 1) ^ (0u - (v & 1u)));
    dst[i] = static_cast<float>(q) * step;
  }
}

// The bit shuffle's 8x8 bit transpose of a 64-bit word (byte r, bit b) -> (byte b, bit r),
// as bitshuffle's TRANS_BIT_8X8 (little-endian).
uint64_t TransposeBits8x8(uint64_t x) {
  uint64_t t = (x ^ (x >> 7)) & 0x00AA00AA00AA00AAull;
  x = x ^ t ^ (t << 7);
  t = (x ^ (x >> 14)) & 0x0000CCCC0000CCCCull;
  x = x ^ t ^ (t << 14);
  t = (x ^ (x >> 28)) & 0x00000000F0F0F0F0ull;
  return x ^ t ^ (t << 28);
}

// Column `col` of a shuffled block is byte col of each of its 32 bit rows: the bits of
// elements 8 col .. 8 col + 7. These loops do the columns from `col` on.
void BitShuffle4From(const uint8_t* src, size_t n, size_t col, uint8_t* dst) {
  const size_t row = n / 8;
  for (; col < row; ++col) {
    const uint8_t* e = src + 32 * col;
    for (int j = 0; j < 4; ++j) {
      uint64_t x = 0;
      for (int i = 0; i < 8; ++i) x |= uint64_t{e[4 * i + j]} << (8 * i);
      x = TransposeBits8x8(x);
      for (int k = 0; k < 8; ++k) dst[(8 * j + k) * row + col] = static_cast<uint8_t>(x >> (8 * k));
    }
  }
}

void BitUnshuffle4From(const uint8_t* src, size_t n, size_t col, uint8_t* dst) {
  const size_t row = n / 8;
  for (; col < row; ++col) {
    uint8_t* e = dst + 32 * col;
    for (int j = 0; j < 4; ++j) {
      uint64_t x = 0;
      for (int k = 0; k < 8; ++k) x |= uint64_t{src[(8 * j + k) * row + col]} << (8 * k);
      x = TransposeBits8x8(x);
      for (int i = 0; i < 8; ++i) e[4 * i + j] = static_cast<uint8_t>(x >> (8 * i));
    }
  }
}

#if SHOTSTREAM_HAVE_AVX2_CODE

// Each AVX2 function clears the upper halves of the vector registers before its scalar
// tail (which may be a tail call the compiler does not guard): code that follows with
// SSE instructions (c-blosc's bit shuffle) ran at half speed after a dirty return.
#define SS_AVX2 __attribute__((target("avx2")))

SS_AVX2 uint32_t HorizontalMax(__m256i v) {
  __m128i m = _mm_max_epu32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  m = _mm_max_epu32(m, _mm_shuffle_epi32(m, _MM_SHUFFLE(1, 0, 3, 2)));
  m = _mm_max_epu32(m, _mm_shuffle_epi32(m, _MM_SHUFFLE(2, 3, 0, 1)));
  return static_cast<uint32_t>(_mm_cvtsi128_si32(m));
}

SS_AVX2 SampleStats StatsAvx2(const float* x, size_t n) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
  __m256i peak = _mm256_setzero_si256();
  __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    peak = _mm256_max_epu32(peak, _mm256_and_si256(_mm256_castps_si256(v), abs_mask));
    const __m256d a = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
    const __m256d b = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
    lo = _mm256_add_pd(lo, _mm256_mul_pd(a, a));
    hi = _mm256_add_pd(hi, _mm256_mul_pd(b, b));
  }
  double acc[8];
  _mm256_storeu_pd(acc, lo);
  _mm256_storeu_pd(acc + 4, hi);
  const uint32_t peak_bits = HorizontalMax(peak);
  _mm256_zeroupper();
  return StatsFrom(x, i, n, peak_bits, acc);
}

SS_AVX2 uint32_t PeakBitsAvx2(const float* x, size_t n) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
  __m256i p0 = _mm256_setzero_si256(), p1 = _mm256_setzero_si256();
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    p0 = _mm256_max_epu32(p0, _mm256_and_si256(_mm256_loadu_si256((const __m256i*)(x + i)),
                                               abs_mask));
    p1 = _mm256_max_epu32(p1, _mm256_and_si256(_mm256_loadu_si256((const __m256i*)(x + i + 8)),
                                               abs_mask));
  }
  const uint32_t peak_bits = HorizontalMax(_mm256_max_epu32(p0, p1));
  _mm256_zeroupper();
  return PeakBitsFrom(x, i, n, peak_bits);
}

SS_AVX2 void ScaleToInt16Avx2(const float* x, size_t n, float inv, uint8_t* dst) {
  const __m256 vinv = _mm256_set1_ps(inv);
  const __m256i floor = _mm256_set1_epi16(-32767);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i a = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i), vinv));
    const __m256i b = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i + 8), vinv));
    // packs interleaves the 128-bit lanes; the permute puts the 16 values back in order.
    __m256i q = _mm256_permute4x64_epi64(_mm256_packs_epi32(a, b), _MM_SHUFFLE(3, 1, 2, 0));
    q = _mm256_max_epi16(q, floor);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 2 * i), q);
  }
  _mm256_zeroupper();
  ScaleToInt16From(x, i, n, inv, dst);
}

// How many of n floats at dst come before its first 32-byte boundary (written by the
// portable loop, so that the streaming stores after them are aligned).
size_t FloatsBefore32ByteBoundary(const float* dst, size_t n) {
  const size_t misaligned = reinterpret_cast<uintptr_t>(dst) % 32;  // a multiple of 4
  return std::min(n, (32 - misaligned) % 32 / 4);
}

// The float32 samples are written past the cache (streaming stores, from dst's first
// 32-byte boundary): they are twice the bytes read, go to a shot's buffer that this core
// does not read again soon, and a store through the cache would first read each line.

SS_AVX2 void Int16ToFloatAvx2(const uint8_t* q, size_t n, float scale, float* dst) {
  const __m256 vscale = _mm256_set1_ps(scale);
  size_t i = FloatsBefore32ByteBoundary(dst, n);
  Int16ToFloatFrom(q, 0, i, scale, dst);
  for (; i + 16 <= n; i += 16) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 2 * i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 2 * i + 16));
    _mm256_stream_ps(dst + i, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(a)), vscale));
    _mm256_stream_ps(dst + i + 8,
                     _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(b)), vscale));
  }
  _mm_sfence();  // the streamed stores ordered before whatever follows
  _mm256_zeroupper();
  Int16ToFloatFrom(q, i, n, scale, dst);
}

SS_AVX2 __m256i ZigzagAvx2(const float* x, __m256 vinv) {
  const __m256i q = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x), vinv));
  return _mm256_xor_si256(_mm256_slli_epi32(q, 1), _mm256_srai_epi32(q, 31));
}

SS_AVX2 void QuantizeAvx2(const float* x, size_t n, float inv, int width, uint8_t* dst) {
  const __m256 vinv = _mm256_set1_ps(inv);
  size_t i = 0;
  if (width == 4) {
    for (; i + 8 <= n; i += 8) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 4 * i), ZigzagAvx2(x + i, vinv));
    }
  } else if (width == 2) {
    for (; i + 16 <= n; i += 16) {
      const __m256i p = _mm256_packus_epi32(ZigzagAvx2(x + i, vinv), ZigzagAvx2(x + i + 8, vinv));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 2 * i),
                          _mm256_permute4x64_epi64(p, _MM_SHUFFLE(3, 1, 2, 0)));
    }
  } else {
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (; i + 32 <= n; i += 32) {
      const __m256i p01 =
          _mm256_packus_epi32(ZigzagAvx2(x + i, vinv), ZigzagAvx2(x + i + 8, vinv));
      const __m256i p23 =
          _mm256_packus_epi32(ZigzagAvx2(x + i + 16, vinv), ZigzagAvx2(x + i + 24, vinv));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                          _mm256_permutevar8x32_epi32(_mm256_packus_epi16(p01, p23), order));
    }
  }
  _mm256_zeroupper();
  QuantizeFrom(x, i, n, inv, width, dst);
}

// Streams its float32 samples past the cache, as Int16ToFloatAvx2 does, and for the same
// reasons.
SS_AVX2 void DequantizeAvx2(const uint8_t* z, size_t n, int width, float step, float* dst) {
  const __m256 vstep = _mm256_set1_ps(step);
  const __m256i one = _mm256_set1_epi32(1);
  size_t i = FloatsBefore32ByteBoundary(dst, n);
  DequantizeFrom(z, 0, i, width, step, dst);
  for (; i + 8 <= n; i += 8) {
    __m256i v;
    if (width == 1) {
      v = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(z + i)));
    } else if (width == 2) {
      v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(z + 2 * i)));
    } else {
      v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(z + 4 * i));
    }
    const __m256i q = _mm256_xor_si256(_mm256_srli_epi32(v, 1),
                                       _mm256_sub_epi32(_mm256_setzero_si256(),
                                                        _mm256_and_si256(v, one)));
    _mm256_stream_ps(dst + i, _mm256_mul_ps(_mm256_cvtepi32_ps(q), vstep));
  }
  _mm_sfence();
  _mm256_zeroupper();
  DequantizeFrom(z, i, n, width, step, dst);
}

// TransposeBits8x8 on each 64-bit lane.
SS_AVX2 inline __m256i TransposeBits8x8Avx2(__m256i x) {
  __m256i t = _mm256_and_si256(_mm256_xor_si256(x, _mm256_srli_epi64(x, 7)),
                               _mm256_set1_epi64x(0x00AA00AA00AA00AALL));
  x = _mm256_xor_si256(x, _mm256_xor_si256(t, _mm256_slli_epi64(t, 7)));
  t = _mm256_and_si256(_mm256_xor_si256(x, _mm256_srli_epi64(x, 14)),
                       _mm256_set1_epi64x(0x0000CCCC0000CCCCLL));
  x = _mm256_xor_si256(x, _mm256_xor_si256(t, _mm256_slli_epi64(t, 14)));
  t = _mm256_and_si256(_mm256_xor_si256(x, _mm256_srli_epi64(x, 28)),
                       _mm256_set1_epi64x(0x00000000F0F0F0F0LL));
  return _mm256_xor_si256(x, _mm256_xor_si256(t, _mm256_slli_epi64(t, 28)));
}

// The same with GFNI, one affine transform a lane: byte j of the result takes bit i from
// byte 7 - i of the matrix operand, so the word goes in byte-reversed.
#define SS_GFNI __attribute__((target("avx2,gfni")))
SS_GFNI inline __m256i TransposeBits8x8Gfni(__m256i x) {
  const __m256i reverse = _mm256_setr_epi8(7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8,
                                           7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8);
  return _mm256_gf2p8affine_epi64_epi8(_mm256_set1_epi64x(0x8040201008040201LL),
                                       _mm256_shuffle_epi8(x, reverse), 0);
}

// Within each 16-byte lane: 4 elements of 4 bytes <-> 4 runs of byte j (its own inverse).
SS_AVX2 inline __m256i Transpose4x4Bytes(__m256i v) {
  const __m256i m = _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15, 0, 4,
                                     8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm256_shuffle_epi8(v, m);
}

// The bit shuffle takes 64 elements (256 bytes, 8 columns of the bit rows) a step. For the
// 8 elements of column col + g, a[g] holds: before the bit transpose, byte j of each in
// 64-bit word j (GatherColumns); after it, byte r of bit row r (StoreColumns's input).
// LoadColumns and ScatterColumns are their inverses.
#define SS_INLINE __attribute__((always_inline)) inline
SS_AVX2 SS_INLINE void GatherColumns(const uint8_t* src, size_t col, __m256i a[8]) {
  const __m256i pairs = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
#pragma GCC unroll 8
  for (int g = 0; g < 8; ++g) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 32 * (col + g)));
    a[g] = _mm256_permutevar8x32_epi32(Transpose4x4Bytes(v), pairs);
  }
}

// An unpack ladder turns the 8 x 32 bytes into 32 bit rows of 8 bytes, stored to the rows.
SS_AVX2 SS_INLINE void StoreColumns(const __m256i a[8], size_t row, size_t col, uint8_t* dst) {
  __m256i s[8], t[8];
#pragma GCC unroll 8
  for (int p = 0; p < 4; ++p) {
    s[2 * p] = _mm256_unpacklo_epi8(a[2 * p], a[2 * p + 1]);
    s[2 * p + 1] = _mm256_unpackhi_epi8(a[2 * p], a[2 * p + 1]);
  }
  // t[0..3]: columns 0-3 of bit rows 0-3, 4-7, 8-11, 12-15 (of each lane); t[4..7]: 4-7.
#pragma GCC unroll 8
  for (int h = 0; h < 2; ++h) {
    t[4 * h + 0] = _mm256_unpacklo_epi16(s[4 * h + 0], s[4 * h + 2]);
    t[4 * h + 1] = _mm256_unpackhi_epi16(s[4 * h + 0], s[4 * h + 2]);
    t[4 * h + 2] = _mm256_unpacklo_epi16(s[4 * h + 1], s[4 * h + 3]);
    t[4 * h + 3] = _mm256_unpackhi_epi16(s[4 * h + 1], s[4 * h + 3]);
  }
#pragma GCC unroll 8
  for (int q = 0; q < 4; ++q) {
    // Bit rows 4q .. 4q + 3 of lane 0 and 16 + 4q .. 19 + 4q of lane 1, 8 bytes each.
    const __m256i u[2] = {_mm256_unpacklo_epi32(t[q], t[q + 4]),
                          _mm256_unpackhi_epi32(t[q], t[q + 4])};
#pragma GCC unroll 8
    for (int w = 0; w < 2; ++w) {
      const size_t r = 4 * q + 2 * w;
      const __m128i lo = _mm256_castsi256_si128(u[w]);
      const __m128i hi = _mm256_extracti128_si256(u[w], 1);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(dst + r * row + col), lo);
      _mm_storeh_pd(reinterpret_cast<double*>(dst + (r + 1) * row + col), _mm_castsi128_pd(lo));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(dst + (r + 16) * row + col), hi);
      _mm_storeh_pd(reinterpret_cast<double*>(dst + (r + 17) * row + col), _mm_castsi128_pd(hi));
    }
  }
}

// Even elements of each half-lane's pairs to its low 8 bytes, odd ones to the high: the
// inverse of an unpack, with unpacklo/hi_epi64 after it.
SS_AVX2 SS_INLINE void Unzip(__m256i lo, __m256i hi, __m256i mask, __m256i* even, __m256i* odd) {
  lo = _mm256_shuffle_epi8(lo, mask);
  hi = _mm256_shuffle_epi8(hi, mask);
  *even = _mm256_unpacklo_epi64(lo, hi);
  *odd = _mm256_unpackhi_epi64(lo, hi);
}

SS_AVX2 SS_INLINE void LoadColumns(const uint8_t* src, size_t row, size_t col, __m256i a[8]) {
  const __m256i bytes = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15, 0,
                                         2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
  const __m256i words = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15, 0,
                                         1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
  const __m256i dwords = _mm256_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15,
                                          0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15);
  __m256i t[8], s[8];
#pragma GCC unroll 8
  for (int q = 0; q < 4; ++q) {
    __m256i u[2];
#pragma GCC unroll 8
    for (int w = 0; w < 2; ++w) {
      const size_t r = 4 * q + 2 * w;
      __m128i lo = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + r * row + col));
      lo = _mm_castpd_si128(_mm_loadh_pd(_mm_castsi128_pd(lo),
                                         reinterpret_cast<const double*>(src + (r + 1) * row + col)));
      __m128i hi = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + (r + 16) * row + col));
      hi = _mm_castpd_si128(_mm_loadh_pd(_mm_castsi128_pd(hi),
                                         reinterpret_cast<const double*>(src + (r + 17) * row + col)));
      u[w] = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
    }
    Unzip(u[0], u[1], dwords, &t[q], &t[q + 4]);
  }
#pragma GCC unroll 8
  for (int h = 0; h < 2; ++h) {
    Unzip(t[4 * h + 0], t[4 * h + 1], words, &s[4 * h + 0], &s[4 * h + 2]);
    Unzip(t[4 * h + 2], t[4 * h + 3], words, &s[4 * h + 1], &s[4 * h + 3]);
  }
#pragma GCC unroll 8
  for (int p = 0; p < 4; ++p) Unzip(s[2 * p], s[2 * p + 1], bytes, &a[2 * p], &a[2 * p + 1]);
}

SS_AVX2 SS_INLINE void ScatterColumns(const __m256i a[8], size_t col, uint8_t* dst) {
  const __m256i unpairs = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
  const bool aligned = (reinterpret_cast<uintptr_t>(dst) & 31) == 0;
#pragma GCC unroll 8
  for (int g = 0; g < 8; ++g) {
    const __m256i v = Transpose4x4Bytes(_mm256_permutevar8x32_epi32(a[g], unpairs));
    auto* p = reinterpret_cast<__m256i*>(dst + 32 * (col + g));
    if (aligned) {
      _mm256_stream_si256(p, v);
    } else {
      _mm256_storeu_si256(p, v);
    }
  }
}

// The four kernels: the AVX2 steps around either 8x8 bit transpose.
#define SS_BIT_SHUFFLE_STEPS(Transpose)                         \
  const size_t row = n / 8;                                     \
  size_t col = 0;                                               \
  for (; col + 8 <= row; col += 8) {                            \
    __m256i a[8];                                               \
    GatherColumns(src, col, a);                                 \
    for (int g = 0; g < 8; ++g) a[g] = Transpose(a[g]);         \
    StoreColumns(a, row, col, dst);                             \
  }                                                             \
  _mm256_zeroupper();                                           \
  BitShuffle4From(src, n, col, dst)
#define SS_BIT_UNSHUFFLE_STEPS(Transpose)                       \
  const size_t row = n / 8;                                     \
  size_t col = 0;                                               \
  for (; col + 8 <= row; col += 8) {                            \
    __m256i a[8];                                               \
    LoadColumns(src, row, col, a);                              \
    for (int g = 0; g < 8; ++g) a[g] = Transpose(a[g]);         \
    ScatterColumns(a, col, dst);                                \
  }                                                             \
  _mm_sfence();                                                 \
  _mm256_zeroupper();                                           \
  BitUnshuffle4From(src, n, col, dst)

SS_AVX2 void BitShuffle4Avx2(const uint8_t* src, size_t n, uint8_t* dst) {
  SS_BIT_SHUFFLE_STEPS(TransposeBits8x8Avx2);
}
SS_AVX2 void BitUnshuffle4Avx2(const uint8_t* src, size_t n, uint8_t* dst) {
  SS_BIT_UNSHUFFLE_STEPS(TransposeBits8x8Avx2);
}
SS_GFNI void BitShuffle4Gfni(const uint8_t* src, size_t n, uint8_t* dst) {
  SS_BIT_SHUFFLE_STEPS(TransposeBits8x8Gfni);
}
SS_GFNI void BitUnshuffle4Gfni(const uint8_t* src, size_t n, uint8_t* dst) {
  SS_BIT_UNSHUFFLE_STEPS(TransposeBits8x8Gfni);
}

#undef SS_BIT_SHUFFLE_STEPS
#undef SS_BIT_UNSHUFFLE_STEPS
#undef SS_INLINE
#undef SS_GFNI
#undef SS_AVX2

bool CpuHasAvx2() { return __builtin_cpu_supports("avx2"); }
bool CpuHasGfni() { return CpuHasAvx2() && __builtin_cpu_supports("gfni"); }
#else
bool CpuHasAvx2() { return false; }
bool CpuHasGfni() { return false; }
#endif

// The best path this CPU has, or SHOTSTREAM_SIMD's.
Path DefaultPath() {
  const char* env = std::getenv("SHOTSTREAM_SIMD");
  if (env != nullptr && std::strcmp(env, "portable") == 0) return Path::kPortable;
  if (!CpuHasAvx2()) return Path::kPortable;
  if (env != nullptr && std::strcmp(env, "avx2") == 0) return Path::kAvx2;
  return CpuHasGfni() ? Path::kAvx2Gfni : Path::kAvx2;
}

std::atomic<Path> forced{Path::kAuto};

Path Active() {
  static const Path default_path = DefaultPath();
  const Path f = forced.load(std::memory_order_relaxed);
  return f == Path::kAuto ? default_path : f;
}

bool UseAvx2() { return Active() != Path::kPortable; }
bool UseGfni() { return Active() == Path::kAvx2Gfni; }

}  // namespace

Path ActivePath() { return Active(); }

absl::string_view PathName(Path path) {
  switch (path) {
    case Path::kAvx2Gfni:
      return "avx2+gfni";
    case Path::kAvx2:
      return "avx2";
    case Path::kPortable:
      return "portable";
    default:
      return "auto";
  }
}

std::string TestName(Path path) {
  std::string name(PathName(path));
  std::replace(name.begin(), name.end(), '+', '_');
  return name;
}

void ForcePath(Path path) {
  if (path == Path::kAvx2Gfni && !CpuHasGfni()) path = Path::kAvx2;
  if (path == Path::kAvx2 && !CpuHasAvx2()) path = Path::kPortable;
  forced.store(path, std::memory_order_relaxed);
}

#if SHOTSTREAM_HAVE_AVX2_CODE
#define SS_DISPATCH(avx2_call, portable_call) \
  if (UseAvx2()) return avx2_call;            \
  return portable_call
#else
#define SS_DISPATCH(avx2_call, portable_call) return portable_call
#endif

uint32_t PeakBits(const float* x, size_t n) {
  SS_DISPATCH(PeakBitsAvx2(x, n), PeakBitsFrom(x, 0, n, 0));
}

SampleStats Stats(const float* x, size_t n) {
  double acc[8] = {};
  SS_DISPATCH(StatsAvx2(x, n), StatsFrom(x, 0, n, 0, acc));
}

void ScaleToInt16(const float* x, size_t n, float inv, uint8_t* dst) {
  SS_DISPATCH(ScaleToInt16Avx2(x, n, inv, dst), ScaleToInt16From(x, 0, n, inv, dst));
}

void Int16ToFloat(const uint8_t* q, size_t n, float scale, float* dst) {
  SS_DISPATCH(Int16ToFloatAvx2(q, n, scale, dst), Int16ToFloatFrom(q, 0, n, scale, dst));
}

void Quantize(const float* x, size_t n, float inv, int width, uint8_t* dst) {
  SS_DISPATCH(QuantizeAvx2(x, n, inv, width, dst), QuantizeFrom(x, 0, n, inv, width, dst));
}

void Dequantize(const uint8_t* z, size_t n, int width, float step, float* dst) {
  SS_DISPATCH(DequantizeAvx2(z, n, width, step, dst), DequantizeFrom(z, 0, n, width, step, dst));
}

void BitShuffle4(const uint8_t* src, size_t n, uint8_t* dst) {
#if SHOTSTREAM_HAVE_AVX2_CODE
  if (UseGfni()) return BitShuffle4Gfni(src, n, dst);
#endif
  SS_DISPATCH(BitShuffle4Avx2(src, n, dst), BitShuffle4From(src, n, 0, dst));
}

void BitUnshuffle4(const uint8_t* src, size_t n, uint8_t* dst) {
#if SHOTSTREAM_HAVE_AVX2_CODE
  if (UseGfni()) return BitUnshuffle4Gfni(src, n, dst);
#endif
  SS_DISPATCH(BitUnshuffle4Avx2(src, n, dst), BitUnshuffle4From(src, n, 0, dst));
}

#undef SS_DISPATCH

}  // namespace shotstream::wire::kernels

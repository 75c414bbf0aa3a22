#include "common/crc32_copy.h"

#include <algorithm>
#include <cstring>

#include "common/crc32.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define SHOTSTREAM_HAVE_PCLMUL_CODE 1
#endif

namespace shotstream {
namespace {

void SwapWords(const uint8_t* src, size_t size, uint8_t* dst) {
  for (size_t i = 0; i + 4 <= size; i += 4) {
    uint32_t w;
    std::memcpy(&w, src + i, 4);
    w = __builtin_bswap32(w);
    std::memcpy(dst + i, &w, 4);
  }
}

// Without PCLMULQDQ: the CRC-32 then the copy, a piece at a time while it is in cache.
template <bool kSwap>
uint32_t TwoPass(uint32_t crc, const uint8_t* src, size_t size, uint8_t* dst) {
  constexpr size_t kPiece = 16 * 1024;
  for (size_t done = 0; done < size; done += kPiece) {
    const size_t n = std::min(kPiece, size - done);
    crc = Crc32(crc, src + done, n);
    if (kSwap) {
      SwapWords(src + done, n, dst + done);
    } else {
      std::memcpy(dst + done, src + done, n);
    }
  }
  return crc;
}

#if SHOTSTREAM_HAVE_PCLMUL_CODE
#define SS_PCLMUL __attribute__((target("pclmul,sse4.1,ssse3")))

constexpr size_t kStreamMinBytes = 64 * 1024;

// Folds the 128 bits of `x` forward by the distance `k` was made for, onto `d`.
SS_PCLMUL inline __m128i Fold(__m128i x, __m128i k, __m128i d) {
  return _mm_xor_si128(
      _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)), d);
}

SS_PCLMUL inline __m128i Load(const uint8_t* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

template <bool kSwap, bool kStream>
SS_PCLMUL inline void Store(uint8_t* p, __m128i v) {
  if (kSwap) v = _mm_shuffle_epi8(v, _mm_setr_epi8(3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12));
  if (kStream) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(p), v);
  } else {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v);
  }
}

// The folding of Intel's "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ"
// (Gopal et al., 2009) for the reflected polynomial 0xEDB88320: four 128-bit lanes folded
// by 512 bits a step, then into one, by 128 bits. The constants are x^(512±32) and
// x^(128±32) mod P, bit-reflected (those of Linux's crc32-pclmul). The last 128 bits are
// reduced to 32 by ISA-L (a CRC-32 of 16 bytes from a zero state), the tail likewise.
template <bool kSwap, bool kStream>
SS_PCLMUL uint32_t Fused(uint32_t crc, const uint8_t* src, size_t size, uint8_t* dst) {
  if (size >= 64) {
    const __m128i k512 = _mm_set_epi64x(0x1c6e41596, 0x154442bd4);
    const __m128i k128 = _mm_set_epi64x(0x0ccaa009e, 0x1751997d0);
    __m128i x0 = Load(src), x1 = Load(src + 16), x2 = Load(src + 32), x3 = Load(src + 48);
    Store<kSwap, kStream>(dst, x0);
    Store<kSwap, kStream>(dst + 16, x1);
    Store<kSwap, kStream>(dst + 32, x2);
    Store<kSwap, kStream>(dst + 48, x3);
    // zlib's CRC-32 is the raw register's complement: the register starts at ~crc.
    x0 = _mm_xor_si128(x0, _mm_cvtsi32_si128(static_cast<int>(~crc)));
    src += 64, dst += 64, size -= 64;
    for (; size >= 64; src += 64, dst += 64, size -= 64) {
      const __m128i d0 = Load(src), d1 = Load(src + 16), d2 = Load(src + 32),
                    d3 = Load(src + 48);
      Store<kSwap, kStream>(dst, d0);
      Store<kSwap, kStream>(dst + 16, d1);
      Store<kSwap, kStream>(dst + 32, d2);
      Store<kSwap, kStream>(dst + 48, d3);
      x0 = Fold(x0, k512, d0);
      x1 = Fold(x1, k512, d1);
      x2 = Fold(x2, k512, d2);
      x3 = Fold(x3, k512, d3);
    }
    __m128i x = Fold(Fold(Fold(x0, k128, x1), k128, x2), k128, x3);
    for (; size >= 16; src += 16, dst += 16, size -= 16) {
      const __m128i d = Load(src);
      Store<kSwap, kStream>(dst, d);
      x = Fold(x, k128, d);
    }
    if (kStream) _mm_sfence();  // the streamed stores ordered before whatever follows
    alignas(16) uint8_t rest[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(rest), x);
    crc = Crc32(0xFFFFFFFFu, rest, 16);  // from the zero register: the CRC-32 so far
  }
  crc = Crc32(crc, src, size);
  if (kSwap) {
    SwapWords(src, size, dst);
  } else {
    std::memcpy(dst, src, size);
  }
  return crc;
}

bool CpuHasPclmul() {
  static const bool has = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("ssse3") &&
                          __builtin_cpu_supports("sse4.1");
  return has;
}

template <bool kSwap>
uint32_t Dispatch(uint32_t crc, const uint8_t* src, size_t size, uint8_t* dst,
                  size_t whole_copy) {
  if (!CpuHasPclmul()) return TwoPass<kSwap>(crc, src, size, dst);
  // (A piece of a larger copy streams too, where it is more than its unaligned head.)
  if (std::max(size, whole_copy) >= kStreamMinBytes && size >= 64) {
    // Streaming stores need a 16-byte-aligned destination: the bytes before it go first.
    const size_t head = (16 - reinterpret_cast<uintptr_t>(dst) % 16) % 16;
    if (!kSwap || head % 4 == 0) {
      crc = TwoPass<kSwap>(crc, src, head, dst);
      return Fused<kSwap, true>(crc, src + head, size - head, dst + head);
    }
  }
  return Fused<kSwap, false>(crc, src, size, dst);
}
#else
template <bool kSwap>
uint32_t Dispatch(uint32_t crc, const uint8_t* src, size_t size, uint8_t* dst, size_t) {
  return TwoPass<kSwap>(crc, src, size, dst);
}
#endif

}  // namespace

uint32_t CopyCrc32(uint32_t crc, const uint8_t* src, size_t size, uint8_t* dst,
                   size_t whole_copy) {
  return Dispatch<false>(crc, src, size, dst, whole_copy);
}

uint32_t SwapCopyCrc32(uint32_t crc, const uint8_t* src, size_t size, uint8_t* dst,
                       size_t whole_copy) {
  return Dispatch<true>(crc, src, size, dst, whole_copy);
}

namespace crc32_copy_internal {
uint32_t TwoPassCopyCrc32(uint32_t crc, const uint8_t* src, size_t size, uint8_t* dst) {
  return TwoPass<false>(crc, src, size, dst);
}
uint32_t TwoPassSwapCopyCrc32(uint32_t crc, const uint8_t* src, size_t size, uint8_t* dst) {
  return TwoPass<true>(crc, src, size, dst);
}
}  // namespace crc32_copy_internal

}  // namespace shotstream

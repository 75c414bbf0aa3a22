// CRC-32 (the zlib/gzip polynomial, so zlib.crc32 in Python agrees) computed with
// ISA-L's folding kernels (PCLMULQDQ, VPCLMULQDQ on AVX-512), picked at run time. On a
// 7.68 MB shot, `bazel run -c opt //common:crc32_benchmark`: 39 GB/s, zlib 3.1.
#ifndef SHOTSTREAM_SERVER_COMMON_CRC32_H_
#define SHOTSTREAM_SERVER_COMMON_CRC32_H_

#include <isa-l/crc.h>
#include <zlib.h>

#include <cstddef>
#include <cstdint>

namespace shotstream {

// Continues `crc` (start with 0) over `size` bytes. Thread-safe.
inline uint32_t Crc32(uint32_t crc, const void* data, size_t size) {
  return crc32_gzip_refl(crc, static_cast<const unsigned char*>(data), size);
}

// The CRC-32 of A followed by B, from crc_a and crc_b, B being `b_bytes` long (zlib's
// crc32_combine64: a few microseconds, whatever the length). Thread-safe.
inline uint32_t Crc32Combine(uint32_t crc_a, uint32_t crc_b, uint64_t b_bytes) {
  return static_cast<uint32_t>(crc32_combine64(crc_a, crc_b, static_cast<z_off64_t>(b_bytes)));
}

// Joins CRC-32s of consecutive pieces that all have the same length: Append(crc_a, crc_b)
// is the CRC-32 of A followed by B, where B is `piece_bytes` long. Appending is a linear
// map of crc_a (zlib's crc32_combine_op with the operator for that length): it is kept as
// four tables of 256 entries, one per byte of crc_a, so an Append is four lookups (zlib's
// is a 32-step multiply, ~15x slower). Made from 32 products in a few microseconds; 4 KiB.
// Thread-safe.
class Crc32Joiner {
 public:
  explicit Crc32Joiner(size_t piece_bytes) {
    const uLong op = crc32_combine_gen64(static_cast<z_off64_t>(piece_bytes));
    for (int k = 0; k < 4; ++k) {
      uint32_t bit[8];  // the images of the byte's single bits
      for (int j = 0; j < 8; ++j) {
        bit[j] = static_cast<uint32_t>(crc32_combine_op(uLong{1} << (8 * k + j), 0, op));
      }
      table_[k][0] = 0;
      for (int b = 1; b < 256; ++b) {  // b's image: that of b without its lowest bit, + it
        table_[k][b] = table_[k][b & (b - 1)] ^ bit[__builtin_ctz(b)];
      }
    }
  }
  uint32_t Append(uint32_t crc_a, uint32_t crc_b) const {
    return table_[0][crc_a & 0xff] ^ table_[1][(crc_a >> 8) & 0xff] ^
           table_[2][(crc_a >> 16) & 0xff] ^ table_[3][crc_a >> 24] ^ crc_b;
  }

 private:
  uint32_t table_[4][256];
};

}  // namespace shotstream

#endif  // SHOTSTREAM_SERVER_COMMON_CRC32_H_

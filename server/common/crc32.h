// CRC-32 (the zlib/gzip polynomial, so zlib.crc32 in Python agrees) computed with
// ISA-L's folding kernels (PCLMULQDQ, VPCLMULQDQ on AVX-512), picked at run time. On a
// 7.68 MB shot, `bazel run -c opt //server/common:crc32_benchmark`: 39 GB/s, zlib 3.1.
#ifndef SHOTSTREAM_SERVER_COMMON_CRC32_H_
#define SHOTSTREAM_SERVER_COMMON_CRC32_H_

#include <isa-l/crc.h>

#include <cstddef>
#include <cstdint>

namespace shotstream {

// Continues `crc` (start with 0) over `size` bytes. Thread-safe.
inline uint32_t Crc32(uint32_t crc, const void* data, size_t size) {
  return crc32_gzip_refl(crc, static_cast<const unsigned char*>(data), size);
}

}  // namespace shotstream

#endif  // SHOTSTREAM_SERVER_COMMON_CRC32_H_

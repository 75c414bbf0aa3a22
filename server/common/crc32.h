// CRC-32 (the zlib/gzip polynomial, so zlib.crc32 in Python agrees) computed with
// libdeflate's PCLMUL/AVX kernels: measured about 4x faster than zlib's crc32_z here,
// where the checksum was a third of the client's CPU time.
#ifndef SHOTSTREAM_SERVER_COMMON_CRC32_H_
#define SHOTSTREAM_SERVER_COMMON_CRC32_H_

#include <libdeflate.h>

#include <cstddef>
#include <cstdint>

namespace shotstream {

// Continues `crc` (start with 0) over `size` bytes. Thread-safe.
inline uint32_t Crc32(uint32_t crc, const void* data, size_t size) {
  return libdeflate_crc32(crc, data, size);
}

}  // namespace shotstream

#endif  // SHOTSTREAM_SERVER_COMMON_CRC32_H_

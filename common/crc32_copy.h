// A copy and its CRC-32 in one pass: each 64 bytes are loaded once, stored to the
// destination (byte-swapped by 32-bit word, for big-endian samples) and folded into the
// CRC-32 with carry-less multiplies (PCLMULQDQ, picked at run time; Crc32 and a copy
// where the CPU lacks it). The CRC-32 is zlib's, of the source bytes, as common/crc32.h.
//
// Why: the client's receive path read each chunk twice (the CRC-32, then the copy); one
// read is half the traffic through the cache for the same result. Copies of 64 KiB and
// more take streaming stores (a shot's buffer is not read again soon by this core;
// skipping the cache saves the read for ownership), from the first 16-byte boundary of
// the destination.
//
// Thread-safe (pure functions).
#ifndef SHOTSTREAM_COMMON_CRC32_COPY_H_
#define SHOTSTREAM_COMMON_CRC32_COPY_H_

#include <cstddef>
#include <cstdint>

namespace shotstream {

// Copies `size` bytes from `src` to `dst` (not overlapping) and returns the CRC-32 of
// them, continued from `crc` (start with 0). `whole_copy`: the bytes of the copy this
// call is a piece of (the traces of a chunk, copied one by one), which decides the
// stores as `size` does when 0.
uint32_t CopyCrc32(uint32_t crc, const uint8_t* src, size_t size, uint8_t* dst,
                   size_t whole_copy = 0);

// The same, with the 4 bytes of each 32-bit word reversed in `dst` (big-endian float32
// or int32 to little-endian); the CRC-32 is of `src` as it is. REQUIRES: size % 4 == 0.
uint32_t SwapCopyCrc32(uint32_t crc, const uint8_t* src, size_t size, uint8_t* dst,
                       size_t whole_copy = 0);

namespace crc32_copy_internal {  // the fallback, for tests on CPUs that have the kernel
uint32_t TwoPassCopyCrc32(uint32_t crc, const uint8_t* src, size_t size, uint8_t* dst);
uint32_t TwoPassSwapCopyCrc32(uint32_t crc, const uint8_t* src, size_t size, uint8_t* dst);
}  // namespace crc32_copy_internal

}  // namespace shotstream

#endif  // SHOTSTREAM_COMMON_CRC32_COPY_H_

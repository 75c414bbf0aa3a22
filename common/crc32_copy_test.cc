#include "common/crc32_copy.h"

#include <zlib.h>

#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace shotstream {
namespace {

using CopyFn = uint32_t (*)(uint32_t, const uint8_t*, size_t, uint8_t*, size_t);

uint32_t ZlibCrc(uint32_t crc, const uint8_t* p, size_t n) {
  return static_cast<uint32_t>(crc32_z(crc, p, n));
}

// Every length around the kernel's 16- and 64-byte steps and past the streaming
// threshold, at every source and destination misalignment mod 16, from several states:
// the CRC-32 is zlib's of the source, the copy is exact (or word-swapped), and not a byte
// outside [dst, dst + size) is written. `whole_copy`: as each call's, 0 or the size of a
// copy the call is a small piece of (streaming stores from the first length they fit).
void CheckAgainstZlib(CopyFn copy, bool swap, size_t whole_copy = 0) {
  std::mt19937 rng(11);
  std::vector<uint8_t> src(600 * 1024 + 64);
  for (uint8_t& b : src) b = static_cast<uint8_t>(rng());
  std::vector<size_t> sizes;
  for (size_t n = 0; n <= 260; n += swap ? 4 : 1) sizes.push_back(n);
  for (size_t n : {size_t{4092}, size_t{65532}, size_t{65536}, size_t{65536 + 36},
                   size_t{256 * 1024}, size_t{600 * 1024}}) {
    sizes.push_back(n);
  }
  for (size_t n : sizes) {
    for (size_t src_off : {0, 1, 4, 13}) {
      for (size_t dst_off : {0, 3, 4, 8}) {
        const uint32_t start = static_cast<uint32_t>(rng());
        std::vector<uint8_t> dst(n + 64, 0xA5);
        const uint8_t* s = src.data() + src_off;
        // dst.data() is 16-byte aligned (operator new): streaming stores start at once at
        // dst_off 0, after a head of 13, 12 or 8 bytes otherwise (a swap of 3: none).
        const uint32_t got = copy(start, s, n, dst.data() + dst_off, whole_copy);
        ASSERT_EQ(got, ZlibCrc(start, s, n)) << n << " " << src_off << " " << dst_off;
        for (size_t i = 0; i < n; ++i) {
          const uint8_t want = swap ? s[i - i % 4 + 3 - i % 4] : s[i];
          ASSERT_EQ(dst[dst_off + i], want) << n << " byte " << i;
        }
        for (size_t i = 0; i < dst.size(); ++i) {
          if (i < dst_off || i >= dst_off + n) ASSERT_EQ(dst[i], 0xA5) << n << " outside " << i;
        }
      }
    }
  }
}

TEST(Crc32CopyTest, CopyAgreesWithZlibAndMemcpy) {
  CheckAgainstZlib(&CopyCrc32, false);
  CheckAgainstZlib(&CopyCrc32, false, 1 << 20);  // pieces of a chunk, a trace each
}

TEST(Crc32CopyTest, SwapCopyAgreesWithZlibAndAByteSwap) {
  CheckAgainstZlib(&SwapCopyCrc32, true);
  CheckAgainstZlib(&SwapCopyCrc32, true, 1 << 20);
}

TEST(Crc32CopyTest, TheFallbackAgreesToo) {
  CheckAgainstZlib([](uint32_t crc, const uint8_t* src, size_t size, uint8_t* dst, size_t) {
    return crc32_copy_internal::TwoPassCopyCrc32(crc, src, size, dst);
  }, false);
  CheckAgainstZlib([](uint32_t crc, const uint8_t* src, size_t size, uint8_t* dst, size_t) {
    return crc32_copy_internal::TwoPassSwapCopyCrc32(crc, src, size, dst);
  }, true);
}

TEST(Crc32CopyTest, PiecesContinueOneAnother) {
  std::vector<uint8_t> src(100000);
  std::mt19937 rng(3);
  for (uint8_t& b : src) b = static_cast<uint8_t>(rng());
  std::vector<uint8_t> dst(src.size());
  uint32_t crc = 0;
  for (size_t at = 0; at < src.size();) {
    const size_t n = std::min<size_t>(src.size() - at, 4 * (1 + rng() % 5000));
    crc = SwapCopyCrc32(crc, src.data() + at, n, dst.data() + at, src.size());
    at += n;
  }
  EXPECT_EQ(crc, ZlibCrc(0, src.data(), src.size()));
  const uint8_t check[] = {'1', '2', '3', '4', '5', '6', '7', '8', '9'};
  uint8_t out[9];
  EXPECT_EQ(CopyCrc32(0, check, 9, out), 0xCBF43926u);  // the CRC-32 check value
}

}  // namespace
}  // namespace shotstream

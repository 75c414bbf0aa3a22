#include "common/crc32.h"

#include <zlib.h>

#include <random>
#include <string>

#include "gtest/gtest.h"

namespace shotstream {
namespace {

TEST(Crc32Test, AgreesWithZlibOnAnyLengthAndSplit) {
  std::mt19937 rng(5);
  std::string data(1 << 20, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  for (size_t n : {size_t{0}, size_t{1}, size_t{15}, size_t{64}, size_t{4097}, data.size()}) {
    const uint32_t want = static_cast<uint32_t>(
        crc32_z(0, reinterpret_cast<const Bytef*>(data.data()), n));
    EXPECT_EQ(Crc32(0, data.data(), n), want) << n;
    const size_t half = n / 3;
    EXPECT_EQ(Crc32(Crc32(0, data.data(), half), data.data() + half, n - half), want) << n;
  }
  EXPECT_EQ(Crc32(0, "123456789", 9), 0xCBF43926u);  // the CRC-32 check value
}

TEST(Crc32Test, JoinerGivesTheCrcOfTheWholeFromItsPieces) {
  std::mt19937 rng(7);
  for (size_t piece : {size_t{1}, size_t{16000}, size_t{65536}}) {
    std::string data(piece * 9, '\0');
    for (char& c : data) c = static_cast<char>(rng());
    const Crc32Joiner join(piece);
    uint32_t joined = 0;
    for (size_t i = 0; i < 9; ++i) joined = join.Append(joined, Crc32(0, &data[i * piece], piece));
    EXPECT_EQ(joined, Crc32(0, data.data(), data.size())) << piece;
  }
  // Any pair, against zlib's own combine.
  std::mt19937 pick(9);
  for (size_t piece : {size_t{4}, size_t{8000}, size_t{1} << 33}) {
    const Crc32Joiner join(piece);
    for (int i = 0; i < 1000; ++i) {
      const uint32_t a = static_cast<uint32_t>(pick()), b = static_cast<uint32_t>(pick());
      ASSERT_EQ(join.Append(a, b), Crc32Combine(a, b, piece)) << piece << " " << a << " " << b;
    }
  }
}

}  // namespace
}  // namespace shotstream

#include "npy/npy_header.h"

#include <string>

#include "gtest/gtest.h"

namespace shotstream::npy {
namespace {

// A whole file: FormatNpyHeader's header and `data_bytes` zero bytes.
std::string File(const std::string& descr, const std::vector<uint64_t>& shape,
                 size_t data_bytes) {
  return FormatNpyHeader(descr, shape) + std::string(data_bytes, '\0');
}

absl::StatusOr<NpyHeader> Parse(const std::string& file) {
  return ParseNpyHeader("a.npy", reinterpret_cast<const uint8_t*>(file.data()), file.size(),
                        file.size());
}

TEST(NpyHeaderTest, ReadsWhatFormatWrites) {
  const std::string f = File("<f4", {3, 4, 5}, 3 * 4 * 5 * 4);
  auto h = Parse(f);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->format, segy::SampleFormat::kIeeeFloat32);
  EXPECT_EQ(h->byte_order, segy::ByteOrder::kLittleEndian);
  EXPECT_EQ(h->shape, (std::vector<uint64_t>{3, 4, 5}));
  EXPECT_EQ(h->data_offset % 64, 0u);
  EXPECT_EQ(h->data_offset + h->data_bytes, f.size());
}

TEST(NpyHeaderTest, EveryServedDtypeAndByteOrder) {
  struct Case {
    const char* descr;
    segy::SampleFormat format;
    segy::ByteOrder order;
    int width;
  };
  using F = segy::SampleFormat;
  constexpr auto kLe = segy::ByteOrder::kLittleEndian, kBe = segy::ByteOrder::kBigEndian;
  for (const Case& c : {Case{">f4", F::kIeeeFloat32, kBe, 4}, Case{"<f8", F::kIeeeFloat64, kLe, 8},
                        Case{">f8", F::kIeeeFloat64, kBe, 8}, Case{"<i2", F::kInt16, kLe, 2},
                        Case{">i2", F::kInt16, kBe, 2}, Case{"<i4", F::kInt32, kLe, 4},
                        Case{">i4", F::kInt32, kBe, 4}, Case{"|i1", F::kInt8, kLe, 1},
                        Case{"|u1", F::kUInt8, kLe, 1}, Case{"<u2", F::kUInt16, kLe, 2}}) {
    auto h = Parse(File(c.descr, {2, 7}, 14 * c.width));
    ASSERT_TRUE(h.ok()) << c.descr << ": " << h.status();
    EXPECT_EQ(h->format, c.format) << c.descr;
    EXPECT_EQ(h->byte_order, c.order) << c.descr;
    EXPECT_EQ(h->bytes_per_sample, c.width) << c.descr;
  }
}

TEST(NpyHeaderTest, Version2HeaderAndDoubleQuotes) {
  const std::string dict = "{\"descr\": \"<i2\", \"fortran_order\": False, \"shape\": (2, 3)}\n";
  std::string f("\x93NUMPY\x02\x00", 8);
  const uint32_t n = dict.size();
  f.append(reinterpret_cast<const char*>(&n), 4);
  f += dict + std::string(12, '\0');
  auto h = Parse(f);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->shape, (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(h->data_offset, 12 + dict.size());
}

TEST(NpyHeaderTest, RefusesWhatItCannotServeNamingTheFileAndReason) {
  auto expect = [](const std::string& file, const std::string& want) {
    auto h = Parse(file);
    ASSERT_FALSE(h.ok()) << want;
    EXPECT_EQ(h.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(h.status().message().find("a.npy"), std::string::npos) << h.status();
    EXPECT_NE(h.status().message().find(want), std::string::npos) << h.status();
  };
  expect(File("<f4", {3, 5}, 3 * 5 * 4 - 1), "truncated");
  expect(File("<f4", {3, 5}, 3 * 5 * 4 + 4), "trailing bytes");
  expect(File("<c8", {3, 5}, 3 * 5 * 8), "dtype '<c8' is not served");
  expect(File("|i2", {3, 5}, 3 * 5 * 2), "is not served");
  std::string fortran = FormatNpyHeader("<f4", {2, 2});
  fortran.replace(fortran.find("False"), 5, "True ");
  expect(fortran + std::string(16, '\0'), "Fortran order");
  expect("\x93NUMPX", "magic");
  expect(std::string("\x93NUMPY\x09\x00", 8) + "xx", "version 9.0");
  std::string huge = FormatNpyHeader("<f4", {1ull << 40, 1ull << 40});
  expect(huge, "too large");
  std::string cut = FormatNpyHeader("<f4", {2, 2});
  expect(cut.substr(0, 40), "ends inside");
}

}  // namespace
}  // namespace shotstream::npy

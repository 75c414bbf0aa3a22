#include "server/segy/segy_file.h"

#include <sys/vfs.h>
#include <unistd.h>

#include <cstdio>
#include <vector>
#include <cstdlib>
#include <string>

#include "gtest/gtest.h"
#include "server/segy/test_writer.h"

namespace shotstream::segy {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

TestFileSpec Spec(int format, ByteOrder order, uint32_t ns, int n_traces) {
  TestFileSpec s;
  s.format = format;
  s.order = order;
  s.n_samples = ns;
  s.interval_us = 2000;
  for (int t = 0; t < n_traces; ++t) {
    TestTrace tr;
    tr.fields.push_back({9, 4, 100 + t / 2});
    for (uint32_t i = 0; i < ns; ++i) tr.samples.push_back(static_cast<float>(t * 10 + i));
    s.traces.push_back(tr);
  }
  return s;
}

TEST(SegyFileTest, ParsesBigEndianIeee) {
  const std::string path = TempPath("be5.sgy");
  WriteSegyFile(path, Spec(5, ByteOrder::kBigEndian, 50, 6));
  auto f = SegyFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status();
  const SegyLayout& l = (*f)->layout();
  EXPECT_EQ(l.byte_order, ByteOrder::kBigEndian);
  EXPECT_EQ(l.format, SampleFormat::kIeeeFloat32);
  EXPECT_EQ(l.n_samples, 50u);
  EXPECT_EQ(l.sample_interval_us, 2000.0);
  EXPECT_EQ(l.n_traces, 6u);
  EXPECT_EQ(l.first_trace_offset, 3600u);
  EXPECT_EQ(l.trace_bytes, 240u + 200u);
}

TEST(SegyFileTest, DetectsLittleEndianFromFormatCode) {
  for (int format : {1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 15, 16}) {
    const std::string path = TempPath("le.sgy");
    WriteSegyFile(path, Spec(format, ByteOrder::kLittleEndian, 7, 3));
    auto f = SegyFile::Open(path);
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_EQ((*f)->layout().byte_order, ByteOrder::kLittleEndian) << format;
    EXPECT_EQ(static_cast<int>((*f)->layout().format), format);
    EXPECT_EQ((*f)->layout().n_traces, 3u);
  }
}

TEST(SegyFileTest, ByteOrderWordWinsAndOverrideWorks) {
  auto spec = Spec(5, ByteOrder::kLittleEndian, 4, 2);
  spec.write_order_word = true;
  auto bytes = MakeSegyBytes(spec);
  auto l = ParseSegyHeaders("x.sgy", bytes.data(), bytes.size(), bytes.size(), {});
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->byte_order, ByteOrder::kLittleEndian);
  OpenOptions force_be;
  force_be.byte_order = ByteOrder::kBigEndian;
  auto wrong = ParseSegyHeaders("x.sgy", bytes.data(), bytes.size(), bytes.size(), force_be);
  EXPECT_FALSE(wrong.ok());  // format code 0x0500 is not a format
}

TEST(SegyFileTest, Rev2ExtendedSampleCount) {
  auto spec = Spec(5, ByteOrder::kBigEndian, 70000, 2);
  auto bytes = MakeSegyBytes(spec);
  auto l = ParseSegyHeaders("x.sgy", bytes.data(), bytes.size(), bytes.size(), {});
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->n_samples, 70000u);
  EXPECT_EQ(l->n_traces, 2u);
}

TEST(SegyFileTest, ErrorsNameFileByteAndReason) {
  auto spec = Spec(5, ByteOrder::kBigEndian, 10, 3);
  auto bytes = MakeSegyBytes(spec);
  // Truncated: the last trace is cut.
  auto cut = ParseSegyHeaders("cut.sgy", bytes.data(), bytes.size(), bytes.size() - 7, {});
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("cut.sgy"), absl::string_view::npos);
  EXPECT_NE(cut.status().message().find("left over"), absl::string_view::npos);
  // Format 4.
  bytes[3224] = 0;
  bytes[3225] = 4;
  auto f4 = ParseSegyHeaders("f4.sgy", bytes.data(), bytes.size(), bytes.size(), {});
  ASSERT_FALSE(f4.ok());
  EXPECT_NE(f4.status().message().find("byte 3225"), absl::string_view::npos);
  EXPECT_NE(f4.status().message().find("not supported"), absl::string_view::npos);
  // Garbage format code in both orders.
  bytes[3224] = 0x7f;
  bytes[3225] = 0x7f;
  auto junk = ParseSegyHeaders("j.sgy", bytes.data(), bytes.size(), bytes.size(), {});
  ASSERT_FALSE(junk.ok());
  // Zero samples in the binary header: the trace header's count (115-116) is used.
  bytes[3224] = 0;
  bytes[3225] = 5;
  bytes[3220] = bytes[3221] = 0;
  auto from_trace = ParseSegyHeaders("z.sgy", bytes.data(), bytes.size(), bytes.size(), {});
  ASSERT_TRUE(from_trace.ok()) << from_trace.status();
  EXPECT_EQ(from_trace->n_samples, 10u);
  // Zero everywhere.
  bytes[3600 + 114] = bytes[3600 + 115] = 0;
  auto zero = ParseSegyHeaders("z.sgy", bytes.data(), bytes.size(), bytes.size(), {});
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("3221"), absl::string_view::npos);
  // Shorter than the file header.
  auto tiny = ParseSegyHeaders("t.sgy", bytes.data(), 100, 100, {});
  ASSERT_FALSE(tiny.ok());
  EXPECT_NE(tiny.status().message().find("3600"), absl::string_view::npos);
}

TEST(SegyFileTest, MissingFileIsNotFound) {
  auto f = SegyFile::Open(TempPath("does-not-exist.sgy"));
  EXPECT_EQ(f.status().code(), absl::StatusCode::kNotFound);
}

TEST(SegyFileTest, ReadAtPastEndIsDataLossNamingOffset) {
  const std::string path = TempPath("short.sgy");
  WriteSegyFile(path, Spec(5, ByteOrder::kBigEndian, 4, 1));
  auto f = SegyFile::Open(path);
  ASSERT_TRUE(f.ok());
  uint8_t buf[64];
  absl::Status s = (*f)->ReadAt((*f)->size() - 8, 64, buf);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find(path), absl::string_view::npos);
}

}  // namespace
}  // namespace shotstream::segy

namespace shotstream::segy {
namespace {

TEST(SegyFileTest, MmapReadsTheSameBytesAndSurvivesTruncation) {
  const std::string path = TempPath("mm.sgy");
  WriteSegyFile(path, Spec(5, ByteOrder::kBigEndian, 16, 4));
  OpenOptions mm;
  mm.io = IoMode::kMmap;
  auto a = SegyFile::Open(path);
  auto b = SegyFile::Open(path, mm);
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<uint8_t> x(300), y(300);
  ASSERT_TRUE((*a)->ReadAt(3600, 300, x.data()).ok());
  ASSERT_TRUE((*b)->ReadAt(3600, 300, y.data()).ok());
  EXPECT_EQ(x, y);
  ASSERT_EQ(truncate(path.c_str(), 4000), 0);
  absl::Status s = (*b)->ReadAt(3600 + 2 * 304, 304, y.data());
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("truncated"), absl::string_view::npos);
}

TEST(SegyFileTest, AutoMapsFilesOnLocalFilesystemsOnly) {
  EXPECT_TRUE(IsLocalFilesystem(0xEF53));       // ext4
  EXPECT_TRUE(IsLocalFilesystem(0x58465342));   // XFS
  EXPECT_TRUE(IsLocalFilesystem(0x01021994));   // tmpfs
  EXPECT_FALSE(IsLocalFilesystem(0x6969));      // NFS
  EXPECT_FALSE(IsLocalFilesystem(0x0BD00BD0));  // Lustre
  EXPECT_FALSE(IsLocalFilesystem(0x47504653));  // GPFS
  EXPECT_FALSE(IsLocalFilesystem(0x65735546));  // FUSE
  EXPECT_FALSE(IsLocalFilesystem(0x00C36400));  // CephFS

  const std::string path = TempPath("auto.sgy");
  WriteSegyFile(path, Spec(5, ByteOrder::kBigEndian, 16, 4));
  struct statfs fs;
  ASSERT_EQ(statfs(path.c_str(), &fs), 0);
  OpenOptions options;
  options.io = IoMode::kAuto;
  auto f = SegyFile::Open(path, options);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ((*f)->mapped(), IsLocalFilesystem(static_cast<int64_t>(fs.f_type)));
  options.io = IoMode::kPread;
  EXPECT_FALSE((*SegyFile::Open(path, options))->mapped());
  options.io = IoMode::kMmap;
  EXPECT_TRUE((*SegyFile::Open(path, options))->mapped());

  EXPECT_EQ(*ParseIoMode("auto"), IoMode::kAuto);
  EXPECT_EQ(*ParseIoMode("pread"), IoMode::kPread);
  EXPECT_EQ(*ParseIoMode("mmap"), IoMode::kMmap);
  EXPECT_EQ(ParseIoMode("mmapp").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace shotstream::segy

// io::TraceFile on its own: files written here with a layout of the test's own (a 16-byte
// header, then traces of an 8-byte header and 4 float32 samples), read by pread and mmap.
#include "server/io/trace_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace shotstream::io {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

constexpr uint64_t kFileHeader = 16, kTraceHeader = 8, kTraceBytes = kTraceHeader + 16;

// `n` traces; byte i of the file is i % 251.
std::string WriteFile(const std::string& name, int n) {
  const std::string path = TempPath(name);
  std::string bytes(kFileHeader + n * kTraceBytes, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i % 251);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  return path;
}

// The test's format: whole traces after the 16-byte header, else INVALID_ARGUMENT.
absl::StatusOr<TraceLayout> Parse(const std::string& path, const uint8_t* head, size_t head_size,
                                  uint64_t file_size, const ReadFn&) {
  if (head_size < kFileHeader || (file_size - kFileHeader) % kTraceBytes != 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not whole traces"));
  }
  TraceLayout l;
  l.byte_order = segy::ByteOrder::kLittleEndian;
  l.n_samples = 4;
  l.trace_header_bytes = kTraceHeader;
  l.first_trace_offset = kFileHeader;
  l.trace_bytes = kTraceBytes;
  l.n_traces = (file_size - kFileHeader) / kTraceBytes;
  return l;
}

TEST(TraceFileTest, OpensWithTheParsersLayoutAndReadsByPreadAndMmapAlike) {
  const std::string path = WriteFile("tf.bin", 5);
  auto p = TraceFile::Open(path, IoMode::kPread, 64, Parse);
  auto m = TraceFile::Open(path, IoMode::kMmap, 64, Parse);
  ASSERT_TRUE(p.ok() && m.ok()) << p.status() << m.status();
  EXPECT_FALSE((*p)->mapped());
  EXPECT_TRUE((*m)->mapped());
  EXPECT_EQ((*p)->layout().n_traces, 5u);
  EXPECT_EQ((*p)->layout().TraceOffset(2), kFileHeader + 2 * kTraceBytes);
  std::vector<uint8_t> x(40), y(40);
  ASSERT_TRUE((*p)->ReadAt(20, 40, x.data()).ok());
  ASSERT_TRUE((*m)->ReadAt(20, 40, y.data()).ok());
  EXPECT_EQ(x, y);
  EXPECT_EQ(x[0], 20);
  auto handle = (*m)->Acquire();
  ASSERT_TRUE(handle.ok());
  ASSERT_TRUE((*m)->ReadMapped(20, 4, [&](const uint8_t* at) {
    EXPECT_EQ((*handle)->MappedOffset(at), 20u);
    EXPECT_EQ(at[3], 23);
  }).ok());
  EXPECT_TRUE((*p)->CheckUnchanged().ok());
}

TEST(TraceFileTest, ErrorsNameTheFile) {
  auto missing = TraceFile::Open(TempPath("none.bin"), IoMode::kPread, 64, Parse);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  auto dir = TraceFile::Open(TempPath(""), IoMode::kPread, 64, Parse);
  EXPECT_EQ(dir.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string odd = TempPath("odd.bin");
  std::FILE* f = std::fopen(odd.c_str(), "wb");
  std::fwrite("0123456789abcdefXYZ", 1, 19, f);
  std::fclose(f);
  auto bad = TraceFile::Open(odd, IoMode::kPread, 64, Parse);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find(odd), absl::string_view::npos);
}

TEST(TraceFileTest, ReadAtPastTheEndIsDataLossNamingTheOffset) {
  const std::string path = WriteFile("short.bin", 1);
  auto f = TraceFile::Open(path, IoMode::kPread, 64, Parse);
  ASSERT_TRUE(f.ok());
  uint8_t buf[64];
  absl::Status s = (*f)->ReadAt((*f)->size() - 8, 64, buf);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find(path), absl::string_view::npos);
}

TEST(TraceFileTest, MappedReadsOfATruncatedFileAreDataLossAndItsIdentityMoves) {
  const std::string path = WriteFile("mm.bin", 8);
  auto f = TraceFile::Open(path, IoMode::kMmap, 64, Parse);
  ASSERT_TRUE(f.ok());
  ASSERT_EQ(truncate(path.c_str(), 64), 0);
  std::vector<uint8_t> y(kTraceBytes);
  absl::Status s = (*f)->ReadAt(kFileHeader + 5 * kTraceBytes, kTraceBytes, y.data());
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("truncated"), absl::string_view::npos);
  EXPECT_EQ((*f)->CheckUnchanged().code(), absl::StatusCode::kDataLoss);
}

TEST(TraceFileTest, AutoMapsFilesOnLocalFilesystemsOnly) {
  EXPECT_TRUE(IsLocalFilesystem(0xEF53));       // ext4
  EXPECT_TRUE(IsLocalFilesystem(0x58465342));   // XFS
  EXPECT_TRUE(IsLocalFilesystem(0x01021994));   // tmpfs
  EXPECT_FALSE(IsLocalFilesystem(0x6969));      // NFS
  EXPECT_FALSE(IsLocalFilesystem(0x0BD00BD0));  // Lustre
  EXPECT_FALSE(IsLocalFilesystem(0x47504653));  // GPFS
  EXPECT_FALSE(IsLocalFilesystem(0x65735546));  // FUSE
  EXPECT_FALSE(IsLocalFilesystem(0x00C36400));  // CephFS
  const std::string path = WriteFile("auto.bin", 2);
  struct statfs fs;
  ASSERT_EQ(statfs(path.c_str(), &fs), 0);
  auto f = TraceFile::Open(path, IoMode::kAuto, 64, Parse);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ((*f)->mapped(), IsLocalFilesystem(static_cast<int64_t>(fs.f_type)));
  EXPECT_EQ(*ParseIoMode("auto"), IoMode::kAuto);
  EXPECT_EQ(*ParseIoMode("pread"), IoMode::kPread);
  EXPECT_EQ(*ParseIoMode("mmap"), IoMode::kMmap);
  EXPECT_EQ(ParseIoMode("mmapp").status().code(), absl::StatusCode::kInvalidArgument);
}

int OpenDescriptors() {
  int n = 0;
  for (int fd = 0; fd < 4096; ++fd) n += fcntl(fd, F_GETFD) != -1;
  return n;
}

TEST(TraceFileTest, TheCacheClosesFilesBeyondItsCapacityAndReadsReopenThem) {
  for (IoMode io : {IoMode::kPread, IoMode::kMmap}) {
    OpenFileCache cache(3);
    const int before = OpenDescriptors();
    std::vector<std::unique_ptr<TraceFile>> files;
    for (int i = 0; i < 20; ++i) {
      auto f = TraceFile::Open(WriteFile(absl::StrCat("c", i, ".bin"), 3), io, 64, Parse, &cache);
      ASSERT_TRUE(f.ok()) << f.status();
      files.push_back(*std::move(f));
    }
    EXPECT_EQ(cache.open_files(), 3u);
    EXPECT_EQ(OpenDescriptors() - before, 3);
    for (int round = 0; round < 2; ++round) {
      for (const auto& f : files) {
        uint8_t b[4];
        ASSERT_TRUE(f->ReadAt(kFileHeader + 1, 4, b).ok());
        EXPECT_EQ(b[0], kFileHeader + 1);
      }
    }
    EXPECT_EQ(OpenDescriptors() - before, 3);
    EXPECT_TRUE(files.back()->is_open());
    EXPECT_FALSE(files.front()->is_open());
    EXPECT_EQ(cache.opens(), 20u + 40u);
  }
}

TEST(TraceFileTest, AHeldHandleOutlivesEvictionAndAFileChangedWhileClosedIsDataLoss) {
  OpenFileCache cache(1);
  const std::string a = WriteFile("held_a.bin", 4), b = WriteFile("held_b.bin", 4);
  auto fa = TraceFile::Open(a, IoMode::kMmap, 64, Parse, &cache);
  ASSERT_TRUE(fa.ok());
  auto held = (*fa)->Acquire();
  ASSERT_TRUE(held.ok());
  auto fb = TraceFile::Open(b, IoMode::kMmap, 64, Parse, &cache);  // evicts a
  ASSERT_TRUE(fb.ok());
  EXPECT_FALSE((*fa)->is_open());
  ASSERT_TRUE((*held)->ReadMapped(kFileHeader, 4, [&](const uint8_t* p) {
    EXPECT_EQ(p[0], kFileHeader);  // the mapping is still there
  }).ok());
  held->reset();
  // Rewritten while closed (same size, new mtime): the reopen notices.
  const std::string bytes(kFileHeader + 4 * kTraceBytes, 'x');
  std::FILE* f = std::fopen(a.c_str(), "r+b");
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  struct timespec times[2] = {{0, UTIME_NOW}, {1, 0}};  // an mtime surely different
  ASSERT_EQ(utimensat(AT_FDCWD, a.c_str(), times, 0), 0);
  uint8_t buf[4];
  absl::Status s = (*fa)->ReadAt(kFileHeader, 4, buf);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find(a), absl::string_view::npos) << s;
  // Replaced (another inode) and removed.
  ASSERT_TRUE((*fb)->ReadAt(kFileHeader, 4, buf).ok());
  const std::string c = WriteFile("held_c.bin", 4);
  ASSERT_EQ(std::rename(c.c_str(), a.c_str()), 0);
  s = (*fa)->ReadAt(kFileHeader, 4, buf);
  EXPECT_NE(s.message().find("replaced"), absl::string_view::npos) << s;
  ASSERT_EQ(unlink(a.c_str()), 0);
  s = (*fa)->ReadAt(kFileHeader, 4, buf);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find("gone"), absl::string_view::npos) << s;
}

}  // namespace
}  // namespace shotstream::io

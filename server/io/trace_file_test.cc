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
#include "server/env/fault_env.h"
#include "server/env/mem_env.h"

namespace shotstream::io {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

constexpr uint64_t kFileHeader = 16, kTraceHeader = 8, kTraceBytes = kTraceHeader + 16;

// `n` traces; byte i of the file is i % 251.
std::string FileBytes(int n) {
  std::string bytes(kFileHeader + n * kTraceBytes, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i % 251);
  return bytes;
}

std::string WriteFile(const std::string& name, int n) {
  const std::string path = TempPath(name);
  const std::string bytes = FileBytes(n);
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

// The same file in memory (MemEnv): read by positioned reads and through a mapping alike,
// and a file replaced under its path is noticed, as on disk.
TEST(TraceFileEnvTest, ReadsAFileInMemoryByPreadAndMmapAlike) {
  env::MemEnv mem;
  mem.Put("/survey/a.bin", FileBytes(6));
  OpenFileCache cache(4);
  auto p = TraceFile::Open("/survey/a.bin", IoMode::kPread, 64, Parse, &cache, &mem);
  auto m = TraceFile::Open("/survey/a.bin", IoMode::kAuto, 64, Parse, &cache, &mem);
  ASSERT_TRUE(p.ok() && m.ok()) << p.status() << m.status();
  EXPECT_FALSE((*p)->mapped());
  EXPECT_TRUE((*m)->mapped());  // memory is a local filesystem
  EXPECT_EQ((*p)->layout().n_traces, 6u);
  std::vector<uint8_t> x(48), y(48);
  ASSERT_TRUE((*p)->ReadAt(kFileHeader + kTraceBytes, 48, x.data()).ok());
  ASSERT_TRUE((*m)->ReadAt(kFileHeader + kTraceBytes, 48, y.data()).ok());
  EXPECT_EQ(x, y);
  EXPECT_EQ(x[0], kFileHeader + kTraceBytes);
  EXPECT_TRUE((*p)->CheckUnchanged().ok());
  mem.Put("/survey/a.bin", FileBytes(6));  // the same bytes, another file
  const absl::Status s = (*p)->CheckUnchanged();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("replaced"), absl::string_view::npos) << s;
  EXPECT_EQ(TraceFile::Open("/survey/none.bin", IoMode::kPread, 64, Parse, &cache, &mem)
                .status()
                .code(),
            absl::StatusCode::kNotFound);
}

// Each fault a disk can give, and what a read says of it: an I/O error is UNAVAILABLE (a
// retry may pass), a file that ends early or shrinks under a read is DATA_LOSS, each
// naming the file and the byte offset.
TEST(TraceFileEnvTest, FaultsAreUnavailableOrDataLossNamingTheFileAndOffset) {
  env::MemEnv mem;
  env::FaultEnv env(&mem);
  mem.Put("/survey/f.bin", FileBytes(8));
  OpenFileCache cache(4);
  auto f = TraceFile::Open("/survey/f.bin", IoMode::kPread, 64, Parse, &cache, &env);
  ASSERT_TRUE(f.ok()) << f.status();
  uint8_t buf[kTraceBytes];
  const uint64_t third = kFileHeader + 2 * kTraceBytes;

  env.Inject(env::Fault::kReadError, "f.bin", 0, 1);
  absl::Status s = (*f)->ReadAt(third, kTraceBytes, buf);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_NE(s.message().find(absl::StrCat("/survey/f.bin: read of 24 bytes at byte offset ",
                                          third, " failed")),
            absl::string_view::npos)
      << s;
  EXPECT_TRUE((*f)->ReadAt(third, kTraceBytes, buf).ok());  // the retry passes

  env.Inject(env::Fault::kShortRead, "f.bin", 0, 1);
  s = (*f)->ReadAt(third, kTraceBytes, buf);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find(absl::StrCat("expected at byte offset ", third)),
            absl::string_view::npos)
      << s;

  env.Inject(env::Fault::kChangedUnderRead, "f.bin", 0, 1,
             [&] { ASSERT_TRUE(mem.Truncate("/survey/f.bin", third).ok()); });
  s = (*f)->ReadAt(third, kTraceBytes, buf);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find("truncated or replaced while serving"), absl::string_view::npos);
  EXPECT_EQ((*f)->CheckUnchanged().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(env.fired(), 3);
}

TEST(TraceFileEnvTest, AMappedFileTruncatedUnderItIsDataLossAndAFailedReopenIsTransient) {
  env::MemEnv mem;
  env::FaultEnv env(&mem);
  mem.Put("/survey/a.bin", FileBytes(4));
  mem.Put("/survey/b.bin", FileBytes(4));
  OpenFileCache cache(1);
  auto a = TraceFile::Open("/survey/a.bin", IoMode::kMmap, 64, Parse, &cache, &env);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE((*a)->mapped());
  ASSERT_TRUE(mem.Truncate("/survey/a.bin", kFileHeader + kTraceBytes).ok());
  uint8_t buf[kTraceBytes];
  absl::Status s = (*a)->ReadAt(kFileHeader + 2 * kTraceBytes, kTraceBytes, buf);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find("/survey/a.bin: file is now 40 bytes"), absl::string_view::npos)
      << s;
  ASSERT_TRUE((*a)->ReadAt(kFileHeader, kTraceBytes, buf).ok());  // what is left reads

  auto b = TraceFile::Open("/survey/b.bin", IoMode::kMmap, 64, Parse, &cache, &env);
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE((*b)->ReadAt(kFileHeader, kTraceBytes, buf).ok());
  auto c = TraceFile::Open("/survey/a.bin", IoMode::kMmap, 64, Parse, &cache, &env);
  ASSERT_TRUE(c.ok());  // evicts b
  ASSERT_FALSE((*b)->is_open());
  env.Inject(env::Fault::kOpenError, "b.bin", 0, 1);
  s = (*b)->ReadAt(kFileHeader, kTraceBytes, buf);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_NE(s.message().find("/survey/b.bin: cannot open"), absl::string_view::npos) << s;
  EXPECT_TRUE((*b)->ReadAt(kFileHeader, kTraceBytes, buf).ok());
  EXPECT_EQ(buf[0], kFileHeader);
}

}  // namespace
}  // namespace shotstream::io

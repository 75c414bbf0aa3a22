// The file appender on its own: bytes appended and extended in place reach the file in
// order across many buffer hand-offs; a write error comes back from the next call.
#include "server/write/file_appender.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace shotstream::write {
namespace {

std::string Path(const std::string& name) {
  const char* d = std::getenv("TEST_TMPDIR");
  return std::string(d ? d : "/tmp") + "/" + name;
}

absl::Status Error(const char* what, int err) {
  return absl::ResourceExhaustedError(absl::StrCat(what, ": ", std::strerror(err)));
}

TEST(FileAppenderTest, AppendsAndExtendsInOrderAcrossBuffers) {
  const std::string path = Path("appended.bin");
  const int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  std::string want;
  {
    FileAppender a(fd, /*buffer_bytes=*/64, Error);  // many hand-offs
    for (int i = 0; i < 200; ++i) {
      const std::string piece = absl::StrCat("piece ", i, ";");
      ASSERT_TRUE(a.Append(piece.data(), piece.size()).ok());
      want += piece;
      uint8_t* at = a.Extend(3);
      at[0] = 'x';
      at[1] = static_cast<uint8_t>('0' + i % 10);
      at[2] = '|';
      ASSERT_TRUE(a.Commit().ok());
      want += std::string{'x', static_cast<char>('0' + i % 10), '|'};
    }
    // An append larger than a buffer goes through whole.
    const std::string big(1000, 'B');
    ASSERT_TRUE(a.Append(big.data(), big.size()).ok());
    want += big;
    ASSERT_TRUE(a.Finish().ok());
  }
  ::close(fd);
  std::ifstream in(path, std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), want);
}

TEST(FileAppenderTest, AWriteErrorComesBackFromFinish) {
  const int fd = ::open(Path("readonly.bin").c_str(), O_CREAT | O_TRUNC | O_RDONLY, 0644);
  ASSERT_GE(fd, 0);
  FileAppender a(fd, 16, Error);  // write(2) on a read-only descriptor: EBADF
  absl::Status s;
  for (int i = 0; i < 10 && s.ok(); ++i) s = a.Append("0123456789", 10);
  if (s.ok()) s = a.Finish();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_NE(s.message().find("Bad file descriptor"), absl::string_view::npos) << s;
  ::close(fd);
}

}  // namespace
}  // namespace shotstream::write

// The file appender on its own: bytes appended and extended in place reach the file in
// order across many buffer hand-offs; a write error comes back from the next call.
#include "server/write/file_appender.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/env/fault_env.h"
#include "server/env/mem_env.h"

namespace shotstream::write {
namespace {

absl::Status Error(const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat("writing the test's file: ", s.message()));
}

TEST(FileAppenderTest, AppendsAndExtendsInOrderAcrossBuffers) {
  env::MemEnv mem;
  auto file = mem.OpenWrite("/w/appended.bin", env::WriteMode::kCreateNew);
  ASSERT_TRUE(file.ok());
  std::string want;
  {
    FileAppender a(file->get(), /*buffer_bytes=*/64, Error);  // many hand-offs
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
  EXPECT_EQ(*env::ReadFileToString(&mem, "/w/appended.bin"), want);
}

TEST(FileAppenderTest, AWriteErrorComesBackFromTheNextCallOrFinish) {
  env::MemEnv mem;
  env::FaultEnv env(&mem);
  env.Inject(env::Fault::kNoSpace, "full.bin", /*skip=*/2, /*count=*/1);
  auto file = env.OpenWrite("/w/full.bin", env::WriteMode::kCreateNew);
  ASSERT_TRUE(file.ok());
  FileAppender a(file->get(), 16, Error);
  absl::Status s;
  int calls = 0;
  for (; calls < 10 && s.ok(); ++calls) s = a.Append("0123456789", 10);
  if (s.ok()) s = a.Finish();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_NE(s.message().find("writing the test's file: /w/full.bin: write: No space left"),
            absl::string_view::npos)
      << s;
  EXPECT_EQ(a.Finish().code(), absl::StatusCode::kResourceExhausted);  // it stays
  EXPECT_EQ(env.fired(), 1);
}

}  // namespace
}  // namespace shotstream::write

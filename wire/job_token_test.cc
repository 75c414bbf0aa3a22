#include "wire/job_token.h"

#include <string>

#include "gtest/gtest.h"

namespace shotstream::wire {
namespace {

JobToken Sample() {
  return JobToken{"line1", "train-a.1", 3, -7, 0xFFFFFFFFFFFFFFFFull, 0x1234567890ABCDEFull};
}

TEST(JobTokenTest, RoundTripsEveryField) {
  auto bytes = EncodeJobToken(Sample());
  ASSERT_TRUE(bytes.ok());
  EXPECT_LE(bytes->size(), kMaxJobTokenBytes);
  auto t = DecodeJobToken(*bytes);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dataset, "line1");
  EXPECT_EQ(t->job, "train-a.1");
  EXPECT_EQ(t->epoch, 3u);
  EXPECT_EQ(t->step, -7);
  EXPECT_EQ(t->seed, 0xFFFFFFFFFFFFFFFFull);
  EXPECT_EQ(t->fingerprint, 0x1234567890ABCDEFull);
}

// Every single-byte change, every cut and an appended byte are refused.
TEST(JobTokenTest, AlteredCutOrForeignBytesAreInvalid) {
  const std::string good = *EncodeJobToken(Sample());
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] ^= 0x20;
    EXPECT_EQ(DecodeJobToken(bad).status().code(), absl::StatusCode::kInvalidArgument) << i;
  }
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_FALSE(DecodeJobToken(good.substr(0, n)).ok()) << n;
  }
  EXPECT_FALSE(DecodeJobToken(good + "x").ok());
  auto foreign = DecodeJobToken("not a token at all, just bytes");
  EXPECT_NE(foreign.status().message().find("not a job token"), absl::string_view::npos);
}

TEST(JobTokenTest, NamesTooLongForATokenAreRefused) {
  JobToken t = Sample();
  t.dataset = std::string(200, 'd');
  t.job = std::string(20, 'j');
  EXPECT_EQ(EncodeJobToken(t).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(JobTokenTest, FingerprintIsOrderFreeAndLineageTellsTokensApart) {
  EXPECT_EQ(JobFingerprint({3, 1, 2}), JobFingerprint({1, 2, 3}));
  EXPECT_NE(JobFingerprint({1, 2, 3}), JobFingerprint({1, 2, 4}));
  EXPECT_EQ(JobLineage(""), 0u);
  JobToken other = Sample();
  other.step = 8;
  EXPECT_NE(JobLineage(*EncodeJobToken(Sample())), JobLineage(*EncodeJobToken(other)));
}

}  // namespace
}  // namespace shotstream::wire

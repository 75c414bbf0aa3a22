#include "server/service/access_policy.h"

#include <cstdlib>
#include <fstream>

#include "gtest/gtest.h"

namespace shotstream::service {
namespace {

std::unique_ptr<TokenStore> Tokens(const std::string& text) {
  const char* d = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(d ? d : "/tmp") + "/policy_tokens";
  std::ofstream(path) << text;
  return *TokenStore::Load(path);
}

TEST(AccessPolicyTest, OpenWithoutTokens) {
  AccessPolicy open(nullptr, {});
  std::string who = "x";
  EXPECT_TRUE(open.Authenticate(std::nullopt, &who).ok());
  EXPECT_EQ(who, "");
  EXPECT_TRUE(open.MayRead("", "line1").ok());
}

TEST(AccessPolicyTest, AllowListsAndTheDefault) {
  auto tokens = Tokens("bob b0b\nalice a1ice\nanonymous\n");
  AccessRules rules;
  rules.allow["bob"] = {"part1"};
  AccessPolicy allow(tokens.get(), rules);
  std::string who;
  EXPECT_EQ(allow.Authenticate(std::nullopt, &who).code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(allow.Authenticate("Bearer nope", &who).code(),
            absl::StatusCode::kUnauthenticated);
  ASSERT_TRUE(allow.Authenticate("Bearer b0b", &who).ok());
  EXPECT_EQ(who, "bob");
  EXPECT_TRUE(allow.MayRead("bob", "part1").ok());
  absl::Status denied = allow.MayRead("bob", "part2");
  EXPECT_EQ(denied.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(denied.message().find("'bob'"), std::string::npos);
  // Default allow: tokens the allow-lists do not name read everything.
  EXPECT_TRUE(allow.MayRead("alice", "part2").ok());
  EXPECT_TRUE(allow.MayRead("", "part2").ok());

  rules.default_deny = true;
  AccessPolicy deny(tokens.get(), rules);
  EXPECT_TRUE(deny.MayRead("bob", "part1").ok());
  EXPECT_EQ(deny.MayRead("bob", "part2").code(), absl::StatusCode::kPermissionDenied);
  absl::Status alice = deny.MayRead("alice", "part1");
  EXPECT_EQ(alice.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(alice.message().find("auth.default is deny"), std::string::npos);
  EXPECT_EQ(deny.MayRead("", "part1").code(), absl::StatusCode::kPermissionDenied);

  // Writing: only auth.writers, and nobody without it; anyone on an open service.
  EXPECT_EQ(deny.MayWrite("alice").code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(deny.MayWrite("alice").message().find("names none"), std::string::npos);
  rules.writers = {"alice"};
  AccessPolicy writers(tokens.get(), rules);
  EXPECT_TRUE(writers.MayWrite("alice").ok());
  EXPECT_EQ(writers.MayWrite("bob").code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(writers.MayWrite("").code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(AccessPolicy(nullptr, {}).MayWrite("").ok());
}

}  // namespace
}  // namespace shotstream::service

#include "server/service/token_store.h"

#include <cstdlib>
#include <fstream>

#include "gtest/gtest.h"

namespace shotstream::service {
namespace {

std::string Write(const std::string& text) {
  const char* d = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(d ? d : "/tmp") + "/tokens";
  std::ofstream(path) << text;
  return path;
}

TEST(TokenStoreTest, ChecksBearerTokensAndReloads) {
  const std::string path = Write("# comment\nalpha\n\n  beta  \n");
  auto store = TokenStore::Load(path);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ((*store)->size(), 2u);
  EXPECT_TRUE((*store)->Check("Bearer alpha"));
  EXPECT_TRUE((*store)->Check("Bearer beta"));
  EXPECT_FALSE((*store)->Check("Bearer alph"));
  EXPECT_FALSE((*store)->Check("Bearer alphaa"));
  EXPECT_FALSE((*store)->Check("alpha"));
  EXPECT_FALSE((*store)->Check("Bearer "));
  EXPECT_FALSE((*store)->Check("Bearer # comment"));
  Write("gamma\n");
  ASSERT_TRUE((*store)->Reload().ok());
  EXPECT_FALSE((*store)->Check("Bearer alpha"));
  EXPECT_TRUE((*store)->Check("Bearer gamma"));
  Write("\n");  // an empty file is refused and the old tokens stay
  EXPECT_FALSE((*store)->Reload().ok());
  EXPECT_TRUE((*store)->Check("Bearer gamma"));
}

TEST(TokenStoreTest, NamedTokens) {
  auto store = TokenStore::Load(Write("alice s3cret\nopen\n"));
  ASSERT_TRUE(store.ok()) << store.status();
  std::string name = "x";
  EXPECT_TRUE((*store)->Check("Bearer s3cret", &name));
  EXPECT_EQ(name, "alice");
  EXPECT_TRUE((*store)->Check("Bearer open", &name));
  EXPECT_EQ(name, "");
  EXPECT_FALSE((*store)->Check("Bearer alice", &name));
  EXPECT_FALSE(TokenStore::Load(Write("a b c\n")).ok());
}

TEST(TokenStoreTest, NamesTheConfigurationRefersToMustBeInTheFile) {
  const std::string path = Write("bob s3cret\nalice other\n");
  auto typo = TokenStore::Load(path, {{"bobb", "auth.allow"}});
  ASSERT_FALSE(typo.ok());
  EXPECT_EQ(typo.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(typo.status().message().find("no token is named 'bobb'"), std::string::npos)
      << typo.status();
  EXPECT_NE(typo.status().message().find("alice, bob"), std::string::npos);
  EXPECT_NE(typo.status().message().find("auth.allow"), std::string::npos);
  EXPECT_NE(typo.status().message().find("unrestricted"), std::string::npos);
  // A writer's name says what a misspelling there costs: the writer cannot write.
  auto writer = TokenStore::Load(path, {{"alise", "auth.writers"}});
  ASSERT_FALSE(writer.ok());
  EXPECT_NE(writer.status().message().find("auth.writers"), std::string::npos);
  EXPECT_NE(writer.status().message().find("unable to write"), std::string::npos);
  auto store = TokenStore::Load(path, {{"bob", "auth.allow"}});
  ASSERT_TRUE(store.ok()) << store.status();
  // A reload that loses the name is refused; the old tokens stay.
  Write("robert s3cret\n");
  absl::Status reload = (*store)->Reload();
  EXPECT_FALSE(reload.ok());
  EXPECT_NE(reload.message().find("'bob'"), std::string::npos) << reload;
  std::string name;
  EXPECT_TRUE((*store)->Check("Bearer s3cret", &name));
  EXPECT_EQ(name, "bob");
}

TEST(TokenStoreTest, MissingFile) {
  EXPECT_EQ(TokenStore::Load("/nonexistent/tokens").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace shotstream::service

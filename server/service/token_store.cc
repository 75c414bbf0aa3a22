#include "server/service/token_store.h"

#include <fstream>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace shotstream::service {
namespace {

template <typename Token>
absl::StatusOr<std::vector<Token>> ReadTokens(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot read token file"));
  std::vector<Token> tokens;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    absl::string_view t = absl::StripAsciiWhitespace(line);
    if (t.empty() || absl::StartsWith(t, "#")) continue;
    std::vector<std::string> parts = absl::StrSplit(t, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (parts.size() == 1) {
      tokens.push_back({"", parts[0]});
    } else if (parts.size() == 2) {
      tokens.push_back({parts[0], parts[1]});
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": line ", number, ": expected TOKEN or NAME TOKEN"));
    }
  }
  if (tokens.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": no token in the file"));
  }
  return tokens;
}

// Constant time in the length of `known` for a candidate of any length.
bool ConstantTimeEquals(absl::string_view known, absl::string_view candidate) {
  unsigned char diff = known.size() == candidate.size() ? 0 : 1;
  for (size_t i = 0; i < known.size(); ++i) {
    const unsigned char c = i < candidate.size() ? candidate[i] : 0;
    diff |= static_cast<unsigned char>(known[i] ^ c);
  }
  return diff == 0;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TokenStore>> TokenStore::Load(
    const std::string& path, std::vector<RequiredName> required_names) {
  std::unique_ptr<TokenStore> store(new TokenStore(path, std::move(required_names)));
  absl::Status s = store->Reload();
  if (!s.ok()) return s;
  return store;
}

absl::Status TokenStore::Reload() {
  auto tokens = ReadTokens<Token>(path_);
  if (!tokens.ok()) return tokens.status();
  std::set<std::string> names;
  for (const Token& t : *tokens) {
    if (!t.name.empty()) names.insert(t.name);
  }
  for (const RequiredName& required : required_names_) {
    if (names.count(required.name) == 0) {
      const bool writers = required.section == "auth.writers";
      return absl::InvalidArgumentError(absl::StrCat(
          path_, ": no token is named '", required.name, "', which the configuration's ",
          required.section, " names (names in the file: ",
          names.empty() ? "none" : absl::StrJoin(names, ", "), "); ",
          writers ? "a misspelt writer's name would leave that writer unable to write"
                  : "a misspelt name would leave the real token unrestricted",
          ", so the file is refused"));
    }
  }
  absl::MutexLock lock(&mu_);
  tokens_ = *std::move(tokens);
  return absl::OkStatus();
}

bool TokenStore::Check(absl::string_view authorization, std::string* name) const {
  if (!absl::ConsumePrefix(&authorization, "Bearer ")) return false;
  absl::MutexLock lock(&mu_);
  bool ok = false;
  for (const Token& t : tokens_) {
    const bool match = ConstantTimeEquals(t.secret, authorization);
    if (match && name != nullptr) *name = t.name;
    ok |= match;
  }
  return ok;
}

size_t TokenStore::size() const {
  absl::MutexLock lock(&mu_);
  return tokens_.size();
}

}  // namespace shotstream::service

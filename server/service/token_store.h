// Bearer tokens from a file, one per line: "TOKEN" or "NAME TOKEN" (a name lets the
// configuration restrict the token to some datasets). Blank lines and lines starting with
// '#' are ignored. Compared in constant time; reloadable while the server runs.
//
// Thread-safe: Check and Reload may run concurrently.
#ifndef SHOTSTREAM_SERVER_SERVICE_TOKEN_STORE_H_
#define SHOTSTREAM_SERVER_SERVICE_TOKEN_STORE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace shotstream::service {

// A token name the configuration refers to, and where ("auth.allow", "auth.writers").
struct RequiredName {
  std::string name;
  std::string section;
};

class TokenStore {
 public:
  // `required_names`: token names the configuration refers to; a file that lacks one is
  // refused, at load and at every reload, so that a misspelt name can never lift a
  // restriction (auth.allow) or silently take a writer's right away (auth.writers).
  static absl::StatusOr<std::unique_ptr<TokenStore>> Load(
      const std::string& path, std::vector<RequiredName> required_names = {});

  // Re-reads the file; on error (unreadable, malformed, a required name missing) the old
  // tokens stay and the error is returned.
  absl::Status Reload() ABSL_LOCKS_EXCLUDED(mu_);

  // True when `authorization` is "Bearer <token>" for a known token; *name (if given) is
  // set to the token's name ("" for an unnamed one). Every known token is compared in
  // full, so the time does not depend on which bytes match.
  bool Check(absl::string_view authorization, std::string* name = nullptr) const
      ABSL_LOCKS_EXCLUDED(mu_);

  size_t size() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  TokenStore(std::string path, std::vector<RequiredName> required_names)
      : path_(std::move(path)), required_names_(std::move(required_names)) {}

  const std::string path_;
  const std::vector<RequiredName> required_names_;
  mutable absl::Mutex mu_;
  struct Token {
    std::string name;
    std::string secret;
  };
  std::vector<Token> tokens_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shotstream::service

#endif  // SHOTSTREAM_SERVER_SERVICE_TOKEN_STORE_H_

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

class TokenStore {
 public:
  static absl::StatusOr<std::unique_ptr<TokenStore>> Load(const std::string& path);

  // Re-reads the file; on error the old tokens stay and the error is returned.
  absl::Status Reload() ABSL_LOCKS_EXCLUDED(mu_);

  // True when `authorization` is "Bearer <token>" for a known token; *name (if given) is
  // set to the token's name ("" for an unnamed one). Every known token is compared in
  // full, so the time does not depend on which bytes match.
  bool Check(absl::string_view authorization, std::string* name = nullptr) const
      ABSL_LOCKS_EXCLUDED(mu_);

  size_t size() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  explicit TokenStore(std::string path) : path_(std::move(path)) {}

  const std::string path_;
  mutable absl::Mutex mu_;
  struct Token {
    std::string name;
    std::string secret;
  };
  std::vector<Token> tokens_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shotstream::service

#endif  // SHOTSTREAM_SERVER_SERVICE_TOKEN_STORE_H_

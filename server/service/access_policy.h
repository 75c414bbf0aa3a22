// Who may call the service and which datasets they may read: bearer tokens (TokenStore)
// and the configuration's allow-lists. Transport-free: the gRPC adapter passes the
// `authorization` metadata value in and maps the statuses out.
//
// Thread-safe: immutable after construction; the token store reloads under its own lock.
#ifndef SHOTSTREAM_SERVER_SERVICE_ACCESS_POLICY_H_
#define SHOTSTREAM_SERVER_SERVICE_ACCESS_POLICY_H_

#include <map>
#include <optional>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "server/service/token_store.h"

namespace shotstream::service {

struct AccessRules {
  // Per token name, the only datasets that token may read (auth.allow).
  std::map<std::string, std::set<std::string>> allow;
  // Tokens not named in `allow` (unnamed ones too) read nothing (auth.default: deny)
  // instead of every dataset.
  bool default_deny = false;
  // The token names that may write (auth.writers); with tokens on, no other token may.
  std::set<std::string> writers;
};

class AccessPolicy {
 public:
  // `tokens` null: the service is open (no authentication, every dataset readable).
  AccessPolicy(const TokenStore* tokens, AccessRules rules)
      : tokens_(tokens), rules_(std::move(rules)) {}

  bool authenticating() const { return tokens_ != nullptr; }

  // `authorization` is the metadata value, nullopt when absent. UNAUTHENTICATED unless it
  // is "Bearer <token>" for a known token; *who is the token's name ("" if unnamed).
  absl::Status Authenticate(std::optional<absl::string_view> authorization,
                            std::string* who) const;

  // Whether the caller `who` (from Authenticate) may read `dataset`: PERMISSION_DENIED
  // naming both when not.
  absl::Status MayRead(const std::string& who, const std::string& dataset) const;

  // Whether `who` may create datasets (WriteShots): anyone on an open service; with
  // tokens, only the names under auth.writers. PERMISSION_DENIED naming `who` otherwise.
  absl::Status MayWrite(const std::string& who) const;

 private:
  const TokenStore* const tokens_;
  const AccessRules rules_;
};

}  // namespace shotstream::service

#endif  // SHOTSTREAM_SERVER_SERVICE_ACCESS_POLICY_H_

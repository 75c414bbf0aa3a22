#include "server/service/access_policy.h"

#include "absl/strings/str_cat.h"

namespace shotstream::service {

absl::Status AccessPolicy::Authenticate(std::optional<absl::string_view> authorization,
                                        std::string* who) const {
  who->clear();
  if (tokens_ == nullptr) return absl::OkStatus();
  if (!authorization.has_value()) {
    return absl::UnauthenticatedError("missing 'authorization: Bearer <token>' metadata");
  }
  if (!tokens_->Check(*authorization, who)) {
    return absl::UnauthenticatedError("unknown bearer token");
  }
  return absl::OkStatus();
}

absl::Status AccessPolicy::MayRead(const std::string& who, const std::string& dataset) const {
  if (tokens_ == nullptr) return absl::OkStatus();
  auto it = who.empty() ? rules_.allow.end() : rules_.allow.find(who);
  if (it == rules_.allow.end()) {
    if (!rules_.default_deny) return absl::OkStatus();
    return absl::PermissionDeniedError(absl::StrCat(
        who.empty() ? std::string("an unnamed token") : absl::StrCat("token '", who, "'"),
        " may not read dataset '", dataset,
        "' (auth.default is deny and auth.allow does not name it)"));
  }
  if (it->second.count(dataset)) return absl::OkStatus();
  return absl::PermissionDeniedError(
      absl::StrCat("token '", who, "' may not read dataset '", dataset, "'"));
}

absl::Status AccessPolicy::MayWrite(const std::string& who) const {
  if (tokens_ == nullptr) return absl::OkStatus();
  if (!who.empty() && rules_.writers.count(who)) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat(
      who.empty() ? std::string("an unnamed token") : absl::StrCat("token '", who, "'"),
      " may not write datasets (auth.writers names the tokens that may",
      rules_.writers.empty() ? "; it names none" : "", ")"));
}

}  // namespace shotstream::service

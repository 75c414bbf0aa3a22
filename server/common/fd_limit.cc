#include "server/common/fd_limit.h"

#include <sys/resource.h>


#include "absl/strings/str_cat.h"

namespace shotstream {

std::string FdLimit::Describe() const {
  if (now > before) return absl::StrCat("descriptor limit raised from ", before, " to ", now);
  return absl::StrCat("descriptor limit ", now, now >= hard ? " (the hard limit)" : "");
}

FdLimit RaiseFdLimit() {
  constexpr uint64_t kUnlimitedCap = 1 << 20;
  FdLimit l;
  struct rlimit rl;
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return l;
  auto value = [&](rlim_t v) { return v == RLIM_INFINITY ? kUnlimitedCap : uint64_t{v}; };
  l.before = value(rl.rlim_cur);
  l.hard = value(rl.rlim_max);
  l.now = l.before;
  if (l.before < l.hard) {
    rl.rlim_cur = static_cast<rlim_t>(l.hard);
    if (::setrlimit(RLIMIT_NOFILE, &rl) == 0) l.now = l.hard;
  }
  return l;
}

}  // namespace shotstream

// The process's descriptor limit (RLIMIT_NOFILE): raised from its soft value to the hard
// one at start, as databases do, so that a shell's or a pod's default soft limit (often
// 1024) does not cap a server of many files. Thread-compatible: call once, at start.
#ifndef SHOTSTREAM_SERVER_COMMON_FD_LIMIT_H_
#define SHOTSTREAM_SERVER_COMMON_FD_LIMIT_H_

#include <cstdint>
#include <string>

namespace shotstream {

struct FdLimit {
  uint64_t before = 0;  // the soft limit found
  uint64_t now = 0;     // the soft limit after raising it
  uint64_t hard = 0;
  // One line for the log: "descriptor limit raised from 1024 to 524288" or "descriptor
  // limit 1024 (the hard limit)".
  std::string Describe() const;
};

// Raises the soft limit to the hard limit (capped at 1,048,576 where the hard limit is
// unlimited) and says what it did.
FdLimit RaiseFdLimit();

}  // namespace shotstream

#endif  // SHOTSTREAM_SERVER_COMMON_FD_LIMIT_H_

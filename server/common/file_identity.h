// FileIdentity: which file a path named when it was opened, and whether it still does,
// unchanged (device, inode, size, modification time). A value; thread-compatible.
#ifndef SHOTSTREAM_SERVER_COMMON_FILE_IDENTITY_H_
#define SHOTSTREAM_SERVER_COMMON_FILE_IDENTITY_H_

#include <sys/stat.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "server/env/env.h"

namespace shotstream {

struct FileIdentity {
  uint64_t device = 0;
  uint64_t inode = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  // The inode's change time: moves with every write and with every metadata change, a
  // restored mtime included (utimensat sets it to now). Zarr's chunk checks compare it;
  // CheckUnchanged and Matches do not (a chmod is no reason to rebuild a catalog).
  int64_t ctime_ns = 0;

  static FileIdentity Of(const struct stat& st);
  static FileIdentity Of(const env::FileStat& st);

  // OK while `path` is this file, as it was; otherwise DATA_LOSS naming the file and what
  // changed (rewritten in place, replaced, truncated, removed). One stat, through `env`
  // (the process's POSIX Env when null).
  absl::Status CheckUnchanged(const std::string& path, env::Env* env = nullptr) const;
  // The same check against `now`, what a stat of `path` (or of a descriptor reopened on
  // it) found.
  absl::Status Matches(const FileIdentity& now, const std::string& path) const;
};

}  // namespace shotstream

#endif  // SHOTSTREAM_SERVER_COMMON_FILE_IDENTITY_H_

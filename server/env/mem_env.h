// MemEnv: an Env whose files live in memory (LevelDB's helpers/memenv), for unit tests
// of what reaches files through an Env: no disk, no temporary directory, every path its
// own. Directories are made by CreateDir or implied by the paths of their files ("/a/b" is
// in "/a"). A file
// read while it is rewritten (Rename over it, Truncate, Append) reads its new bytes:
// what a change under a read looks like. Now() is a clock the test moves (Advance).
//
// Thread-safe.
#ifndef SHOTSTREAM_SERVER_ENV_MEM_ENV_H_
#define SHOTSTREAM_SERVER_ENV_MEM_ENV_H_

#include <cstdint>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "server/env/env.h"

namespace shotstream::env {

class MemEnv final : public Env {
 public:
  MemEnv() = default;

  absl::StatusOr<std::unique_ptr<RandomAccessFile>> OpenRead(const std::string& path) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> OpenMapped(const std::string& path,
                                                               bool populate) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::unique_ptr<WritableFile>> OpenWrite(const std::string& path,
                                                          WriteMode mode) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<FileStat> Stat(const std::string& path) override ABSL_LOCKS_EXCLUDED(mu_);
  // tmpfs's, for every file it has.
  absl::StatusOr<int64_t> FilesystemType(const std::string& path) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::vector<std::string>> List(const std::string& dir) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Rename(const std::string& from, const std::string& to) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status RenameNoReplace(const std::string& from, const std::string& to) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status CreateDir(const std::string& dir) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status RemoveDir(const std::string& dir) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Remove(const std::string& path) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Truncate(const std::string& path, uint64_t size) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status SyncDir(const std::string& dir) override;
  absl::Time Now() override ABSL_LOCKS_EXCLUDED(mu_);

  // The test's clock moves on.
  void Advance(absl::Duration d) ABSL_LOCKS_EXCLUDED(mu_);
  // Writes (or replaces) a whole file at once, for a test's fixtures.
  void Put(const std::string& path, std::string bytes) ABSL_LOCKS_EXCLUDED(mu_);

  // A file's bytes and identity; shared by the open files that read or append to it.
  struct Node {
    absl::Mutex mu;
    std::string bytes ABSL_GUARDED_BY(mu);
    absl::Time modified ABSL_GUARDED_BY(mu);
    uint64_t inode = 0;
  };

 private:
  absl::StatusOr<std::shared_ptr<Node>> Find(const std::string& path) ABSL_LOCKS_EXCLUDED(mu_);
  // A directory made by CreateDir, or implied by the files in it.
  bool IsDir(const std::string& path) ABSL_LOCKS_EXCLUDED(mu_);

  absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<Node>> files_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> dirs_ ABSL_GUARDED_BY(mu_);  // made by CreateDir
  uint64_t next_inode_ ABSL_GUARDED_BY(mu_) = 1;
  absl::Time now_ ABSL_GUARDED_BY(mu_) = absl::FromUnixSeconds(1'700'000'000);
};

}  // namespace shotstream::env

#endif  // SHOTSTREAM_SERVER_ENV_MEM_ENV_H_

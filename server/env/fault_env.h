// FaultEnv: an Env that passes every call to another (MemEnv, or the POSIX one) and fails
// the ones a test names, to test each caller's failure paths: EIO on a read or a sync,
// ENOSPC on a write, a short read (fewer bytes than the file has), and a file changed
// under a read (the test's hook runs just before the read). A mapped file's bytes are
// read in place, so only its open fails; its Stat() is the base's. Faults are matched by a
// substring of the path and fire on the matching calls after `skip` of them, `count`
// times (-1: always). What fired is counted (fired()).
//
// Thread-safe.
#ifndef SHOTSTREAM_SERVER_ENV_FAULT_ENV_H_
#define SHOTSTREAM_SERVER_ENV_FAULT_ENV_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "server/env/env.h"

namespace shotstream::env {

enum class Fault {
  kReadError,      // a read fails: EIO (UNAVAILABLE)
  kShortRead,      // a read returns half of what it could (at least 1 byte fewer)
  kChangedUnderRead,  // the fault's hook runs (e.g. rewrites the file), then the read
  kNoSpace,        // an Append, WriteAt or AppendFrom fails: ENOSPC (RESOURCE_EXHAUSTED)
  kSyncError,      // a Sync fails: EIO (UNAVAILABLE)
  kOpenError,      // an open fails: EIO (UNAVAILABLE)
};

class FaultEnv final : public Env {
 public:
  // `base` outlives it.
  explicit FaultEnv(Env* base) : base_(base) {}

  // Fails the calls of kind `fault` on paths containing `path_contains`, after `skip`
  // matching calls, `count` times (-1: every one). `hook`: kChangedUnderRead's change.
  void Inject(Fault fault, std::string path_contains, int skip = 0, int count = -1,
              std::function<void()> hook = nullptr) ABSL_LOCKS_EXCLUDED(mu_);
  void Clear() ABSL_LOCKS_EXCLUDED(mu_);
  // How many faults fired so far.
  int fired() const ABSL_LOCKS_EXCLUDED(mu_);

  absl::StatusOr<std::unique_ptr<RandomAccessFile>> OpenRead(const std::string& path) override;
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> OpenMapped(const std::string& path,
                                                               bool populate) override;
  absl::StatusOr<std::unique_ptr<WritableFile>> OpenWrite(const std::string& path,
                                                          WriteMode mode) override;
  absl::StatusOr<FileStat> Stat(const std::string& path) override { return base_->Stat(path); }
  absl::StatusOr<int64_t> FilesystemType(const std::string& path) override {
    return base_->FilesystemType(path);
  }
  absl::StatusOr<std::vector<std::string>> List(const std::string& dir) override {
    return base_->List(dir);
  }
  absl::Status Rename(const std::string& from, const std::string& to) override {
    return base_->Rename(from, to);
  }
  absl::Status RenameNoReplace(const std::string& from, const std::string& to) override {
    return base_->RenameNoReplace(from, to);
  }
  absl::Status CreateDir(const std::string& dir) override { return base_->CreateDir(dir); }
  absl::Status RemoveDir(const std::string& dir) override { return base_->RemoveDir(dir); }
  absl::Status Remove(const std::string& path) override { return base_->Remove(path); }
  absl::Status Truncate(const std::string& path, uint64_t size) override {
    return base_->Truncate(path, size);
  }
  absl::Status SyncDir(const std::string& dir) override { return base_->SyncDir(dir); }
  absl::Time Now() override { return base_->Now(); }

  // Whether a fault of kind `fault` fires now for `path` (and its hook, if any, to run
  // before the call). For the file objects this Env makes.
  bool Fires(Fault fault, const std::string& path, std::function<void()>* hook = nullptr)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // `open` (the base's), unless an open error fires; the file it opens, with its faults.
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> OpenReadThrough(
      const std::string& path,
      absl::FunctionRef<absl::StatusOr<std::unique_ptr<RandomAccessFile>>()> open);

  struct Rule {
    Fault fault;
    std::string path_contains;
    int skip;
    int count;
    std::function<void()> hook;
  };
  Env* const base_;
  mutable absl::Mutex mu_;
  std::vector<Rule> rules_ ABSL_GUARDED_BY(mu_);
  int fired_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace shotstream::env

#endif  // SHOTSTREAM_SERVER_ENV_FAULT_ENV_H_

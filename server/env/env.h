// Env: every file and clock access of the server's disk-facing code behind one interface,
// after LevelDB's Env: the POSIX one (Env::Default()), an in-memory one for tests
// (MemEnv, mem_env.h) and a fault-injecting one that wraps either (FaultEnv,
// fault_env.h: EIO, ENOSPC, short reads, a file changed under a read). Errors are
// absl::Status naming the path and the reason: NOT_FOUND for a missing file,
// UNAVAILABLE for an I/O error (transient), RESOURCE_EXHAUSTED for a full disk or quota,
// FAILED_PRECONDITION for what retrying cannot fix (a directory where a file was wanted,
// no permission).
//
// Thread-safe: an Env's methods may be called from any thread; one file object is for
// one thread at a time.
#ifndef SHOTSTREAM_SERVER_ENV_ENV_H_
#define SHOTSTREAM_SERVER_ENV_ENV_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace shotstream::env {

// A file opened for positioned reads.
class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  // Reads up to `n` bytes at `offset` into `dst`; returns how many were read (fewer only
  // at the end of the file).
  virtual absl::StatusOr<size_t> Read(uint64_t offset, size_t n, char* dst) const = 0;
};

// A file opened for writing, appended to in order.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual absl::Status Append(absl::string_view data) = 0;
  // What was appended, on storage (fdatasync).
  virtual absl::Status Sync() = 0;
  virtual absl::Status Close() = 0;
};

// What Stat says of a file: its size, when it last changed, and its identity (device and
// inode: a file replaced by another of the same name has another).
struct FileStat {
  uint64_t size = 0;
  absl::Time modified;
  uint64_t device = 0;
  uint64_t inode = 0;
};

enum class WriteMode {
  kTruncate,   // create, or empty an existing file
  kAppend,     // create, or append to an existing file
  kCreateNew,  // create; ALREADY_EXISTS if there is one
};

class Env {
 public:
  virtual ~Env() = default;
  // The process's POSIX Env (never destroyed).
  static Env* Default();

  virtual absl::StatusOr<std::unique_ptr<RandomAccessFile>> OpenRead(
      const std::string& path) = 0;
  virtual absl::StatusOr<std::unique_ptr<WritableFile>> OpenWrite(const std::string& path,
                                                                  WriteMode mode) = 0;
  virtual absl::StatusOr<FileStat> Stat(const std::string& path) = 0;
  // The names (not paths) in `dir`, sorted; "." and ".." left out.
  virtual absl::StatusOr<std::vector<std::string>> List(const std::string& dir) = 0;
  // Replaces `to` with `from` at once (rename(2)).
  virtual absl::Status Rename(const std::string& from, const std::string& to) = 0;
  virtual absl::Status Remove(const std::string& path) = 0;
  // Cuts (or extends with zeros) the file to `size` bytes.
  virtual absl::Status Truncate(const std::string& path, uint64_t size) = 0;
  // Makes a directory's entries (a rename into it) durable.
  virtual absl::Status SyncDir(const std::string& dir) = 0;
  virtual absl::Time Now() = 0;
};

// The whole file at `path`, read through `env`.
absl::StatusOr<std::string> ReadFileToString(Env* env, const std::string& path);
// Its first `n` bytes (fewer where the file is shorter).
absl::StatusOr<std::string> ReadPrefix(Env* env, const std::string& path, size_t n);

// Writes `data` to `path` as one step: to a temporary beside it (PATH.partial-PID-N, its
// own), synced, renamed over `path`, the directory synced. A reader sees the old file or
// the new one, never a part; of writers at once, the last rename wins whole.
absl::Status WriteFileAtomically(Env* env, const std::string& path, absl::string_view data);

}  // namespace shotstream::env

#endif  // SHOTSTREAM_SERVER_ENV_ENV_H_

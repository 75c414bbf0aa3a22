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
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace shotstream::env {

// What Stat says of a file: its size, when its bytes and its inode last changed, its
// identity (device and inode: a file replaced by another of the same name has another),
// and whether it is a regular file.
struct FileStat {
  uint64_t size = 0;
  absl::Time modified;
  absl::Time changed;  // the inode's change time (moves with any write or chmod)
  uint64_t device = 0;
  uint64_t inode = 0;
  bool regular = true;
  bool directory = false;
};

// A file opened for positioned reads, and mapped whole when opened by OpenMapped.
class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  // Reads up to `n` bytes at `offset` into `dst`; returns how many were read (fewer only
  // at the end of the file).
  virtual absl::StatusOr<size_t> Read(uint64_t offset, size_t n, char* dst) const = 0;
  // The open file as it is now (fstat): a file truncated or appended to under its reads
  // says its new size here.
  virtual absl::StatusOr<FileStat> Stat() const = 0;
  // The whole file, as mapped when opened by OpenMapped (empty otherwise, and for an empty
  // file); valid while this object lives. Bytes the file lost since (truncated under the
  // mapping) fault when touched on POSIX (SIGBUS): read them under RunGuardingMapping
  // (server/common/mapping_guard.h) after checking Stat().size.
  absl::Span<const uint8_t> mapping() const { return mapping_; }

 protected:
  absl::Span<const uint8_t> mapping_;
};

// A file opened for writing, appended to in order.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual absl::Status Append(absl::string_view data) = 0;
  // Writes `data` at `offset` (a header completed after the body), the end unmoved unless
  // it passes it.
  virtual absl::Status WriteAt(uint64_t offset, absl::string_view data) = 0;
  // Appends bytes [offset, offset + n) of `in`. This one reads and appends through a
  // buffer; the POSIX Env copies in the kernel (copy_file_range) where the filesystem
  // can. DATA_LOSS when `in` ends first.
  virtual absl::Status AppendFrom(const RandomAccessFile& in, uint64_t offset, uint64_t n);
  // What was appended, on storage (fdatasync).
  virtual absl::Status Sync() = 0;
  virtual absl::Status Close() = 0;
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
  // Opens `path` for reading and maps it whole, read-only and shared (mapping());
  // `populate`: every page read in now, in one call, rather than a fault per page.
  virtual absl::StatusOr<std::unique_ptr<RandomAccessFile>> OpenMapped(const std::string& path,
                                                                       bool populate) = 0;
  virtual absl::StatusOr<std::unique_ptr<WritableFile>> OpenWrite(const std::string& path,
                                                                  WriteMode mode) = 0;
  virtual absl::StatusOr<FileStat> Stat(const std::string& path) = 0;
  // The type of the filesystem holding `path` (statfs(2)'s f_type: io_mode.h tells a
  // local one from a network one).
  virtual absl::StatusOr<int64_t> FilesystemType(const std::string& path) = 0;
  // The names (not paths) in `dir`, sorted; "." and ".." left out.
  virtual absl::StatusOr<std::vector<std::string>> List(const std::string& dir) = 0;
  // Replaces `to` with `from` at once (rename(2)).
  virtual absl::Status Rename(const std::string& from, const std::string& to) = 0;
  // Renames `from` to `to` unless `to` exists: ALREADY_EXISTS then, both left as they were
  // (renameat2's RENAME_NOREPLACE).
  virtual absl::Status RenameNoReplace(const std::string& from, const std::string& to) = 0;
  // Creates the directory `dir` (an existing one is fine); RemoveDir removes it, empty.
  virtual absl::Status CreateDir(const std::string& dir) = 0;
  virtual absl::Status RemoveDir(const std::string& dir) = 0;
  virtual absl::Status Remove(const std::string& path) = 0;
  // Cuts (or extends with zeros) the file to `size` bytes.
  virtual absl::Status Truncate(const std::string& path, uint64_t size) = 0;
  // Makes a directory's entries (a rename into it) durable.
  virtual absl::Status SyncDir(const std::string& dir) = 0;
  virtual absl::Time Now() = 0;
};

// What an Env's error says after the path it begins with ("PATH: open: No such file..."
// -> "open: No such file..."), for a message that names the file once itself.
absl::string_view WithoutPath(const absl::Status& s, absl::string_view path);

// The whole file at `path`, read through `env`.
absl::StatusOr<std::string> ReadFileToString(Env* env, const std::string& path);
// Its first `n` bytes (fewer where the file is shorter).
absl::StatusOr<std::string> ReadPrefix(Env* env, const std::string& path, size_t n);

// Writes `data` to `path` as one step: to a temporary beside it (PATH.partial-PID-N, its
// own), synced, renamed over `path`, the directory synced. A reader sees the old file or
// the new one, never a part; of writers at once, the last rename wins whole.
absl::Status WriteFileAtomically(Env* env, const std::string& path, absl::string_view data);
// The same, the temporary's bytes appended by `fill` (a file too large to hold as one
// string, written from where its parts are); `fill`'s error is returned, the temporary
// removed.
absl::Status WriteFileAtomically(Env* env, const std::string& path,
                                 absl::FunctionRef<absl::Status(WritableFile&)> fill);

}  // namespace shotstream::env

#endif  // SHOTSTREAM_SERVER_ENV_ENV_H_

// A file of fixed-length traces opened read-only: where its traces are (TraceLayout, as
// the format's own parser found it), and positioned reads of its bytes through pread or a
// memory map. SEG-Y/SU (server/segy) and NumPy .npy (server/npy) files are TraceFiles; the
// coalescing reader reads them all alike.
//
// Thread-safe after Open: reads use positioned reads of a file opened read-only, or its
// mapping, through an env::Env (the process's POSIX one unless given another), held open
// by the process's OpenFileCache (closed when it evicts them, reopened on use).
#ifndef SHOTSTREAM_SERVER_IO_TRACE_FILE_H_
#define SHOTSTREAM_SERVER_IO_TRACE_FILE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "segy/sample_format.h"
#include "server/common/file_identity.h"
#include "server/env/env.h"
#include "server/io/io_mode.h"
#include "server/io/open_file_cache.h"
#include "server/io/trace_crcs.h"

namespace shotstream::io {

// Where the traces of a file are and how their samples are stored. A value.
struct TraceLayout {
  segy::ByteOrder byte_order = segy::ByteOrder::kBigEndian;
  segy::SampleFormat format = segy::SampleFormat::kIeeeFloat32;
  int bytes_per_sample = 4;
  uint32_t n_samples = 0;
  double sample_interval_us = 0;  // 0: the file does not say
  uint64_t trace_header_bytes = 240;  // header bytes before each trace's samples (0: none)
  uint64_t first_trace_offset = 0;
  uint64_t trace_bytes = 0;  // headers plus samples of one trace
  uint64_t n_traces = 0;
  // What the parser had to decide that a user should hear of, once (a sample count
  // taken from another header than the binary header's, a revision word read as rev 1).
  std::vector<std::string> notes;

  uint64_t header_bytes() const { return trace_header_bytes; }
  uint64_t sample_bytes() const { return uint64_t{n_samples} * bytes_per_sample; }
  uint64_t TraceOffset(uint64_t trace) const { return first_trace_offset + trace * trace_bytes; }
  // The index of the trace starting at `offset` (one TraceOffset gave; trace_bytes > 0).
  uint64_t TraceIndex(uint64_t offset) const { return (offset - first_trace_offset) / trace_bytes; }
};

// Reads exactly `length` bytes at `offset` into `dst`, or an error naming the file.
using ReadFn = std::function<absl::Status(uint64_t offset, uint64_t length, uint8_t* dst)>;

// A format's parser: the layout of the file at `path` from its first bytes (`head`, the
// file's first min(size, head bytes asked) bytes) and, where it needs more, `read_at`.
// Errors name the file, the byte and the reason.
using LayoutParser = std::function<absl::StatusOr<TraceLayout>(
    const std::string& path, const uint8_t* head, size_t head_size, uint64_t file_size,
    const ReadFn& read_at)>;

class TraceFile final : public CachedFile {
 public:
  // The file open (and its mapping, for mapped files). Reads through a
  // handle stay valid while it is held, even after the cache closed the file for others:
  // zero-copy traces hold the handles of the files they point into. Thread-safe.
  class Handle {
   public:
    ~Handle();
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    // As TraceFile's ReadAt and ReadMapped, through this descriptor and mapping.
    absl::Status ReadAt(uint64_t offset, uint64_t length, uint8_t* dst) const;
    absl::Status ReadMapped(uint64_t offset, uint64_t length,
                            absl::FunctionRef<void(const uint8_t*)> use) const;
    // Mapped files only: the byte offset in the file of `p`, a pointer into the mapping.
    uint64_t MappedOffset(const uint8_t* p) const {
      return static_cast<uint64_t>(p - open_->mapping().data());
    }
    // Mapped files only: where the `length` bytes at `offset` lie in the mapping, with no
    // read and no stat; null where the mapping does not hold them. Whatever reads them must
    // guard the mapping (mapping_guard.h): the file may have shrunk since it was mapped.
    const uint8_t* MappedAt(uint64_t offset, uint64_t length) const {
      const absl::Span<const uint8_t> map = open_->mapping();
      if (offset > map.size() || length > map.size() - offset) return nullptr;
      return map.data() + offset;
    }

   private:
    friend class TraceFile;
    Handle(const TraceFile* file, std::unique_ptr<env::RandomAccessFile> open)
        : file_(file), open_(std::move(open)) {}
    const TraceFile* file_;
    const std::unique_ptr<env::RandomAccessFile> open_;  // its mapping(): the whole file
  };

  // Opens `path` read-only through `env` (the process's POSIX Env when null), mapped when
  // `io` says so, reads its first `head_bytes` bytes and parses them with `parse`; the
  // file then stays open until `cache` (the process's by default) closes it, and reopens
  // when next read. NOT_FOUND for a missing file, FAILED_PRECONDITION for one that cannot
  // be opened (no permission), UNAVAILABLE when no descriptor is left, INVALID_ARGUMENT
  // for one that is not a regular file or does not parse.
  static absl::StatusOr<std::unique_ptr<TraceFile>> Open(const std::string& path, IoMode io,
                                                         size_t head_bytes,
                                                         const LayoutParser& parse,
                                                         OpenFileCache* cache = nullptr,
                                                         env::Env* env = nullptr);
  ~TraceFile() override;
  TraceFile(const TraceFile&) = delete;
  TraceFile& operator=(const TraceFile&) = delete;

  const std::string& path() const { return path_; }
  const TraceLayout& layout() const { return layout_; }
  uint64_t size() const { return identity_.size; }
  const FileIdentity& identity() const { return identity_; }

  // OK while the file at path() is the one opened, as it was: same device and inode,
  // size and mtime. Otherwise DATA_LOSS naming the file and what changed (rewritten in
  // place, replaced, truncated, removed). One stat.
  absl::Status CheckUnchanged() const { return identity_.CheckUnchanged(path_, env_); }

  // The file open, for reads that must hold it (the same handle while the cache keeps the
  // file open). Reopening a closed file checks that it is the one opened first, unchanged:
  // DATA_LOSS naming what changed; UNAVAILABLE when no descriptor is left.
  absl::StatusOr<std::shared_ptr<const Handle>> Acquire() const ABSL_LOCKS_EXCLUDED(mu_);

  // Reads exactly `length` bytes at `offset`, or an error naming the file and offset
  // (DATA_LOSS when the file is shorter than expected, UNAVAILABLE on I/O errors).
  absl::Status ReadAt(uint64_t offset, uint64_t length, uint8_t* dst) const;

  // Whether the file is read through a memory map (IoMode::kMmap, or kAuto on a local
  // filesystem).
  bool mapped() const { return mapped_; }

  // Mapped files only: calls use() with the `length` bytes at `offset` in place, inside
  // the mapping, after the same size check as ReadAt. DATA_LOSS past the current end, or
  // when the file shrinks while use() reads (the SIGBUS is caught: mapping_guard.h, whose
  // rule applies to use(): it may be left by a jump, so it must own nothing).
  absl::Status ReadMapped(uint64_t offset, uint64_t length,
                          absl::FunctionRef<void(const uint8_t*)> use) const;

  // Each trace's CRC-32 of its stored samples, as sent zero copy: kept for as long as
  // this file (this identity) is served, within the process's TraceCrcBudget.
  const TraceCrcs& crcs() const { return *crcs_; }

  // Whether the file is held open now (not closed by the cache).
  bool is_open() const ABSL_LOCKS_EXCLUDED(mu_);

  // How many ReadAt calls this file has served (for tests and metrics).
  uint64_t read_calls() const { return read_calls_.load(std::memory_order_relaxed); }

  // CachedFile: drops this file's handle (closed once no read holds it).
  void Close() override ABSL_LOCKS_EXCLUDED(mu_);

 private:
  TraceFile(std::string path, FileIdentity identity, OpenFileCache* cache, env::Env* env)
      : path_(std::move(path)), identity_(identity), cache_(cache), env_(env) {}
  // Opens path() again, checks its identity and maps it.
  absl::StatusOr<std::shared_ptr<Handle>> Reopen() const;

  const std::string path_;
  const FileIdentity identity_;
  OpenFileCache* const cache_;
  env::Env* const env_;
  TraceLayout layout_;
  bool mapped_ = false;
  std::unique_ptr<const TraceCrcs> crcs_;  // for layout_.n_traces, made with it
  mutable std::atomic<uint64_t> read_calls_{0};
  mutable absl::Mutex mu_;
  // The open file, while the cache keeps it; null once closed.
  mutable std::shared_ptr<const Handle> open_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shotstream::io

#endif  // SHOTSTREAM_SERVER_IO_TRACE_FILE_H_

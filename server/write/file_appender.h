// FileAppender: appends bytes to a file (an env::WritableFile) from its own thread, so that the caller
// fills the next buffer while the last one is written (receiving and writing a dataset
// then use two cores). At most two buffers of `buffer_bytes` (plus one append) exist: the
// one being filled and the one being written.
//
// Thread-safe for one producer: Append, Extend, Commit and Finish are called from one
// thread at a time; the writer thread is internal.
#ifndef SHOTSTREAM_SERVER_WRITE_FILE_APPENDER_H_
#define SHOTSTREAM_SERVER_WRITE_FILE_APPENDER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "server/env/env.h"

namespace shotstream::write {

class FileAppender {
 public:
  // Appends to `file` (which outlives it). `error` turns a failed append's status into the
  // one Append and Finish return (adding what was being written).
  FileAppender(env::WritableFile* file, size_t buffer_bytes,
               std::function<absl::Status(const absl::Status&)> error);
  ~FileAppender();  // stops the thread; what was not written by Finish is dropped
  FileAppender(const FileAppender&) = delete;
  FileAppender& operator=(const FileAppender&) = delete;

  // Queues `n` bytes; the first write error seen so far, if any.
  absl::Status Append(const void* data, size_t n) ABSL_LOCKS_EXCLUDED(mu_);
  // Queues `n` bytes the caller writes in place at the pointer returned (not zeroed, valid
  // until the next call), then calls Commit (as Append's return).
  uint8_t* Extend(size_t n);
  absl::Status Commit() ABSL_LOCKS_EXCLUDED(mu_);
  // Writes everything queued and waits for it: the first write error, if any.
  absl::Status Finish() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // A buffer without value-initialization: bytes are written before they are read.
  struct Buffer {
    std::unique_ptr<uint8_t[]> data;
    size_t capacity = 0;
    size_t size = 0;
    void Reserve(size_t n);
  };
  absl::Status Handoff() ABSL_LOCKS_EXCLUDED(mu_);
  void Run() ABSL_LOCKS_EXCLUDED(mu_);

  env::WritableFile* const file_;
  const size_t buffer_bytes_;
  const std::function<absl::Status(const absl::Status&)> error_fn_;
  Buffer filling_;  // the producer's
  absl::Mutex mu_;
  Buffer writing_ ABSL_GUARDED_BY(mu_);
  bool has_work_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace shotstream::write

#endif  // SHOTSTREAM_SERVER_WRITE_FILE_APPENDER_H_

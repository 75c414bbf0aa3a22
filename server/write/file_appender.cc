#include "server/write/file_appender.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace shotstream::write {

void FileAppender::Buffer::Reserve(size_t n) {
  if (n <= capacity) return;
  std::unique_ptr<uint8_t[]> bigger(new uint8_t[n]);
  if (size > 0) std::memcpy(bigger.get(), data.get(), size);
  data = std::move(bigger);
  capacity = n;
}

FileAppender::FileAppender(env::WritableFile* file, size_t buffer_bytes,
                           std::function<absl::Status(const absl::Status&)> error)
    : file_(file), buffer_bytes_(buffer_bytes), error_fn_(std::move(error)) {
  filling_.Reserve(buffer_bytes_);
  thread_ = std::thread([this] { Run(); });
}

FileAppender::~FileAppender() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  thread_.join();
}

void FileAppender::Run() {
  Buffer local;
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](FileAppender* a) ABSL_NO_THREAD_SAFETY_ANALYSIS { return a->has_work_ || a->stop_; },
          this));
      if (!has_work_) return;  // stopped
      std::swap(local, writing_);
    }
    absl::Status status = file_->Append(
        absl::string_view(reinterpret_cast<const char*>(local.data.get()), local.size));
    if (!status.ok()) status = error_fn_(status);
    local.size = 0;
    absl::MutexLock lock(&mu_);
    std::swap(local, writing_);  // the memory goes back for the next buffer
    has_work_ = false;
    if (error_.ok()) error_ = status;
  }
}

absl::Status FileAppender::Handoff() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](FileAppender* a) ABSL_NO_THREAD_SAFETY_ANALYSIS { return !a->has_work_; }, this));
  if (!error_.ok()) return error_;
  std::swap(filling_, writing_);
  filling_.size = 0;
  has_work_ = true;
  return absl::OkStatus();
}

uint8_t* FileAppender::Extend(size_t n) {
  filling_.Reserve(std::max(buffer_bytes_, filling_.size + n));
  uint8_t* at = filling_.data.get() + filling_.size;
  filling_.size += n;
  return at;
}

absl::Status FileAppender::Commit() {
  if (filling_.size >= buffer_bytes_) return Handoff();
  absl::MutexLock lock(&mu_);
  return error_;
}

absl::Status FileAppender::Append(const void* data, size_t n) {
  std::memcpy(Extend(n), data, n);
  return Commit();
}

absl::Status FileAppender::Finish() {
  if (filling_.size > 0) {
    if (absl::Status s = Handoff(); !s.ok()) return s;
  }
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](FileAppender* a) ABSL_NO_THREAD_SAFETY_ANALYSIS { return !a->has_work_; }, this));
  return error_;
}

}  // namespace shotstream::write

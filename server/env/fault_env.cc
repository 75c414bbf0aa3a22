#include "server/env/fault_env.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace shotstream::env {
namespace {

class FaultReadFile final : public RandomAccessFile {
 public:
  FaultReadFile(std::unique_ptr<RandomAccessFile> base, std::string path, FaultEnv* env)
      : base_(std::move(base)), path_(std::move(path)), env_(env) {
    mapping_ = base_->mapping();
  }
  absl::StatusOr<FileStat> Stat() const override { return base_->Stat(); }
  absl::StatusOr<size_t> Read(uint64_t offset, size_t n, char* dst) const override {
    std::function<void()> hook;
    if (env_->Fires(Fault::kChangedUnderRead, path_, &hook) && hook) hook();
    if (env_->Fires(Fault::kReadError, path_)) {
      return absl::UnavailableError(
          absl::StrCat(path_, ": read at byte ", offset, ": Input/output error"));
    }
    absl::StatusOr<size_t> got = base_->Read(offset, n, dst);
    if (got.ok() && *got > 0 && env_->Fires(Fault::kShortRead, path_)) return *got / 2;
    return got;
  }

 private:
  const std::unique_ptr<RandomAccessFile> base_;
  const std::string path_;
  FaultEnv* const env_;
};

class FaultWriteFile final : public WritableFile {
 public:
  FaultWriteFile(std::unique_ptr<WritableFile> base, std::string path, FaultEnv* env)
      : base_(std::move(base)), path_(std::move(path)), env_(env) {}
  absl::Status Append(absl::string_view data) override {
    if (env_->Fires(Fault::kNoSpace, path_)) {
      return absl::ResourceExhaustedError(
          absl::StrCat(path_, ": write: No space left on device"));
    }
    return base_->Append(data);
  }
  absl::Status WriteAt(uint64_t offset, absl::string_view data) override {
    if (env_->Fires(Fault::kNoSpace, path_)) {
      return absl::ResourceExhaustedError(
          absl::StrCat(path_, ": write at byte ", offset, ": No space left on device"));
    }
    return base_->WriteAt(offset, data);
  }
  absl::Status AppendFrom(const RandomAccessFile& in, uint64_t offset, uint64_t n) override {
    if (env_->Fires(Fault::kNoSpace, path_)) {
      return absl::ResourceExhaustedError(
          absl::StrCat(path_, ": copy_file_range: No space left on device"));
    }
    return base_->AppendFrom(in, offset, n);
  }
  absl::Status Sync() override {
    if (env_->Fires(Fault::kSyncError, path_)) {
      return absl::UnavailableError(absl::StrCat(path_, ": fdatasync: Input/output error"));
    }
    return base_->Sync();
  }
  absl::Status Close() override { return base_->Close(); }

 private:
  const std::unique_ptr<WritableFile> base_;
  const std::string path_;
  FaultEnv* const env_;
};

}  // namespace

void FaultEnv::Inject(Fault fault, std::string path_contains, int skip, int count,
                      std::function<void()> hook) {
  absl::MutexLock lock(&mu_);
  rules_.push_back({fault, std::move(path_contains), skip, count, std::move(hook)});
}

void FaultEnv::Clear() {
  absl::MutexLock lock(&mu_);
  rules_.clear();
}

int FaultEnv::fired() const {
  absl::MutexLock lock(&mu_);
  return fired_;
}

bool FaultEnv::Fires(Fault fault, const std::string& path, std::function<void()>* hook) {
  absl::MutexLock lock(&mu_);
  for (Rule& r : rules_) {
    if (r.fault != fault || !absl::StrContains(path, r.path_contains) || r.count == 0) continue;
    if (r.skip > 0) {
      --r.skip;
      continue;
    }
    if (r.count > 0) --r.count;
    ++fired_;
    if (hook != nullptr) *hook = r.hook;
    return true;
  }
  return false;
}

absl::StatusOr<std::unique_ptr<RandomAccessFile>> FaultEnv::OpenReadThrough(
    const std::string& path,
    absl::FunctionRef<absl::StatusOr<std::unique_ptr<RandomAccessFile>>()> open) {
  if (Fires(Fault::kOpenError, path)) {
    return absl::UnavailableError(absl::StrCat(path, ": open: Input/output error"));
  }
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> base = open();
  if (!base.ok()) return base.status();
  return std::unique_ptr<RandomAccessFile>(new FaultReadFile(*std::move(base), path, this));
}

absl::StatusOr<std::unique_ptr<RandomAccessFile>> FaultEnv::OpenRead(const std::string& path) {
  return OpenReadThrough(path, [&] { return base_->OpenRead(path); });
}

absl::StatusOr<std::unique_ptr<RandomAccessFile>> FaultEnv::OpenMapped(const std::string& path,
                                                                       bool populate) {
  return OpenReadThrough(path, [&] { return base_->OpenMapped(path, populate); });
}

absl::StatusOr<std::unique_ptr<WritableFile>> FaultEnv::OpenWrite(const std::string& path,
                                                                  WriteMode mode) {
  if (Fires(Fault::kOpenError, path)) {
    return absl::UnavailableError(absl::StrCat(path, ": open for writing: Input/output error"));
  }
  absl::StatusOr<std::unique_ptr<WritableFile>> base = base_->OpenWrite(path, mode);
  if (!base.ok()) return base.status();
  return std::unique_ptr<WritableFile>(new FaultWriteFile(*std::move(base), path, this));
}

}  // namespace shotstream::env

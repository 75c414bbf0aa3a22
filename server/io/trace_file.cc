#include "server/io/trace_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/common/mapping_guard.h"

namespace shotstream::io {
namespace {

// An open(2) error as a status naming the file: NOT_FOUND, PERMISSION_DENIED, or
// UNAVAILABLE when the process is out of descriptors (transient: the cache frees some).
absl::Status OpenError(const std::string& path, int err) {
  std::string msg = absl::StrCat(path, ": cannot open: ", std::strerror(err));
  if (err == ENOENT) return absl::NotFoundError(msg);
  if (err == EMFILE || err == ENFILE) {
    return absl::UnavailableError(absl::StrCat(
        msg, " (the server keeps at most ", OpenFileCache::Default().capacity(),
        " data files open: lower open_files or raise the limit, ulimit -n)"));
  }
  return absl::PermissionDeniedError(msg);
}

absl::StatusOr<const uint8_t*> Map(const std::string& path, int fd, uint64_t size) {
  void* m = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) {
    return absl::UnavailableError(absl::StrCat(path, ": mmap failed: ", std::strerror(errno)));
  }
  return static_cast<const uint8_t*>(m);
}

}  // namespace

absl::StatusOr<std::unique_ptr<TraceFile>> TraceFile::Open(const std::string& path, IoMode io,
                                                           size_t head_bytes,
                                                           const LayoutParser& parse,
                                                           OpenFileCache* cache) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return OpenError(path, errno);
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  }
  std::unique_ptr<TraceFile> file(
      new TraceFile(path, FileIdentity::Of(st), cache != nullptr ? cache : &OpenFileCache::Default()));
  std::shared_ptr<Handle> handle(new Handle(file.get(), fd));
  std::vector<uint8_t> head(std::min<uint64_t>(file->size(), head_bytes));
  SS_RETURN_IF_ERROR(handle->ReadAt(0, head.size(), head.data()));
  const ReadFn read_at = [h = handle.get()](uint64_t off, uint64_t len, uint8_t* dst) {
    return h->ReadAt(off, len, dst);
  };
  SS_ASSIGN_OR_RETURN(file->layout_, parse(path, head.data(), head.size(), file->size(), read_at));
  bool map = io == IoMode::kMmap;
  if (io == IoMode::kAuto) {
    struct statfs fs;
    map = ::fstatfs(fd, &fs) == 0 && IsLocalFilesystem(static_cast<int64_t>(fs.f_type));
  }
  file->mapped_ = map && file->size() > 0;
  if (file->mapped_) {
    SS_ASSIGN_OR_RETURN(handle->map_, Map(path, fd, file->size()));
    handle->map_size_ = file->size();
  }
  {
    absl::MutexLock lock(&file->mu_);
    file->open_ = std::move(handle);
  }
  file->cache_->Opened(file.get());
  return file;
}

TraceFile::~TraceFile() { cache_->Forget(this); }

TraceFile::Handle::~Handle() {
  if (map_ != nullptr) ::munmap(const_cast<uint8_t*>(map_), map_size_);
  ::close(fd_);
}

absl::StatusOr<std::shared_ptr<TraceFile::Handle>> TraceFile::Reopen() const {
  const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) {
      return absl::DataLossError(absl::StrCat(path_, ": gone since its catalog was built (",
                                              std::strerror(err), ")"));
    }
    return OpenError(path_, err);
  }
  std::shared_ptr<Handle> handle(new Handle(this, fd));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    return absl::UnavailableError(absl::StrCat(path_, ": fstat failed: ", std::strerror(errno)));
  }
  // Closed by the cache and opened again: still the file the catalog describes?
  SS_RETURN_IF_ERROR(identity_.Matches(FileIdentity::Of(st), path_));
  if (mapped_) {
    SS_ASSIGN_OR_RETURN(handle->map_, Map(path_, fd, size()));
    handle->map_size_ = size();
  }
  return handle;
}

absl::StatusOr<std::shared_ptr<const TraceFile::Handle>> TraceFile::Acquire() const {
  std::shared_ptr<const Handle> held;
  {
    absl::MutexLock lock(&mu_);
    held = open_;
  }
  if (held != nullptr) {
    cache_->Used(const_cast<TraceFile*>(this));
    return held;
  }
  SS_ASSIGN_OR_RETURN(std::shared_ptr<Handle> opened, Reopen());
  bool first = false;
  {
    absl::MutexLock lock(&mu_);
    if (open_ == nullptr) {  // else another reader reopened it meanwhile: use theirs
      open_ = opened;
      first = true;
    }
    held = open_;
  }
  if (first) {
    cache_->Opened(const_cast<TraceFile*>(this));
  } else {
    cache_->Used(const_cast<TraceFile*>(this));
  }
  return held;
}

void TraceFile::Close() {
  std::shared_ptr<const Handle> closing;
  absl::MutexLock lock(&mu_);
  closing.swap(open_);  // closed here unless a read still holds it (then when it ends)
}

bool TraceFile::is_open() const {
  absl::MutexLock lock(&mu_);
  return open_ != nullptr;
}

absl::Status TraceFile::ReadAt(uint64_t offset, uint64_t length, uint8_t* dst) const {
  SS_ASSIGN_OR_RETURN(std::shared_ptr<const Handle> h, Acquire());
  return h->ReadAt(offset, length, dst);
}

absl::Status TraceFile::ReadMapped(uint64_t offset, uint64_t length,
                                   absl::FunctionRef<void(const uint8_t*)> use) const {
  SS_ASSIGN_OR_RETURN(std::shared_ptr<const Handle> h, Acquire());
  return h->ReadMapped(offset, length, use);
}

absl::Status TraceFile::Handle::ReadMapped(uint64_t offset, uint64_t length,
                                           absl::FunctionRef<void(const uint8_t*)> use) const {
  const std::string& path = file_->path();
  if (map_ == nullptr) return absl::InternalError(absl::StrCat(path, ": not mapped"));
  file_->read_calls_.fetch_add(1, std::memory_order_relaxed);
  struct stat st;
  const uint64_t now = ::fstat(fd_, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  if (offset + length > std::min(now, map_size_)) {
    return absl::DataLossError(absl::StrCat(
        path, ": file is now ", now, " bytes but ", length, " bytes were expected at byte "
        "offset ", offset, " (file truncated or replaced while serving)"));
  }
  const uint8_t* bytes = map_ + offset;
  if (!RunGuardingMapping(bytes, length, [&] { use(bytes); })) {
    return absl::DataLossError(absl::StrCat(
        path, ": ", length, " bytes at byte offset ", offset,
        " vanished while being read (file truncated or replaced while serving)"));
  }
  return absl::OkStatus();
}

absl::Status TraceFile::Handle::ReadAt(uint64_t offset, uint64_t length, uint8_t* dst) const {
  if (map_ != nullptr) {
    return ReadMapped(offset, length,
                      [&](const uint8_t* bytes) { std::memcpy(dst, bytes, length); });
  }
  const std::string& path = file_->path();
  file_->read_calls_.fetch_add(1, std::memory_order_relaxed);
  uint64_t done = 0;
  while (done < length) {
    const ssize_t n = ::pread(fd_, dst + done, length - done, offset + done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::UnavailableError(absl::StrCat(path, ": read of ", length,
                                                 " bytes at byte offset ", offset,
                                                 " failed: ", std::strerror(errno)));
    }
    if (n == 0) {
      return absl::DataLossError(absl::StrCat(
          path, ": file ends at byte ", offset + done, " but ", length,
          " bytes were expected at byte offset ", offset,
          " (file truncated or replaced while serving)"));
    }
    done += static_cast<uint64_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace shotstream::io

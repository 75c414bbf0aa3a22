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

absl::StatusOr<std::unique_ptr<TraceFile>> TraceFile::Open(const std::string& path, IoMode io,
                                                           size_t head_bytes,
                                                           const LayoutParser& parse) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    std::string msg = absl::StrCat(path, ": cannot open: ", std::strerror(err));
    return err == ENOENT ? absl::NotFoundError(msg) : absl::PermissionDeniedError(msg);
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  }
  std::unique_ptr<TraceFile> file(new TraceFile(path, fd, FileIdentity::Of(st)));
  std::vector<uint8_t> head(std::min<uint64_t>(file->size(), head_bytes));
  SS_RETURN_IF_ERROR(file->ReadAt(0, head.size(), head.data()));
  const ReadFn read_at = [f = file.get()](uint64_t off, uint64_t len, uint8_t* dst) {
    return f->ReadAt(off, len, dst);
  };
  SS_ASSIGN_OR_RETURN(file->layout_, parse(path, head.data(), head.size(), file->size(), read_at));
  bool map = io == IoMode::kMmap;
  if (io == IoMode::kAuto) {
    struct statfs fs;
    map = ::fstatfs(fd, &fs) == 0 && IsLocalFilesystem(static_cast<int64_t>(fs.f_type));
  }
  if (map && file->size() > 0) {
    void* m = ::mmap(nullptr, file->size(), PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
      return absl::UnavailableError(absl::StrCat(path, ": mmap failed: ", std::strerror(errno)));
    }
    file->map_ = static_cast<const uint8_t*>(m);
    file->map_size_ = file->size();
  }
  return file;
}

TraceFile::~TraceFile() {
  if (map_ != nullptr) ::munmap(const_cast<uint8_t*>(map_), map_size_);
  ::close(fd_);
}

absl::Status TraceFile::ReadMapped(uint64_t offset, uint64_t length,
                                   absl::FunctionRef<void(const uint8_t*)> use) const {
  if (map_ == nullptr) return absl::InternalError(absl::StrCat(path_, ": not mapped"));
  read_calls_.fetch_add(1, std::memory_order_relaxed);
  struct stat st;
  const uint64_t now = ::fstat(fd_, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  if (offset + length > std::min(now, map_size_)) {
    return absl::DataLossError(absl::StrCat(
        path_, ": file is now ", now, " bytes but ", length, " bytes were expected at byte "
        "offset ", offset, " (file truncated or replaced while serving)"));
  }
  const uint8_t* bytes = map_ + offset;
  if (!RunGuardingMapping(bytes, length, [&] { use(bytes); })) {
    return absl::DataLossError(absl::StrCat(
        path_, ": ", length, " bytes at byte offset ", offset,
        " vanished while being read (file truncated or replaced while serving)"));
  }
  return absl::OkStatus();
}

absl::Status TraceFile::ReadAt(uint64_t offset, uint64_t length, uint8_t* dst) const {
  if (map_ != nullptr) {
    return ReadMapped(offset, length,
                      [&](const uint8_t* bytes) { std::memcpy(dst, bytes, length); });
  }
  read_calls_.fetch_add(1, std::memory_order_relaxed);
  uint64_t done = 0;
  while (done < length) {
    const ssize_t n = ::pread(fd_, dst + done, length - done, offset + done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::UnavailableError(absl::StrCat(path_, ": read of ", length,
                                                 " bytes at byte offset ", offset,
                                                 " failed: ", std::strerror(errno)));
    }
    if (n == 0) {
      return absl::DataLossError(absl::StrCat(
          path_, ": file ends at byte ", offset + done, " but ", length,
          " bytes were expected at byte offset ", offset,
          " (file truncated or replaced while serving)"));
    }
    done += static_cast<uint64_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace shotstream::io

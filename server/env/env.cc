#include "server/env/env.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace shotstream::env {
namespace {

// errno as a status naming `path` and what was being done.
absl::Status PosixError(const std::string& path, absl::string_view what, int err) {
  const std::string message = absl::StrCat(path, ": ", what, ": ", std::strerror(err));
  switch (err) {
    case ENOENT:
      return absl::NotFoundError(message);
    case EEXIST:
      return absl::AlreadyExistsError(message);
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
      return absl::ResourceExhaustedError(message);
    case EISDIR:
    case ENOTDIR:
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::FailedPreconditionError(message);
    default:
      return absl::UnavailableError(message);
  }
}

class PosixReadFile final : public RandomAccessFile {
 public:
  PosixReadFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixReadFile() override { ::close(fd_); }
  absl::StatusOr<size_t> Read(uint64_t offset, size_t n, char* dst) const override {
    size_t done = 0;
    while (done < n) {
      const ssize_t got = ::pread(fd_, dst + done, n - done, static_cast<off_t>(offset + done));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) return PosixError(path_, absl::StrCat("read at byte ", offset + done), errno);
      if (got == 0) break;  // the end of the file
      done += static_cast<size_t>(got);
    }
    return done;
  }

 private:
  const std::string path_;
  const int fd_;
};

class PosixWriteFile final : public WritableFile {
 public:
  PosixWriteFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixWriteFile() override {
    if (fd_ >= 0) ::close(fd_);
  }
  absl::Status Append(absl::string_view data) override {
    while (!data.empty()) {
      const ssize_t n = ::write(fd_, data.data(), data.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return PosixError(path_, "write", errno);
      data.remove_prefix(static_cast<size_t>(n));
    }
    return absl::OkStatus();
  }
  absl::Status Sync() override {
    if (::fdatasync(fd_) != 0) return PosixError(path_, "fdatasync", errno);
    return absl::OkStatus();
  }
  absl::Status Close() override {
    const int fd = fd_;
    fd_ = -1;
    if (fd >= 0 && ::close(fd) != 0) return PosixError(path_, "close", errno);
    return absl::OkStatus();
  }

 private:
  const std::string path_;
  int fd_;
};

class PosixEnv final : public Env {
 public:
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> OpenRead(const std::string& path) override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return PosixError(path, "open", errno);
    return std::unique_ptr<RandomAccessFile>(new PosixReadFile(path, fd));
  }
  absl::StatusOr<std::unique_ptr<WritableFile>> OpenWrite(const std::string& path,
                                                          WriteMode mode) override {
    int flags = O_WRONLY | O_CREAT | O_CLOEXEC;
    if (mode == WriteMode::kTruncate) flags |= O_TRUNC;
    if (mode == WriteMode::kAppend) flags |= O_APPEND;
    if (mode == WriteMode::kCreateNew) flags |= O_EXCL;
    const int fd = ::open(path.c_str(), flags, 0644);
    if (fd < 0) return PosixError(path, "open for writing", errno);
    return std::unique_ptr<WritableFile>(new PosixWriteFile(path, fd));
  }
  absl::StatusOr<FileStat> Stat(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return PosixError(path, "stat", errno);
    FileStat out;
    out.size = static_cast<uint64_t>(st.st_size);
    out.modified = absl::TimeFromTimespec(st.st_mtim);
    out.device = static_cast<uint64_t>(st.st_dev);
    out.inode = static_cast<uint64_t>(st.st_ino);
    return out;
  }
  absl::StatusOr<std::vector<std::string>> List(const std::string& dir) override {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return PosixError(dir, "list", errno);
    std::vector<std::string> names;
    while (const dirent* e = ::readdir(d)) {
      const absl::string_view name = e->d_name;
      if (name != "." && name != "..") names.emplace_back(name);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    return names;
  }
  absl::Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return PosixError(from, absl::StrCat("rename to ", to), errno);
    }
    return absl::OkStatus();
  }
  absl::Status Remove(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return PosixError(path, "remove", errno);
    return absl::OkStatus();
  }
  absl::Status Truncate(const std::string& path, uint64_t size) override {
    if (::truncate(path.c_str(), static_cast<off_t>(size)) != 0) {
      return PosixError(path, absl::StrCat("truncate to ", size, " bytes"), errno);
    }
    return absl::OkStatus();
  }
  absl::Status SyncDir(const std::string& dir) override {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return PosixError(dir, "open the directory", errno);
    const int rc = ::fsync(fd);
    const int err = errno;
    ::close(fd);
    if (rc != 0) return PosixError(dir, "fsync the directory", err);
    return absl::OkStatus();
  }
  absl::Time Now() override { return absl::Now(); }
};

}  // namespace

Env* Env::Default() {
  static Env* const env = new PosixEnv();
  return env;
}

absl::StatusOr<std::string> ReadFileToString(Env* env, const std::string& path) {
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> file = env->OpenRead(path);
  if (!file.ok()) return file.status();
  std::string out;
  char buf[1 << 16];
  for (;;) {
    absl::StatusOr<size_t> n = (*file)->Read(out.size(), sizeof(buf), buf);
    if (!n.ok()) return n.status();
    if (*n == 0) return out;
    out.append(buf, *n);
  }
}

absl::StatusOr<std::string> ReadPrefix(Env* env, const std::string& path, size_t n) {
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> file = env->OpenRead(path);
  if (!file.ok()) return file.status();
  std::string out(n, '\0');
  absl::StatusOr<size_t> got = (*file)->Read(0, n, out.data());
  if (!got.ok()) return got.status();
  out.resize(*got);
  return out;
}

absl::Status WriteFileAtomically(Env* env, const std::string& path, absl::string_view data) {
  // A temporary of its own: writers of the same path at once each rename a whole file.
  static std::atomic<uint64_t> counter{0};
  const std::string temp =
      absl::StrCat(path, ".partial-", ::getpid(), "-", counter.fetch_add(1));
  absl::StatusOr<std::unique_ptr<WritableFile>> file = env->OpenWrite(temp, WriteMode::kTruncate);
  if (!file.ok()) return file.status();
  absl::Status s = (*file)->Append(data);
  if (s.ok()) s = (*file)->Sync();
  if (absl::Status closed = (*file)->Close(); s.ok()) s = closed;
  if (s.ok()) s = env->Rename(temp, path);
  if (!s.ok()) {
    env->Remove(temp).IgnoreError();
    return s;
  }
  const size_t slash = path.rfind('/');
  return env->SyncDir(slash == std::string::npos ? "." : path.substr(0, std::max<size_t>(slash, 1)));
}

}  // namespace shotstream::env

#include "server/env/env.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>  // renameat2
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
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
    case EMFILE:
    case ENFILE:
      return absl::UnavailableError(absl::StrCat(message, " (no file descriptor left)"));
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

FileStat StatOf(const struct stat& st) {
  FileStat out;
  out.size = static_cast<uint64_t>(st.st_size);
  out.modified = absl::TimeFromTimespec(st.st_mtim);
  out.changed = absl::TimeFromTimespec(st.st_ctim);
  out.device = static_cast<uint64_t>(st.st_dev);
  out.inode = static_cast<uint64_t>(st.st_ino);
  out.regular = S_ISREG(st.st_mode);
  out.directory = S_ISDIR(st.st_mode);
  return out;
}

class PosixReadFile final : public RandomAccessFile {
 public:
  PosixReadFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixReadFile() override {
    if (!mapping_.empty()) {
      ::munmap(const_cast<uint8_t*>(mapping_.data()), mapping_.size());
    }
    ::close(fd_);
  }
  // Maps the file's first `size` bytes (nothing for an empty file).
  absl::Status Map(uint64_t size, bool populate) {
    if (size == 0) return absl::OkStatus();
    void* m = ::mmap(nullptr, size, PROT_READ, MAP_SHARED | (populate ? MAP_POPULATE : 0),
                     fd_, 0);
    if (m == MAP_FAILED) return PosixError(path_, "mmap", errno);
    mapping_ = absl::MakeConstSpan(static_cast<const uint8_t*>(m), size);
    return absl::OkStatus();
  }
  absl::StatusOr<FileStat> Stat() const override {
    struct stat st;
    if (::fstat(fd_, &st) != 0) return PosixError(path_, "fstat", errno);
    return StatOf(st);
  }
  int fd() const { return fd_; }
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
  absl::Status WriteAt(uint64_t offset, absl::string_view data) override {
    while (!data.empty()) {
      const ssize_t n = ::pwrite(fd_, data.data(), data.size(), static_cast<off_t>(offset));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return PosixError(path_, absl::StrCat("write at byte ", offset), errno);
      data.remove_prefix(static_cast<size_t>(n));
      offset += static_cast<uint64_t>(n);
    }
    return absl::OkStatus();
  }
  // copy_file_range from another POSIX file (no bytes through user space); else, or where
  // the filesystems cannot, WritableFile's read and append.
  absl::Status AppendFrom(const RandomAccessFile& in, uint64_t offset, uint64_t n) override {
    const auto* posix = dynamic_cast<const PosixReadFile*>(&in);
    while (posix != nullptr && n > 0) {
      off_t at = static_cast<off_t>(offset);
      const ssize_t k = ::copy_file_range(posix->fd(), &at, fd_, nullptr, n, 0);
      if (k > 0) {
        offset += static_cast<uint64_t>(k);
        n -= static_cast<uint64_t>(k);
        continue;
      }
      if (k == 0) {
        return absl::DataLossError(absl::StrCat("the file copied into ", path_, " ends at byte ",
                                                offset, ", ", n, " bytes short"));
      }
      if (errno == EINTR) continue;
      if (errno != EXDEV && errno != ENOSYS && errno != EINVAL && errno != EOPNOTSUPP) {
        return PosixError(path_, "copy_file_range", errno);
      }
      break;  // these filesystems cannot: copy through a buffer
    }
    if (n == 0) return absl::OkStatus();
    return WritableFile::AppendFrom(in, offset, n);
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
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> OpenMapped(const std::string& path,
                                                               bool populate) override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return PosixError(path, "open", errno);
    auto file = std::make_unique<PosixReadFile>(path, fd);
    absl::StatusOr<FileStat> st = file->Stat();
    if (!st.ok()) return st.status();
    if (!st->regular) return absl::FailedPreconditionError(absl::StrCat(path, ": not a regular file"));
    if (absl::Status s = file->Map(st->size, populate); !s.ok()) return s;
    return std::unique_ptr<RandomAccessFile>(std::move(file));
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
    return StatOf(st);
  }
  absl::StatusOr<int64_t> FilesystemType(const std::string& path) override {
    struct statfs fs;
    if (::statfs(path.c_str(), &fs) != 0) return PosixError(path, "statfs", errno);
    return static_cast<int64_t>(fs.f_type);
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
  absl::Status RenameNoReplace(const std::string& from, const std::string& to) override {
    if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) != 0) {
      const int err = errno;
      if (err == EEXIST) return absl::AlreadyExistsError(absl::StrCat(to, " exists"));
      return PosixError(from, absl::StrCat("rename to ", to), err);
    }
    return absl::OkStatus();
  }
  absl::Status CreateDir(const std::string& dir) override {
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return PosixError(dir, "create the directory", errno);
    }
    return absl::OkStatus();
  }
  absl::Status RemoveDir(const std::string& dir) override {
    if (::rmdir(dir.c_str()) != 0) return PosixError(dir, "remove the directory", errno);
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

absl::Status WritableFile::AppendFrom(const RandomAccessFile& in, uint64_t offset, uint64_t n) {
  std::string buf(std::min<uint64_t>(n, 1 << 20), '\0');
  while (n > 0) {
    const absl::StatusOr<size_t> got = in.Read(offset, std::min<uint64_t>(n, buf.size()), buf.data());
    if (!got.ok()) return got.status();
    if (*got == 0) {
      return absl::DataLossError(
          absl::StrCat("the file copied ends at byte ", offset, ", ", n, " bytes short"));
    }
    if (absl::Status s = Append(absl::string_view(buf.data(), *got)); !s.ok()) return s;
    offset += *got;
    n -= *got;
  }
  return absl::OkStatus();
}

Env* Env::Default() {
  static Env* const env = new PosixEnv();
  return env;
}

absl::string_view WithoutPath(const absl::Status& s, absl::string_view path) {
  const absl::string_view why = s.message();
  if (absl::StartsWith(why, path) && absl::StartsWith(why.substr(path.size()), ": ")) {
    return why.substr(path.size() + 2);
  }
  return why;
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
  return WriteFileAtomically(env, path, [data](WritableFile& f) { return f.Append(data); });
}

absl::Status WriteFileAtomically(Env* env, const std::string& path,
                                 absl::FunctionRef<absl::Status(WritableFile&)> fill) {
  // A temporary of its own: writers of the same path at once each rename a whole file.
  static std::atomic<uint64_t> counter{0};
  const std::string temp =
      absl::StrCat(path, ".partial-", ::getpid(), "-", counter.fetch_add(1));
  absl::StatusOr<std::unique_ptr<WritableFile>> file = env->OpenWrite(temp, WriteMode::kTruncate);
  if (!file.ok()) return file.status();
  absl::Status s = fill(**file);
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

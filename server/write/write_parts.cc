#include "server/write/write_parts.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "segy/segy_writer.h"
#include "segy/trace_header.h"
#include "server/write/dataset_writer.h"

namespace shotstream::write {
namespace {

constexpr absl::string_view kPartsInfix = ".parts-";
constexpr size_t kFileHeaderBytes = 3600;
constexpr size_t kBinaryHeaderAt = 3200;

absl::Status IoError(const std::string& what, const std::string& path, int err) {
  const std::string msg = absl::StrCat(what, " ", path, ": ", std::strerror(err));
  if (err == ENOSPC || err == EDQUOT || err == EFBIG) return absl::ResourceExhaustedError(msg);
  return absl::UnavailableError(msg);
}

uint16_t BigEndian16(const char* p) {
  return static_cast<uint16_t>((static_cast<uint8_t>(p[0]) << 8) | static_cast<uint8_t>(p[1]));
}

void FsyncDir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

void RemoveTree(const std::string& dir) {
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      const absl::string_view n = e->d_name;
      if (n != "." && n != "..") ::unlink(absl::StrCat(dir, "/", n).c_str());
    }
    ::closedir(d);
  }
  ::rmdir(dir.c_str());
}

// Copies [from, from + n) of `in` to the end of `out`: copy_file_range (no bytes through
// user space), else read/write.
absl::Status CopyRange(int in, off_t from, uint64_t n, int out, const std::string& in_path,
                       const std::string& out_path) {
  off_t at = from;
  while (n > 0) {
    const ssize_t k = ::copy_file_range(in, &at, out, nullptr, n, 0);
    if (k > 0) {
      n -= static_cast<uint64_t>(k);
      continue;
    }
    if (k == 0) return absl::DataLossError(absl::StrCat(in_path, ": shorter than its stat"));
    if (errno == EINTR) continue;
    if (errno != EXDEV && errno != ENOSYS && errno != EINVAL && errno != EOPNOTSUPP) {
      return IoError("copying into", out_path, errno);
    }
    std::vector<char> buf(1 << 20);
    while (n > 0) {
      const ssize_t r = ::pread(in, buf.data(), std::min<uint64_t>(n, buf.size()), at);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return IoError("reading", in_path, r < 0 ? errno : EIO);
      for (ssize_t w = 0; w < r;) {
        const ssize_t k2 = ::write(out, buf.data() + w, static_cast<size_t>(r - w));
        if (k2 < 0 && errno == EINTR) continue;
        if (k2 < 0) return IoError("writing", out_path, errno);
        w += k2;
      }
      at += r;
      n -= static_cast<uint64_t>(r);
    }
  }
  return absl::OkStatus();
}

struct Part {
  std::string path;
  int fd = -1;
  uint64_t size = 0;
};

}  // namespace

std::string PartsDir(const std::string& dir, const std::string& name,
                     const std::string& write_id) {
  return absl::StrCat(dir, "/.", name, kPartsInfix, write_id);
}

std::string PartName(uint32_t index) { return absl::StrFormat("part-%06u", index); }

absl::Status MakePartsDir(const std::string& parts_dir) {
  if (::mkdir(parts_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return IoError("cannot create", parts_dir, errno);
  }
  return absl::OkStatus();
}

absl::Status WritePartIds(const std::string& parts_dir, uint32_t index,
                          const std::set<int64_t>& ids, env::Env* env) {
  const std::vector<int64_t> v(ids.begin(), ids.end());  // little-endian: the hosts we build for
  return env::WriteFileAtomically(
      env, absl::StrCat(parts_dir, "/", PartName(index), ".ids"),
      absl::string_view(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int64_t)));
}

absl::StatusOr<std::vector<int64_t>> ReadPartIds(const std::string& parts_dir, uint32_t index,
                                                 env::Env* env) {
  const std::string path = absl::StrCat(parts_dir, "/", PartName(index), ".ids");
  SS_ASSIGN_OR_RETURN(const std::string bytes, env::ReadFileToString(env, path));
  if (bytes.size() % sizeof(int64_t) != 0) {
    return absl::DataLossError(absl::StrCat(path, ": ", bytes.size(),
                                            " bytes, not a whole number of shot ids"));
  }
  std::vector<int64_t> ids(bytes.size() / sizeof(int64_t));
  std::memcpy(ids.data(), bytes.data(), bytes.size());
  return ids;
}

absl::StatusOr<JoinedParts> JoinParts(const JoinSpec& spec) {
  const std::string parts_dir = PartsDir(spec.dir, spec.name, spec.write_id);
  const std::string what =
      absl::StrCat("dataset '", spec.name, "', multi-part write '", spec.write_id, "'");
  std::vector<uint32_t> missing;
  for (uint32_t i = 0; i < spec.count; ++i) {
    const std::string p = absl::StrCat(parts_dir, "/", PartName(i));
    if (::access(absl::StrCat(p, ".sgy").c_str(), F_OK) != 0 ||
        ::access(absl::StrCat(p, ".ids").c_str(), F_OK) != 0) {
      missing.push_back(i);
    }
  }
  if (!missing.empty()) {
    const size_t shown = std::min<size_t>(missing.size(), 20);
    return absl::FailedPreconditionError(absl::StrCat(
        what, ": ", missing.size(), " of its ", spec.count, " parts are not written (",
        missing.size() == spec.count ? "none is" : "parts ",
        missing.size() == spec.count
            ? ""
            : absl::StrJoin(missing.begin(), missing.begin() + shown, ", "),
        shown < missing.size() ? ", ..." : "",
        missing.size() == spec.count ? "" : " missing",
        "); write them, then commit again (a server restart removes the parts)"));
  }
  // Shot ids: in one part each.
  std::map<int64_t, uint32_t> owner;
  for (uint32_t i = 0; i < spec.count; ++i) {
    SS_ASSIGN_OR_RETURN(const std::vector<int64_t> ids, ReadPartIds(parts_dir, i, spec.env));
    for (int64_t id : ids) {
      auto [it, fresh] = owner.emplace(id, i);
      if (!fresh) {
        return absl::InvalidArgumentError(absl::StrCat(what, ": shot ", id, " is in parts ",
                                                       it->second, " and ", i));
      }
    }
  }
  // The parts: one binary file header (sample count, interval, format), whole traces.
  std::vector<Part> parts(spec.count);
  auto close_all = [&parts] {
    for (Part& p : parts) {
      if (p.fd >= 0) ::close(p.fd);
      p.fd = -1;
    }
  };
  uint32_t n_samples = 0;
  std::string binary0;
  JoinedParts out;
  for (uint32_t i = 0; i < spec.count; ++i) {
    Part& p = parts[i];
    p.path = absl::StrCat(parts_dir, "/", PartName(i), ".sgy");
    p.fd = ::open(p.path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st;
    char head[kFileHeaderBytes];
    if (p.fd < 0 || ::fstat(p.fd, &st) != 0) {
      const int err = errno;
      close_all();
      return IoError("cannot open", p.path, err);
    }
    p.size = static_cast<uint64_t>(st.st_size);
    if (::pread(p.fd, head, sizeof(head), 0) != static_cast<ssize_t>(sizeof(head))) {
      close_all();
      return absl::DataLossError(absl::StrCat(p.path, ": shorter than a SEG-Y file header"));
    }
    const std::string binary(head + kBinaryHeaderAt, kFileHeaderBytes - kBinaryHeaderAt);
    const uint32_t n = BigEndian16(head + 3220);
    const int format = BigEndian16(head + 3224);
    if (i == 0) {
      n_samples = n;
      binary0 = binary;
      const std::string want =
          segy::FileHeader({}, n, spec.sample_interval_us, spec.format).substr(kBinaryHeaderAt);
      if (binary != want) {
        close_all();
        return absl::InvalidArgumentError(absl::StrCat(
            what, ": the commit gives sample interval ", spec.sample_interval_us,
            " us and format ", spec.format, "; part 0 was written with interval ",
            BigEndian16(head + 3216), " us and format ", format));
      }
    } else if (binary != binary0) {
      close_all();
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": part ", i, " has ", n, " samples per trace, interval ",
          BigEndian16(head + 3216), " us, format ", format, "; part 0 has ", n_samples,
          " samples, interval ", BigEndian16(binary0.data() + 16), " us, format ",
          BigEndian16(binary0.data() + 24)));
    }
    const uint64_t trace_bytes =
        segy::kTraceHeaderBytes + uint64_t{n} * segy::WrittenBytesPerSample(format);
    if (p.size < kFileHeaderBytes || (p.size - kFileHeaderBytes) % trace_bytes != 0) {
      close_all();
      return absl::DataLossError(
          absl::StrCat(p.path, ": ", p.size, " bytes is not whole traces of ", trace_bytes));
    }
    out.traces += (p.size - kFileHeaderBytes) / trace_bytes;
  }
  out.shots = owner.size();
  out.sample_bytes = out.traces * n_samples * sizeof(float);
  // The joined file: a temporary that RemoveTemporaries knows, renamed into place.
  static std::atomic<uint64_t> counter{0};
  const std::string temp = absl::StrCat(spec.dir, "/.", spec.name, ".sgy.partial-", ::getpid(),
                                        "-join-", counter.fetch_add(1));
  out.path = WrittenPath(spec.dir, spec.name);
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    close_all();
    return IoError("cannot create", temp, err);
  }
  auto fail = [&](absl::Status s) {
    ::close(fd);
    ::unlink(temp.c_str());
    close_all();
    return s;
  };
  const std::string head = segy::FileHeader(
      WrittenTextLines(spec.name, spec.writer, out.shots, out.traces, n_samples,
                       spec.sample_interval_us, spec.format),
      n_samples, spec.sample_interval_us, spec.format);
  if (::write(fd, head.data(), head.size()) != static_cast<ssize_t>(head.size())) {
    return fail(IoError("writing", temp, errno));
  }
  for (const Part& p : parts) {
    if (absl::Status s = CopyRange(p.fd, kFileHeaderBytes, p.size - kFileHeaderBytes, fd,
                                   p.path, temp);
        !s.ok()) {
      return fail(s);
    }
  }
  if (::fsync(fd) != 0) return fail(IoError("fsync of", temp, errno));
  close_all();
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    return IoError("close of", temp, err);
  }
  if (::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, out.path.c_str(), RENAME_NOREPLACE) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    if (err == EEXIST) return absl::AlreadyExistsError(absl::StrCat(out.path, " exists"));
    return IoError("rename into place of", out.path, err);
  }
  FsyncDir(spec.dir);
  RemoveTree(parts_dir);
  return out;
}

std::vector<std::string> RemoveParts(const std::string& dir) {
  std::vector<std::string> removed;
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      const absl::string_view n = e->d_name;
      struct stat st;
      if (n.size() > 1 && n[0] == '.' && absl::StrContains(n, kPartsInfix) &&
          ::stat(absl::StrCat(dir, "/", n).c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
        names.emplace_back(n);
      }
    }
    ::closedir(d);
  }
  for (const std::string& n : names) {
    RemoveTree(absl::StrCat(dir, "/", n));
    removed.push_back(n);
  }
  return removed;
}

}  // namespace shotstream::write

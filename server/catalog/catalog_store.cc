#include "server/catalog/catalog_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/crc32.h"
#include "common/status_macros.h"
#include "segy/trace_header.h"

namespace shotstream::catalog {
namespace {

constexpr char kMagic[8] = {'S', 'S', 'C', 'A', 'T', 'L', 'G', '\0'};

struct PackedShot {
  int64_t id;
  uint64_t first;
  uint32_t count;
  uint32_t pad;
};
struct PackedTrace {
  uint32_t file_id;
  uint32_t pad;
  uint64_t offset;
};
struct PackedPosition {
  int64_t id;
  double x;
  double y;
};
static_assert(sizeof(PackedShot) == 24 && sizeof(PackedTrace) == 16 &&
              sizeof(PackedPosition) == 24);

class Writer {
 public:
  void Bytes(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  template <typename T>
  void Pod(T v) { Bytes(&v, sizeof(v)); }
  void Str(const std::string& s) {
    Pod<uint32_t>(static_cast<uint32_t>(s.size()));
    Bytes(s.data(), s.size());
  }
  std::string& out() { return out_; }

 private:
  std::string out_;
};

class Reader {
 public:
  Reader(const std::string& data, size_t end) : data_(data), end_(end) {}
  bool Bytes(void* p, size_t n) {
    if (n > end_ - pos_) return false;
    std::memcpy(p, data_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  template <typename T>
  bool Pod(T* v) { return Bytes(v, sizeof(T)); }
  bool Str(std::string* s) {
    uint32_t n;
    if (!Pod(&n) || n > end_ - pos_) return false;
    s->assign(data_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  size_t remaining() const { return end_ - pos_; }
  const char* here() const { return data_.data() + pos_; }
  void Skip(size_t n) { pos_ += n; }

 private:
  const std::string& data_;
  size_t end_;
  size_t pos_ = 0;
};

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return errno == ENOENT ? absl::NotFoundError(absl::StrCat(path, ": no catalog"))
                           : absl::UnavailableError(absl::StrCat(path, ": ", std::strerror(errno)));
  }
  struct stat st;
  std::string data;
  if (::fstat(fd, &st) == 0) data.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::read(fd, data.data() + done, data.size() - done);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      ::close(fd);
      return absl::DataLossError(absl::StrCat(path, ": short read"));
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return data;
}

}  // namespace

absl::StatusOr<CatalogSource> DescribeSource(absl::Span<const io::TraceFile* const> files,
                                             const std::string& shot_key) {
  CatalogSource source;
  source.shot_key = shot_key;
  for (const io::TraceFile* f : files) {
    const io::TraceLayout& l = f->layout();
    std::vector<uint8_t> buf(std::min<uint64_t>(f->size(), l.first_trace_offset));
    SS_RETURN_IF_ERROR(f->ReadAt(0, buf.size(), buf.data()));
    uint32_t crc = Crc32(0, buf.data(), buf.size());
    if (l.n_traces > 0) {
      uint8_t th[segy::kTraceHeaderBytes];
      for (uint64_t t : {uint64_t{0}, l.n_traces - 1}) {
        SS_RETURN_IF_ERROR(f->ReadAt(l.TraceOffset(t), sizeof(th), th));
        crc = Crc32(crc, th, sizeof(th));
      }
    }
    source.files.push_back(
        SourceFile{f->path(), f->size(), f->identity().mtime_ns, crc});
  }
  return source;
}

absl::Status SaveCatalog(const std::string& path, const CatalogSource& source,
                         const Catalog& catalog) {
  Writer w;
  w.Bytes(kMagic, sizeof(kMagic));
  w.Pod<uint32_t>(kCatalogVersion);
  w.Str(source.shot_key);
  w.Pod<uint32_t>(static_cast<uint32_t>(source.files.size()));
  for (const SourceFile& f : source.files) {
    w.Str(f.path);
    w.Pod(f.size);
    w.Pod(f.mtime_ns);
    w.Pod(f.fingerprint);
  }
  w.Pod<uint64_t>(catalog.shots().size());
  w.Pod<uint64_t>(catalog.n_traces());
  w.out().reserve(w.out().size() + catalog.shots().size() * sizeof(PackedShot) +
                  catalog.n_traces() * sizeof(PackedTrace) + 4);
  for (const ShotEntry& s : catalog.shots()) {
    w.Pod(PackedShot{s.shot_id, s.first_trace, s.n_traces, 0});
  }
  for (const io::TraceRef& t : catalog.traces()) w.Pod(PackedTrace{t.file_id, 0, t.offset});
  w.Pod<uint64_t>(catalog.source_positions().size());
  for (const SourcePosition& p : catalog.source_positions()) w.Pod(PackedPosition{p.shot_id, p.x, p.y});
  const uint32_t crc = Crc32(0, w.out().data(), w.out().size());
  w.Pod(crc);

  // Write beside, then rename: a reader never sees half a catalog.
  const std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat(tmp, ": cannot write catalog: ",
                                               std::strerror(errno)));
  }
  const std::string& data = w.out();
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string err = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return absl::UnavailableError(absl::StrCat(tmp, ": write failed: ", err));
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return absl::UnavailableError(absl::StrCat(path, ": cannot save catalog: ",
                                               std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<Catalog> LoadCatalog(const std::string& path, const CatalogSource& expected) {
  SS_ASSIGN_OR_RETURN(std::string data, ReadWholeFile(path));
  auto corrupt = [&](absl::string_view why) {
    return absl::DataLossError(absl::StrCat(path, ": corrupt catalog: ", why));
  };
  if (data.size() < sizeof(kMagic) + 8) return corrupt("too short");
  uint32_t stored_crc;
  std::memcpy(&stored_crc, data.data() + data.size() - 4, 4);
  const uint32_t crc = Crc32(0, data.data(), data.size() - 4);
  Reader r(data, data.size() - 4);
  char magic[sizeof(kMagic)];
  r.Bytes(magic, sizeof(magic));
  if (std::memcmp(magic, kMagic, sizeof(kMagic)) != 0) return corrupt("not a catalog file");
  uint32_t version = 0;
  r.Pod(&version);
  if (version != kCatalogVersion) {
    return corrupt(absl::StrCat("version ", version, ", this server writes ", kCatalogVersion));
  }
  if (crc != stored_crc) return corrupt("checksum mismatch");
  CatalogSource stored;
  uint32_t n_files = 0;
  if (!r.Str(&stored.shot_key) || !r.Pod(&n_files)) return corrupt("truncated header");
  for (uint32_t i = 0; i < n_files; ++i) {
    SourceFile f;
    if (!r.Str(&f.path) || !r.Pod(&f.size) || !r.Pod(&f.mtime_ns) || !r.Pod(&f.fingerprint)) {
      return corrupt("truncated file list");
    }
    stored.files.push_back(std::move(f));
  }
  // Staleness, with the reason.
  if (stored.shot_key != expected.shot_key) {
    return absl::FailedPreconditionError(absl::StrCat(
        "shot key changed from ", stored.shot_key, " to ", expected.shot_key));
  }
  if (stored.files.size() != expected.files.size()) {
    return absl::FailedPreconditionError(absl::StrCat("the dataset had ", stored.files.size(),
                                                      " files and now has ",
                                                      expected.files.size()));
  }
  for (size_t i = 0; i < stored.files.size(); ++i) {
    const SourceFile& a = stored.files[i];
    const SourceFile& b = expected.files[i];
    if (a.path != b.path) {
      return absl::FailedPreconditionError(
          absl::StrCat("file ", i, " was ", a.path, " and is now ", b.path));
    }
    if (a.size != b.size) {
      return absl::FailedPreconditionError(
          absl::StrCat(b.path, ": size changed from ", a.size, " to ", b.size));
    }
    if (a.mtime_ns != b.mtime_ns) {
      return absl::FailedPreconditionError(absl::StrCat(b.path, ": modification time changed"));
    }
    if (a.fingerprint != b.fingerprint) {
      return absl::FailedPreconditionError(absl::StrCat(b.path, ": content fingerprint changed"));
    }
  }
  uint64_t n_shots = 0, n_traces = 0;
  if (!r.Pod(&n_shots) || !r.Pod(&n_traces)) return corrupt("truncated counts");
  if (n_shots > r.remaining() / sizeof(PackedShot) ||
      n_traces > r.remaining() / sizeof(PackedTrace) ||
      n_shots * sizeof(PackedShot) + n_traces * sizeof(PackedTrace) + 8 > r.remaining()) {
    return corrupt("column sizes do not match the counts");
  }
  std::vector<ShotEntry> shots(n_shots);
  std::vector<io::TraceRef> traces(n_traces);
  uint64_t covered = 0;
  for (uint64_t i = 0; i < n_shots; ++i) {
    PackedShot p;
    r.Pod(&p);
    if (p.first != covered || (i > 0 && p.id <= shots[i - 1].shot_id)) {
      return corrupt("shot column out of order");
    }
    covered += p.count;
    shots[i] = ShotEntry{p.id, p.first, p.count};
  }
  if (covered != n_traces) return corrupt("shot counts do not cover the traces");
  for (uint64_t i = 0; i < n_traces; ++i) {
    PackedTrace p;
    r.Pod(&p);
    if (p.file_id >= n_files || p.offset >= stored.files[p.file_id].size) {
      return corrupt("trace outside its file");
    }
    traces[i] = io::TraceRef{p.file_id, p.offset};
  }
  uint64_t n_positions = 0;
  r.Pod(&n_positions);
  if (n_positions > r.remaining() / sizeof(PackedPosition) ||
      n_positions * sizeof(PackedPosition) != r.remaining()) {
    return corrupt("source position column does not match its count");
  }
  std::vector<SourcePosition> positions(n_positions);
  for (uint64_t i = 0; i < n_positions; ++i) {
    PackedPosition p;
    r.Pod(&p);
    positions[i] = SourcePosition{p.id, p.x, p.y};
  }
  return Catalog::FromColumns(std::move(shots), std::move(traces), std::move(positions));
}

}  // namespace shotstream::catalog

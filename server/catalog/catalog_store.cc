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
  uint64_t first_segment;
  uint32_t n_traces;
  uint32_t n_segments;
};
struct PackedSegment {
  uint64_t first;
  uint32_t file_id;
  uint32_t count_and_kind;
};
struct PackedGeometry {
  uint64_t first_offset;
  uint64_t stride;
};
struct PackedPosition {
  int64_t id;
  double x;
  double y;
};
static_assert(sizeof(PackedShot) == 24 && sizeof(PackedSegment) == 16 &&
              sizeof(PackedGeometry) == 16 && sizeof(PackedPosition) == 24);

// Reads `n` packed records into `out` (one copy: the packed forms are the in-memory ones).
template <typename Packed, typename T>
void CopyColumn(const char* from, uint64_t n, std::vector<T>* out) {
  static_assert(sizeof(Packed) == sizeof(T));
  out->resize(n);
  std::memcpy(out->data(), from, n * sizeof(T));
}

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
  w.Pod<uint64_t>(catalog.segments().size());
  w.Pod<uint64_t>(catalog.list().size());
  w.Pod<uint64_t>(catalog.files().size());
  w.Pod<uint64_t>(catalog.source_positions().size());
  w.out().reserve(w.out().size() + catalog.shots().size() * sizeof(PackedShot) +
                  catalog.segments().size() * sizeof(PackedSegment) +
                  catalog.list().size() * 4 + catalog.files().size() * sizeof(PackedGeometry) +
                  catalog.source_positions().size() * sizeof(PackedPosition) + 4);
  for (const ShotEntry& s : catalog.shots()) {
    w.Pod(PackedShot{s.shot_id, s.first_segment, s.n_traces, s.n_segments});
  }
  for (const Segment& s : catalog.segments()) {
    w.Pod(PackedSegment{s.first, s.file_id, s.count_and_kind});
  }
  w.Bytes(catalog.list().data(), catalog.list().size() * 4);
  for (const FileGeometry& g : catalog.files()) w.Pod(PackedGeometry{g.first_offset, g.stride});
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
  uint64_t n_shots = 0, n_segments = 0, n_list = 0, n_geometry = 0, n_positions = 0;
  if (!r.Pod(&n_shots) || !r.Pod(&n_segments) || !r.Pod(&n_list) || !r.Pod(&n_geometry) ||
      !r.Pod(&n_positions)) {
    return corrupt("truncated counts");
  }
  const uint64_t left = r.remaining();
  if (n_shots > left / sizeof(PackedShot) || n_segments > left / sizeof(PackedSegment) ||
      n_list > left / 4 || n_geometry > left / sizeof(PackedGeometry) ||
      n_positions > left / sizeof(PackedPosition) ||
      n_shots * sizeof(PackedShot) + n_segments * sizeof(PackedSegment) + n_list * 4 +
              n_geometry * sizeof(PackedGeometry) + n_positions * sizeof(PackedPosition) !=
          left) {
    return corrupt("column sizes do not match the counts");
  }
  if (n_geometry != n_files) return corrupt("file geometry does not match the file list");
  std::vector<ShotEntry> shots;
  std::vector<Segment> segments;
  std::vector<uint32_t> list;
  std::vector<FileGeometry> geometry;
  std::vector<SourcePosition> positions;
  CopyColumn<PackedShot>(r.here(), n_shots, &shots);
  r.Skip(n_shots * sizeof(PackedShot));
  CopyColumn<PackedSegment>(r.here(), n_segments, &segments);
  r.Skip(n_segments * sizeof(PackedSegment));
  CopyColumn<uint32_t>(r.here(), n_list, &list);
  r.Skip(n_list * 4);
  CopyColumn<PackedGeometry>(r.here(), n_geometry, &geometry);
  r.Skip(n_geometry * sizeof(PackedGeometry));
  CopyColumn<PackedPosition>(r.here(), n_positions, &positions);
  data = std::string();  // the columns are copied: the file's bytes go now
  // Every trace inside its file: a run's last trace, each listed one.
  for (const Segment& s : segments) {
    if (s.file_id >= n_files) continue;  // FromParts says
    if (geometry[s.file_id].stride == 0) return corrupt("a file's trace stride is 0");
    const FileGeometry& g = geometry[s.file_id];
    const uint64_t traces_in_file =
        stored.files[s.file_id].size > g.first_offset
            ? (stored.files[s.file_id].size - g.first_offset + g.stride - 1) / g.stride
            : 0;
    if (s.count() == 0) return corrupt("an empty segment");
    if (s.is_list()) {
      if (s.first > list.size() || s.count() > list.size() - s.first) continue;
      for (uint64_t k = s.first; k < s.first + s.count(); ++k) {
        if (list[k] >= traces_in_file) return corrupt("trace outside its file");
      }
    } else if (s.first >= traces_in_file || s.count() > traces_in_file - s.first) {
      return corrupt("trace outside its file");
    }
  }
  auto catalog = Catalog::FromParts(std::move(shots), std::move(segments), std::move(list),
                                    std::move(geometry), std::move(positions));
  if (!catalog.ok()) return corrupt(catalog.status().message());
  return catalog;
}

}  // namespace shotstream::catalog

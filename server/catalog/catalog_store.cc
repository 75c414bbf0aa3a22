#include "server/catalog/catalog_store.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/crc32.h"
#include "common/status_macros.h"
#include "segy/trace_header.h"

namespace shotstream::catalog {
namespace {

constexpr char kMagic[8] = {'S', 'S', 'C', 'A', 'T', 'L', 'G', '\0'};

// The columns are saved as the catalog holds them in memory (little-endian), so these
// sizes are the file format's.
static_assert(sizeof(ShotEntry) == 24 && sizeof(Segment) == 16 && sizeof(FileGeometry) == 16 &&
              sizeof(SourcePosition) == 24);

// Reads `n` records of a column into `out`: one copy, the column starting at an 8-byte
// boundary of the file (so of its mapping).
template <typename T>
void CopyColumn(const char* from, uint64_t n, std::vector<T>* out) {
  const T* first = reinterpret_cast<const T*>(from);
  out->assign(first, first + n);
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
  Reader(const char* data, size_t end) : data_(data), end_(end) {}
  bool Bytes(void* p, size_t n) {
    if (n > end_ - pos_) return false;
    std::memcpy(p, data_ + pos_, n);
    pos_ += n;
    return true;
  }
  template <typename T>
  bool Pod(T* v) { return Bytes(v, sizeof(T)); }
  bool Str(std::string* s) {
    uint32_t n;
    if (!Pod(&n) || n > end_ - pos_) return false;
    s->assign(data_ + pos_, n);
    pos_ += n;
    return true;
  }
  size_t remaining() const { return end_ - pos_; }
  size_t pos() const { return pos_; }
  const char* here() const { return data_ + pos_; }
  void Skip(size_t n) { pos_ += n; }

 private:
  const char* data_;
  size_t end_;
  size_t pos_ = 0;
};

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
                         const Catalog& catalog, env::Env* env) {
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
  while (w.out().size() % 8 != 0) w.Pod<uint8_t>(0);  // the columns start 8-byte aligned
  static const uint32_t kZero = 0;
  // The columns go to the file from where they are, the CRC-32 taken as they go: no second
  // copy of the catalog.
  const std::pair<const void*, size_t> parts[] = {
      {w.out().data(), w.out().size()},
      {catalog.shots().data(), catalog.shots().size() * sizeof(ShotEntry)},
      {catalog.segments().data(), catalog.segments().size() * sizeof(Segment)},
      {catalog.list().data(), catalog.list().size() * sizeof(uint32_t)},
      {&kZero, catalog.list().size() % 2 * sizeof(uint32_t)},  // the next column aligned
      {catalog.files().data(), catalog.files().size() * sizeof(FileGeometry)},
      {catalog.source_positions().data(),
       catalog.source_positions().size() * sizeof(SourcePosition)},
  };

  // Written beside, synced, then renamed: a reader never sees half a catalog.
  if (env == nullptr) env = env::Env::Default();
  return env::WriteFileAtomically(env, path, [&](env::WritableFile& file) -> absl::Status {
    uint32_t crc = 0;
    for (const auto& [p, size] : parts) {
      if (size == 0) continue;
      crc = Crc32(crc, p, size);
      SS_RETURN_IF_ERROR(file.Append(absl::string_view(static_cast<const char*>(p), size)));
    }
    return file.Append(absl::string_view(reinterpret_cast<const char*>(&crc), sizeof(crc)));
  });
}

absl::StatusOr<Catalog> LoadCatalog(const std::string& path, const CatalogSource& expected,
                                     env::Env* env) {
  if (env == nullptr) env = env::Env::Default();
  // Mapped read-only and populated in one call (the page cache's pages, no copy); the
  // columns are copied once, but the trace list is read in place and keeps `file`.
  absl::StatusOr<std::unique_ptr<env::RandomAccessFile>> opened = env->OpenMapped(path, true);
  if (absl::IsNotFound(opened.status())) {
    return absl::NotFoundError(absl::StrCat(path, ": no catalog"));
  }
  if (!opened.ok()) return opened.status();
  const std::shared_ptr<const env::RandomAccessFile> file = *std::move(opened);
  const char* const data = reinterpret_cast<const char*>(file->mapping().data());
  const size_t size = file->mapping().size();
  auto corrupt = [&](absl::string_view why) {
    return absl::DataLossError(absl::StrCat(path, ": corrupt catalog: ", why));
  };
  if (size < sizeof(kMagic) + 8) return corrupt("too short");
  uint32_t stored_crc;
  std::memcpy(&stored_crc, data + size - 4, 4);
  const uint32_t crc = Crc32(0, data, size - 4);
  Reader r(data, size - 4);
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
  const size_t pad = (8 - r.pos() % 8) % 8;
  if (pad > r.remaining()) return corrupt("truncated counts");
  r.Skip(pad);
  const uint64_t list_pad = n_list % 2 * 4;
  const uint64_t left = r.remaining();
  if (n_shots > left / sizeof(ShotEntry) || n_segments > left / sizeof(Segment) ||
      n_list > left / 4 || n_geometry > left / sizeof(FileGeometry) ||
      n_positions > left / sizeof(SourcePosition) ||
      n_shots * sizeof(ShotEntry) + n_segments * sizeof(Segment) + n_list * 4 +
              list_pad + n_geometry * sizeof(FileGeometry) + n_positions * sizeof(SourcePosition) !=
          left) {
    return corrupt("column sizes do not match the counts");
  }
  if (n_geometry != n_files) return corrupt("file geometry does not match the file list");
  std::vector<ShotEntry> shots;
  std::vector<Segment> segments;
  std::vector<FileGeometry> geometry;
  std::vector<SourcePosition> positions;
  CopyColumn(r.here(), n_shots, &shots);
  r.Skip(n_shots * sizeof(ShotEntry));
  CopyColumn(r.here(), n_segments, &segments);
  r.Skip(n_segments * sizeof(Segment));
  // The trace list, the one column of a size by trace, is read where it is mapped: page
  // cache, not heap, and no copy (the catalog keeps the mapping).
  const absl::Span<const uint32_t> list(reinterpret_cast<const uint32_t*>(r.here()), n_list);
  r.Skip(n_list * 4 + list_pad);
  CopyColumn(r.here(), n_geometry, &geometry);
  r.Skip(n_geometry * sizeof(FileGeometry));
  CopyColumn(r.here(), n_positions, &positions);
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
      // The largest index of the list against the file (a loop the compiler vectorises).
      uint32_t largest = 0;
      for (uint64_t k = s.first; k < s.first + s.count(); ++k) largest = std::max(largest, list[k]);
      if (largest >= traces_in_file) return corrupt("trace outside its file");
    } else if (s.first >= traces_in_file || s.count() > traces_in_file - s.first) {
      return corrupt("trace outside its file");
    }
  }
  TraceList viewed = n_list == 0 ? TraceList() : TraceList(file, list.data(), list.size());
  auto catalog = Catalog::FromParts(std::move(shots), std::move(segments), std::move(viewed),
                                    std::move(geometry), std::move(positions));
  if (!catalog.ok()) return corrupt(catalog.status().message());
  return catalog;
}

}  // namespace shotstream::catalog

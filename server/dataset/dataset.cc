#include "server/dataset/dataset.h"

#include <glob.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "server/catalog/catalog_store.h"
#include "common/crc32.h"
#include "server/common/mapping_guard.h"
#include "common/status_macros.h"
#include "wire/sample_encoding.h"

namespace shotstream::dataset {
namespace {

absl::StatusOr<std::vector<std::string>> ExpandGlobs(const DatasetSpec& spec) {
  std::vector<std::string> paths;
  for (const std::string& pattern : spec.globs) {
    auto matched = ExpandGlob(pattern, /*may_match_nothing=*/true);
    if (!matched.ok()) {
      return absl::Status(matched.status().code(), absl::StrCat("dataset '", spec.name,
                                                                "': ", matched.status().message()));
    }
    paths.insert(paths.end(), matched->begin(), matched->end());
  }
  std::sort(paths.begin(), paths.end());
  paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
  if (paths.empty()) {
    return absl::NotFoundError(absl::StrCat("dataset '", spec.name, "': no file matches '",
                                            absl::StrJoin(spec.globs, ","), "'"));
  }
  return paths;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ExpandGlob(const std::string& pattern,
                                                    bool may_match_nothing) {
  std::vector<std::string> paths;
  glob_t g{};
  const int rc = ::glob(pattern.c_str(), GLOB_NOSORT, nullptr, &g);
  if (rc == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) paths.emplace_back(g.gl_pathv[i]);
  }
  globfree(&g);
  if (rc != 0 && rc != GLOB_NOMATCH) {
    return absl::UnavailableError(absl::StrCat("cannot expand '", pattern, "'"));
  }
  if (paths.empty() && !may_match_nothing) {
    return absl::NotFoundError(absl::StrCat("no file matches '", pattern, "'"));
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

absl::StatusOr<std::pair<std::string, std::string>> SplitDatasetFlag(absl::string_view flag) {
  const size_t eq = flag.find('=');
  if (eq == absl::string_view::npos || eq == 0 || eq + 1 == flag.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--dataset='", flag, "': expected NAME=GLOB, e.g. line1=/data/line1/*.sgy"));
  }
  std::string name(flag.substr(0, eq));
  SS_RETURN_IF_ERROR(ValidateDatasetName(name));
  return std::make_pair(name, std::string(flag.substr(eq + 1)));
}

absl::Status ValidateDatasetName(absl::string_view name) {
  if (name.empty() || name.size() > 128) {
    return absl::InvalidArgumentError("dataset name must be 1 to 128 characters");
  }
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat(
          "dataset name '", name, "' may hold only letters, digits, '.', '_' and '-'"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Dataset>> Dataset::Load(const DatasetSpec& spec,
                                                       const catalog::ScanProgress& progress) {
  std::unique_ptr<Dataset> d(new Dataset());
  d->spec_ = spec;
  SS_ASSIGN_OR_RETURN(std::vector<std::string> paths, ExpandGlobs(spec));
  segy::OpenOptions options;
  options.byte_order = spec.byte_order;
  options.io = spec.io;
  for (const std::string& path : paths) {
    auto file = segy::SegyFile::Open(path, options);
    if (!file.ok()) {
      return absl::Status(file.status().code(),
                          absl::StrCat("dataset '", spec.name, "': ", file.status().message()));
    }
    const segy::SegyLayout& l = (*file)->layout();
    if (d->files_.empty()) {
      d->n_samples_ = l.n_samples;
      d->sample_interval_us_ = l.sample_interval_us;
      d->sample_format_ = static_cast<int>(l.format);
    } else if (l.n_samples != d->n_samples_) {
      return absl::InvalidArgumentError(absl::StrCat(
          "dataset '", spec.name, "': ", path, " has ", l.n_samples,
          " samples per trace but ", d->files_[0]->path(), " has ", d->n_samples_,
          "; all files of a dataset must share the sample count"));
    }
    // Each note once per dataset, with the first file it applies to and how many more.
    for (const std::string& note : l.notes) {
      auto it = std::find_if(d->layout_notes_.begin(), d->layout_notes_.end(),
                             [&](const auto& n) { return n.text == note; });
      if (it == d->layout_notes_.end()) {
        d->layout_notes_.push_back({note, path, 0});
      } else {
        ++it->more_files;
      }
    }
    d->files_.push_back(std::move(*file));
    d->file_ptrs_.push_back(d->files_.back().get());
  }
  for (const LayoutNote& n : d->layout_notes_) {
    d->notes_.push_back(n.more_files == 0
                            ? absl::StrCat(n.first_path, ": ", n.text)
                            : absl::StrCat(n.first_path, " (and ", n.more_files,
                                           " more files): ", n.text));
  }
  const absl::Time start = absl::Now();
  SS_RETURN_IF_ERROR(d->LoadOrBuildCatalog(progress));
  d->catalog_seconds_ = absl::ToDoubleSeconds(absl::Now() - start);
  return d;
}

absl::Status Dataset::LoadOrBuildCatalog(const catalog::ScanProgress& progress) {
  std::string why = "built";
  std::string path;
  catalog::CatalogSource source;
  if (!spec_.catalog_dir.empty()) {
    path = absl::StrCat(spec_.catalog_dir, "/", spec_.name, ".catalog");
    SS_ASSIGN_OR_RETURN(source, catalog::DescribeSource(file_ptrs_, spec_.shot_key.name));
    auto loaded = spec_.ignore_saved_catalog
                      ? absl::FailedPreconditionError("a read found the files changed")
                      : catalog::LoadCatalog(path, source);
    if (loaded.ok()) {
      catalog_ = *std::move(loaded);
      catalog_origin_ = absl::StrCat("reused (", path, ")");
      return absl::OkStatus();
    }
    if (!absl::IsNotFound(loaded.status())) {
      // Stale or corrupt: never trusted, rebuilt, and the reason said.
      why = absl::StrCat("rebuilt: ", loaded.status().message());
    }
  }
  catalog::ScanReport report;
  SS_ASSIGN_OR_RETURN(catalog_, catalog::Catalog::Build(file_ptrs_, spec_.shot_key, progress,
                                                        spec_.scan_block_bytes,
                                                        spec_.check_trace_lengths,
                                                        catalog::kScanUnitTraces, &report));
  if (report.trace_length_mismatches > 0) {
    notes_.push_back(absl::StrCat(
        report.trace_length_mismatches, " of ", catalog_.n_traces(),
        " trace headers give another sample count (bytes 115-116) than the file's, e.g. ",
        report.first_trace_length_mismatch,
        "; traces are read at the file's length (the binary header's count, which the file "
        "size agrees with); check_trace_lengths: true refuses such files"));
  }
  catalog_origin_ = why;
  if (!path.empty()) {
    absl::Status saved = catalog::SaveCatalog(path, source, catalog_);
    if (!saved.ok()) {
      absl::StrAppend(&catalog_origin_, " (not saved: ", saved.message(), ")");
    } else {
      absl::StrAppend(&catalog_origin_, ", saved to ", path);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ShotData> Dataset::ReadShot(int64_t shot_id,
                                           absl::Span<const segy::HeaderSelector> headers,
                                           uint64_t max_chunk_bytes, io::ReadStats* stats,
                                           ZeroCopy zero_copy, bool raw_trace_headers,
                                           const TraceSelection& selection) const {
  const catalog::ShotEntry* shot = catalog_.Find(shot_id);
  if (shot == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("dataset '", spec_.name, "' has no shot ", shot_id));
  }
  if (uint64_t{selection.start} + selection.count > n_samples_ || selection.start >= n_samples_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dataset '", spec_.name, "': samples [", selection.start, ", ",
        selection.start + selection.count, ") are outside its traces of ", n_samples_));
  }
  const io::SampleRange range{selection.start,
                              selection.count == 0 ? n_samples_ - selection.start
                                                   : selection.count};
  const absl::Span<const io::TraceRef> traces = catalog_.TracesOf(*shot);
  ShotData out;
  out.shot_id = shot_id;
  out.n_samples = range.count;
  const uint64_t trace_out_bytes = uint64_t{range.count} * sizeof(float);
  SS_RETURN_IF_ERROR(CheckFilesOf(traces));
  // Native samples: the shot's traces must share a format sent natively and a byte order.
  const int native_width = selection.native ? NativeWidth(traces) : 0;
  const uint64_t trace_wire_bytes =
      native_width > 0 ? uint64_t{range.count} * native_width : trace_out_bytes;
  const uint64_t per_chunk = std::max<uint64_t>(1, max_chunk_bytes / trace_wire_bytes);
  // Every trace's header comes with its samples (the same coalesced reads): its shot key
  // is checked against the catalog's, the conditions and the asked-for columns are taken
  // from it.
  std::vector<uint8_t> raw_headers(traces.size() * segy::kTraceHeaderBytes);
  uint8_t* header_dst = raw_headers.data();
  const std::optional<bool> big_endian =
      native_width > 0 ? std::nullopt : StoredByteOrder(traces, zero_copy);
  // Without conditions the samples go straight into their chunks; with them, into one
  // buffer for the shot, and the traces kept are copied into chunks after the headers
  // are read.
  const bool filter = !selection.where.empty();
  std::vector<uint32_t> trace_crc;
  std::vector<SampleBuffer> read_into;
  if (big_endian.has_value()) {
    out.stored.resize(traces.size());
    out.stored_file.resize(traces.size());
    for (size_t i = 0; i < traces.size(); ++i) out.stored_file[i] = traces[i].file_id;
    out.traces_per_chunk = static_cast<uint32_t>(std::min<uint64_t>(per_chunk, UINT32_MAX));
    out.big_endian = *big_endian;
    SS_RETURN_IF_ERROR(io::LocateTraces(file_ptrs_, traces, spec_.coalesce, out.stored.data(),
                                        header_dst, stats, range));
  } else {
    const uint64_t run = filter ? std::max<uint64_t>(traces.size(), 1) : per_chunk;
    std::vector<uint8_t*> dst(traces.size());
    for (uint64_t t = 0; t < traces.size(); t += run) {
      const uint64_t n = std::min<uint64_t>(run, traces.size() - t);
      read_into.emplace_back(n * trace_wire_bytes);  // not zero-filled: every byte is written
      for (uint64_t i = 0; i < n; ++i) dst[t + i] = read_into.back().data() + i * trace_wire_bytes;
    }
    // Each trace's CRC-32 is taken as it is decoded (in cache), then joined in shot order.
    trace_crc.resize(traces.size());
    if (native_width > 0) {
      const segy::SegyLayout& layout = files_[traces[0].file_id]->layout();
      out.encoding = wire::Encoding::kNative;
      out.sample_format = static_cast<int>(layout.format);
      out.big_endian = layout.byte_order == segy::ByteOrder::kBigEndian;
      SS_RETURN_IF_ERROR(io::CopyStoredTraces(file_ptrs_, traces, spec_.coalesce, dst.data(),
                                              header_dst, stats, trace_crc.data(), range));
    } else {
      SS_RETURN_IF_ERROR(io::ReadTraces(file_ptrs_, traces, spec_.coalesce,
                                        reinterpret_cast<float* const*>(dst.data()), header_dst,
                                        stats, trace_crc.data(), range));
    }
  }
  SS_RETURN_IF_ERROR(CheckShotKeys(shot_id, traces, raw_headers.data()));
  // The traces kept: all, or those whose header values meet every condition.
  std::vector<size_t> kept;
  kept.reserve(traces.size());
  for (size_t i = 0; i < traces.size(); ++i) {
    const uint8_t* h = raw_headers.data() + i * segy::kTraceHeaderBytes;
    const segy::ByteOrder order = files_[traces[i].file_id]->layout().byte_order;
    bool keep = true;
    for (const TraceCondition& c : selection.where) {
      const double v = segy::HeaderValue(c.header, h, order);
      if (!(v >= c.low && v <= c.high)) keep = false;
    }
    if (keep) kept.push_back(i);
  }
  out.n_traces = static_cast<uint32_t>(kept.size());
  out.total_bytes = trace_out_bytes * out.n_traces;
  if (big_endian.has_value()) {
    if (filter) {
      std::vector<const uint8_t*> stored;
      std::vector<uint32_t> files;
      for (size_t i : kept) {
        stored.push_back(out.stored[i]);
        files.push_back(out.stored_file[i]);
      }
      out.stored = std::move(stored);
      out.stored_file = std::move(files);
      if (out.stored.empty()) {  // no trace left: an empty decoded chunk says so
        out.chunks.emplace_back();
        out.chunk_traces.push_back(0);
      }
    }
  } else {
    if (!filter) {
      out.chunks = std::move(read_into);
    } else {
      const uint8_t* all = read_into.empty() ? nullptr : read_into.front().data();
      for (size_t k = 0; k < kept.size(); k += per_chunk) {
        const size_t n = std::min<size_t>(per_chunk, kept.size() - k);
        out.chunks.emplace_back(n * trace_wire_bytes);
        for (size_t i = 0; i < n; ++i) {
          std::memcpy(out.chunks.back().data() + i * trace_wire_bytes,
                      all + kept[k + i] * trace_wire_bytes, trace_wire_bytes);
        }
      }
      if (out.chunks.empty()) out.chunks.emplace_back();
    }
    for (const SampleBuffer& c : out.chunks) {
      out.chunk_traces.push_back(static_cast<uint32_t>(c.size() / trace_wire_bytes));
    }
    const Crc32Joiner join(trace_out_bytes);
    for (size_t i : kept) out.crc32 = join.Append(out.crc32, trace_crc[i]);
  }
  for (const segy::HeaderSelector& h : headers) {
    std::vector<double> column(kept.size());
    for (size_t k = 0; k < kept.size(); ++k) {
      const size_t i = kept[k];
      const segy::ByteOrder order = files_[traces[i].file_id]->layout().byte_order;
      column[k] = segy::HeaderValue(h, raw_headers.data() + i * segy::kTraceHeaderBytes, order);
    }
    out.headers.emplace_back(h.name, std::move(column));
  }
  if (raw_trace_headers) {
    out.trace_headers.resize(kept.size() * segy::kTraceHeaderBytes);
    for (size_t k = 0; k < kept.size(); ++k) {
      const size_t i = kept[k];
      segy::TraceHeaderToBigEndian(raw_headers.data() + i * segy::kTraceHeaderBytes,
                                   files_[traces[i].file_id]->layout().byte_order,
                                   reinterpret_cast<uint8_t*>(&out.trace_headers[0]) +
                                       k * segy::kTraceHeaderBytes);
    }
  }
  return out;
}

int Dataset::NativeWidth(absl::Span<const io::TraceRef> traces) const {
  if (traces.empty()) return 0;
  const segy::SegyLayout& first = files_[traces[0].file_id]->layout();
  const int width = wire::NativeBytesPerSample(static_cast<int>(first.format));
  for (const io::TraceRef& t : traces) {
    const segy::SegyLayout& l = files_[t.file_id]->layout();
    if (l.format != first.format || l.byte_order != first.byte_order) return 0;
  }
  return width;
}

absl::Status Dataset::FilesChanged(absl::Status why) const {
  if (spec_.on_files_changed) spec_.on_files_changed(*this, why);
  return absl::DataLossError(absl::StrCat(
      "dataset '", spec_.name, "': ", why.message(),
      spec_.on_files_changed ? "; its catalog is being rebuilt, try again shortly"
                             : "; its catalog must be rebuilt"));
}

absl::Status Dataset::CheckFilesOf(absl::Span<const io::TraceRef> traces) const {
  uint32_t last = UINT32_MAX;
  for (const io::TraceRef& t : traces) {
    if (t.file_id == last) continue;  // traces of a shot run through few files, in order
    last = t.file_id;
    if (absl::Status s = files_[t.file_id]->CheckUnchanged(); !s.ok()) {
      return FilesChanged(absl::DataLossError(
          absl::StrCat(s.message(), " (found reading the trace at byte offset ", t.offset, ")")));
    }
  }
  return absl::OkStatus();
}

absl::Status Dataset::CheckShotKeys(int64_t shot_id, absl::Span<const io::TraceRef> traces,
                                    const uint8_t* raw_headers) const {
  const segy::ShotKey& key = spec_.shot_key;
  const catalog::SourcePosition* position = nullptr;
  if (key.source_xy) {
    const auto& positions = catalog_.source_positions();
    if (shot_id < 1 || static_cast<uint64_t>(shot_id) > positions.size()) return absl::OkStatus();
    position = &positions[shot_id - 1];
  }
  static const segy::HeaderSelector kSourceX = *segy::ResolveHeader("source_x");
  static const segy::HeaderSelector kSourceY = *segy::ResolveHeader("source_y");
  for (size_t i = 0; i < traces.size(); ++i) {
    const uint8_t* h = raw_headers + i * segy::kTraceHeaderBytes;
    const segy::SegyFile& file = *files_[traces[i].file_id];
    const segy::ByteOrder order = file.layout().byte_order;
    if (position != nullptr) {
      const double x = segy::HeaderValue(kSourceX, h, order);
      const double y = segy::HeaderValue(kSourceY, h, order);
      if (x == position->x && y == position->y) continue;
      return FilesChanged(absl::DataLossError(absl::StrCat(
          file.path(), ": byte ", traces[i].offset + 73, ": the trace header's source "
          "position is (", x, ", ", y, ") where the catalog has a trace of shot ", shot_id,
          " at (", position->x, ", ", position->y, "): the file changed since its catalog "
          "was built")));
    }
    const int64_t found = segy::ReadHeaderInt(h, key.byte, 4, order);
    if (found == shot_id) continue;
    return FilesChanged(absl::DataLossError(absl::StrCat(
        file.path(), ": byte ", traces[i].offset + key.byte, ": the trace header says "
        "shot ", found, " (", key.name.empty() ? "shot key" : key.name, ", bytes ", key.byte,
        "-", key.byte + 3, ") where the catalog has a trace of shot ", shot_id,
        ": the file changed since its catalog was built")));
  }
  return absl::OkStatus();
}

absl::Status Dataset::ForEachStoredRun(
    int64_t shot_id, absl::Span<const uint8_t* const> traces, absl::Span<const uint32_t> files,
    uint32_t n_samples,
    absl::FunctionRef<void(size_t first, size_t count, size_t span)> run) const {
  const size_t sample_bytes = size_t{n_samples} * sizeof(float);
  for (size_t i = 0; i < traces.size();) {
    const segy::SegyFile& file = *files_[files[i]];
    const uint64_t step = file.layout().trace_bytes;
    size_t j = i + 1;
    while (j < traces.size() && files[j] == files[i] && traces[j] == traces[j - 1] + step) ++j;
    const size_t span = (j - i - 1) * step + sample_bytes;
    if (!RunGuardingMapping(traces[i], span, [&] { run(i, j - i, span); })) {
      return absl::DataLossError(absl::StrCat(
          file.path(), ": ", span, " bytes at byte offset ", file.MappedOffset(traces[i]),
          " (shot ", shot_id, ") vanished while being sent (file truncated or replaced "
          "while serving)"));
    }
    i = j;
  }
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> Dataset::StoredCrc(int64_t shot_id,
                                            absl::Span<const uint8_t* const> traces,
                                            absl::Span<const uint32_t> files,
                                            uint32_t n_samples, uint32_t crc) const {
  const size_t sample_bytes = size_t{n_samples} * sizeof(float);
  SS_RETURN_IF_ERROR(ForEachStoredRun(shot_id, traces, files, n_samples,
                                      [&](size_t first, size_t n, size_t) {
    for (size_t k = first; k < first + n; ++k) crc = Crc32(crc, traces[k], sample_bytes);
  }));
  return crc;
}

absl::Status Dataset::TouchStored(int64_t shot_id, absl::Span<const uint8_t* const> traces,
                                  absl::Span<const uint32_t> files, uint32_t n_samples) const {
  return ForEachStoredRun(shot_id, traces, files, n_samples,
                          [&](size_t first, size_t, size_t span) {
    const volatile uint8_t* p = traces[first];
    uint8_t sink = 0;
    for (size_t off = 0; off < span; off += 4096) sink ^= p[off];
    sink ^= p[span - 1];
    (void)sink;
  });
}

std::optional<bool> Dataset::StoredByteOrder(absl::Span<const io::TraceRef> traces,
                                             ZeroCopy zero_copy) const {
  if (zero_copy == ZeroCopy::kOff || traces.empty()) return std::nullopt;
  std::optional<segy::ByteOrder> order;
  for (const io::TraceRef& t : traces) {
    const segy::SegyFile& f = *files_[t.file_id];
    const segy::SegyLayout& l = f.layout();
    if (!f.mapped() || l.format != segy::SampleFormat::kIeeeFloat32 ||
        (order.has_value() && *order != l.byte_order)) {
      return std::nullopt;
    }
    order = l.byte_order;
  }
  const bool big = *order == segy::ByteOrder::kBigEndian;
  if (big && zero_copy != ZeroCopy::kAnyByteOrder) return std::nullopt;
  return big;
}

}  // namespace shotstream::dataset

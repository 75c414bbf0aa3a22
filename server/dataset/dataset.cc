#include "server/dataset/dataset.h"

#include <glob.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/match.h"
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

absl::StatusOr<SourceFormat> ParseSourceFormat(absl::string_view name) {
  for (SourceFormat f :
       {SourceFormat::kAuto, SourceFormat::kSegy, SourceFormat::kNpy, SourceFormat::kHdf5}) {
    if (name == SourceFormatName(f)) return f;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("format: '", name, "' (expected auto, segy, npy or hdf5)"));
}

absl::string_view SourceFormatName(SourceFormat format) {
  switch (format) {
    case SourceFormat::kAuto: return "auto";
    case SourceFormat::kSegy: return "segy";
    case SourceFormat::kNpy: return "npy";
    case SourceFormat::kHdf5: return "hdf5";
  }
  return "auto";
}

namespace {

bool IsHdf5Name(absl::string_view path) {
  return absl::EndsWith(path, ".h5") || absl::EndsWith(path, ".hdf5");
}

// Writes `v` as a `size`-byte signed integer at 1-based `byte` of a trace header,
// saturated to the field's range.
void PutHeaderInt(uint8_t* h, int byte, int size, double v, segy::ByteOrder order) {
  const double lo = size == 2 ? INT16_MIN : INT32_MIN, hi = size == 2 ? INT16_MAX : INT32_MAX;
  const double r = std::nearbyint(v);
  const int64_t x = static_cast<int64_t>(std::isnan(r) ? 0 : std::min(hi, std::max(lo, r)));
  for (int k = 0; k < size; ++k) {
    const int shift = order == segy::ByteOrder::kBigEndian ? 8 * (size - 1 - k) : 8 * k;
    h[byte - 1 + k] = static_cast<uint8_t>(static_cast<uint64_t>(x) >> shift);
  }
}

constexpr char kFieldRecord[] = "field_record";
constexpr char kTraceNumber[] = "trace_number";

}  // namespace

absl::Status CheckDatasetFile(const DatasetSpec& spec, const std::string& path) {
  absl::Status s;
  if (spec.format == SourceFormat::kHdf5 ||
      (spec.format == SourceFormat::kAuto && IsHdf5Name(path))) {
    hdf5::OpenOptions options;
    options.h5_path = spec.h5_path;
    s = hdf5::Hdf5File::Open(path, options).status();
  } else {
    segy::OpenOptions options;
    options.byte_order = spec.byte_order;
    s = segy::SegyFile::Open(path, options).status();
  }
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat("dataset '", spec.name, "': ", s.message()));
}

absl::StatusOr<std::unique_ptr<Dataset>> Dataset::Load(const DatasetSpec& spec,
                                                       const catalog::ScanProgress& progress) {
  std::unique_ptr<Dataset> d(new Dataset());
  d->spec_ = spec;
  SS_ASSIGN_OR_RETURN(std::vector<std::string> paths, ExpandGlobs(spec));
  size_t hdf5 = 0;
  for (const std::string& path : paths) {
    hdf5 += spec.format == SourceFormat::kHdf5 ||
            (spec.format == SourceFormat::kAuto && IsHdf5Name(path));
  }
  if (hdf5 > 0 && hdf5 < paths.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dataset '", spec.name, "': ", hdf5, " of its ", paths.size(), " files are HDF5 and "
        "the others not; a dataset's files are of one format"));
  }
  const absl::Time start = absl::Now();
  if (hdf5 > 0) {
    SS_RETURN_IF_ERROR(d->LoadHdf5(paths));
    d->catalog_seconds_ = absl::ToDoubleSeconds(absl::Now() - start);
    return d;
  }
  segy::OpenOptions options;
  options.byte_order = spec.byte_order;
  options.io = spec.io;
  options.sample_interval_us = spec.sample_interval_us;
  for (const std::string& path : paths) {
    auto file = segy::SegyFile::Open(path, options);
    if (!file.ok()) {
      return absl::Status(file.status().code(),
                          absl::StrCat("dataset '", spec.name, "': ", file.status().message()));
    }
    const segy::SegyLayout& l = (*file)->layout();
    if (spec.format == SourceFormat::kNpy && !l.npy) {
      return absl::InvalidArgumentError(absl::StrCat("dataset '", spec.name, "': ", path,
                                                     ": format npy, but not a .npy file"));
    }
    if (spec.format == SourceFormat::kSegy && l.npy) {
      return absl::InvalidArgumentError(absl::StrCat(
          "dataset '", spec.name, "': ", path, ": format segy, but a NumPy .npy file"));
    }
    if (!d->files_.empty() && l.npy != d->files_[0]->layout().npy) {
      return absl::InvalidArgumentError(absl::StrCat(
          "dataset '", spec.name, "': ", path, " is ", l.npy ? "" : "not ", "a .npy file but ",
          d->files_[0]->path(), " is ", l.npy ? "not" : "one",
          "; a dataset's files are of one format"));
    }
    if (l.npy && !d->files_.empty() &&
        l.array_shape.size() != d->files_[0]->layout().array_shape.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "dataset '", spec.name, "': ", path, " is a ", l.array_shape.size(), "D array but ",
          d->files_[0]->path(), " is ", d->files_[0]->layout().array_shape.size(),
          "D; the files of a .npy dataset share the layout ([shots, traces, samples] or "
          "[traces, samples])"));
    }
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
  if (d->files_[0]->layout().npy) {
    d->format_ = SourceFormat::kNpy;
    d->header_fields_ = {kFieldRecord, kTraceNumber};
    SS_RETURN_IF_ERROR(d->BuildNpyCatalog());
  } else {
    d->format_ = SourceFormat::kSegy;
    d->header_fields_ = segy::ServableHeaderNames();
    SS_RETURN_IF_ERROR(d->LoadOrBuildCatalog(progress));
  }
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

uint64_t Dataset::file_bytes() const {
  uint64_t bytes = 0;
  for (const auto& f : files_) bytes += f->size();
  for (const auto& f : h5_files_) bytes += f->size();
  return bytes;
}

size_t Dataset::mapped_files() const {
  size_t n = 0;
  for (const auto& f : files_) n += f->mapped();
  return n;
}

absl::Status Dataset::BuildNpyCatalog() {
  if (spec_.shot_key.name != kFieldRecord || spec_.shot_key.source_xy) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dataset '", spec_.name, "': shot_key '", spec_.shot_key.name, "': the shots of .npy "
        "files are numbered by position (field_record), they have no headers to key on"));
  }
  std::vector<catalog::ShotEntry> shots;
  std::vector<io::TraceRef> traces;
  int64_t next_id = 1;
  for (uint32_t f = 0; f < files_.size(); ++f) {
    const segy::SegyLayout& l = files_[f]->layout();
    // [shots, traces, samples]: shots 1.. continuing across files in name order;
    // [traces, samples]: one shot a file.
    const uint64_t n_shots = l.array_shape.size() == 3 ? l.array_shape[0] : 1;
    const uint64_t per_shot = l.array_shape.size() == 3 ? l.array_shape[1] : l.array_shape[0];
    for (uint64_t s = 0; s < n_shots; ++s) {
      shots.push_back({next_id++, traces.size(), static_cast<uint32_t>(per_shot)});
      for (uint64_t t = 0; t < per_shot; ++t) {
        traces.push_back({f, l.TraceOffset(s * per_shot + t)});
      }
    }
  }
  catalog_ = catalog::Catalog::FromColumns(std::move(shots), std::move(traces));
  catalog_origin_ = "built from the arrays' shapes";
  return absl::OkStatus();
}

absl::Status Dataset::LoadHdf5(const std::vector<std::string>& paths) {
  format_ = SourceFormat::kHdf5;
  hdf5::OpenOptions options;
  options.h5_path = spec_.h5_path;
  options.sample_interval_us = spec_.sample_interval_us;
  for (const std::string& path : paths) {
    auto file = hdf5::Hdf5File::Open(path, options);
    if (!file.ok()) {
      return absl::Status(file.status().code(),
                          absl::StrCat("dataset '", spec_.name, "': ", file.status().message()));
    }
    const hdf5::Hdf5Layout& l = (*file)->layout();
    if (!h5_files_.empty()) {
      const hdf5::Hdf5File& first = *h5_files_[0];
      if (l.shape.size() != first.layout().shape.size() || l.n_samples != n_samples_) {
        return absl::InvalidArgumentError(absl::StrCat(
            "dataset '", spec_.name, "': ", path, ": ", l.h5_path, " has shape (",
            absl::StrJoin(l.shape, ", "), ") but ", first.path(), " has (",
            absl::StrJoin(first.layout().shape, ", "), "); the files of a dataset share the "
            "rank and the sample count"));
      }
    } else {
      n_samples_ = l.n_samples;
      sample_interval_us_ = l.sample_interval_us;
      sample_format_ = static_cast<int>(l.format);
    }
    for (const std::string& note : l.notes) {
      if (std::find(notes_.begin(), notes_.end(), note) == notes_.end()) notes_.push_back(note);
    }
    h5_files_.push_back(*std::move(file));
  }
  // Header fields: the files' columns (those of the first file, which every file must
  // have), then field_record and trace_number where no column gives them.
  for (const auto& [name, column] : h5_files_[0]->header_columns()) {
    header_fields_.push_back(name);
  }
  for (const char* synthetic : {kFieldRecord, kTraceNumber}) {
    if (std::find(header_fields_.begin(), header_fields_.end(), synthetic) ==
        header_fields_.end()) {
      header_fields_.push_back(synthetic);
    }
  }
  for (const auto& f : h5_files_) {
    for (const std::string& name : header_fields_) {
      const bool has = std::any_of(f->header_columns().begin(), f->header_columns().end(),
                                   [&](const auto& c) { return c.first == name; });
      const bool synthetic = name == kFieldRecord || name == kTraceNumber;
      if (!has && !synthetic) {
        return absl::InvalidArgumentError(absl::StrCat(
            "dataset '", spec_.name, "': ", f->path(), " has no header column '", name,
            "' that ", h5_files_[0]->path(), " has; the files of a dataset share them"));
      }
    }
  }
  // Where each file's columns go in a made 240-byte header (those SEG-Y has a field for).
  for (const auto& f : h5_files_) {
    std::vector<ColumnPlace>& places = h5_places_.emplace_back();
    for (const auto& [name, values] : f->header_columns()) {
      for (const segy::HeaderField& field : segy::StandardTraceHeaderFields()) {
        if (field.name == name) places.push_back({field.byte, field.size, &values});
      }
    }
  }
  return BuildHdf5Catalog();
}

absl::Status Dataset::BuildHdf5Catalog() {
  const bool by_position = h5_files_[0]->layout().shape.size() == 3;
  std::vector<catalog::ShotEntry> shots;
  std::vector<io::TraceRef> traces;
  if (by_position) {
    // [shots, traces, samples]: ids from shot_ids, or 1.. continuing across files.
    int64_t next_id = 1;
    for (uint32_t f = 0; f < h5_files_.size(); ++f) {
      const hdf5::Hdf5Layout& l = h5_files_[f]->layout();
      for (uint64_t s = 0; s < l.shape[0]; ++s) {
        const int64_t id = l.shot_ids.empty() ? next_id++ : l.shot_ids[s];
        shots.push_back({id, traces.size(), static_cast<uint32_t>(l.shape[1])});
        for (uint64_t t = 0; t < l.shape[1]; ++t) traces.push_back({f, s * l.shape[1] + t});
      }
    }
    std::vector<size_t> order(shots.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return shots[a].shot_id < shots[b].shot_id; });
    std::vector<catalog::ShotEntry> sorted;
    std::vector<io::TraceRef> sorted_traces;
    for (size_t i : order) {
      if (!sorted.empty() && sorted.back().shot_id == shots[i].shot_id) {
        return absl::InvalidArgumentError(absl::StrCat(
            "dataset '", spec_.name, "': shot id ", shots[i].shot_id, " is given to two shots ",
            "(shot_ids beside ", h5_files_[0]->layout().h5_path, ")"));
      }
      sorted.push_back({shots[i].shot_id, sorted_traces.size(), shots[i].n_traces});
      for (uint64_t t = 0; t < shots[i].n_traces; ++t) {
        sorted_traces.push_back(traces[shots[i].first_trace + t]);
      }
    }
    catalog_ = catalog::Catalog::FromColumns(std::move(sorted), std::move(sorted_traces));
    catalog_origin_ = h5_files_[0]->layout().shot_ids.empty()
                          ? "built from the arrays' shapes"
                          : "built from shot_ids";
    return absl::OkStatus();
  }
  // [traces, samples]: shots by the shot key's column, traces in file order.
  const segy::ShotKey& key = spec_.shot_key;
  if (key.source_xy || key.name.empty() || absl::StartsWith(key.name, "byte:")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dataset '", spec_.name, "': shot_key '", key.name, "': HDF5 shots are keyed by a "
        "header column's name (field_record unless shot_key names another)"));
  }
  struct Row {
    int64_t id;
    io::TraceRef trace;
  };
  std::vector<Row> rows;
  for (uint32_t f = 0; f < h5_files_.size(); ++f) {
    const hdf5::Hdf5File& file = *h5_files_[f];
    const std::vector<double>* column = nullptr;
    for (const auto& [name, values] : file.header_columns()) {
      if (name == key.name) column = &values;
    }
    if (column == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "dataset '", spec_.name, "': ", file.path(), ": ", file.layout().h5_path,
          " is [traces, samples], which needs a header column headers/", key.name,
          " to group its traces into shots (or give [shots, traces, samples])"));
    }
    for (uint64_t r = 0; r < column->size(); ++r) {
      const double v = (*column)[r];
      if (!(v == std::nearbyint(v)) || std::abs(v) > 9.0e15) {
        return absl::InvalidArgumentError(absl::StrCat(
            "dataset '", spec_.name, "': ", file.path(), ": headers/", key.name, "[", r,
            "] is ", v, ", not an integer shot id"));
      }
      rows.push_back({static_cast<int64_t>(v), {f, r}});
    }
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& a, const Row& b) { return a.id < b.id; });
  for (size_t i = 0; i < rows.size();) {
    size_t j = i;
    while (j < rows.size() && rows[j].id == rows[i].id) {
      traces.push_back(rows[j].trace);
      ++j;
    }
    shots.push_back({rows[i].id, i, static_cast<uint32_t>(j - i)});
    i = j;
  }
  catalog_ = catalog::Catalog::FromColumns(std::move(shots), std::move(traces));
  catalog_origin_ = absl::StrCat("built from headers/", key.name);
  return absl::OkStatus();
}

absl::Status Dataset::ReadHdf5Traces(absl::Span<const io::TraceRef> traces,
                                     io::SampleRange range, uint8_t* const* dst,
                                     uint32_t* trace_crc, io::ReadStats* stats) const {
  const uint64_t trace_bytes = uint64_t{range.count} * sizeof(float);
  // Runs of traces that follow each other in one file and in the destination: one read.
  for (size_t i = 0; i < traces.size();) {
    size_t j = i + 1;
    while (j < traces.size() && traces[j].file_id == traces[i].file_id &&
           traces[j].offset == traces[j - 1].offset + 1 &&
           dst[j] == dst[j - 1] + trace_bytes) {
      ++j;
    }
    const hdf5::Hdf5File& file = *h5_files_[traces[i].file_id];
    SS_RETURN_IF_ERROR(file.ReadTraces(traces[i].offset, j - i, range.start, range.count,
                                       reinterpret_cast<float*>(dst[i])));
    if (stats != nullptr) {
      ++stats->reads;
      stats->bytes_read += (j - i) * trace_bytes;
      stats->bytes_wanted += (j - i) * trace_bytes;
    }
    i = j;
  }
  for (size_t i = 0; i < traces.size(); ++i) trace_crc[i] = Crc32(0, dst[i], trace_bytes);
  return absl::OkStatus();
}

segy::ByteOrder Dataset::OrderOf(const io::TraceRef& t) const {
  return format_ == SourceFormat::kHdf5 ? segy::ByteOrder::kBigEndian
                                        : files_[t.file_id]->layout().byte_order;
}

void Dataset::SynthesizeHeader(int64_t shot_id, size_t i, const io::TraceRef& t,
                               uint8_t* dst) const {
  const segy::ByteOrder order = OrderOf(t);
  std::memset(dst, 0, segy::kTraceHeaderBytes);
  PutHeaderInt(dst, 9, 4, static_cast<double>(shot_id), order);
  PutHeaderInt(dst, 13, 4, static_cast<double>(i + 1), order);
  PutHeaderInt(dst, 115, 2, n_samples_, order);
  PutHeaderInt(dst, 117, 2, std::min(sample_interval_us_, 32767.0), order);
  if (format_ == SourceFormat::kHdf5) {
    // The file's columns at their SEG-Y places (integers, as SEG-Y holds them); a
    // field_record or trace_number column wins over the position written above.
    for (const ColumnPlace& p : h5_places_[t.file_id]) {
      PutHeaderInt(dst, p.byte, p.size, (*p.values)[t.offset], order);
    }
  }
}

double Dataset::TraceValue(int64_t shot_id, size_t i, const io::TraceRef& t,
                           const uint8_t* raw, const segy::HeaderSelector& h) const {
  if (format_ == SourceFormat::kHdf5) {
    for (const auto& [name, values] : h5_files_[t.file_id]->header_columns()) {
      if (name == h.name) return values[t.offset];
    }
    if (h.name == kFieldRecord) return static_cast<double>(shot_id);
    if (h.name == kTraceNumber) return static_cast<double>(i + 1);
    return 0;
  }
  return segy::HeaderValue(h, raw, OrderOf(t));
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
  const bool hdf5 = format_ == SourceFormat::kHdf5;
  const int native_width = selection.native && !hdf5 ? NativeWidth(traces) : 0;
  const uint64_t trace_wire_bytes =
      native_width > 0 ? uint64_t{range.count} * native_width : trace_out_bytes;
  const uint64_t per_chunk = std::max<uint64_t>(1, max_chunk_bytes / trace_wire_bytes);
  // Every trace's header comes with its samples (the same coalesced reads): its shot key
  // is checked against the catalog's, the conditions and the asked-for columns are taken
  // from it.
  std::vector<uint8_t> raw_headers(traces.size() * segy::kTraceHeaderBytes);
  uint8_t* header_dst = raw_headers.data();
  const std::optional<bool> big_endian =
      native_width > 0 || hdf5 ? std::nullopt : StoredByteOrder(traces, zero_copy);
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
    } else if (hdf5) {
      SS_RETURN_IF_ERROR(ReadHdf5Traces(traces, range, dst.data(), trace_crc.data(), stats));
    } else {
      SS_RETURN_IF_ERROR(io::ReadTraces(file_ptrs_, traces, spec_.coalesce,
                                        reinterpret_cast<float* const*>(dst.data()), header_dst,
                                        stats, trace_crc.data(), range));
    }
  }
  if (has_trace_headers()) {
    SS_RETURN_IF_ERROR(CheckShotKeys(shot_id, traces, raw_headers.data()));
  } else if (!hdf5 || raw_trace_headers) {  // HDF5 values come from its columns otherwise
    for (size_t i = 0; i < traces.size(); ++i) {
      SynthesizeHeader(shot_id, i, traces[i], raw_headers.data() + i * segy::kTraceHeaderBytes);
    }
  }
  // The traces kept: all, or those whose header values meet every condition.
  std::vector<size_t> kept;
  kept.reserve(traces.size());
  for (size_t i = 0; i < traces.size(); ++i) {
    const uint8_t* h = raw_headers.data() + i * segy::kTraceHeaderBytes;
    bool keep = true;
    for (const TraceCondition& c : selection.where) {
      const double v = TraceValue(shot_id, i, traces[i], h, c.header);
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
      column[k] = TraceValue(shot_id, i, traces[i],
                             raw_headers.data() + i * segy::kTraceHeaderBytes, h);
    }
    out.headers.emplace_back(h.name, std::move(column));
  }
  if (raw_trace_headers) {
    out.trace_headers.resize(kept.size() * segy::kTraceHeaderBytes);
    for (size_t k = 0; k < kept.size(); ++k) {
      const size_t i = kept[k];
      segy::TraceHeaderToBigEndian(raw_headers.data() + i * segy::kTraceHeaderBytes,
                                   OrderOf(traces[i]),
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
    const absl::Status s = format_ == SourceFormat::kHdf5 ? h5_files_[t.file_id]->CheckUnchanged()
                                                          : files_[t.file_id]->CheckUnchanged();
    if (!s.ok()) {
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

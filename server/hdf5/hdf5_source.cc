#include "server/hdf5/hdf5_source.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "server/hdf5/hdf5_file.h"
#include "server/source/column_headers.h"
#include "server/source/keyed_catalog.h"
#include "server/source/trace_file_source.h"

namespace shotstream::hdf5 {
namespace {

constexpr char kFieldRecord[] = "field_record";
constexpr char kTraceNumber[] = "trace_number";

class Hdf5Source final : public source::Source {
 public:
  static absl::StatusOr<std::unique_ptr<source::Source>> Open(const source::SourceSpec& spec) {
    std::unique_ptr<Hdf5Source> s(new Hdf5Source());
    SS_RETURN_IF_ERROR(s->Load(spec));
    return std::unique_ptr<source::Source>(std::move(s));
  }

  const source::SourceInfo& info() const override { return info_; }
  const catalog::Catalog& catalog() const override { return catalog_; }
  absl::Status CheckUnchanged(uint32_t file_id) const override {
    return files_[file_id]->CheckUnchanged();
  }
  const std::string& path(uint32_t file_id) const override { return files_[file_id]->path(); }
  std::string Where(const io::TraceRef& t, int) const override {
    return absl::StrCat("trace ", t.offset, " of ", files_[t.file_id]->layout().h5_path);
  }
  // Samples go through the library's conversion to float32: none are sent as stored.
  std::optional<io::StoredForm> FormOf(absl::Span<const io::TraceRef>) const override {
    return std::nullopt;
  }

  absl::StatusOr<source::ReadResult> Read(const source::TraceRead& read) const override {
    if (read.form != source::SampleForm::kFloat32) {
      return absl::InternalError("HDF5 samples are read as float32 only");
    }
    const uint64_t trace_bytes = uint64_t{read.range.count} * sizeof(float);
    // Runs of traces that follow each other in one file and in the destination: one read.
    const absl::Span<const io::TraceRef> traces = read.traces;
    for (size_t i = 0; i < traces.size();) {
      size_t j = i + 1;
      while (j < traces.size() && traces[j].file_id == traces[i].file_id &&
             traces[j].offset == traces[j - 1].offset + 1 &&
             read.dst[j] == read.dst[j - 1] + trace_bytes) {
        ++j;
      }
      const Hdf5File& file = *files_[traces[i].file_id];
      SS_RETURN_IF_ERROR(file.ReadTraces(traces[i].offset, j - i, read.range.start,
                                         read.range.count, reinterpret_cast<float*>(read.dst[i])));
      if (read.stats != nullptr) {
        ++read.stats->reads;
        read.stats->bytes_read += (j - i) * trace_bytes;
        read.stats->bytes_wanted += (j - i) * trace_bytes;
      }
      i = j;
    }
    source::TakeTraceCrcs(read);
    source::ReadResult out;
    out.headers = std::make_unique<source::ColumnTraceHeaders>(
        [this](uint32_t f) {
          source::FileColumns c;
          c.columns = &files_[f]->header_columns();
          c.places = &places_[f];
          return c;
        },
        &info_, read);
    return out;
  }

 private:
  absl::Status Load(const source::SourceSpec& spec) {
    OpenOptions options;
    options.h5_path = spec.array_path.empty() ? "/data" : spec.array_path;
    options.sample_interval_us = spec.sample_interval_us;
    for (const std::string& path : spec.paths) {
      SS_ASSIGN_OR_RETURN(std::unique_ptr<Hdf5File> file, Hdf5File::Open(path, options));
      const Hdf5Layout& l = file->layout();
      if (!files_.empty()) {
        const Hdf5File& first = *files_[0];
        if (l.shape.size() != first.layout().shape.size() || l.n_samples != info_.n_samples) {
          return absl::InvalidArgumentError(absl::StrCat(
              path, ": ", l.h5_path, " has shape (", absl::StrJoin(l.shape, ", "), ") but ",
              first.path(), " has (", absl::StrJoin(first.layout().shape, ", "),
              "); the files of a dataset share the rank and the sample count"));
        }
      } else {
        info_.n_samples = l.n_samples;
        info_.sample_interval_us = l.sample_interval_us;
        info_.sample_format = static_cast<int>(l.format);
      }
      for (const std::string& note : l.notes) {
        if (std::find(info_.notes.begin(), info_.notes.end(), note) == info_.notes.end()) {
          info_.notes.push_back(note);
        }
      }
      info_.file_bytes += file->size();
      files_.push_back(std::move(file));
    }
    info_.format = "hdf5";
    info_.n_files = files_.size();
    info_.read_by = "libhdf5";
    // Header fields: the files' columns (those of the first file, which every file must
    // have), then field_record and trace_number where no column gives them.
    source::AddColumnFields(files_[0]->header_columns(), &info_.header_fields);
    for (const auto& f : files_) {
      for (const std::string& name : info_.header_fields) {
        const bool has = std::any_of(f->header_columns().begin(), f->header_columns().end(),
                                     [&](const auto& c) { return c.first == name; });
        if (!has && name != kFieldRecord && name != kTraceNumber) {
          return absl::InvalidArgumentError(absl::StrCat(
              f->path(), " has no header column '", name, "' that ", files_[0]->path(),
              " has; the files of a dataset share them"));
        }
      }
      places_.push_back(source::PlacesOf(f->header_columns()));
    }
    return files_[0]->layout().shape.size() == 3 ? CatalogByPosition()
                                                 : CatalogByColumn(spec.shot_key);
  }

  // [shots, traces, samples]: ids from shot_ids, or 1.. continuing across files.
  absl::Status CatalogByPosition() {
    struct Shot {
      int64_t id;
      uint32_t file;
      uint64_t first;  // flat trace index in its file
    };
    std::vector<Shot> shots;
    int64_t next_id = 1;
    for (uint32_t f = 0; f < files_.size(); ++f) {
      const Hdf5Layout& l = files_[f]->layout();
      for (uint64_t s = 0; s < l.shape[0]; ++s) {
        shots.push_back({l.shot_ids.empty() ? next_id++ : l.shot_ids[s], f, s * l.shape[1]});
      }
    }
    std::stable_sort(shots.begin(), shots.end(),
                     [](const Shot& a, const Shot& b) { return a.id < b.id; });
    catalog::CatalogBuilder builder(std::vector<catalog::FileGeometry>(files_.size()));
    for (size_t i = 0; i < shots.size(); ++i) {
      const Shot& s = shots[i];
      if (i > 0 && shots[i - 1].id == s.id) {
        return absl::InvalidArgumentError(absl::StrCat(
            "shot id ", s.id, " is given to two shots (shot_ids beside ",
            files_[0]->layout().h5_path, ")"));
      }
      builder.Add(s.id, s.file, s.first, files_[s.file]->layout().shape[1]);
    }
    catalog_ = std::move(builder).Finish();
    info_.catalog_origin = files_[0]->layout().shot_ids.empty() ? "built from the arrays' shapes"
                                                                : "built from shot_ids";
    return absl::OkStatus();
  }

  // [traces, samples]: shots by the shot key's column, traces in file order.
  absl::Status CatalogByColumn(const std::string& key) {
    SS_RETURN_IF_ERROR(CheckKey(key));
    std::vector<source::KeyedTrace> rows;
    for (uint32_t f = 0; f < files_.size(); ++f) {
      const Hdf5File& file = *files_[f];
      const std::vector<double>* column = nullptr;
      for (const auto& [name, values] : file.header_columns()) {
        if (name == key) column = &values;
      }
      if (column == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(
            file.path(), ": ", file.layout().h5_path, " is [traces, samples], which needs a "
            "header column headers/", key, " to group its traces into shots (or give "
            "[shots, traces, samples])"));
      }
      for (uint64_t r = 0; r < column->size(); ++r) {
        SS_ASSIGN_OR_RETURN(const int64_t id,
                            source::ShotIdOf((*column)[r], absl::StrCat(file.path(), ": headers/",
                                                                        key, "[", r, "]")));
        rows.push_back({id, {f, r}});
      }
    }
    catalog_ = source::CatalogByKey(rows);
    info_.catalog_origin = absl::StrCat("built from headers/", key);
    return absl::OkStatus();
  }

 public:
  // HDF5 shots are keyed by a header column's name.
  static absl::Status CheckKey(const std::string& key) {
    return source::CheckColumnKey(key, "HDF5");
  }

 private:
  std::vector<std::unique_ptr<Hdf5File>> files_;
  std::vector<std::vector<source::ColumnPlace>> places_;  // per file
  catalog::Catalog catalog_;
  source::SourceInfo info_;
};

}  // namespace

const source::Format& Hdf5Format() {
  static const source::Format format{
      "hdf5",
      /*claims=*/
      [](const std::string& path, absl::Span<const uint8_t> head) {
        static constexpr uint8_t kSignature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
        return absl::EndsWith(path, ".h5") || absl::EndsWith(path, ".hdf5") ||
               (head.size() >= 8 && std::memcmp(head.data(), kSignature, 8) == 0);
      },
      /*suggested_by=*/
      [](absl::string_view pattern) {
        return absl::EndsWith(pattern, ".h5") || absl::EndsWith(pattern, ".hdf5");
      },
      &Hdf5Source::CheckKey,
      &Hdf5Source::Open,
      /*check_file=*/
      [](const source::SourceSpec& spec, const std::string& path) {
        OpenOptions options;
        options.h5_path = spec.array_path.empty() ? "/data" : spec.array_path;
        return Hdf5File::Open(path, options).status();
      },
  };
  return format;
}

}  // namespace shotstream::hdf5

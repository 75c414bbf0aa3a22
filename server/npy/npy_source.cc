#include "server/npy/npy_source.h"

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "npy/npy_header.h"
#include "server/npy/npy_file.h"
#include "server/source/trace_file_source.h"

namespace shotstream::npy {
namespace {

constexpr char kFieldRecord[] = "field_record";
constexpr char kTraceNumber[] = "trace_number";

// The fields of traces that have no headers: the shot id and the trace's place in it.
class PositionHeaders final : public source::TraceHeaders {
 public:
  PositionHeaders(int64_t shot_id, uint32_t n_samples, double interval_us)
      : shot_id_(shot_id), n_samples_(n_samples), interval_us_(interval_us) {}
  double Value(size_t i, const segy::HeaderSelector& h) const override {
    if (h.name == kFieldRecord) return static_cast<double>(shot_id_);
    if (h.name == kTraceNumber) return static_cast<double>(i + 1);
    return 0;
  }
  void BigEndianHeader(size_t i, uint8_t* dst) const override {
    std::fill(dst, dst + segy::kTraceHeaderBytes, 0);
    source::PutBigEndianField(dst, 9, 4, static_cast<double>(shot_id_));
    source::PutBigEndianField(dst, 13, 4, static_cast<double>(i + 1));
    source::PutBigEndianField(dst, 115, 2, n_samples_);
    source::PutBigEndianField(dst, 117, 2, std::min(interval_us_, 32767.0));
  }

 private:
  const int64_t shot_id_;
  const uint32_t n_samples_;
  const double interval_us_;
};

class NpySource final : public source::TraceFileSource {
 public:
  static absl::StatusOr<std::unique_ptr<source::Source>> Open(const source::SourceSpec& spec) {
    SS_RETURN_IF_ERROR(CheckKey(spec.shot_key));
    std::unique_ptr<NpySource> s(new NpySource(spec));
    std::vector<std::unique_ptr<io::TraceFile>> files;
    std::vector<std::vector<uint64_t>> shapes;
    for (const std::string& path : spec.paths) {
      SS_ASSIGN_OR_RETURN(NpyFile f, OpenNpyFile(path, spec.io, spec.sample_interval_us, spec.env));
      if (!shapes.empty() && f.shape.size() != shapes[0].size()) {
        return absl::InvalidArgumentError(absl::StrCat(
            path, " is a ", f.shape.size(), "D array but ", spec.paths[0], " is ",
            shapes[0].size(), "D; the files of a .npy dataset share the layout ([shots, "
            "traces, samples] or [traces, samples])"));
      }
      shapes.push_back(std::move(f.shape));
      files.push_back(std::move(f.file));
    }
    SS_RETURN_IF_ERROR(s->AddFiles(spec, std::move(files)));
    s->info_.format = "npy";
    s->info_.header_fields = {kFieldRecord, kTraceNumber};
    s->BuildCatalog(shapes);
    return std::unique_ptr<source::Source>(std::move(s));
  }

  static absl::Status CheckKey(const std::string& key) {
    if (key == kFieldRecord) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        "shot_key '", key, "': the shots of .npy files are numbered by position "
        "(field_record), they have no headers to key on"));
  }

 private:
  explicit NpySource(const source::SourceSpec& spec) : TraceFileSource(spec) {}

  std::unique_ptr<source::TraceHeaders> MakeHeaders(const source::TraceRead& read,
                                                    std::vector<uint8_t>) const override {
    return std::make_unique<PositionHeaders>(read.shot_id, info_.n_samples,
                                             info_.sample_interval_us);
  }

  // [shots, traces, samples]: shots 1.. continuing across files in name order;
  // [traces, samples]: one shot a file.
  void BuildCatalog(const std::vector<std::vector<uint64_t>>& shapes) {
    std::vector<catalog::FileGeometry> geometry;
    for (const auto& f : files_) {
      geometry.push_back({f->layout().first_trace_offset, f->layout().trace_bytes});
    }
    catalog::CatalogBuilder builder(std::move(geometry));
    int64_t next_id = 1;
    for (uint32_t f = 0; f < files_.size(); ++f) {
      const std::vector<uint64_t>& shape = shapes[f];
      const uint64_t n_shots = shape.size() == 3 ? shape[0] : 1;
      const uint64_t per_shot = shape.size() == 3 ? shape[1] : shape[0];
      for (uint64_t s = 0; s < n_shots; ++s) builder.Add(next_id++, f, s * per_shot, per_shot);
    }
    catalog_ = std::move(builder).Finish();
    info_.catalog_origin = "built from the arrays' shapes";
  }
};

}  // namespace

const source::Format& NpyFormat() {
  static const source::Format format{
      "npy",
      /*claims=*/
      [](const std::string& path, absl::Span<const uint8_t> head) {
        return absl::EndsWith(path, ".npy") || IsNpy(head.data(), head.size());
      },
      /*suggested_by=*/[](absl::string_view pattern) { return absl::EndsWith(pattern, ".npy"); },
      &NpySource::CheckKey,
      &NpySource::Open,
      /*check_file=*/
      [](const source::SourceSpec& spec, const std::string& path) {
        return OpenNpyFile(path, io::IoMode::kPread, 1, spec.env).status();
      },
  };
  return format;
}

}  // namespace shotstream::npy

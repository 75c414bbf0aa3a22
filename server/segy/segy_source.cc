#include "server/segy/segy_source.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "segy/trace_header.h"
#include "server/catalog/catalog_store.h"
#include "server/segy/segy_file.h"
#include "server/segy/segy_scan.h"
#include "server/source/trace_file_source.h"

namespace shotstream::segy {
namespace {

// Header values from the stored 240-byte headers read with the samples.
class StoredHeaders final : public source::TraceHeaders {
 public:
  StoredHeaders(std::vector<uint8_t> raw, std::vector<ByteOrder> orders)
      : raw_(std::move(raw)), orders_(std::move(orders)) {}
  double Value(size_t i, const HeaderSelector& h) const override {
    return HeaderValue(h, raw_.data() + i * kTraceHeaderBytes, orders_[i]);
  }
  void BigEndianHeader(size_t i, uint8_t* dst) const override {
    TraceHeaderToBigEndian(raw_.data() + i * kTraceHeaderBytes, orders_[i], dst);
  }

 private:
  const std::vector<uint8_t> raw_;
  const std::vector<ByteOrder> orders_;
};

class SegySource final : public source::TraceFileSource {
 public:
  static absl::StatusOr<std::unique_ptr<source::Source>> Open(const source::SourceSpec& spec) {
    SS_ASSIGN_OR_RETURN(const ShotKey key, ParseShotKey(spec.shot_key));
    std::unique_ptr<SegySource> s(new SegySource(spec, key));
    OpenOptions options;
    options.byte_order = spec.byte_order;
    options.io = spec.io;
    options.env = spec.env;
    std::vector<std::unique_ptr<io::TraceFile>> files;
    for (const std::string& path : spec.paths) {
      SS_ASSIGN_OR_RETURN(std::unique_ptr<io::TraceFile> f, OpenSegyFile(path, options));
      files.push_back(std::move(f));
    }
    SS_RETURN_IF_ERROR(s->AddFiles(spec, std::move(files)));
    s->info_.format = "segy";
    s->info_.header_fields = ServableHeaderNames();
    s->info_.any_standard_field = true;
    if (key.source_xy) {
      s->info_.source_xy = true;
    } else {
      HeaderSelector k;
      k.name = key.name.empty() ? absl::StrCat("byte:", key.byte) : key.name;
      k.byte = key.byte;
      k.size = 4;
      s->info_.shot_key = k;
    }
    SS_RETURN_IF_ERROR(s->LoadOrBuildCatalog(spec));
    return std::unique_ptr<source::Source>(std::move(s));
  }

 private:
  SegySource(const source::SourceSpec& spec, ShotKey key)
      : TraceFileSource(spec), key_(std::move(key)) {}

  std::unique_ptr<source::TraceHeaders> MakeHeaders(const source::TraceRead& read,
                                                    std::vector<uint8_t> raw) const override {
    std::vector<ByteOrder> orders(read.traces.size());
    for (size_t i = 0; i < read.traces.size(); ++i) {
      orders[i] = files_[read.traces[i].file_id]->layout().byte_order;
    }
    return std::make_unique<StoredHeaders>(std::move(raw), std::move(orders));
  }

  // The saved catalog when it describes these files exactly, else a scan (saved again).
  absl::Status LoadOrBuildCatalog(const source::SourceSpec& spec) {
    std::string why = "built";
    catalog::CatalogSource described;
    if (!spec.catalog_path.empty()) {
      SS_ASSIGN_OR_RETURN(described, catalog::DescribeSource(file_ptrs_, key_.name));
      auto loaded = spec.ignore_saved_catalog
                        ? absl::FailedPreconditionError("a read found the files changed")
                        : catalog::LoadCatalog(spec.catalog_path, described, spec.env);
      if (loaded.ok()) {
        catalog_ = *std::move(loaded);
        info_.catalog_origin = absl::StrCat("reused (", spec.catalog_path, ")");
        return absl::OkStatus();
      }
      if (!absl::IsNotFound(loaded.status())) {
        // Stale or corrupt: never trusted, rebuilt, and the reason said.
        why = absl::StrCat("rebuilt: ", loaded.status().message());
      }
    }
    ScanReport report;
    SS_ASSIGN_OR_RETURN(catalog_, ScanCatalog(file_ptrs_, key_, spec.progress,
                                              spec.scan_block_bytes, spec.check_trace_lengths,
                                              kScanUnitTraces, &report));
    if (report.trace_length_mismatches > 0) {
      info_.notes.push_back(absl::StrCat(
          report.trace_length_mismatches, " of ", catalog_.n_traces(),
          " trace headers give another sample count (bytes 115-116) than the file's, e.g. ",
          report.first_trace_length_mismatch,
          "; traces are read at the file's length (the binary header's count, which the file "
          "size agrees with); check_trace_lengths: true refuses such files"));
    }
    info_.catalog_origin = why;
    if (!spec.catalog_path.empty()) {
      const absl::Status saved = catalog::SaveCatalog(spec.catalog_path, described, catalog_, spec.env);
      absl::StrAppend(&info_.catalog_origin,
                      saved.ok() ? absl::StrCat(", saved to ", spec.catalog_path)
                                 : absl::StrCat(" (not saved: ", saved.message(), ")"));
    }
    return absl::OkStatus();
  }

  const ShotKey key_;
};

}  // namespace

const source::Format& SegyFormat() {
  static const source::Format format{
      "segy",
      /*claims=*/[](const std::string&, absl::Span<const uint8_t>) { return true; },
      /*suggested_by=*/
      [](absl::string_view pattern) {
        for (absl::string_view suffix : {".sgy", ".segy", ".su", ".SGY", ".SEGY"}) {
          if (absl::EndsWith(pattern, suffix)) return true;
        }
        return false;
      },
      /*check_shot_key=*/
      [](const std::string& key) { return ParseShotKey(key).status(); },
      &SegySource::Open,
      /*check_file=*/
      [](const source::SourceSpec& spec, const std::string& path) {
        OpenOptions options;
        options.byte_order = spec.byte_order;
        options.env = spec.env;
        return OpenSegyFile(path, options).status();
      },
  };
  return format;
}

}  // namespace shotstream::segy

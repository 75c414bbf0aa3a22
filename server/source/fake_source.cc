#include "server/source/fake_source.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/crc32.h"
#include "segy/sample_format.h"

namespace shotstream::source {
namespace {

class FakeHeaders final : public TraceHeaders {
 public:
  explicit FakeHeaders(std::vector<const FakeTrace*> traces) : traces_(std::move(traces)) {}
  double Value(size_t i, const segy::HeaderSelector& h) const override {
    auto it = traces_[i]->fields.find(h.name);
    return it == traces_[i]->fields.end() ? 0 : it->second;
  }
  void BigEndianHeader(size_t i, uint8_t* dst) const override {
    std::memset(dst, 0, segy::kTraceHeaderBytes);
    for (const segy::HeaderField& f : segy::StandardTraceHeaderFields()) {
      auto it = traces_[i]->fields.find(std::string(f.name));
      if (it != traces_[i]->fields.end()) {
        const int64_t v = static_cast<int64_t>(it->second);
        for (int k = 0; k < f.size; ++k) {
          dst[f.byte - 1 + k] = static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * (f.size - 1 - k)));
        }
      }
    }
  }

 private:
  const std::vector<const FakeTrace*> traces_;
};

class FakeStoredTraces final : public io::StoredTraces {
 public:
  FakeStoredTraces(std::vector<const uint8_t*> traces, size_t trace_bytes, bool big_endian)
      : StoredTraces(std::move(traces), trace_bytes, big_endian) {}
  absl::Status Touch() const override { return absl::OkStatus(); }
};

}  // namespace

FakeSource::FakeSource(uint32_t n_samples, double sample_interval_us) {
  info_.format = "fake";
  info_.n_samples = n_samples;
  info_.sample_interval_us = sample_interval_us;
  info_.header_fields = {"field_record", "offset", "group_x"};
  segy::HeaderSelector key;
  key.name = "field_record";
  key.byte = 9;
  key.size = 4;
  info_.shot_key = key;
  info_.read_by = "memory";
}

void FakeSource::AddShot(int64_t shot_id, std::vector<FakeTrace> traces, uint32_t file) {
  for (FakeTrace& t : traces) {
    t.fields.emplace("field_record", static_cast<double>(shot_id));
    files_[file].push_back({shot_id, std::move(t)});
  }
}

void FakeSource::SetStoredKey(int64_t shot_id, size_t i, double value) {
  size_t seen = 0;
  for (auto& [file, traces] : files_) {
    for (Stored& s : traces) {
      if (s.shot_id == shot_id && seen++ == i) s.trace.fields["field_record"] = value;
    }
  }
}

void FakeSource::Finish() {
  uint32_t n_files = 0;
  for (const auto& [file, traces] : files_) n_files = std::max(n_files, file + 1);
  catalog::CatalogBuilder builder{std::vector<catalog::FileGeometry>(n_files)};
  for (const auto& [file, traces] : files_) {
    for (uint64_t i = 0; i < traces.size(); ++i) builder.Add(traces[i].shot_id, file, i);
  }
  catalog_ = std::move(builder).Finish();
  info_.n_files = files_.size();
  for (const auto& [file, traces] : files_) paths_[file] = absl::StrCat("file ", file);
  info_.catalog_origin = "built from memory";
  // The stored bytes of every trace in form_, for NATIVE and zero-copy reads.
  if (form_.has_value()) {
    for (const auto& [file, traces] : files_) {
      for (const Stored& s : traces) {
        std::vector<uint8_t> bytes(s.trace.samples.size() * 4);
        if (form_->format == segy::SampleFormat::kInt16) {
          bytes.resize(s.trace.samples.size() * 2);
          for (size_t k = 0; k < s.trace.samples.size(); ++k) {
            const int16_t v = static_cast<int16_t>(s.trace.samples[k]);
            bytes[2 * k] = static_cast<uint8_t>(static_cast<uint16_t>(v) >> 8);
            bytes[2 * k + 1] = static_cast<uint8_t>(v);
          }
        } else {
          segy::EncodeSamplesBigEndian(s.trace.samples.data(), s.trace.samples.size(),
                                       segy::SampleFormat::kIeeeFloat32, bytes.data());
          if (form_->byte_order == segy::ByteOrder::kLittleEndian) {
            std::memcpy(bytes.data(), s.trace.samples.data(), bytes.size());
          }
        }
        stored_bytes_[file].push_back(std::move(bytes));
      }
    }
  }
}

absl::Status FakeSource::CheckUnchanged(uint32_t file_id) const {
  if (changed_.count(file_id)) {
    return absl::DataLossError(absl::StrCat("file ", file_id, ": changed since its catalog was built"));
  }
  return absl::OkStatus();
}

const std::string& FakeSource::path(uint32_t file_id) const { return paths_.at(file_id); }

std::string FakeSource::Where(const io::TraceRef& t, int header_byte) const {
  return absl::StrCat("trace ", t.offset, " byte ", header_byte);
}

std::optional<io::StoredForm> FakeSource::FormOf(absl::Span<const io::TraceRef>) const {
  return form_;
}

absl::StatusOr<ReadResult> FakeSource::Read(const TraceRead& read) const {
  ++reads;
  for (const io::TraceRef& t : read.traces) {
    if (change_under_read_.count(t.file_id) == 0) continue;
    changed_.insert(t.file_id);
    return absl::DataLossError(absl::StrCat("file ", t.file_id, ": changed under the read"));
  }
  ReadResult out;
  std::vector<const FakeTrace*> traces;
  std::vector<const uint8_t*> located;
  for (size_t i = 0; i < read.traces.size(); ++i) {
    const FakeTrace& t = At(read.traces[i]).trace;
    traces.push_back(&t);
    const float* from = t.samples.data() + read.range.start;
    const std::vector<uint8_t>* stored =
        form_.has_value() ? &stored_bytes_.at(read.traces[i].file_id)[read.traces[i].offset]
                          : nullptr;
    switch (read.form) {
      case SampleForm::kFloat32:
        std::memcpy(read.dst[i], from, read.range.count * sizeof(float));
        read.trace_crc[i] = Crc32(0, from, read.range.count * sizeof(float));
        break;
      case SampleForm::kStored: {
        const size_t width = stored->size() / t.samples.size();
        std::memcpy(read.dst[i], stored->data() + read.range.start * width, read.range.count * width);
        read.trace_crc[i] = Crc32(0, from, read.range.count * sizeof(float));
        break;
      }
      case SampleForm::kLocate:
        located.push_back(stored->data() + read.range.start * 4);
        break;
    }
  }
  if (read.form == SampleForm::kLocate) {
    out.stored = std::make_unique<FakeStoredTraces>(
        std::move(located), size_t{read.range.count} * 4,
        form_->byte_order == segy::ByteOrder::kBigEndian);
  }
  out.headers = std::make_unique<FakeHeaders>(std::move(traces));
  return out;
}

}  // namespace shotstream::source

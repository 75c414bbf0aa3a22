#include "server/source/column_headers.h"

#include <algorithm>
#include <cstring>

#include "common/crc32.h"
#include "segy/segy_writer.h"
#include "server/source/trace_file_source.h"

namespace shotstream::source {
namespace {

constexpr char kFieldRecord[] = "field_record";
constexpr char kTraceNumber[] = "trace_number";

}  // namespace

void AddColumnFields(const HeaderColumns& columns, std::vector<std::string>* fields) {
  for (const auto& column : columns) fields->push_back(column.first);
  for (const char* made : {kFieldRecord, kTraceNumber}) {
    if (std::find(fields->begin(), fields->end(), made) == fields->end()) {
      fields->push_back(made);
    }
  }
}

double ColumnValue(const HeaderColumns& columns, uint64_t row, const segy::HeaderSelector& h,
                   int64_t shot_id, size_t i) {
  for (const auto& [name, values] : columns) {
    if (name == h.name) return values[row];
  }
  if (h.name == kFieldRecord) return static_cast<double>(shot_id);
  if (h.name == kTraceNumber) return static_cast<double>(i + 1);
  return 0;
}

std::vector<ColumnPlace> PlacesOf(const HeaderColumns& columns) {
  std::vector<ColumnPlace> places;
  for (size_t c = 0; c < columns.size(); ++c) {
    absl::StatusOr<segy::HeaderSelector> sel = segy::ResolveHeader(columns[c].first);
    if (sel.ok()) places.push_back({*std::move(sel), c});
  }
  return places;
}

void MakeColumnHeader(const HeaderColumns& columns, const std::vector<ColumnPlace>& places,
                      uint64_t row, int64_t shot_id, size_t i, const SourceInfo& info,
                      uint8_t* dst) {
  std::memset(dst, 0, segy::kTraceHeaderBytes);
  PutBigEndianField(dst, 9, 4, static_cast<double>(shot_id));
  PutBigEndianField(dst, 13, 4, static_cast<double>(i + 1));
  PutBigEndianField(dst, 115, 2, info.n_samples);
  PutBigEndianField(dst, 117, 2, std::min(info.sample_interval_us, 32767.0));
  std::vector<segy::TraceValue> values;
  values.reserve(places.size());
  for (const ColumnPlace& p : places) values.push_back({&p.selector, columns[p.column].second[row]});
  size_t worst;
  if (segy::PutTraceValues(values, dst, &worst).ok()) return;
  // A value no SEG-Y field holds (docs/sources.md): the others placed, that one left 0.
  std::vector<segy::TraceValue> placeable;
  for (const segy::TraceValue& v : values) {
    uint8_t scratch[segy::kTraceHeaderBytes] = {};
    if (segy::PutTraceValues({v}, scratch, &worst).ok()) placeable.push_back(v);
  }
  (void)segy::PutTraceValues(placeable, dst, &worst);
}

size_t ColumnTraceHeaders::Position(size_t i, const FileColumns& f) const {
  return f.traces_per_shot > 0 ? traces_[i].offset % f.traces_per_shot : i;
}

double ColumnTraceHeaders::Value(size_t i, const segy::HeaderSelector& h) const {
  const io::TraceRef& t = traces_[i];
  const FileColumns f = files_(t.file_id);
  if (f.raw != nullptr && !f.raw->empty()) {
    return segy::HeaderValue(h, f.raw->data() + t.offset * segy::kTraceHeaderBytes,
                             segy::ByteOrder::kBigEndian);
  }
  return ColumnValue(*f.columns, t.offset, h, shot_id_, Position(i, f));
}

void ColumnTraceHeaders::BigEndianHeader(size_t i, uint8_t* dst) const {
  const io::TraceRef& t = traces_[i];
  const FileColumns f = files_(t.file_id);
  if (f.raw != nullptr && !f.raw->empty()) {
    std::memcpy(dst, f.raw->data() + t.offset * segy::kTraceHeaderBytes,
                segy::kTraceHeaderBytes);
    return;
  }
  MakeColumnHeader(*f.columns, *f.places, t.offset, shot_id_, Position(i, f), *info_, dst);
}

void TakeTraceCrcs(const TraceRead& read) {
  if (read.trace_crc == nullptr) return;
  const uint64_t trace_bytes = uint64_t{read.range.count} * sizeof(float);
  for (size_t i = 0; i < read.traces.size(); ++i) {
    read.trace_crc[i] = Crc32(0, read.dst[i], trace_bytes);
  }
}

}  // namespace shotstream::source

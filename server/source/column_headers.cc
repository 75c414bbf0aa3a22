#include "server/source/column_headers.h"

#include <algorithm>
#include <cstring>

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
    for (const segy::HeaderField& field : segy::StandardTraceHeaderFields()) {
      if (field.name == columns[c].first) places.push_back({field.byte, field.size, c});
    }
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
  for (const ColumnPlace& p : places) {
    PutBigEndianField(dst, p.byte, p.size, columns[p.column].second[row]);
  }
}

}  // namespace shotstream::source

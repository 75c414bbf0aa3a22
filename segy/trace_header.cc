#include "segy/trace_header.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"

namespace shotstream::segy {

const std::vector<HeaderField>& StandardTraceHeaderFields() {
  static const auto* fields = new std::vector<HeaderField>{
      {"trace_sequence_line", 1, 4},
      {"trace_sequence_file", 5, 4},
      {"field_record", 9, 4},
      {"trace_number", 13, 4},
      {"energy_source_point", 17, 4},
      {"cdp", 21, 4},
      {"cdp_trace", 25, 4},
      {"trace_identification_code", 29, 2},
      {"n_summed_traces", 31, 2},
      {"n_stacked_traces", 33, 2},
      {"data_use", 35, 2},
      {"offset", 37, 4},
      {"receiver_group_elevation", 41, 4},
      {"surface_elevation_at_source", 45, 4},
      {"source_depth", 49, 4},
      {"receiver_datum_elevation", 53, 4},
      {"source_datum_elevation", 57, 4},
      {"source_water_depth", 61, 4},
      {"group_water_depth", 65, 4},
      {"elevation_scalar", 69, 2},
      {"source_group_scalar", 71, 2},
      {"source_x_raw", 73, 4},
      {"source_y_raw", 77, 4},
      {"group_x_raw", 81, 4},
      {"group_y_raw", 85, 4},
      {"coordinate_units", 89, 2},
      {"weathering_velocity", 91, 2},
      {"subweathering_velocity", 93, 2},
      {"source_uphole_time", 95, 2},
      {"group_uphole_time", 97, 2},
      {"source_static_correction", 99, 2},
      {"group_static_correction", 101, 2},
      {"total_static_applied", 103, 2},
      {"lag_time_a", 105, 2},
      {"lag_time_b", 107, 2},
      {"delay_recording_time", 109, 2},
      {"mute_time_start", 111, 2},
      {"mute_time_end", 113, 2},
      {"trace_sample_count", 115, 2},
      {"trace_sample_interval", 117, 2},
      {"gain_type", 119, 2},
      {"instrument_gain_constant", 121, 2},
      {"instrument_initial_gain", 123, 2},
      {"correlated", 125, 2},
      {"sweep_frequency_start", 127, 2},
      {"sweep_frequency_end", 129, 2},
      {"sweep_length", 131, 2},
      {"sweep_type", 133, 2},
      {"sweep_taper_length_start", 135, 2},
      {"sweep_taper_length_end", 137, 2},
      {"taper_type", 139, 2},
      {"alias_filter_frequency", 141, 2},
      {"alias_filter_slope", 143, 2},
      {"notch_filter_frequency", 145, 2},
      {"notch_filter_slope", 147, 2},
      {"low_cut_frequency", 149, 2},
      {"high_cut_frequency", 151, 2},
      {"low_cut_slope", 153, 2},
      {"high_cut_slope", 155, 2},
      {"year_data_recorded", 157, 2},
      {"day_of_year", 159, 2},
      {"hour_of_day", 161, 2},
      {"minute_of_hour", 163, 2},
      {"second_of_minute", 165, 2},
      {"time_basis_code", 167, 2},
      {"trace_weighting_factor", 169, 2},
      {"geophone_group_number_roll1", 171, 2},
      {"geophone_group_number_first_trace", 173, 2},
      {"geophone_group_number_last_trace", 175, 2},
      {"gap_size", 177, 2},
      {"over_travel", 179, 2},
      {"cdp_x", 181, 4},
      {"cdp_y", 185, 4},
      {"inline", 189, 4},
      {"crossline", 193, 4},
      {"shot_point", 197, 4},
      {"shot_point_scalar", 201, 2},
      {"trace_value_measurement_unit", 203, 2},
      {"transduction_constant_mantissa", 205, 4},
      {"transduction_constant_power", 209, 2},
      {"transduction_units", 211, 2},
      {"device_trace_identifier", 213, 2},
      {"times_scalar", 215, 2},
      {"source_type_orientation", 217, 2},
      {"source_energy_direction_mantissa", 219, 4},
      {"source_energy_direction_exponent", 223, 2},
      {"source_measurement_mantissa", 225, 4},
      {"source_measurement_exponent", 229, 2},
      {"source_measurement_unit", 231, 2},
  };
  return *fields;
}

void TraceHeaderToBigEndian(const uint8_t* header, ByteOrder order, uint8_t* dst) {
  std::memcpy(dst, header, kTraceHeaderBytes);
  if (order == ByteOrder::kBigEndian) return;
  for (const HeaderField& f : StandardTraceHeaderFields()) {
    for (int i = 0; i < f.size; ++i) dst[f.byte - 1 + i] = header[f.byte - 1 + f.size - 1 - i];
  }
}

namespace {

struct ScaledField {
  absl::string_view name;
  int byte;
  HeaderSelector::Scale scale;
};

constexpr ScaledField kScaledFields[] = {
    {"source_x", 73, HeaderSelector::Scale::kCoordinate},
    {"source_y", 77, HeaderSelector::Scale::kCoordinate},
    {"group_x", 81, HeaderSelector::Scale::kCoordinate},
    {"group_y", 85, HeaderSelector::Scale::kCoordinate},
    {"receiver_elevation", 41, HeaderSelector::Scale::kElevation},
    {"source_elevation", 45, HeaderSelector::Scale::kElevation},
};

constexpr absl::string_view kContractNames[] = {
    "field_record", "energy_source_point", "inline", "crossline", "offset",
    "source_x", "source_y", "group_x", "group_y", "source_elevation",
    "receiver_elevation"};

double ApplyScalar(double value, int64_t scalar) {
  if (scalar > 0) return value * static_cast<double>(scalar);
  if (scalar < 0) return value / static_cast<double>(-scalar);
  return value;
}

// Edit distance (insertions, deletions, substitutions), for "did you mean".
size_t EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string ClosestName(absl::string_view name, const std::vector<std::string>& known) {
  std::string best;
  size_t best_distance = std::max<size_t>(2, name.size() / 3) + 1;
  for (const std::string& k : known) {
    const size_t d = EditDistance(name, k);
    if (d < best_distance) {
      best_distance = d;
      best = k;
    }
  }
  return best;
}

absl::StatusOr<HeaderSelector> ResolveHeader(absl::string_view name) {
  for (const ScaledField& f : kScaledFields) {
    if (f.name == name) return HeaderSelector{std::string(name), f.byte, 4, f.scale};
  }
  for (const HeaderField& f : StandardTraceHeaderFields()) {
    if (f.name == name) return HeaderSelector{std::string(name), f.byte, f.size};
  }
  const std::string closest = ClosestName(name, ServableHeaderNames());
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown trace header field '", name, "'",
      closest.empty() ? "" : absl::StrCat(": did you mean '", closest, "'?"),
      " (known: field_record, energy_source_point, inline, crossline, offset, source_x, "
      "source_y, group_x, group_y, source_elevation, receiver_elevation, and the SEG-Y "
      "rev 1 standard fields, e.g. cdp, trace_number)"));
}

double HeaderValue(const HeaderSelector& s, const uint8_t* header, ByteOrder order) {
  const double raw = static_cast<double>(ReadHeaderInt(header, s.byte, s.size, order));
  switch (s.scale) {
    case HeaderSelector::Scale::kNone: return raw;
    case HeaderSelector::Scale::kCoordinate:
      return ApplyScalar(raw, ReadHeaderInt(header, 71, 2, order));
    case HeaderSelector::Scale::kElevation:
      return ApplyScalar(raw, ReadHeaderInt(header, 69, 2, order));
  }
  return raw;
}

std::vector<std::string> ServableHeaderNames() {
  std::vector<std::string> names;
  for (absl::string_view n : kContractNames) names.emplace_back(n);
  for (const HeaderField& f : StandardTraceHeaderFields()) {
    bool dup = false;
    for (absl::string_view n : kContractNames) dup |= (n == f.name);
    if (!dup) names.emplace_back(f.name);
  }
  return names;
}

absl::StatusOr<ShotKey> ParseShotKey(absl::string_view text) {
  if (text == "field_record") return ShotKey{"field_record", 9};
  if (text == "energy_source_point") return ShotKey{"energy_source_point", 17};
  if (text == "inline") return ShotKey{"inline", 189};
  if (text == "crossline") return ShotKey{"crossline", 193};
  if (text == "source_xy") return ShotKey{"source_xy", 73, true};
  for (const HeaderField& f : StandardTraceHeaderFields()) {  // any other 4-byte field
    if (f.size == 4 && f.name == text) return ShotKey{std::string(text), f.byte};
  }
  if (absl::StartsWith(text, "byte:")) {
    int byte = 0;
    if (absl::SimpleAtoi(text.substr(5), &byte) && byte >= 1 && byte <= 237) {
      return ShotKey{std::string(text), byte};
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "shot key '", text, "': byte:N needs N from 1 to 237 (a 4-byte field inside the "
        "240-byte trace header)"));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown shot key '", text,
      "' (expected field_record, energy_source_point, inline, crossline, another 4-byte "
      "standard field by name, source_xy or byte:N)"));
}

}  // namespace shotstream::segy

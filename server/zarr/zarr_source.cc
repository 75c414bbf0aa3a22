#include "server/zarr/zarr_source.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <memory>
#include <numeric>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "segy/trace_header.h"
#include "server/source/column_headers.h"
#include "server/source/keyed_catalog.h"
#include "server/source/trace_file_source.h"
#include "server/zarr/chunk_cache.h"
#include "server/zarr/zarr_array.h"

namespace shotstream::zarr {
namespace {

using json = nlohmann::json;

constexpr char kFieldRecord[] = "field_record";

// The SEG-Y trace header fields by the names of TGS's segy library (MDIO's `headers`
// records use them): 1-based byte and size.
struct NamedField {
  const char* name;
  int byte;
  int size;
};
constexpr NamedField kSegyLibraryFields[] = {
    {"trace_seq_num_line", 1, 4}, {"trace_seq_num_reel", 5, 4},
    {"orig_field_record_num", 9, 4}, {"trace_num_orig_record", 13, 4},
    {"energy_source_point_num", 17, 4}, {"ensemble_num", 21, 4},
    {"trace_num_ensemble", 25, 4}, {"trace_id_code", 29, 2},
    {"vertically_summed_traces", 31, 2}, {"horizontally_stacked_traces", 33, 2},
    {"data_use", 35, 2}, {"source_to_receiver_distance", 37, 4},
    {"receiver_group_elevation", 41, 4}, {"source_surface_elevation", 45, 4},
    {"source_depth_below_surface", 49, 4}, {"receiver_datum_elevation", 53, 4},
    {"source_datum_elevation", 57, 4}, {"source_water_depth", 61, 4},
    {"receiver_water_depth", 65, 4}, {"elevation_depth_scalar", 69, 2},
    {"coordinate_scalar", 71, 2}, {"source_coord_x", 73, 4}, {"source_coord_y", 77, 4},
    {"group_coord_x", 81, 4}, {"group_coord_y", 85, 4}, {"coordinate_unit", 89, 2},
    {"weathering_velocity", 91, 2}, {"subweathering_velocity", 93, 2},
    {"source_uphole_time", 95, 2}, {"group_uphole_time", 97, 2},
    {"source_static_correction", 99, 2}, {"receiver_static_correction", 101, 2},
    {"total_static_applied", 103, 2}, {"lag_time_a", 105, 2}, {"lag_time_b", 107, 2},
    {"delay_recording_time", 109, 2}, {"mute_time_start", 111, 2}, {"mute_time_end", 113, 2},
    {"samples_per_trace", 115, 2}, {"sample_interval", 117, 2},
    {"instrument_gain_type", 119, 2}, {"instrument_gain_const", 121, 2},
    {"instrument_gain_initial", 123, 2}, {"correlated_data", 125, 2},
    {"sweep_freq_start", 127, 2}, {"sweep_freq_end", 129, 2}, {"sweep_length", 131, 2},
    {"sweep_type", 133, 2}, {"sweep_taper_start", 135, 2}, {"sweep_taper_end", 137, 2},
    {"taper_type", 139, 2}, {"alias_filter_freq", 141, 2}, {"alias_filter_slope", 143, 2},
    {"notch_filter_freq", 145, 2}, {"notch_filter_slope", 147, 2}, {"low_cut_freq", 149, 2},
    {"high_cut_freq", 151, 2}, {"low_cut_slope", 153, 2}, {"high_cut_slope", 155, 2},
    {"year_recorded", 157, 2}, {"day_of_year", 159, 2}, {"hour_of_day", 161, 2},
    {"minute_of_hour", 163, 2}, {"second_of_minute", 165, 2}, {"time_basis_code", 167, 2},
    {"trace_weighting_factor", 169, 2}, {"group_num_roll_switch", 171, 2},
    {"group_num_first_trace", 173, 2}, {"group_num_last_trace", 175, 2},
    {"gap_size", 177, 2}, {"taper_overtravel", 179, 2}, {"cdp_x", 181, 4}, {"cdp_y", 185, 4},
    {"inline", 189, 4}, {"crossline", 193, 4}, {"shot_point", 197, 4},
    {"shot_point_scalar", 201, 2}, {"trace_value_unit", 203, 2},
    {"transduction_const_mantissa", 205, 4}, {"transduction_const_exponent", 209, 2},
    {"transduction_unit", 211, 2}, {"device_trace_id", 213, 2}, {"times_scalar", 215, 2},
    {"source_type_orientation", 217, 2}, {"source_energy_dir_mantissa", 219, 4},
    {"source_energy_dir_exponent", 223, 2}, {"source_measurement_mantissa", 225, 4},
    {"source_measurement_exponent", 229, 2}, {"source_measurement_unit", 231, 2},
};

// MDIO's coordinate names for what this project calls source_x ...
std::string ColumnName(const std::string& name) {
  static const std::pair<const char*, const char*> kNames[] = {
      {"source_coord_x", "source_x"}, {"source_coord_y", "source_y"},
      {"group_coord_x", "group_x"},   {"group_coord_y", "group_y"},
      {"orig_field_record_num", kFieldRecord}};
  for (const auto& [mdio, ours] : kNames) {
    if (name == mdio) return ours;
  }
  return name;
}

int FormatCode(const Scalar& s) {
  switch (s.kind) {
    case ScalarKind::kFloat: return s.size == 4 ? 5 : 6;
    case ScalarKind::kInt: return s.size == 1 ? 8 : s.size == 2 ? 3 : s.size == 4 ? 2 : 9;
    case ScalarKind::kUInt: return s.size == 1 ? 16 : s.size == 2 ? 11 : s.size == 4 ? 10 : 12;
    case ScalarKind::kBool: return 16;
  }
  return 5;
}

json ParseAttrs(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  return j.is_object() ? j : json::object();
}

// A store opened: its arrays and what they say of every trace.
struct Store {
  std::string path;
  std::unique_ptr<ZarrArray> data;
  std::string data_name;  // inside the store ("amplitude"; "" for the store itself)
  std::vector<uint64_t> spatial;  // the data's shape less its last axis
  uint64_t n_flat = 0;            // traces, live or not: the product of `spatial`
  uint64_t traces_per_shot = 0;   // rank >= 3: the product of spatial[1:]
  std::vector<int64_t> shot_ids;  // rank >= 3: per index of the first axis
  std::string ids_from;           // where shot_ids came from, for the catalog's origin
  std::vector<uint8_t> live;      // per flat trace; empty: all live
  std::vector<uint8_t> raw;       // n_flat x 240: big-endian SEG-Y headers from `headers`
  source::HeaderColumns columns;  // per flat trace
  std::vector<source::ColumnPlace> places;  // the columns' SEG-Y places
  std::vector<std::unique_ptr<ZarrArray>> others;  // read at open: their metadata is checked
  double sample_interval_us = 0;
  std::string interval_from;
  std::vector<std::string> notes;
};

absl::StatusOr<std::unique_ptr<ZarrArray>> OpenIn(env::Env* env, const std::string& store,
                                                  const std::string& name) {
  const std::string dir = name.empty() ? store : store + "/" + name;
  if (!IsZarrNode(dir, env)) return absl::NotFoundError(absl::StrCat(dir, ": no such array"));
  return ZarrArray::Open(dir, env);
}

// Every element of `a` as a double (a scalar array).
absl::StatusOr<std::vector<double>> Values(const ZarrArray& a) {
  if (!a.dtype().fields.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(a.dir(), ": records, not numbers"));
  }
  SS_ASSIGN_OR_RETURN(const std::vector<uint8_t> raw, a.ReadAll());
  const size_t n = raw.size() / a.dtype().size;
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = ScalarValue(raw.data() + i * a.dtype().size, a.dtype().scalar);
  return out;
}

// Widens a per-shot column (one value per index of the first axis) to one per flat trace.
std::vector<double> PerTrace(const std::vector<double>& v, const Store& s) {
  if (v.size() == s.n_flat) return v;
  std::vector<double> out(s.n_flat);
  for (uint64_t t = 0; t < s.n_flat; ++t) out[t] = v[t / s.traces_per_shot];
  return out;
}

// The JSON in the file at `path`, or nullopt where there is no such file.
std::optional<json> ReadJsonIfAny(env::Env* env, const std::string& path) {
  absl::StatusOr<std::string> text = env::ReadFileToString(env, path);
  if (!text.ok()) return std::nullopt;
  return json::parse(*text, nullptr, /*allow_exceptions=*/false);
}

bool IsArray(env::Env* env, const std::string& dir) {
  if (env->Stat(dir + "/.zarray").ok()) return true;
  const std::optional<json> j = ReadJsonIfAny(env, dir + "/zarr.json");
  return j.has_value() && j->is_object() && j->value("node_type", "") == "array";
}

absl::StatusOr<std::string> ArrayNameOf(env::Env* env, const std::string& store,
                                        const json& attrs, const std::string& asked) {
  if (!asked.empty()) return std::string(absl::StripPrefix(asked, "/"));
  if (IsArray(env, store)) return std::string();  // the store is the array
  std::vector<std::string> tried;
  if (attrs.contains("attributes") && attrs["attributes"].is_object() &&
      attrs["attributes"].contains("defaultVariableName")) {
    tried.push_back(attrs["attributes"]["defaultVariableName"].get<std::string>());
  }
  tried.push_back("amplitude");
  tried.push_back("data");
  for (const std::string& name : tried) {
    if (IsZarrNode(store + "/" + name, env)) return name;
  }
  return absl::FailedPreconditionError(absl::StrCat(
      store, ": a Zarr group without a samples array (tried ", absl::StrJoin(tried, ", "),
      "; name it with array_path)"));
}

// The attributes of the node (array or group) at `dir`, whatever its data type.
json NodeAttrs(env::Env* env, const std::string& dir) {
  if (const std::optional<json> j = ReadJsonIfAny(env, dir + "/zarr.json")) {
    return j->is_object() && j->contains("attributes") ? (*j)["attributes"] : json::object();
  }
  const std::optional<json> j = ReadJsonIfAny(env, dir + "/.zattrs");
  return j.has_value() && j->is_object() ? *j : json::object();
}

// The names in `dir` that are Zarr arrays or groups, sorted (none where `dir` is not).
std::vector<std::string> ZarrNodesIn(env::Env* env, const std::string& dir) {
  std::vector<std::string> nodes;
  absl::StatusOr<std::vector<std::string>> names = env->List(dir);
  if (!names.ok()) return nodes;
  const std::string prefix = absl::EndsWith(dir, "/") ? dir : dir + "/";
  for (std::string& name : *names) {
    if (IsZarrNode(prefix + name, env)) nodes.push_back(std::move(name));
  }
  return nodes;
}

absl::StatusOr<json> GroupAttrs(env::Env* env, const std::string& store) {
  for (const char* name : {"/zarr.json", "/.zattrs"}) {
    std::optional<json> read = ReadJsonIfAny(env, store + name);
    if (!read.has_value()) continue;
    json j = *std::move(read);
    if (!j.is_object()) {
      return absl::FailedPreconditionError(absl::StrCat(store, name, ": not a JSON object"));
    }
    return std::string(name) == "/zarr.json" ? j.value("attributes", json::object()) : j;
  }
  return json::object();
}

absl::StatusOr<Store> OpenStore(const source::SourceSpec& spec, const std::string& path) {
  env::Env* const env = spec.env != nullptr ? spec.env : env::Env::Default();
  Store s;
  s.path = path;
  if (!IsZarrNode(path, env)) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": not a Zarr store (no .zarray, .zgroup or zarr.json in it)"));
  }
  SS_ASSIGN_OR_RETURN(const json attrs, GroupAttrs(env, path));
  SS_ASSIGN_OR_RETURN(s.data_name, ArrayNameOf(env, path, attrs, spec.array_path));
  SS_ASSIGN_OR_RETURN(s.data, OpenIn(env, path, s.data_name));
  const ZarrArray& d = *s.data;
  const std::string what = absl::StrCat(path, s.data_name.empty() ? "" : "/", s.data_name);
  if (!d.dtype().fields.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(what, ": records are not samples"));
  }
  if (d.shape().size() < 2) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, ": shape ", json(d.shape()).dump(),
        "; samples are [shots, traces..., samples] or [traces, samples]"));
  }
  s.notes.push_back(absl::StrCat("read: ", d.Describe()));
  s.spatial.assign(d.shape().begin(), d.shape().end() - 1);
  s.n_flat = std::accumulate(s.spatial.begin(), s.spatial.end(), uint64_t{1},
                             std::multiplies<uint64_t>());
  s.traces_per_shot = s.spatial.size() >= 2 ? s.n_flat / std::max<uint64_t>(s.spatial[0], 1) : 0;
  const std::vector<std::string>& dims = d.dimension_names();
  const json data_attrs = ParseAttrs(d.attributes());

  // Arrays beside the samples (in a group only).
  auto beside = [&](const std::string& name) -> absl::StatusOr<std::unique_ptr<ZarrArray>> {
    if (s.data_name.empty() || name.empty()) return absl::NotFoundError("none");
    const size_t slash = s.data_name.rfind('/');
    const std::string parent = slash == std::string::npos ? "" : s.data_name.substr(0, slash + 1);
    return OpenIn(env, path, parent + name);
  };
  auto shape_is = [](const ZarrArray& a, const std::vector<uint64_t>& shape) {
    return a.shape() == shape;
  };

  // Shot ids: the first dimension's coordinate, or shot_ids.
  if (s.spatial.size() >= 2) {
    for (const std::string& name : {dims.empty() ? std::string() : dims[0], std::string("shot_ids")}) {
      auto a = beside(name);
      if (!a.ok()) continue;
      if (!shape_is(**a, {s.spatial[0]})) continue;
      SS_ASSIGN_OR_RETURN(const std::vector<double> ids, Values(**a));
      for (size_t i = 0; i < ids.size(); ++i) {
        SS_ASSIGN_OR_RETURN(const int64_t id,
                            source::ShotIdOf(ids[i], absl::StrCat((*a)->dir(), "[", i, "]")));
        s.shot_ids.push_back(id);
      }
      s.ids_from = name;
      s.others.push_back(std::move(*a));
      break;
    }
  }
  // Live traces.
  if (auto m = beside("trace_mask"); m.ok() && shape_is(**m, s.spatial)) {
    SS_ASSIGN_OR_RETURN(s.live, (*m)->ReadAll());
    if ((*m)->dtype().size != 1) {
      return absl::FailedPreconditionError(absl::StrCat((*m)->dir(), ": a mask of bools"));
    }
    s.others.push_back(std::move(*m));
  }
  // Headers: a structured array (SEG-Y fields), or a group of columns.
  if (auto h = beside("headers"); h.ok() && !(*h)->dtype().fields.empty()) {
    const ZarrArray& ha = **h;
    if (!shape_is(ha, s.spatial)) {
      return absl::FailedPreconditionError(absl::StrCat(
          ha.dir(), ": shape ", json(ha.shape()).dump(), ", not the traces' ",
          json(s.spatial).dump()));
    }
    SS_ASSIGN_OR_RETURN(const std::vector<uint8_t> records, ha.ReadAll());
    struct Place {
      size_t offset;
      Scalar type;
      int byte, size;
    };
    std::vector<Place> places;
    for (const DataType::Field& f : ha.dtype().fields) {
      for (const NamedField& nf : kSegyLibraryFields) {
        if (f.name == nf.name) places.push_back({f.offset, f.type, nf.byte, nf.size});
      }
    }
    s.raw.assign(s.n_flat * segy::kTraceHeaderBytes, 0);
    for (uint64_t t = 0; t < s.n_flat; ++t) {
      const uint8_t* rec = records.data() + t * ha.dtype().size;
      uint8_t* dst = s.raw.data() + t * segy::kTraceHeaderBytes;
      for (const Place& p : places) {
        source::PutBigEndianField(dst, p.byte, p.size, ScalarValue(rec + p.offset, p.type));
      }
    }
    s.notes.push_back(absl::StrCat("headers: ", places.size(), " SEG-Y fields of ",
                                   ha.dtype().fields.size(), " in ", ha.dir()));
    s.others.push_back(std::move(*h));
  } else if (!s.data_name.empty()) {
    // headers/NAME arrays, one value per trace (or per shot).
    const size_t slash = s.data_name.rfind('/');
    const std::string group = path + "/" +
                              (slash == std::string::npos ? "" : s.data_name.substr(0, slash + 1)) +
                              "headers";
    const std::vector<std::string> names =
        IsZarrNode(group, env) ? ZarrNodesIn(env, group) : std::vector<std::string>();
    for (const std::string& name : names) {
      SS_ASSIGN_OR_RETURN(std::unique_ptr<ZarrArray> a, ZarrArray::Open(group + "/" + name, env));
      const bool per_trace = shape_is(*a, s.spatial) || shape_is(*a, {s.n_flat});
      const bool per_shot = s.spatial.size() >= 2 && shape_is(*a, {s.spatial[0]});
      if (!per_trace && !per_shot) {
        return absl::FailedPreconditionError(absl::StrCat(
            a->dir(), ": shape ", json(a->shape()).dump(), "; a header column has one value per "
            "trace ", json(s.spatial).dump()));
      }
      SS_ASSIGN_OR_RETURN(std::vector<double> v, Values(*a));
      s.columns.emplace_back(ColumnName(name), PerTrace(v, s));
      s.others.push_back(std::move(a));
    }
  }
  // Coordinates over the traces' axes (MDIO's source_coord_x, group_coord_x, ...), where no
  // column of that name came already.
  if (s.raw.empty() && !dims.empty() && !s.data_name.empty()) {
    const std::string parent_dir = path + "/" + (s.data_name.rfind('/') == std::string::npos
                                                     ? ""
                                                     : s.data_name.substr(0, s.data_name.rfind('/') + 1));
    for (const std::string& name : ZarrNodesIn(env, parent_dir)) {
      if (name == s.data_name || name == "trace_mask" || name == "headers") continue;
      if (std::find(dims.begin(), dims.end(), name) != dims.end()) continue;  // a dimension's
      auto a = ZarrArray::Open(parent_dir + name, env);
      if (!a.ok() || !(*a)->dtype().fields.empty() || (*a)->shape().empty()) continue;
      const std::vector<std::string>& adims = (*a)->dimension_names();
      if (adims.empty() || adims.size() > s.spatial.size()) continue;
      if (!std::equal(adims.begin(), adims.end(), dims.begin())) continue;
      const bool per_trace = adims.size() == s.spatial.size();
      if (!per_trace && adims.size() != 1) continue;
      const std::string column = ColumnName(name);
      if (std::any_of(s.columns.begin(), s.columns.end(),
                      [&](const auto& c) { return c.first == column; })) {
        continue;
      }
      SS_ASSIGN_OR_RETURN(std::vector<double> v, Values(**a));
      if (!per_trace && s.spatial.size() < 2) continue;
      s.columns.emplace_back(column, PerTrace(v, s));
      s.others.push_back(std::move(*a));
    }
  }
  // The sample interval: an attribute, MDIO's SEG-Y binary header, the vertical
  // coordinate (MDIO keeps milliseconds), or the setting.
  auto number = [](const json& j, const char* key) -> double {
    return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0;
  };
  if (double v = number(data_attrs, "sample_interval_us"); v > 0) {
    s.sample_interval_us = v;
    s.interval_from = "the samples array's sample_interval_us attribute";
  } else if (double g = number(attrs, "sample_interval_us"); g > 0) {
    s.sample_interval_us = g;
    s.interval_from = "the store's sample_interval_us attribute";
  }
  if (s.sample_interval_us == 0) {
    // Its attributes only (the array itself is a 0-d string).
    const size_t slash = s.data_name.rfind('/');
    const std::string fh = path + "/" +
                           (slash == std::string::npos ? "" : s.data_name.substr(0, slash + 1)) +
                           "segy_file_header";
    if (!s.data_name.empty() && IsZarrNode(fh, env)) {
      const json a = NodeAttrs(env, fh);
      if (a.contains("binaryHeader") && a["binaryHeader"].is_object()) {
        if (double v = number(a["binaryHeader"], "sample_interval"); v > 0) {
          s.sample_interval_us = v;
          s.interval_from = "segy_file_header's binaryHeader.sample_interval";
        }
      }
    }
  }
  if (s.sample_interval_us == 0 && dims.size() == d.shape().size() && !dims.back().empty()) {
    if (auto v = beside(dims.back()); v.ok() && shape_is(**v, {d.shape().back()}) &&
                                       d.shape().back() >= 2) {
      SS_ASSIGN_OR_RETURN(const std::vector<double> t, Values(**v));
      const json a = ParseAttrs((*v)->attributes());
      std::string unit = "ms";
      if (a.contains("unitsV1") && a["unitsV1"].is_object()) {
        for (auto it = a["unitsV1"].begin(); it != a["unitsV1"].end(); ++it) {
          if (it.value().is_string()) unit = it.value().get<std::string>();
        }
      }
      const double scale = unit == "s" ? 1e6 : unit == "us" || unit == "µs" ? 1 : 1000;
      if (t[1] > t[0]) {
        s.sample_interval_us = (t[1] - t[0]) * scale;
        s.interval_from = absl::StrCat("the ", dims.back(), " coordinate (", unit, ")");
      }
      s.others.push_back(std::move(*v));
    }
  }
  if (s.sample_interval_us == 0 && spec.sample_interval_us > 0) {
    s.sample_interval_us = spec.sample_interval_us;
    s.interval_from = "the setting sample_interval_us";
  }
  s.places = source::PlacesOf(s.columns);
  if (s.sample_interval_us == 0) {
    s.notes.push_back("no sample interval in the store and none set (sample_interval_us): 0");
  } else {
    s.notes.push_back(absl::StrCat("sample interval ", s.sample_interval_us, " us from ",
                                   s.interval_from));
  }
  return s;
}

class ZarrSource final : public source::Source {
 public:
  static absl::StatusOr<std::unique_ptr<source::Source>> Open(const source::SourceSpec& spec) {
    std::unique_ptr<ZarrSource> s(new ZarrSource());
    SS_RETURN_IF_ERROR(s->Load(spec));
    return std::unique_ptr<source::Source>(std::move(s));
  }

  const source::SourceInfo& info() const override { return info_; }
  const catalog::Catalog& catalog() const override { return catalog_; }
  absl::Status CheckUnchanged(uint32_t file_id) const override {
    const Store& s = stores_[file_id];
    SS_RETURN_IF_ERROR(s.data->CheckUnchanged());
    for (const auto& a : s.others) SS_RETURN_IF_ERROR(a->CheckUnchanged());
    return absl::OkStatus();
  }
  const std::string& path(uint32_t file_id) const override { return stores_[file_id].path; }
  std::string Where(const io::TraceRef& t, int) const override {
    const Store& s = stores_[t.file_id];
    std::vector<uint64_t> idx(s.spatial.size());
    uint64_t rest = t.offset;
    for (size_t d = s.spatial.size(); d-- > 0;) {
      idx[d] = rest % s.spatial[d];
      rest /= s.spatial[d];
    }
    return absl::StrCat("trace [", absl::StrJoin(idx, ", "), "] of ",
                        s.data_name.empty() ? "the array" : s.data_name);
  }
  std::optional<io::StoredForm> FormOf(absl::Span<const io::TraceRef>) const override {
    return std::nullopt;  // decoded from chunks: never sent as stored
  }

  absl::StatusOr<source::ReadResult> Read(const source::TraceRead& read) const override {
    if (read.form != source::SampleForm::kFloat32) {
      return absl::InternalError("Zarr samples are read as float32 only");
    }
    const uint32_t start = read.range.start, end = read.range.start + read.range.count;
    const absl::Span<const io::TraceRef> traces = read.traces;
    // The traces by the chunk (of the traces' axes) that holds them, then in read order.
    struct Place {
      uint32_t store;
      uint64_t chunk;  // linear index of the chunk over the traces' axes
      uint64_t row;    // the trace's row inside that chunk
      size_t i;        // its place in the read
    };
    std::vector<Place> places(traces.size());
    for (size_t i = 0; i < traces.size(); ++i) {
      const Store& s = stores_[traces[i].file_id];
      const std::vector<uint64_t>& rc = s.data->read_chunk();
      uint64_t rest = traces[i].offset, chunk = 0, row = 0, cstride = 1, rstride = 1;
      for (size_t d = s.spatial.size(); d-- > 0;) {
        const uint64_t idx = rest % s.spatial[d];
        rest /= s.spatial[d];
        chunk += (idx / rc[d]) * cstride;
        row += (idx % rc[d]) * rstride;
        cstride *= (s.spatial[d] + rc[d] - 1) / rc[d];
        rstride *= rc[d];
      }
      places[i] = {traces[i].file_id, chunk, row, i};
    }
    std::stable_sort(places.begin(), places.end(), [](const Place& a, const Place& b) {
      return a.store != b.store ? a.store < b.store : a.chunk < b.chunk;
    });
    for (size_t p = 0; p < places.size();) {
      size_t q = p;
      while (q < places.size() && places[q].store == places[p].store &&
             places[q].chunk == places[p].chunk) {
        ++q;
      }
      const Store& s = stores_[places[p].store];
      const ZarrArray& a = *s.data;
      const std::vector<uint64_t>& rc = a.read_chunk();
      const uint64_t ct = rc.back();
      std::vector<uint64_t> coords(rc.size());
      uint64_t rest = places[p].chunk;
      for (size_t d = s.spatial.size(); d-- > 0;) {
        const uint64_t n = (s.spatial[d] + rc[d] - 1) / rc[d];
        coords[d] = rest % n;
        rest /= n;
      }
      for (uint64_t k = start / ct; k * ct < end; ++k) {
        coords.back() = k;
        SS_ASSIGN_OR_RETURN(std::shared_ptr<const ChunkData> chunk,
                            a.Chunk(coords, cache_.get(), read.stats));
        const uint64_t s0 = std::max<uint64_t>(start, k * ct);
        const uint64_t s1 = std::min<uint64_t>(end, (k + 1) * ct);
        const size_t elem = a.dtype().size;
        for (size_t r = p; r < q; ++r) {
          const uint8_t* src = chunk->bytes.data() + (places[r].row * ct + (s0 - k * ct)) * elem;
          float* dst = reinterpret_cast<float*>(read.dst[places[r].i]) + (s0 - start);
          ToFloat32(src, a.dtype().scalar, s1 - s0, dst);
        }
      }
      p = q;
    }
    const uint64_t trace_bytes = uint64_t{read.range.count} * sizeof(float);
    if (read.stats != nullptr) read.stats->bytes_wanted += traces.size() * trace_bytes;
    source::TakeTraceCrcs(read);
    source::ReadResult out;
    out.headers = std::make_unique<source::ColumnTraceHeaders>(
        [this](uint32_t f) {
          const Store& s = stores_[f];
          source::FileColumns c;
          c.columns = &s.columns;
          c.places = &s.places;
          c.raw = &s.raw;
          c.traces_per_shot = s.traces_per_shot;
          return c;
        },
        &info_, read);
    return out;
  }

 private:
  absl::Status Load(const source::SourceSpec& spec) {
    for (const std::string& path : spec.paths) {
      SS_ASSIGN_OR_RETURN(Store s, OpenStore(spec, path));
      if (!stores_.empty()) {
        const Store& first = stores_[0];
        if (s.spatial.size() != first.spatial.size() ||
            s.data->shape().back() != first.data->shape().back() ||
            s.raw.empty() != first.raw.empty()) {
          return absl::FailedPreconditionError(absl::StrCat(
              path, ": ", json(s.data->shape()).dump(), s.raw.empty() ? "" : " with headers",
              " does not match ", first.path, "'s ", json(first.data->shape()).dump(),
              first.raw.empty() ? "" : " with headers",
              "; the stores of a dataset share the rank, the sample count and the headers"));
        }
      } else {
        info_.n_samples = static_cast<uint32_t>(s.data->shape().back());
        info_.sample_interval_us = s.sample_interval_us;
        info_.sample_format = FormatCode(s.data->dtype().scalar);
      }
      for (const std::string& note : s.notes) {
        if (std::find(info_.notes.begin(), info_.notes.end(), note) == info_.notes.end()) {
          info_.notes.push_back(note);
        }
      }
      stores_.push_back(std::move(s));
    }
    info_.format = "zarr";
    info_.n_files = stores_.size();
    info_.read_by = "zarr chunks";
    if (!stores_[0].raw.empty()) {
      info_.header_fields = segy::ServableHeaderNames();
      info_.any_standard_field = true;
    } else {
      source::AddColumnFields(stores_[0].columns, &info_.header_fields);
      for (const Store& s : stores_) {
        for (const auto& column : stores_[0].columns) {
          const std::string& name = column.first;
          const bool has = std::any_of(s.columns.begin(), s.columns.end(),
                                       [&](const auto& c) { return c.first == name; });
          if (!has) {
            return absl::FailedPreconditionError(absl::StrCat(
                s.path, " has no header column '", name, "' that ", stores_[0].path,
                " has; the stores of a dataset share them"));
          }
        }
      }
    }
    for (const Store& s : stores_) info_.file_bytes += s.n_flat * s.data->shape().back() * s.data->dtype().size;
    cache_ = std::make_unique<ChunkCache>(kChunkCacheBytes);
    return stores_[0].spatial.size() >= 2 ? CatalogByPosition() : CatalogByColumn(spec.shot_key);
  }

  absl::Status CatalogByPosition() {
    struct Shot {
      int64_t id;
      uint32_t store;
      uint64_t index;
    };
    std::vector<Shot> shots;
    int64_t next_id = 1;
    for (uint32_t f = 0; f < stores_.size(); ++f) {
      const Store& s = stores_[f];
      for (uint64_t i = 0; i < s.spatial[0]; ++i) {
        shots.push_back({s.shot_ids.empty() ? next_id++ : s.shot_ids[i], f, i});
      }
    }
    std::stable_sort(shots.begin(), shots.end(),
                     [](const Shot& a, const Shot& b) { return a.id < b.id; });
    catalog::CatalogBuilder builder(std::vector<catalog::FileGeometry>(stores_.size()));
    uint64_t dead = 0;
    for (size_t i = 0; i < shots.size(); ++i) {
      const Shot& shot = shots[i];
      if (i > 0 && shots[i - 1].id == shot.id) {
        return absl::FailedPreconditionError(absl::StrCat(
            "shot id ", shot.id, " is given to two shots (", stores_[shot.store].path, ")"));
      }
      const Store& s = stores_[shot.store];
      const uint64_t first = shot.index * s.traces_per_shot;
      if (s.live.empty()) {
        builder.Add(shot.id, shot.store, first, s.traces_per_shot);
        continue;
      }
      for (uint64_t flat = first; flat < first + s.traces_per_shot; ++flat) {
        if (s.live[flat] == 0) {
          ++dead;
        } else {
          builder.Add(shot.id, shot.store, flat);
        }
      }
    }
    catalog_ = std::move(builder).Finish();
    const Store& s0 = stores_[0];
    info_.catalog_origin =
        absl::StrCat("built from the shape", s0.ids_from.empty() ? "" : " and " + s0.ids_from,
                     s0.live.empty() ? "" : absl::StrCat(", ", dead, " dead traces left out by trace_mask"));
    return absl::OkStatus();
  }

  absl::Status CatalogByColumn(const std::string& key) {
    std::vector<source::KeyedTrace> rows;
    std::optional<segy::HeaderSelector> field;
    if (!stores_[0].raw.empty()) {
      SS_ASSIGN_OR_RETURN(segy::HeaderSelector h, segy::ResolveHeader(key));
      field = h;
    }
    for (uint32_t f = 0; f < stores_.size(); ++f) {
      const Store& s = stores_[f];
      const std::vector<double>* column = nullptr;
      for (const auto& [name, values] : s.columns) {
        if (name == key) column = &values;
      }
      if (column == nullptr && !field.has_value()) {
        return absl::FailedPreconditionError(absl::StrCat(
            s.path, ": samples [traces, samples] need a header column headers/", key,
            " to group traces into shots (or give [shots, traces, samples])"));
      }
      for (uint64_t r = 0; r < s.n_flat; ++r) {
        if (!s.live.empty() && s.live[r] == 0) continue;
        const double v = column != nullptr
                             ? (*column)[r]
                             : segy::HeaderValue(*field, s.raw.data() + r * segy::kTraceHeaderBytes,
                                                 segy::ByteOrder::kBigEndian);
        SS_ASSIGN_OR_RETURN(const int64_t id,
                            source::ShotIdOf(v, absl::StrCat(s.path, ": headers/", key, "[", r, "]")));
        rows.push_back({id, {f, r}});
      }
    }
    catalog_ = source::CatalogByKey(rows);
    info_.catalog_origin = absl::StrCat("built from headers/", key);
    return absl::OkStatus();
  }

 public:
  // Shots of [traces, samples] arrays are keyed by a header column's name.
  static absl::Status CheckKey(const std::string& key) {
    return source::CheckColumnKey(key, "Zarr");
  }

 private:
  std::vector<Store> stores_;
  std::unique_ptr<ChunkCache> cache_;
  catalog::Catalog catalog_;
  source::SourceInfo info_;
};

}  // namespace

const source::Format& ZarrFormat() {
  static const source::Format format{
      "zarr",
      /*claims=*/
      [](const std::string& path, absl::Span<const uint8_t>) { return IsZarrNode(path); },
      /*suggested_by=*/
      [](absl::string_view pattern) {
        return absl::EndsWith(pattern, ".zarr") || absl::EndsWith(pattern, ".zarr/") ||
               absl::EndsWith(pattern, ".mdio") || absl::EndsWith(pattern, ".mdio/");
      },
      &ZarrSource::CheckKey,
      &ZarrSource::Open,
      /*check_file=*/
      [](const source::SourceSpec& spec, const std::string& path) {
        return OpenStore(spec, path).status();
      },
  };
  return format;
}

}  // namespace shotstream::zarr

#include "client/segy_writer.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "segy/sample_format.h"
#include "segy/trace_header.h"

namespace shotstream::client {
namespace {

void Put(uint8_t* p, int size, int64_t v) {
  for (int i = 0; i < size; ++i) p[i] = static_cast<uint8_t>(v >> (8 * (size - 1 - i)));
}

// ASCII -> EBCDIC (cp037) for the characters a textual header line uses.
uint8_t ToEbcdic(char c) {
  if (c >= 'a' && c <= 'i') return 0x81 + (c - 'a');
  if (c >= 'j' && c <= 'r') return 0x91 + (c - 'j');
  if (c >= 's' && c <= 'z') return 0xA2 + (c - 's');
  if (c >= 'A' && c <= 'I') return 0xC1 + (c - 'A');
  if (c >= 'J' && c <= 'R') return 0xD1 + (c - 'J');
  if (c >= 'S' && c <= 'Z') return 0xE2 + (c - 'S');
  if (c >= '0' && c <= '9') return 0xF0 + (c - '0');
  switch (c) {
    case '.': return 0x4B;
    case ':': return 0x7A;
    case '-': return 0x60;
    case '_': return 0x6D;
    default: return 0x40;
  }
}

// The smallest scalar 10^k (k = 0..4) that makes every value an int32 exactly; returns
// the SEG-Y scalar to store (1, or -10^k to divide on reading).
int ChooseScalar(const std::vector<const std::vector<double>*>& columns) {
  for (int k = 0, m = 1; k <= 4; ++k, m *= 10) {
    bool ok = true;
    for (const auto* col : columns) {
      for (double v : *col) {
        const double s = v * m;
        ok &= std::fabs(s - std::nearbyint(s)) < 1e-6 * std::max(1.0, std::fabs(s)) &&
              std::fabs(s) < 2147483647.0;
      }
    }
    if (ok) return k == 0 ? 1 : -m;
  }
  return -10000;
}

}  // namespace

absl::Status WriteShotSegy(const std::string& path, const Shot& shot,
                           const SegyWriteOptions& options) {
  if (options.format != 1 && options.format != 5) {
    return absl::InvalidArgumentError(
        absl::StrCat("SEG-Y output format ", options.format, ": only 1 (IBM) or 5 (IEEE)"));
  }
  if (shot.n_samples > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("shot ", shot.shot_id, " has ", shot.n_samples,
                     " samples per trace; SEG-Y rev 1 holds at most 65535"));
  }
  std::vector<uint8_t> head(3600, 0x40);
  const std::string line1 = absl::StrFormat(
      "C 1 SHOTSTREAM SHOT %d: %u TRACES OF %u SAMPLES, DT %g US", shot.shot_id, shot.n_traces,
      shot.n_samples, shot.sample_interval_us);
  for (size_t i = 0; i < line1.size() && i < 80; ++i) head[i] = ToEbcdic(line1[i]);
  uint8_t* bin = head.data() + 3200;
  std::memset(bin, 0, 400);
  const int dt = static_cast<int>(std::lround(shot.sample_interval_us));
  Put(bin + 16, 2, dt);                 // 3217 interval
  Put(bin + 20, 2, shot.n_samples);     // 3221 samples
  Put(bin + 24, 2, options.format);     // 3225 format
  Put(bin + 300, 2, 0x0100);            // 3501 revision 1.0
  Put(bin + 302, 2, 1);                 // 3503 fixed-length traces

  // Scalars per trace group: coordinates (71-72) and elevations (69-70).
  std::vector<const std::vector<double>*> coords, elevs;
  struct Column {
    segy::HeaderSelector sel;
    const std::vector<double>* values;
  };
  std::vector<Column> columns;
  for (const auto& [name, values] : shot.headers) {
    auto sel = segy::ResolveHeader(name);
    if (!sel.ok()) return sel.status();
    if (values.size() != shot.n_traces) {
      return absl::InvalidArgumentError(absl::StrCat("header ", name, " has ", values.size(),
                                                     " values for ", shot.n_traces, " traces"));
    }
    if (sel->scale == segy::HeaderSelector::Scale::kCoordinate) coords.push_back(&values);
    if (sel->scale == segy::HeaderSelector::Scale::kElevation) elevs.push_back(&values);
    columns.push_back({*sel, &values});
  }
  const int coord_scalar = ChooseScalar(coords);
  const int elev_scalar = ChooseScalar(elevs);

  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    return absl::PermissionDeniedError(absl::StrCat(path, ": ", std::strerror(errno)));
  }
  bool ok = std::fwrite(head.data(), 1, head.size(), f) == head.size();
  std::vector<uint8_t> trace(240 + 4ull * shot.n_samples);
  const bool raw = !shot.trace_headers.empty();
  if (raw && shot.trace_headers.size() != uint64_t{shot.n_traces} * 240) {
    std::fclose(f);
    return absl::InvalidArgumentError(absl::StrCat("shot ", shot.shot_id, ": ",
                                                   shot.trace_headers.size(),
                                                   " bytes of trace headers for ",
                                                   shot.n_traces, " traces"));
  }
  for (uint32_t t = 0; t < shot.n_traces && ok; ++t) {
    if (raw) {
      // The source's trace header, every field as it was (the file's format is said in
      // the binary header alone).
      std::memcpy(trace.data(), shot.trace_headers.data() + uint64_t{t} * 240, 240);
      segy::EncodeSamplesBigEndian(shot.samples.data() + uint64_t{t} * shot.n_samples,
                                   shot.n_samples,
                                   static_cast<segy::SampleFormat>(options.format),
                                   trace.data() + 240);
      ok = std::fwrite(trace.data(), 1, trace.size(), f) == trace.size();
      continue;
    }
    std::memset(trace.data(), 0, 240);
    Put(&trace[0], 4, t + 1);             // trace sequence in line
    Put(&trace[4], 4, t + 1);             // trace sequence in file
    Put(&trace[8], 4, static_cast<int32_t>(shot.shot_id));
    Put(&trace[12], 4, t + 1);            // trace number in the field record
    Put(&trace[68], 2, elev_scalar);
    Put(&trace[70], 2, coord_scalar);
    Put(&trace[114], 2, shot.n_samples);
    Put(&trace[116], 2, dt);
    for (const Column& c : columns) {
      double v = (*c.values)[t];
      if (c.sel.scale == segy::HeaderSelector::Scale::kCoordinate && coord_scalar < 0) {
        v *= -coord_scalar;
      }
      if (c.sel.scale == segy::HeaderSelector::Scale::kElevation && elev_scalar < 0) {
        v *= -elev_scalar;
      }
      Put(&trace[c.sel.byte - 1], c.sel.size, static_cast<int64_t>(std::llround(v)));
    }
    segy::EncodeSamplesBigEndian(shot.samples.data() + uint64_t{t} * shot.n_samples,
                                 shot.n_samples, static_cast<segy::SampleFormat>(options.format),
                                 trace.data() + 240);
    ok = std::fwrite(trace.data(), 1, trace.size(), f) == trace.size();
  }
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) return absl::DataLossError(absl::StrCat(path, ": write failed"));
  return absl::OkStatus();
}

}  // namespace shotstream::client

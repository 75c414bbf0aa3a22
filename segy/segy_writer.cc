#include "segy/segy_writer.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "segy/sample_format.h"

namespace shotstream::segy {
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
    case '/': return 0x61;
    case ',': return 0x6B;
    case '(': return 0x4D;
    case ')': return 0x5D;
    case '+': return 0x4E;
    case '=': return 0x7E;
    default: return 0x40;
  }
}

// The SEG-Y scalars, in the order they are tried: 1, then dividing by 10..10000 (for
// fractions), then multiplying by 10..10000 (for values past a 4-byte integer).
constexpr int kScalars[] = {1, -10, -100, -1000, -10000, 10, 100, 1000, 10000};

// What `stored` with `scalar` reads back as (SEG-Y: negative divides).
double ReadBack(int64_t stored, int scalar) {
  return scalar < 0 ? static_cast<double>(stored) / -scalar
                    : static_cast<double>(stored) * scalar;
}

// `v` as the integer field holds it before rounding (SEG-Y: a negative scalar divides on
// reading, so the writer multiplies).
double Scaled(double v, int scalar) { return scalar < 0 ? v * -scalar : v / scalar; }

// Rounded half to even, as numpy and the reading side's float conversions do.
int64_t Stored(double v, int scalar) {
  return static_cast<int64_t>(std::nearbyint(Scaled(v, scalar)));
}

// The largest value a signed field of `size` bytes holds.
double FieldLimit(int size) { return std::ldexp(1.0, 8 * size - 1) - 1; }

// The scalar for one trace's values of a scaled group (`values`, each with its field's
// size): the first that stores every value exactly (within 1e-9 of its magnitude), else
// the one of least error among those that fit; 1 when none fits (the caller refuses).
int ChooseScalar(const std::vector<std::pair<double, int>>& values) {
  int best = 1;
  double best_error = INFINITY;
  for (int scalar : kScalars) {
    double worst = 0, tolerance = 0;
    bool fits = true;
    for (const auto& [v, size] : values) {
      if (!(std::fabs(Scaled(v, scalar)) <= FieldLimit(size))) {
        fits = false;
        break;
      }
      worst = std::max(worst, std::fabs(ReadBack(Stored(v, scalar), scalar) - v));
      tolerance = std::max(tolerance, 1e-9 * std::fabs(v));
    }
    if (!fits) continue;
    if (worst <= tolerance) return scalar;
    if (worst < best_error) {
      best = scalar;
      best_error = worst;
    }
  }
  return best;
}

}  // namespace

absl::Status CheckWritableFormat(int format) {
  if (format == 1 || format == 3 || format == 5) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "sample_format ", format, ": written are 5 (IEEE float32), 1 (IBM float) and 3 (int16)"));
}

int WrittenBytesPerSample(int format) { return format == 3 ? 2 : 4; }

std::string FileHeader(const std::vector<std::string>& lines, uint32_t n_samples,
                       double sample_interval_us, int format) {
  std::string head(3600, '\0');
  uint8_t* h = reinterpret_cast<uint8_t*>(&head[0]);
  std::memset(h, 0x40, 3200);
  for (size_t l = 0; l < 40; ++l) {
    const std::string line = l < lines.size()
                                 ? absl::StrCat("C", l + 1 < 10 ? " " : "", l + 1, " ", lines[l])
                                 : absl::StrCat("C", l + 1 < 10 ? " " : "", l + 1);
    for (size_t i = 0; i < line.size() && i < 80; ++i) h[80 * l + i] = ToEbcdic(line[i]);
  }
  uint8_t* bin = h + 3200;
  const int dt = static_cast<int>(std::lround(std::min(sample_interval_us, 65535.0)));
  Put(bin + 16, 2, dt);             // 3217 interval
  Put(bin + 20, 2, n_samples);      // 3221 samples
  Put(bin + 24, 2, format);         // 3225 format
  Put(bin + 300, 2, 0x0100);        // 3501 revision 1.0
  Put(bin + 302, 2, 1);             // 3503 fixed-length traces
  return head;
}

double EncodeTraceSamples(const float* src, size_t n, int format, uint8_t* dst) {
  double worst = 0;
  if (format == 3) {
    for (size_t i = 0; i < n; ++i) {
      const float v = src[i];
      const float r = std::isnan(v) ? 0.0f : std::min(32767.0f, std::max(-32767.0f, std::nearbyint(v)));
      const int16_t x = static_cast<int16_t>(r);
      worst = std::max(worst, std::isnan(v) ? INFINITY : std::fabs(double{v} - double{r}));
      dst[2 * i] = static_cast<uint8_t>(static_cast<uint16_t>(x) >> 8);
      dst[2 * i + 1] = static_cast<uint8_t>(x);
    }
    return worst;
  }
  EncodeSamplesBigEndian(src, n, static_cast<SampleFormat>(format), dst);
  if (format == 1) {
    for (size_t i = 0; i < n; ++i) {
      uint32_t w;
      std::memcpy(&w, dst + 4 * i, 4);
      const double back = IbmToFloat(__builtin_bswap32(w));
      if (std::isfinite(src[i])) worst = std::max(worst, std::fabs(back - double{src[i]}));
    }
  }
  return worst;
}

absl::StatusOr<double> PutTraceValues(const std::vector<TraceValue>& values, uint8_t* trace,
                                      size_t* worst) {
  *worst = 0;
  for (const TraceValue& tv : values) {
    if (!std::isfinite(tv.value)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "header ", tv.selector->name, " is ", tv.value,
          ", which a SEG-Y integer field cannot hold"));
    }
  }
  int scalars[2] = {1, 1};  // coordinates (bytes 71-72), elevations (69-70)
  std::vector<std::pair<double, int>> group;
  for (int g = 0; g < 2; ++g) {
    const auto scale = g == 0 ? HeaderSelector::Scale::kCoordinate
                              : HeaderSelector::Scale::kElevation;
    group.clear();
    for (const TraceValue& tv : values) {
      if (tv.selector->scale == scale) group.emplace_back(tv.value, tv.selector->size);
    }
    if (!group.empty()) scalars[g] = ChooseScalar(group);
  }
  Put(&trace[70], 2, scalars[0]);
  Put(&trace[68], 2, scalars[1]);
  double max_error = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    const HeaderSelector& sel = *values[i].selector;
    const double v = values[i].value;
    const int scalar = sel.scale == HeaderSelector::Scale::kCoordinate  ? scalars[0]
                       : sel.scale == HeaderSelector::Scale::kElevation ? scalars[1]
                                                                         : 1;
    if (!(std::fabs(Scaled(v, scalar)) <= FieldLimit(sel.size))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "header ", sel.name, " is ", v, ", past what its ", sel.size, "-byte field (bytes ",
          sel.byte, "-", sel.byte + sel.size - 1, ") holds",
          sel.scale == HeaderSelector::Scale::kNone
              ? absl::StrCat(" (+-", FieldLimit(sel.size), ")")
              : absl::StrCat(" with any SEG-Y scalar (+-", FieldLimit(sel.size), " x 10000)")));
    }
    const int64_t stored = Stored(v, scalar);
    Put(&trace[sel.byte - 1], sel.size, stored);
    const double error = std::fabs(ReadBack(stored, scalar) - v);
    if (error > max_error) {
      max_error = error;
      *worst = i;
    }
  }
  return max_error;
}

absl::StatusOr<ShotTraceHeaders> ShotTraceHeaders::Make(
    int64_t shot_id, uint32_t n_traces, uint32_t n_samples, double sample_interval_us,
    const std::vector<std::pair<std::string, std::vector<double>>>& headers) {
  ShotTraceHeaders h;
  h.shot_id_ = shot_id;
  h.n_samples_ = n_samples;
  h.interval_ = static_cast<int>(std::lround(std::min(sample_interval_us, 65535.0)));
  h.columns_.reserve(headers.size());
  for (const auto& [name, values] : headers) {
    auto sel = ResolveHeader(name);
    if (!sel.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("shot ", shot_id, ": header ", sel.status().message()));
    }
    if (values.size() != n_traces) {
      return absl::InvalidArgumentError(absl::StrCat("shot ", shot_id, ": header ", name, " has ",
                                                     values.size(), " values for ", n_traces,
                                                     " traces"));
    }
    sel->name = name;
    h.columns_.push_back({*std::move(sel), values});
  }
  // Every trace encoded once here, for its errors; Fill encodes it again into the file.
  uint8_t scratch[240];
  for (uint32_t t = 0; t < n_traces; ++t) {
    size_t worst;
    absl::StatusOr<double> error = PutTraceValues(h.TraceValues(t), scratch, &worst);
    if (!error.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("shot ", shot_id, ", trace ", t + 1, ": ", error.status().message()));
    }
    if (*error > h.max_error_) {
      const Column& c = h.columns_[worst];
      const HeaderSelector& sel = c.selector;
      h.max_error_ = *error;
      h.worst_ = absl::StrCat("shot ", shot_id, ", trace ", t + 1, ", ", sel.name, " ",
                              c.values[t], " stored as ",
                              HeaderValue(sel, scratch, ByteOrder::kBigEndian));
    }
  }
  return h;
}

std::vector<TraceValue> ShotTraceHeaders::TraceValues(uint32_t t) const {
  std::vector<TraceValue> out;
  out.reserve(columns_.size());
  for (const Column& c : columns_) out.push_back({&c.selector, c.values[t]});
  return out;
}

void ShotTraceHeaders::Fill(uint32_t t, uint64_t sequence, uint8_t* trace) const {
  std::memset(trace, 0, 240);
  Put(&trace[0], 4, static_cast<int64_t>(sequence));  // trace sequence in line
  Put(&trace[4], 4, static_cast<int64_t>(sequence));  // trace sequence in file
  Put(&trace[8], 4, static_cast<int32_t>(shot_id_));
  Put(&trace[12], 4, t + 1);  // trace number in the field record
  Put(&trace[114], 2, n_samples_);
  Put(&trace[116], 2, interval_);
  size_t worst;
  (void)PutTraceValues(TraceValues(t), trace, &worst);  // Make checked every trace
}

}  // namespace shotstream::segy

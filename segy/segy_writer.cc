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

absl::StatusOr<ShotTraceHeaders> ShotTraceHeaders::Make(
    int64_t shot_id, uint32_t n_traces, uint32_t n_samples, double sample_interval_us,
    const std::vector<std::pair<std::string, std::vector<double>>>& headers) {
  ShotTraceHeaders h;
  h.shot_id_ = shot_id;
  h.n_samples_ = n_samples;
  h.interval_ = static_cast<int>(std::lround(std::min(sample_interval_us, 65535.0)));
  std::vector<const std::vector<double>*> coords, elevs;
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
    h.columns_.push_back({*sel, values});
  }
  for (const Column& c : h.columns_) {
    if (c.selector.scale == HeaderSelector::Scale::kCoordinate) coords.push_back(&c.values);
    if (c.selector.scale == HeaderSelector::Scale::kElevation) elevs.push_back(&c.values);
  }
  h.coordinate_scalar_ = ChooseScalar(coords);
  h.elevation_scalar_ = ChooseScalar(elevs);
  return h;
}

void ShotTraceHeaders::Fill(uint32_t t, uint64_t sequence, uint8_t* trace) const {
  std::memset(trace, 0, 240);
  Put(&trace[0], 4, static_cast<int64_t>(sequence));  // trace sequence in line
  Put(&trace[4], 4, static_cast<int64_t>(sequence));  // trace sequence in file
  Put(&trace[8], 4, static_cast<int32_t>(shot_id_));
  Put(&trace[12], 4, t + 1);  // trace number in the field record
  Put(&trace[68], 2, elevation_scalar_);
  Put(&trace[70], 2, coordinate_scalar_);
  Put(&trace[114], 2, n_samples_);
  Put(&trace[116], 2, interval_);
  for (const Column& c : columns_) {
    double v = c.values[t];
    if (c.selector.scale == HeaderSelector::Scale::kCoordinate && coordinate_scalar_ < 0) {
      v *= -coordinate_scalar_;
    }
    if (c.selector.scale == HeaderSelector::Scale::kElevation && elevation_scalar_ < 0) {
      v *= -elevation_scalar_;
    }
    Put(&trace[c.selector.byte - 1], c.selector.size, static_cast<int64_t>(std::llround(v)));
  }
}

}  // namespace shotstream::segy

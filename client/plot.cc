#include "client/plot.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace shotstream::client {
namespace {

// A 5x7 bitmap font for the labels (rows top to bottom, 5 low bits left to right).
struct Glyph {
  char c;
  uint8_t rows[7];
};
constexpr Glyph kFont[] = {
    {'0', {14, 17, 19, 21, 25, 17, 14}}, {'1', {4, 12, 4, 4, 4, 4, 14}},
    {'2', {14, 17, 1, 2, 4, 8, 31}},     {'3', {30, 1, 1, 14, 1, 1, 30}},
    {'4', {2, 6, 10, 18, 31, 2, 2}},     {'5', {31, 16, 30, 1, 1, 17, 14}},
    {'6', {6, 8, 16, 30, 17, 17, 14}},   {'7', {31, 1, 2, 4, 8, 8, 8}},
    {'8', {14, 17, 17, 14, 17, 17, 14}}, {'9', {14, 17, 17, 15, 1, 2, 12}},
    {'-', {0, 0, 0, 31, 0, 0, 0}},       {'.', {0, 0, 0, 0, 0, 12, 12}},
    {':', {0, 12, 12, 0, 12, 12, 0}},    {'(', {2, 4, 8, 8, 8, 4, 2}},
    {')', {8, 4, 2, 2, 2, 4, 8}},        {'A', {14, 17, 17, 31, 17, 17, 17}},
    {'C', {14, 17, 16, 16, 16, 17, 14}}, {'D', {30, 17, 17, 17, 17, 17, 30}},
    {'E', {31, 16, 16, 30, 16, 16, 31}}, {'F', {31, 16, 16, 30, 16, 16, 16}},
    {'H', {17, 17, 17, 31, 17, 17, 17}}, {'I', {14, 4, 4, 4, 4, 4, 14}},
    {'M', {17, 27, 21, 21, 17, 17, 17}}, {'N', {17, 25, 21, 19, 17, 17, 17}},
    {'O', {14, 17, 17, 17, 17, 17, 14}}, {'R', {30, 17, 17, 30, 20, 18, 17}},
    {'S', {15, 16, 16, 14, 1, 1, 30}},   {'T', {31, 4, 4, 4, 4, 4, 4}},
    {'U', {17, 17, 17, 17, 17, 17, 14}}, {'X', {17, 17, 10, 4, 10, 17, 17}},
    {'W', {17, 17, 17, 21, 21, 21, 10}}, {'L', {16, 16, 16, 16, 16, 16, 31}},
    {'P', {30, 17, 17, 30, 16, 16, 16}}, {'G', {14, 17, 16, 23, 17, 17, 15}},
    {'B', {30, 17, 17, 30, 17, 17, 30}}, {'K', {17, 18, 20, 24, 20, 18, 17}},
    {'+', {0, 4, 4, 31, 4, 4, 0}},       {'^', {4, 10, 17, 0, 0, 0, 0}},
    {'V', {17, 17, 17, 17, 17, 10, 4}},  {'Y', {17, 17, 10, 4, 4, 4, 4}},
    {'=', {0, 0, 31, 0, 31, 0, 0}},      {'_', {0, 0, 0, 0, 0, 0, 31}},
    {'J', {7, 2, 2, 2, 2, 18, 12}},      {'Q', {14, 17, 17, 17, 21, 18, 13}},
    {'Z', {31, 1, 2, 4, 8, 16, 31}},
};

class Image {
 public:
  Image(int w, int h) : w_(w), h_(h), rgb_(3ull * w * h, 255) {}
  int width() const { return w_; }
  int height() const { return h_; }
  void Set(int x, int y, uint8_t r, uint8_t g, uint8_t b) {
    if (x < 0 || y < 0 || x >= w_ || y >= h_) return;
    uint8_t* p = &rgb_[3ull * (static_cast<size_t>(y) * w_ + x)];
    p[0] = r;
    p[1] = g;
    p[2] = b;
  }
  void Text(int x, int y, const std::string& s, int scale = 1) {
    for (char ch : s) {
      for (const Glyph& g : kFont) {
        if (g.c != ch) continue;
        for (int r = 0; r < 7; ++r) {
          for (int c = 0; c < 5; ++c) {
            if (!(g.rows[r] >> (4 - c) & 1)) continue;
            for (int dy = 0; dy < scale; ++dy) {
              for (int dx = 0; dx < scale; ++dx) Set(x + c * scale + dx, y + r * scale + dy, 0, 0, 0);
            }
          }
        }
      }
      x += 6 * scale;
    }
  }
  // Encodes as an 8-bit RGB PNG.
  absl::Status WritePng(const std::string& path) const {
    std::string raw;
    raw.reserve((3ull * w_ + 1) * h_);
    for (int y = 0; y < h_; ++y) {
      raw.push_back(0);  // filter: none
      raw.append(reinterpret_cast<const char*>(&rgb_[3ull * y * w_]), 3ull * w_);
    }
    uLongf zlen = compressBound(raw.size());
    std::string z(zlen, '\0');
    if (compress2(reinterpret_cast<Bytef*>(z.data()), &zlen,
                  reinterpret_cast<const Bytef*>(raw.data()), raw.size(), 6) != Z_OK) {
      return absl::InternalError("PNG compression failed");
    }
    z.resize(zlen);
    std::string png("\x89PNG\r\n\x1a\n", 8);
    auto chunk = [&png](const char* type, const std::string& data) {
      auto be32 = [&png](uint32_t v) {
        for (int i = 3; i >= 0; --i) png.push_back(static_cast<char>(v >> (8 * i)));
      };
      be32(static_cast<uint32_t>(data.size()));
      const std::string body = std::string(type, 4) + data;
      png += body;
      be32(static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(body.data()),
                                       body.size())));
    };
    std::string ihdr;
    for (uint32_t v : {static_cast<uint32_t>(w_), static_cast<uint32_t>(h_)}) {
      for (int i = 3; i >= 0; --i) ihdr.push_back(static_cast<char>(v >> (8 * i)));
    }
    ihdr += std::string("\x08\x02\x00\x00\x00", 5);  // 8-bit, RGB, deflate, no filter, no interlace
    chunk("IHDR", ihdr);
    chunk("IDAT", z);
    chunk("IEND", "");
    FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) return absl::PermissionDeniedError(absl::StrCat(path, ": ", std::strerror(errno)));
    const bool ok = std::fwrite(png.data(), 1, png.size(), f) == png.size();
    if (std::fclose(f) != 0 || !ok) return absl::DataLossError(absl::StrCat(path, ": write failed"));
    return absl::OkStatus();
  }

 private:
  int w_, h_;
  std::vector<uint8_t> rgb_;
};

// A tick value with as many decimals as the step needs.
std::string TickLabel(double v, double step) {
  const int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  if (std::fabs(v) < step * 1e-9) v = 0;  // no "-0"
  return absl::StrFormat("%.*f", decimals, v);
}

void Fill(Image* img, float v, int x, int y) {
  v = std::max(-1.0f, std::min(1.0f, v));
  // Blue (negative) - white - red (positive).
  const uint8_t fade = static_cast<uint8_t>(255 * (1 - std::fabs(v)));
  if (v >= 0) {
    img->Set(x, y, 255, fade, fade);
  } else {
    img->Set(x, y, fade, fade, 255);
  }
}

double StepOf(const std::vector<double>& ticks) {
  return ticks.size() > 1 ? ticks[1] - ticks[0] : 1.0;
}

// The across axis's name in the title: "OFFSET (M)", "GROUP_X", ...
std::string AxisName(const std::string& header) {
  if (header == "offset") return "OFFSET (M)";
  std::string out = header;
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::vector<double> NiceTicks(double lo, double hi, int max_ticks) {
  if (!(hi > lo) || max_ticks < 1) return {lo};
  const double raw = (hi - lo) / max_ticks;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * power;
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * power >= raw) {
      step = m * power;
      break;
    }
  }
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9; t += step) {
    ticks.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);
  }
  return ticks;
}

std::vector<float> ApplyGain(const float* samples, uint32_t nt, uint32_t ns,
                             double sample_interval_us, const PlotOptions& o) {
  std::vector<float> out(samples, samples + uint64_t{nt} * ns);
  const double dt_s = sample_interval_us * 1e-6;
  if (o.agc_window_ms > 0 && ns > 0) {
    const int64_t half = std::max<int64_t>(
        1, std::llround(o.agc_window_ms * 1e-3 / std::max(dt_s, 1e-12) / 2));
    std::vector<double> energy(ns + 1);
    for (uint32_t t = 0; t < nt; ++t) {
      float* trace = out.data() + uint64_t{t} * ns;
      energy[0] = 0;
      for (uint32_t i = 0; i < ns; ++i) energy[i + 1] = energy[i] + double{trace[i]} * trace[i];
      for (int64_t i = 0; i < ns; ++i) {
        const int64_t a = std::max<int64_t>(0, i - half), b = std::min<int64_t>(ns, i + half + 1);
        const double rms = std::sqrt((energy[b] - energy[a]) / (b - a));
        trace[i] = rms > 0 ? static_cast<float>(trace[i] / rms) : 0.0f;
      }
    }
  }
  if (o.gain_power != 0) {
    for (uint32_t i = 0; i < ns; ++i) {
      const float g = static_cast<float>(std::pow(i * dt_s, o.gain_power));
      for (uint32_t t = 0; t < nt; ++t) out[uint64_t{t} * ns + i] *= i == 0 ? 0.0f : g;
    }
  }
  return out;
}

absl::StatusOr<double> ParseGain(const std::string& text) {
  double n = 0;
  if (text.size() > 2 && text[0] == 't' && text[1] == '^' &&
      absl::SimpleAtod(text.substr(2), &n) && std::isfinite(n)) {
    return n;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--gain='", text, "': expected t^N, e.g. t^2 (samples times time^N)"));
}

absl::Status WriteShotPng(const std::string& path, const Shot& shot, const PlotOptions& o) {
  const int nt = static_cast<int>(shot.n_traces), ns = static_cast<int>(shot.n_samples);
  if (nt == 0 || ns == 0) return absl::InvalidArgumentError("empty shot: nothing to plot");
  const std::vector<float> samples =
      ApplyGain(shot.samples.data(), shot.n_traces, shot.n_samples, shot.sample_interval_us, o);
  // Amplitude clip: the percentile of |sample|.
  std::vector<float> mags(samples.begin(), samples.end());
  for (float& m : mags) m = std::fabs(m);
  const size_t k = std::min(mags.size() - 1,
                            static_cast<size_t>(o.clip_percentile / 100.0 * (mags.size() - 1)));
  std::nth_element(mags.begin(), mags.begin() + k, mags.end());
  const float clip = mags[k] > 0 ? mags[k] : 1.0f;

  // The x_header column labels the axis where it runs one way (offsets of the usual
  // gather); otherwise, and without it, trace numbers do.
  const std::vector<double>* offsets = shot.header(o.x_header);
  bool monotonic = offsets != nullptr && nt > 1;
  if (monotonic) {
    const bool up = (*offsets)[nt - 1] >= (*offsets)[0];
    for (int t = 1; t < nt && monotonic; ++t) {
      monotonic = up ? (*offsets)[t] >= (*offsets)[t - 1] : (*offsets)[t] <= (*offsets)[t - 1];
    }
    monotonic &= (*offsets)[nt - 1] != (*offsets)[0];
  }
  std::string title = absl::StrCat("SHOT ", shot.shot_id, "   ",
                                   monotonic ? AxisName(o.x_header) : "TRACE",
                                   " ACROSS, TIME (MS) DOWN");
  if (o.agc_window_ms > 0) absl::StrAppend(&title, "   AGC ", TickLabel(o.agc_window_ms, 1), " MS");
  if (o.gain_power != 0) absl::StrAppend(&title, "   GAIN T^", TickLabel(o.gain_power, 0.1));
  absl::StrAppend(&title, "   CLIP ", TickLabel(o.clip_percentile, 0.1));
  const int plot_w = std::min(o.max_width, std::max(nt, std::min(o.max_width, nt * 4)));
  const int plot_h = std::min(o.max_height, std::max(ns, 300));
  const int left = 70, top = 50, bar_gap = 16, bar_w = 16, right = 90, bottom = 20;
  // Wide enough for the title (6 pixels a character) however narrow the shot.
  const int width = std::max(left + plot_w + right, left + 6 * static_cast<int>(title.size()) + 4);
  Image img(width, top + plot_h + bottom);
  // Ticks across no closer than a label's width: at most one per 48 pixels.
  const int x_ticks = std::max(2, std::min(6, plot_w / 48));
  // Pixel row y shows sample y * (ns - 1) / (plot_h - 1): the first and last rows are the
  // first and last samples, so the axis runs from 0 to (ns - 1) * dt exactly.
  auto sample_of_row = [&](int y) {
    return plot_h == 1 ? 0 : static_cast<int>(std::lround(double(y) * (ns - 1) / (plot_h - 1)));
  };
  auto trace_of_col = [&](int x) {
    return std::min(nt - 1, static_cast<int>(static_cast<int64_t>(x) * nt / plot_w));
  };
  for (int y = 0; y < plot_h; ++y) {
    const int s = sample_of_row(y);
    for (int x = 0; x < plot_w; ++x) {
      Fill(&img, samples[static_cast<size_t>(trace_of_col(x)) * ns + s] / clip, left + x,
           top + y);
    }
  }
  // Axes: time (ms) down the left, offsets (m) or trace numbers across the top.
  for (int y = 0; y < plot_h; ++y) img.Set(left - 1, top + y, 0, 0, 0);
  for (int x = 0; x < plot_w; ++x) img.Set(left + x, top - 1, 0, 0, 0);
  const double dt_ms = shot.sample_interval_us / 1000.0;
  const double t_max = (ns - 1) * dt_ms;
  const std::vector<double> t_ticks = NiceTicks(0, t_max, 8);
  for (double ms : t_ticks) {
    const int y = t_max > 0 ? static_cast<int>(std::lround(ms / t_max * (plot_h - 1))) : 0;
    for (int d = 0; d < 5; ++d) img.Set(left - 2 - d, top + y, 0, 0, 0);
    img.Text(4, top + y - 3, TickLabel(ms, StepOf(t_ticks)));
  }
  auto x_of_trace = [&](double trace) {  // centre of a trace's columns
    return static_cast<int>(std::lround((trace + 0.5) * plot_w / nt - 0.5));
  };
  if (monotonic) {
    const double o0 = (*offsets)[0], o1 = (*offsets)[nt - 1];
    const std::vector<double> ticks = NiceTicks(std::min(o0, o1), std::max(o0, o1), x_ticks);
    for (double v : ticks) {
      // The fractional trace where the offset reaches v (linear between traces).
      double trace = 0;
      for (int t = 1; t < nt; ++t) {
        const double a = (*offsets)[t - 1], b = (*offsets)[t];
        if ((v - a) * (v - b) <= 0 && a != b) {
          trace = t - 1 + (v - a) / (b - a);
          break;
        }
        if (v == b) trace = t;
      }
      const int x = x_of_trace(trace);
      for (int d = 0; d < 5; ++d) img.Set(left + x, top - 2 - d, 0, 0, 0);
      const std::string label = TickLabel(v, StepOf(ticks));
      img.Text(left + x - 3 * static_cast<int>(label.size()), top - 18, label);
    }
  } else {
    const std::vector<double> ticks = NiceTicks(1, nt, x_ticks);
    for (double v : ticks) {
      const int x = x_of_trace(v - 1);
      for (int d = 0; d < 5; ++d) img.Set(left + x, top - 2 - d, 0, 0, 0);
      const std::string label = TickLabel(v, StepOf(ticks));
      img.Text(left + x - 3 * static_cast<int>(label.size()), top - 18, label);
    }
  }
  // Colour bar: +clip at the top, 0 in the middle, -clip at the bottom.
  const int bar_x = left + plot_w + bar_gap;
  for (int y = 0; y < plot_h; ++y) {
    const float v = plot_h == 1 ? 0.0f : 1.0f - 2.0f * y / (plot_h - 1);
    for (int x = 0; x < bar_w; ++x) Fill(&img, v, bar_x + x, top + y);
  }
  const std::vector<double> bar_ticks = NiceTicks(-clip, clip, 4);
  for (double v : bar_ticks) {
    const int y = static_cast<int>(std::lround((1 - v / clip) / 2 * (plot_h - 1)));
    for (int d = 0; d < 4; ++d) img.Set(bar_x + bar_w + d, top + y, 0, 0, 0);
    img.Text(bar_x + bar_w + 6, top + y - 3, TickLabel(v, StepOf(bar_ticks)));
  }
  img.Text(left, 6, title);
  return img.WritePng(path);
}

}  // namespace shotstream::client

#include "client/plot.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

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
    {'P', {30, 17, 17, 30, 16, 16, 16}},
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

std::string Label(double v) {
  if (std::fabs(v - std::round(v)) < 1e-6) return absl::StrFormat("%.0f", v);
  return absl::StrFormat("%.1f", v);
}

}  // namespace

absl::Status WriteShotPng(const std::string& path, const Shot& shot, const PlotOptions& o) {
  const int nt = static_cast<int>(shot.n_traces), ns = static_cast<int>(shot.n_samples);
  if (nt == 0 || ns == 0) return absl::InvalidArgumentError("empty shot: nothing to plot");
  // Amplitude clip: the percentile of |sample|.
  std::vector<float> mags(shot.samples.begin(), shot.samples.end());
  for (float& m : mags) m = std::fabs(m);
  const size_t k = std::min(mags.size() - 1,
                            static_cast<size_t>(o.clip_percentile / 100.0 * (mags.size() - 1)));
  std::nth_element(mags.begin(), mags.begin() + k, mags.end());
  const float clip = mags[k] > 0 ? mags[k] : 1.0f;

  const int plot_w = std::min(o.max_width, std::max(nt, std::min(o.max_width, nt * 4)));
  const int plot_h = std::min(o.max_height, std::max(ns, 300));
  const int left = 70, top = 50, right = 20, bottom = 20;
  Image img(left + plot_w + right, top + plot_h + bottom);
  for (int y = 0; y < plot_h; ++y) {
    const int s = std::min(ns - 1, static_cast<int>(static_cast<int64_t>(y) * ns / plot_h));
    for (int x = 0; x < plot_w; ++x) {
      const int t = std::min(nt - 1, static_cast<int>(static_cast<int64_t>(x) * nt / plot_w));
      float v = shot.samples[static_cast<size_t>(t) * ns + s] / clip;
      v = std::max(-1.0f, std::min(1.0f, v));
      // Blue (negative) - white - red (positive).
      const uint8_t fade = static_cast<uint8_t>(255 * (1 - std::fabs(v)));
      if (v >= 0) {
        img.Set(left + x, top + y, 255, fade, fade);
      } else {
        img.Set(left + x, top + y, fade, fade, 255);
      }
    }
  }
  // Axes: time (ms) down the left, offsets across the top.
  for (int y = 0; y < plot_h; ++y) img.Set(left - 1, top + y, 0, 0, 0);
  for (int x = 0; x < plot_w; ++x) img.Set(left + x, top - 1, 0, 0, 0);
  const double dt_ms = shot.sample_interval_us / 1000.0;
  for (int tick = 0; tick <= 8; ++tick) {
    const int y = tick * (plot_h - 1) / 8;
    const double ms = (static_cast<double>(y) * ns / plot_h) * dt_ms;
    for (int d = 0; d < 5; ++d) img.Set(left - 2 - d, top + y, 0, 0, 0);
    img.Text(4, top + y - 3, Label(ms));
  }
  const std::vector<double>* offsets = shot.header("offset");
  for (int tick = 0; tick <= 6; ++tick) {
    const int x = tick * (plot_w - 1) / 6;
    const int t = std::min(nt - 1, static_cast<int>(static_cast<int64_t>(x) * nt / plot_w));
    for (int d = 0; d < 5; ++d) img.Set(left + x, top - 2 - d, 0, 0, 0);
    const std::string label = offsets != nullptr ? Label((*offsets)[t]) : Label(t + 1);
    img.Text(left + x - 3 * static_cast<int>(label.size()), top - 18, label);
  }
  img.Text(left, 6, absl::StrCat("SHOT ", shot.shot_id, "   ", offsets ? "OFFSET" : "TRACE",
                                 "   TIME (MS) DOWN   CLIP ", Label(o.clip_percentile)));
  return img.WritePng(path);
}

}  // namespace shotstream::client

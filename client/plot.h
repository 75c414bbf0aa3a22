// Renders a shot gather as a PNG: variable density (blue-white-red) with a colour bar,
// clipped at a percentile of |amplitude| after an optional gain (AGC, or t^N), time in ms
// down and offset in m (or trace number) across, both with round tick values.
//
// Thread-compatible: a pure function over its arguments.
#ifndef SHOTSTREAM_CLIENT_PLOT_H_
#define SHOTSTREAM_CLIENT_PLOT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "shotstream/client/client.h"

namespace shotstream::client {

struct PlotOptions {
  double clip_percentile = 99.0;  // |amplitude| above this percentile saturates
  int max_width = 1200;           // image area in pixels, before the axes
  int max_height = 900;
  double agc_window_ms = 0;       // > 0: each sample divided by the RMS of its window
  double gain_power = 0;          // != 0: each sample times t^N (t in seconds)
  // The header column across the top where the shot has it and it runs one way; trace
  // numbers otherwise.
  std::string x_header = "offset";
};

// Round tick values in [lo, hi]: steps of 1, 2 or 5 times a power of ten, at most
// about `max_ticks` of them.
std::vector<double> NiceTicks(double lo, double hi, int max_ticks);

// The samples as plotted: `samples` ([n_traces][n_samples]) with the options' gain
// applied (AGC over agc_window_ms, then t^gain_power).
std::vector<float> ApplyGain(const float* samples, uint32_t n_traces, uint32_t n_samples,
                             double sample_interval_us, const PlotOptions& options);

// "t^2" -> 2; INVALID_ARGUMENT for anything else.
absl::StatusOr<double> ParseGain(const std::string& text);

// Across: the shot's x_header column (offset) when present and monotonic, else trace
// numbers.
absl::Status WriteShotPng(const std::string& path, const Shot& shot,
                          const PlotOptions& options = {});

}  // namespace shotstream::client

#endif  // SHOTSTREAM_CLIENT_PLOT_H_

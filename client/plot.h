// Renders a shot gather as a PNG: variable density (blue-white-red), clipped at a
// percentile of |amplitude|, time in ms down, traces across labelled by offset.
//
// Thread-compatible: a pure function over its arguments.
#ifndef SHOTSTREAM_CLIENT_PLOT_H_
#define SHOTSTREAM_CLIENT_PLOT_H_

#include <string>

#include "absl/status/status.h"
#include "client/client.h"

namespace shotstream::client {

struct PlotOptions {
  double clip_percentile = 99.0;  // |amplitude| above this percentile saturates
  int max_width = 1200;           // image area in pixels, before the axes
  int max_height = 900;
};

// Offsets from the shot's "offset" header column when present, else trace numbers.
absl::Status WriteShotPng(const std::string& path, const Shot& shot,
                          const PlotOptions& options = {});

}  // namespace shotstream::client

#endif  // SHOTSTREAM_CLIENT_PLOT_H_

// A NumPy .npy file of traces: an array [traces, samples] or [shots, traces, samples] in
// C order, read as fixed-length traces without headers (an io::TraceFile whose traces
// start at the end of the .npy header), with its shape.
//
// Thread-safe after Open (an io::TraceFile).
#ifndef SHOTSTREAM_SERVER_NPY_NPY_FILE_H_
#define SHOTSTREAM_SERVER_NPY_NPY_FILE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/env/env.h"
#include "server/io/trace_file.h"

namespace shotstream::npy {

struct NpyFile {
  std::unique_ptr<io::TraceFile> file;
  std::vector<uint64_t> shape;  // rank 2 or 3, the last dimension the samples
};

// The layout of a .npy file from its first bytes (min(file_size, kMaxHeaderBytes)), with
// its shape in *shape: INVALID_ARGUMENT naming the file, the byte and the reason for a
// file that is not a .npy array of rank 2 or 3 this server serves. `sample_interval_us`
// is the interval to serve (the file does not say); 0 adds a note saying so.
absl::StatusOr<io::TraceLayout> ParseNpyLayout(const std::string& path, const uint8_t* head,
                                               size_t head_size, uint64_t file_size,
                                               double sample_interval_us,
                                               std::vector<uint64_t>* shape);

// Opens the .npy file at `path` through `env` (the process's POSIX Env when null).
absl::StatusOr<NpyFile> OpenNpyFile(const std::string& path, io::IoMode io,
                                    double sample_interval_us, env::Env* env = nullptr);

}  // namespace shotstream::npy

#endif  // SHOTSTREAM_SERVER_NPY_NPY_FILE_H_

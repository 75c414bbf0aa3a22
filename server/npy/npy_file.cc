#include "server/npy/npy_file.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "npy/npy_header.h"

namespace shotstream::npy {

absl::StatusOr<io::TraceLayout> ParseNpyLayout(const std::string& path, const uint8_t* head,
                                               size_t head_size, uint64_t file_size,
                                               double sample_interval_us,
                                               std::vector<uint64_t>* shape) {
  if (!IsNpy(head, head_size)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": byte 0: not a NumPy .npy file (no \\x93NUMPY magic string)"));
  }
  SS_ASSIGN_OR_RETURN(NpyHeader h, ParseNpyHeader(path, head, head_size, file_size));
  if (h.shape.size() != 2 && h.shape.size() != 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": a .npy array of ", h.shape.size(), " dimensions (shape (",
        absl::StrJoin(h.shape, ", "), ")); expected [traces, samples] or [shots, traces, "
        "samples]"));
  }
  if (h.shape.back() == 0 || h.shape.back() > UINT32_MAX) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": a .npy array of ", h.shape.back(),
                                                   " samples per trace"));
  }
  io::TraceLayout l;
  l.byte_order = h.byte_order;  // the header says
  l.format = h.format;
  l.bytes_per_sample = h.bytes_per_sample;
  l.n_samples = static_cast<uint32_t>(h.shape.back());
  l.sample_interval_us = sample_interval_us;
  l.trace_header_bytes = 0;
  l.first_trace_offset = h.data_offset;
  l.trace_bytes = l.sample_bytes();
  l.n_traces = h.data_bytes / l.trace_bytes;
  if (l.sample_interval_us <= 0) {
    l.notes.push_back("a .npy file does not say its sample interval: give it with "
                      "--sample_interval_us (or sample_interval_us: in the config); 0 is served");
  }
  *shape = std::move(h.shape);
  return l;
}

absl::StatusOr<NpyFile> OpenNpyFile(const std::string& path, io::IoMode io,
                                    double sample_interval_us, env::Env* env) {
  NpyFile out;
  SS_ASSIGN_OR_RETURN(
      out.file,
      io::TraceFile::Open(path, io, kMaxHeaderBytes,
                          [&](const std::string& p, const uint8_t* head, size_t head_size,
                              uint64_t file_size, const io::ReadFn&) {
                            return ParseNpyLayout(p, head, head_size, file_size,
                                                  sample_interval_us, &out.shape);
                          },
                          /*cache=*/nullptr, env));
  return out;
}

}  // namespace shotstream::npy

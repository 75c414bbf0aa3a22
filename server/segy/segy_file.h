// SEG-Y and Seismic Unix files: their layout parsed from the file headers, opened as
// io::TraceFiles (fixed-length traces, read by pread or a memory map).
//
// Thread-safe: pure functions; the files they open are thread-safe after Open.
#ifndef SHOTSTREAM_SERVER_SEGY_SEGY_FILE_H_
#define SHOTSTREAM_SERVER_SEGY_SEGY_FILE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "segy/sample_format.h"
#include "server/env/env.h"
#include "server/io/trace_file.h"

namespace shotstream::segy {

inline constexpr int kTextualHeaderBytes = 3200;
inline constexpr int kBinaryHeaderBytes = 400;
inline constexpr int kFileHeaderBytes = kTextualHeaderBytes + kBinaryHeaderBytes;

// A SEG-Y (or SU) file's layout: where its traces are (io::TraceLayout) and what the file
// headers said of it.
struct SegyLayout : io::TraceLayout {
  int revision_major = 0;
  int extended_textual_headers = 0;  // 3200-byte records after the binary header
  int trace_headers_per_trace = 1;   // 1 + additional 240-byte trace headers
  bool seismic_unix = false;         // no file headers at all
};

// The bytes a layout is parsed from (more are read only for extended textual headers).
inline constexpr size_t kHeadBytes = kFileHeaderBytes + 240;

struct OpenOptions {
  // Force a byte order instead of detecting it.
  std::optional<ByteOrder> byte_order;
  io::IoMode io = io::IoMode::kPread;
  env::Env* env = nullptr;  // where the file is read (null: the process's POSIX Env)
};

// Opens a SEG-Y file (a Seismic Unix file when its name ends in .su): parses the file
// headers (and, for a -1 extended-header count, reads records up to ((SEG: EndText))) and
// checks that the file holds whole traces. Errors name the file, the byte and the reason.
absl::StatusOr<std::unique_ptr<io::TraceFile>> OpenSegyFile(const std::string& path,
                                                          const OpenOptions& options = {});

// Parses a layout from the first bytes of a file (exposed for tests and fuzzers).
// `head` holds min(file_size, 3600 + 240) bytes.
absl::StatusOr<SegyLayout> ParseSegyHeaders(const std::string& path, const uint8_t* head,
                                            size_t head_size, uint64_t file_size,
                                            const OpenOptions& options);

}  // namespace shotstream::segy

#endif  // SHOTSTREAM_SERVER_SEGY_SEGY_FILE_H_

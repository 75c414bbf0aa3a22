// DatasetWriter: one dataset being written (WriteShots) as a SEG-Y rev 1 file in the
// write directory: a temporary file filled shot by shot as chunks arrive, renamed into
// place by Commit (file and directory fsynced). Destroyed before Commit (a client that
// left, a bad chunk, a full disk) it removes the temporary, so a write is all or nothing.
// Memory: one shot's header columns and a bounded write buffer, never the dataset.
//
// Thread-compatible: one caller at a time (the stream's reactor).
#ifndef SHOTSTREAM_SERVER_WRITE_DATASET_WRITER_H_
#define SHOTSTREAM_SERVER_WRITE_DATASET_WRITER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "server/env/env.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "segy/segy_writer.h"
#include "server/write/file_appender.h"

namespace shotstream::write {

// Names a write may create: 1 to 128 of [A-Za-z0-9_.-], not starting with '.'; anything
// else (a '/', "..") is INVALID_ARGUMENT before anything is written.
absl::Status ValidateWriteName(absl::string_view name);

// DIR/NAME.sgy.
std::string WrittenPath(const std::string& dir, const std::string& name);

// Removes the temporaries that writes of a killed server left in `dir`; returns their
// names.
std::vector<std::string> RemoveTemporaries(const std::string& dir,
                                           env::Env* env = env::Env::Default());

// A dataset this service wrote to its write_dir before: DIR/NAME.sgy whose textual header
// begins as WrittenTextLines' does.
struct WrittenDataset {
  std::string name;
  std::string path;
};
// The datasets written to `dir` before, sorted by name; every other NAME.sgy there (a
// name no write may create, or a file this service did not write) goes to `foreign`
// (its path and why), to be reported and left alone.
std::vector<WrittenDataset> FindWritten(const std::string& dir,
                                        std::vector<std::string>* foreign,
                                        env::Env* env = env::Env::Default());

struct WriteSpec {
  std::string dir;
  std::string name;
  double sample_interval_us = 0;
  int format = 5;       // 5, 1 or 3 (segy::CheckWritableFormat)
  std::string writer;   // who asked (a token name), for the textual header
  size_t buffer_bytes = 4 << 20;  // encoded traces gathered before each write(2), which
                                  // runs on the writer's own thread
  bool replace = false;  // a part of a multi-part write: Commit replaces an existing file
  env::Env* env = env::Env::Default();  // where the file is written
};

// The textual header's lines of a written dataset (who, when, what, its format).
std::vector<std::string> WrittenTextLines(const std::string& name, const std::string& writer,
                                          uint64_t shots, uint64_t traces, uint32_t n_samples,
                                          double sample_interval_us, int format);

class DatasetWriter {
 public:
  // INVALID_ARGUMENT for a bad name or format; ALREADY_EXISTS when DIR/NAME.sgy exists;
  // FAILED_PRECONDITION when the temporary cannot be created.
  static absl::StatusOr<std::unique_ptr<DatasetWriter>> Create(const WriteSpec& spec);
  ~DatasetWriter();
  DatasetWriter(const DatasetWriter&) = delete;
  DatasetWriter& operator=(const DatasetWriter&) = delete;

  // A shot begins: INVALID_ARGUMENT naming it for no traces, a sample count other than
  // the first shot's (or above SEG-Y's 65535), an id given before, or bad header columns.
  absl::Status BeginShot(int64_t shot_id, uint32_t n_traces, uint32_t n_samples,
                         const std::vector<std::pair<std::string, std::vector<double>>>& headers);
  // Whole traces of the shot begun, float32 little-endian, following the last ones.
  absl::Status AddSamples(absl::string_view samples);
  // The shot ends: its traces all came, and `crc32` is the CRC-32 of its sample bytes
  // (else DATA_LOSS naming the shot).
  absl::Status EndShot(uint32_t crc32);
  bool in_shot() const { return shot_.has_value(); }

  // Finishes the file (textual header, fsync), renames it to WrittenPath (never over an
  // existing file: ALREADY_EXISTS, unless spec.replace) and fsyncs the directory. Returns
  // the path.
  absl::StatusOr<std::string> Commit();

  uint64_t shots() const { return shots_; }
  const std::set<int64_t>& shot_ids() const { return ids_; }
  uint64_t traces() const { return traces_; }
  uint64_t sample_bytes() const { return sample_bytes_; }  // float32 bytes received
  double max_error() const { return max_error_; }
  // The largest |header stored - header given| and where (ShotTraceHeaders::worst).
  double max_header_error() const { return max_header_error_; }
  const std::string& max_header_error_at() const { return max_header_error_at_; }
  const std::string& temporary_path() const { return temp_; }

 private:
  explicit DatasetWriter(WriteSpec spec) : spec_(std::move(spec)) {}
  absl::Status Append(const void* data, size_t n);
  // `s` (an Env's error) as the write's: its code, naming the dataset and the temporary.
  absl::Status WriteError(const absl::Status& s) const;

  struct OpenShot {
    int64_t id;
    uint32_t n_traces;
    uint32_t done = 0;  // traces received
    uint32_t crc = 0;
    segy::ShotTraceHeaders headers;
  };
  WriteSpec spec_;
  std::string temp_;
  std::string final_;
  std::unique_ptr<env::WritableFile> file_;  // the temporary, until Commit closes it
  bool committed_ = false;
  std::unique_ptr<FileAppender> appender_;  // writes on its own thread
  size_t encoded_trace_bytes_ = 0;  // header and samples of one trace in the file
  uint32_t n_samples_ = 0;  // of the first shot; 0 before it
  std::optional<OpenShot> shot_;
  std::set<int64_t> ids_;
  uint64_t shots_ = 0;
  uint64_t traces_ = 0;
  uint64_t sample_bytes_ = 0;
  double max_error_ = 0;
  double max_header_error_ = 0;
  std::string max_header_error_at_;
};

}  // namespace shotstream::write

#endif  // SHOTSTREAM_SERVER_WRITE_DATASET_WRITER_H_

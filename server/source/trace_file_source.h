// TraceFileSource: what a source over io::TraceFiles (SEG-Y, SU, .npy: files of
// fixed-length traces) does the same whatever the format: the files' checks and stored
// forms, and reads through the coalescing reader (decoded to float32, copied as stored,
// or located in the mapping for zero copy). A format derives from it, opens its files,
// builds its catalog and says what its traces' headers hold.
//
// Thread-safe after the derived source's Open.
#ifndef SHOTSTREAM_SERVER_SOURCE_TRACE_FILE_SOURCE_H_
#define SHOTSTREAM_SERVER_SOURCE_TRACE_FILE_SOURCE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/io/coalescing_reader.h"
#include "server/io/trace_file.h"
#include "server/source/source.h"

namespace shotstream::source {

class TraceFileSource : public Source {
 public:
  const SourceInfo& info() const override { return info_; }
  const catalog::Catalog& catalog() const override { return catalog_; }
  absl::Status CheckUnchanged(uint32_t file_id) const override;
  const std::string& path(uint32_t file_id) const override { return files_[file_id]->path(); }
  std::string Where(const io::TraceRef& t, int header_byte) const override;
  std::optional<io::StoredForm> FormOf(absl::Span<const io::TraceRef> traces) const override;
  absl::StatusOr<ReadResult> Read(const TraceRead& read) const override;

  const io::TraceFile& file(size_t i) const { return *files_[i]; }

 protected:
  explicit TraceFileSource(const SourceSpec& spec) : coalesce_(spec.coalesce) {}

  // Takes the opened files (in spec.paths' order), which must share the sample count, and
  // fills info_'s files, bytes, interval, format, read_by and notes (each note once, with
  // the first file it applies to and how many more).
  absl::Status AddFiles(const SourceSpec& spec, std::vector<std::unique_ptr<io::TraceFile>> files);

  // The headers of a read's traces: `raw` holds each trace's first 240-byte header as
  // stored (files with trace headers) or is empty (files without).
  virtual std::unique_ptr<TraceHeaders> MakeHeaders(const TraceRead& read,
                                                    std::vector<uint8_t> raw) const = 0;

  std::vector<std::unique_ptr<io::TraceFile>> files_;
  std::vector<const io::TraceFile*> file_ptrs_;
  catalog::Catalog catalog_;
  SourceInfo info_;

 private:
  const io::CoalesceOptions coalesce_;
};

// Sets a `size`-byte signed integer field at 1-based `byte` of a big-endian 240-byte trace
// header to round(v), saturated to the field's range (NaN: 0): headers made for sources
// that have no stored ones.
void PutBigEndianField(uint8_t* header, int byte, int size, double v);

}  // namespace shotstream::source

#endif  // SHOTSTREAM_SERVER_SOURCE_TRACE_FILE_SOURCE_H_

// FakeSource: a source held in memory, for testing what lies above sources (the dataset's
// checks, selection and chunks) without files: shots of float32 traces with header
// columns, stored in a chosen SEG-Y form, with files that can be marked changed and a
// shot key whose stored value can be made to disagree with the catalog.
//
// Thread-compatible for setup (the mutators), thread-safe for reads after it.
#ifndef SHOTSTREAM_SERVER_SOURCE_FAKE_SOURCE_H_
#define SHOTSTREAM_SERVER_SOURCE_FAKE_SOURCE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "server/source/source.h"

namespace shotstream::source {

struct FakeTrace {
  std::vector<float> samples;
  std::map<std::string, double> fields;  // header values by name
};

class FakeSource final : public Source {
 public:
  // `n_samples` samples a trace; shots are added with AddShot before use.
  explicit FakeSource(uint32_t n_samples, double sample_interval_us = 2000);

  // A shot of `traces`, each in file `file` (ids by position in the file, in order).
  void AddShot(int64_t shot_id, std::vector<FakeTrace> traces, uint32_t file = 0);
  // Builds the catalog from the shots added; the source is then read-only.
  void Finish();

  // Samples are "stored" in this form (NATIVE reads of int16 give their bytes); mapped:
  // zero copy locates them in the source's own memory.
  void set_form(io::StoredForm form) { form_ = form; }
  // The header field reads check the shot key against (field_record by default).
  void set_shot_key(std::optional<segy::HeaderSelector> key) { info_.shot_key = std::move(key); }
  // File `file` reads as changed (CheckUnchanged: DATA_LOSS).
  void MarkChanged(uint32_t file) { changed_.insert(file); }
  // File `file` changes under the next read of it: that Read fails DATA_LOSS, and from
  // then on CheckUnchanged says so (as a Zarr chunk found rewritten does).
  void ChangeUnderRead(uint32_t file) { change_under_read_.insert(file); }
  // Trace `i` of shot `shot_id` reports shot key `value` (a rewrite kept the mtime).
  void SetStoredKey(int64_t shot_id, size_t i, double value);

  // Source.
  const SourceInfo& info() const override { return info_; }
  const catalog::Catalog& catalog() const override { return catalog_; }
  absl::Status CheckUnchanged(uint32_t file_id) const override;
  const std::string& path(uint32_t file_id) const override;
  std::string Where(const io::TraceRef& t, int header_byte) const override;
  std::optional<io::StoredForm> FormOf(absl::Span<const io::TraceRef> traces) const override;
  absl::StatusOr<ReadResult> Read(const TraceRead& read) const override;

  mutable int reads = 0;  // Read calls (tests read it after the reads)

 private:
  struct Stored {
    int64_t shot_id;
    FakeTrace trace;
  };
  const Stored& At(const io::TraceRef& t) const { return files_.at(t.file_id)[t.offset]; }

  SourceInfo info_;
  catalog::Catalog catalog_;
  std::map<uint32_t, std::vector<Stored>> files_;  // file id -> its traces
  mutable std::set<uint32_t> changed_;  // mutable: a read may find a change
  std::set<uint32_t> change_under_read_;
  std::map<uint32_t, std::string> paths_;  // "file N"
  std::optional<io::StoredForm> form_;
  std::map<uint32_t, std::vector<std::vector<uint8_t>>> stored_bytes_;  // as form_ stores them
};

}  // namespace shotstream::source

#endif  // SHOTSTREAM_SERVER_SOURCE_FAKE_SOURCE_H_

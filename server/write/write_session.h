// WriteSession: one WriteShots call without the transport. It takes the call's messages
// in order (`start` names the dataset, reserving the name; then the shots' parts; then
// `finish`), writes them with a DatasetWriter, and on Commit renames the file into place
// and adds the dataset to the registry. Destroyed unfinished (an error, a client that left)
// it leaves nothing: the temporary is removed and the name released.
// With start.parts, a call writes one part of a multi-part write (kept aside in the
// write directory, write_parts.h) or, with parts.commit and no shots, joins the parts
// into the dataset.
//
// Thread-compatible: one caller at a time (the call's reactor).
#ifndef SHOTSTREAM_SERVER_WRITE_WRITE_SESSION_H_
#define SHOTSTREAM_SERVER_WRITE_WRITE_SESSION_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/dataset/dataset_registry.h"
#include "server/write/dataset_writer.h"
#include "shotstream/v1/shotstream.pb.h"

namespace shotstream::write {

// OK where `write_dir` is set; otherwise FAILED_PRECONDITION saying how to enable writing
// (the one place that says so: the service's gate asks it too).
absl::Status WritingEnabled(const std::string& write_dir);

struct SessionContext {
  dataset::DatasetRegistry* datasets = nullptr;
  std::string write_dir;  // empty: writing is off (FAILED_PRECONDITION)
  std::string who;        // the caller's token name, for the file's textual header
  // Loads the written file at `path` into `entry` (the server's dataset settings).
  std::function<void(dataset::DatasetEntry* entry, const std::string& path)> load;
  // Told once the new entry is visible (e.g. to update health); may be empty.
  std::function<void(const dataset::DatasetEntry& entry)> published;
  env::Env* env = env::Env::Default();  // where files are written (a test's MemEnv)
};

class WriteSession {
 public:
  explicit WriteSession(SessionContext context) : context_(std::move(context)) {}
  ~WriteSession();
  WriteSession(const WriteSession&) = delete;
  WriteSession& operator=(const WriteSession&) = delete;

  // Takes the next message. Errors are the call's status (INVALID_ARGUMENT for a message
  // out of order or a bad name, shot or interval, ALREADY_EXISTS, DATA_LOSS for a shot
  // whose checksum is wrong, RESOURCE_EXHAUSTED for a full disk...).
  absl::Status Take(const v1::WriteShotsRequest& message);
  // Whether the finishing message was taken (and Commit may be called).
  bool finishing() const { return finishing_; }
  // Renames the file into place, loads it and makes it visible; the new entry. For a
  // part of a multi-part write: the part is kept aside, and the entry is null.
  absl::StatusOr<const dataset::DatasetEntry*> Commit();
  // Gives the write up now: the temporary is removed and the name released (before the
  // caller is told, so that a retry of the same name finds it free).
  void Abandon();

  const std::string& name() const { return name_; }
  // What this call received (none for a commit of parts).
  uint64_t shots() const { return writer_ ? writer_->shots() : 0; }
  uint64_t sample_bytes() const { return writer_ ? writer_->sample_bytes() : 0; }
  // What the committed dataset (or part) holds: for a commit of parts, all its parts'.
  uint64_t written_shots() const { return writer_ ? writer_->shots() : joined_shots_; }
  uint64_t written_sample_bytes() const {
    return writer_ ? writer_->sample_bytes() : joined_bytes_;
  }
  // A part of a multi-part write (Commit gives no entry).
  bool writes_part() const { return parts_.count() > 0 && !parts_.commit(); }
  double max_error() const { return writer_ ? writer_->max_error() : 0; }
  double max_header_error() const { return writer_ ? writer_->max_header_error() : 0; }
  std::string max_header_error_at() const {
    return writer_ ? writer_->max_header_error_at() : "";
  }

 private:
  absl::Status Start(const v1::WriteStart& start);
  absl::Status TakePart(const v1::ShotPart& part);
  absl::Status StartParts(WriteSpec* spec);

  SessionContext context_;
  std::string name_;
  bool reserved_ = false;
  bool started_ = false;
  bool finishing_ = false;
  v1::WriteParts parts_;  // start.parts (count 0: a write in one call)
  double sample_interval_us_ = 0;
  int format_ = 5;
  std::string parts_dir_;
  std::unique_ptr<DatasetWriter> writer_;  // null for a commit of parts
  uint64_t joined_shots_ = 0;
  uint64_t joined_bytes_ = 0;
};

}  // namespace shotstream::write

#endif  // SHOTSTREAM_SERVER_WRITE_WRITE_SESSION_H_

#include "server/write/write_session.h"

#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/write/write_parts.h"

namespace shotstream::write {

WriteSession::~WriteSession() { Abandon(); }

void WriteSession::Abandon() {
  writer_.reset();  // an uncommitted writer removes its temporary
  if (reserved_) context_.datasets->Release(name_);
  reserved_ = false;
}

absl::Status WritingEnabled(const std::string& write_dir) {
  if (!write_dir.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      "writing is not enabled on this server (start it with --write_dir=DIR, or write_dir: "
      "in its config)");
}

absl::Status WriteSession::Start(const v1::WriteStart& first) {
  SS_RETURN_IF_ERROR(WritingEnabled(context_.write_dir));
  name_ = first.dataset();
  if (name_.empty()) return absl::InvalidArgumentError("start.dataset: the dataset to create");
  SS_RETURN_IF_ERROR(ValidateWriteName(name_));
  if (!(first.sample_interval_us() > 0) || !std::isfinite(first.sample_interval_us())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "start.sample_interval_us: ", first.sample_interval_us(), "; a write must give its "
        "sample interval in microseconds (> 0), e.g. 2000 for 2 ms (put --sample_interval_us, "
        "Client.write(..., sample_interval_us=))"));
  }
  started_ = true;
  sample_interval_us_ = first.sample_interval_us();
  format_ = first.sample_format() == 0 ? 5 : first.sample_format();
  WriteSpec spec;
  spec.dir = context_.write_dir;
  spec.name = name_;
  spec.sample_interval_us = sample_interval_us_;
  spec.format = format_;
  spec.writer = context_.who;
  spec.env = context_.env;
  if (first.has_parts()) {
    parts_ = first.parts();
    SS_RETURN_IF_ERROR(StartParts(&spec));
    if (parts_.commit()) return absl::OkStatus();  // no shots: Commit joins the parts
  } else {
    SS_RETURN_IF_ERROR(context_.datasets->Reserve(name_));
    reserved_ = true;
  }
  SS_ASSIGN_OR_RETURN(writer_, DatasetWriter::Create(spec));
  return absl::OkStatus();
}

absl::Status WriteSession::StartParts(WriteSpec* spec) {
  if (absl::Status s = ValidateWriteName(parts_.write_id()); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("start.parts.write_id: ", s.message()));
  }
  if (parts_.count() == 0 || parts_.count() > kMaxWriteParts) {
    return absl::InvalidArgumentError(absl::StrCat(
        "start.parts.count: ", parts_.count(), "; a multi-part write has 1 to ",
        kMaxWriteParts, " parts"));
  }
  if (!parts_.commit() && parts_.index() >= parts_.count()) {
    return absl::InvalidArgumentError(absl::StrCat("start.parts.index: ", parts_.index(),
                                                   " of ", parts_.count(), " parts"));
  }
  // The commit reserves the name as a one-call write does; a part only checks it is free.
  if (parts_.commit()) {
    SS_RETURN_IF_ERROR(context_.datasets->Reserve(name_));
    reserved_ = true;
    return absl::OkStatus();
  }
  if (context_.datasets->Find(name_) != nullptr ||
      context_.env->Stat(WrittenPath(context_.write_dir, name_)).ok()) {
    return absl::AlreadyExistsError(absl::StrCat("dataset '", name_, "' exists"));
  }
  parts_dir_ = PartsDir(context_.write_dir, name_, parts_.write_id());
  SS_RETURN_IF_ERROR(MakePartsDir(parts_dir_, context_.env));
  spec->dir = parts_dir_;
  spec->name = PartName(parts_.index());
  spec->replace = true;
  return absl::OkStatus();
}

absl::Status WriteSession::Take(const v1::WriteShotsRequest& m) {
  if (finishing_) return absl::InvalidArgumentError("a message after `finish`");
  switch (m.message_case()) {
    case v1::WriteShotsRequest::kStart:
      if (started_) {
        return absl::InvalidArgumentError(absl::StrCat(
            "a second `start` ('", m.start().dataset(), "'); a write creates one dataset"));
      }
      return Start(m.start());
    case v1::WriteShotsRequest::kShot:
      if (!started_) {
        return absl::InvalidArgumentError("the first message must be `start`, naming the dataset");
      }
      if (writer_ == nullptr) {
        return absl::InvalidArgumentError(
            "a shot in a commit of parts (start.parts.commit): the parts hold the shots");
      }
      return TakePart(m.shot());
    case v1::WriteShotsRequest::kFinish:
      if (!started_) {
        return absl::InvalidArgumentError("the first message must be `start`, naming the dataset");
      }
      finishing_ = true;
      return absl::OkStatus();
    default:
      return absl::InvalidArgumentError("a WriteShotsRequest with none of start, shot, finish");
  }
}

absl::Status WriteSession::TakePart(const v1::ShotPart& m) {
  if (!writer_->in_shot()) {
    std::vector<std::pair<std::string, std::vector<double>>> headers;
    headers.reserve(m.headers_size());
    for (const v1::HeaderColumn& c : m.headers()) {
      headers.emplace_back(c.name(), std::vector<double>(c.values().begin(), c.values().end()));
    }
    SS_RETURN_IF_ERROR(writer_->BeginShot(m.shot_id(), m.n_traces(), m.n_samples(), headers));
  }
  if (!m.samples().empty()) SS_RETURN_IF_ERROR(writer_->AddSamples(m.samples()));
  if (m.shot_end()) SS_RETURN_IF_ERROR(writer_->EndShot(m.crc32()));
  return absl::OkStatus();
}

absl::StatusOr<const dataset::DatasetEntry*> WriteSession::Commit() {
  if (!finishing_ || !started_) {
    return absl::InvalidArgumentError("the write ended before its finishing message");
  }
  std::string path;
  if (writer_ != nullptr) {
    if (writes_part()) {
      // The ids first: a part's .sgy present always has them (write_parts.h).
      SS_RETURN_IF_ERROR(
          WritePartIds(parts_dir_, parts_.index(), writer_->shot_ids(), context_.env));
    }
    SS_ASSIGN_OR_RETURN(path, writer_->Commit());
    if (writes_part()) return nullptr;
  } else {
    JoinSpec join{context_.write_dir, name_,        parts_.write_id(), parts_.count(),
                  sample_interval_us_, format_, context_.who, context_.env};
    SS_ASSIGN_OR_RETURN(JoinedParts joined, JoinParts(join));
    joined_shots_ = joined.shots;
    joined_bytes_ = joined.sample_bytes;
    path = joined.path;
  }
  dataset::DatasetEntry* entry = context_.datasets->Add(name_);  // ends the reservation
  reserved_ = false;
  context_.load(entry, path);
  context_.datasets->Publish(entry);
  if (context_.published) context_.published(*entry);
  return entry;
}

}  // namespace shotstream::write

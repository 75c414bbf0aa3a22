#include "server/write/dataset_writer.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/crc32.h"
#include "common/status_macros.h"

namespace shotstream::write {
namespace {

constexpr absl::string_view kPartial = ".sgy.partial-";

}  // namespace

absl::Status ValidateWriteName(absl::string_view name) {
  if (name.empty() || name.size() > 128) {
    return absl::InvalidArgumentError("dataset name must be 1 to 128 characters");
  }
  if (name[0] == '.') {
    return absl::InvalidArgumentError(
        absl::StrCat("dataset name '", name, "' may not start with '.'"));
  }
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat(
          "dataset name '", name, "' may hold only letters, digits, '.', '_' and '-' (it "
          "becomes a file name in the write directory)"));
    }
  }
  return absl::OkStatus();
}

std::string WrittenPath(const std::string& dir, const std::string& name) {
  return absl::StrCat(dir, "/", name, ".sgy");
}

std::vector<std::string> RemoveTemporaries(const std::string& dir, env::Env* env) {
  std::vector<std::string> removed;
  absl::StatusOr<std::vector<std::string>> names = env->List(dir);
  if (!names.ok()) return removed;
  for (const std::string& name : *names) {
    if (name.size() > 1 && name[0] == '.' && absl::StrContains(name, kPartial) &&
        env->Remove(absl::StrCat(dir, "/", name)).ok()) {
      removed.push_back(name);
    }
  }
  return removed;
}

namespace {
constexpr char kWrittenBy[] = "WRITTEN BY SHOTSTREAM WRITESHOTS FOR ";
}  // namespace

std::vector<WrittenDataset> FindWritten(const std::string& dir,
                                        std::vector<std::string>* foreign, env::Env* env) {
  // The mark every written file's textual header begins with, as FileHeader encodes it:
  // its first line, the EBCDIC spaces that pad it cut.
  std::string mark = segy::FileHeader({kWrittenBy}, 1, 1000, 5).substr(0, 80);
  while (!mark.empty() && mark.back() == '\x40') mark.pop_back();
  std::vector<WrittenDataset> found;
  absl::StatusOr<std::vector<std::string>> names = env->List(dir);
  if (!names.ok()) return found;
  for (const std::string& file : *names) {  // sorted: so is what is found
    if (!absl::EndsWith(file, ".sgy") || file[0] == '.') continue;
    const std::string name = file.substr(0, file.size() - 4);
    const std::string path = absl::StrCat(dir, "/", file);
    if (!ValidateWriteName(name).ok()) {
      foreign->push_back(absl::StrCat(path, ": not a name a write may create"));
      continue;
    }
    const absl::StatusOr<std::string> head = env::ReadPrefix(env, path, mark.size());
    if (!head.ok()) {
      foreign->push_back(absl::StrCat(path, ": cannot read it: ", head.status().message()));
    } else if (*head != mark) {
      foreign->push_back(absl::StrCat(
          path, ": its textual header does not say it was written by WriteShots"));
    } else {
      found.push_back({name, path});
    }
  }
  return found;
}

std::vector<std::string> WrittenTextLines(const std::string& name, const std::string& writer,
                                          uint64_t shots, uint64_t traces, uint32_t n_samples,
                                          double sample_interval_us, int format) {
  return {absl::StrCat(kWrittenBy,
                       writer.empty() ? "AN UNNAMED CLIENT" : writer),
          absl::StrCat("ON ", absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", absl::Now(),
                                               absl::UTCTimeZone())),
          absl::StrCat("DATASET ", name, ": ", shots, " SHOTS, ", traces, " TRACES OF ",
                       n_samples, " SAMPLES"),
          absl::StrCat("SAMPLE INTERVAL ", sample_interval_us, " US, FORMAT ", format,
                       format == 3 ? " (INT16: SAMPLES ROUNDED)" : ""),
          "SHOT ID IN FIELD RECORD (BYTES 9-12)"};
}

absl::StatusOr<std::unique_ptr<DatasetWriter>> DatasetWriter::Create(const WriteSpec& spec) {
  SS_RETURN_IF_ERROR(ValidateWriteName(spec.name));
  SS_RETURN_IF_ERROR(segy::CheckWritableFormat(spec.format));
  if (!(spec.sample_interval_us >= 0) || spec.sample_interval_us > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sample_interval_us ", spec.sample_interval_us, ": SEG-Y rev 1 holds 0 to 65535"));
  }
  std::unique_ptr<DatasetWriter> w(new DatasetWriter(spec));
  w->final_ = WrittenPath(spec.dir, spec.name);
  if (!spec.replace && spec.env->Stat(w->final_).ok()) {
    return absl::AlreadyExistsError(absl::StrCat(w->final_, " exists"));
  }
  static std::atomic<uint64_t> counter{0};
  w->temp_ = absl::StrCat(spec.dir, "/.", spec.name, kPartial, ::getpid(), "-",
                          counter.fetch_add(1));
  absl::StatusOr<std::unique_ptr<env::WritableFile>> file =
      spec.env->OpenWrite(w->temp_, env::WriteMode::kCreateNew);
  if (!file.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("write_dir ", spec.dir, ": cannot create ",
                                                      w->temp_, ": ",
                                                      env::WithoutPath(file.status(), w->temp_)));
  }
  w->file_ = *std::move(file);
  DatasetWriter* self = w.get();
  w->appender_ = std::make_unique<FileAppender>(
      w->file_.get(), spec.buffer_bytes,
      [self](const absl::Status& s) { return self->WriteError(s); });
  return w;
}

DatasetWriter::~DatasetWriter() {
  appender_.reset();  // its thread stops before the file closes
  file_.reset();
  if (!committed_ && !temp_.empty()) spec_.env->Remove(temp_).IgnoreError();
}

absl::Status DatasetWriter::WriteError(const absl::Status& s) const {
  return absl::Status(s.code(), absl::StrCat("writing dataset '", spec_.name, "' (", temp_,
                                             "): ", env::WithoutPath(s, temp_)));
}

absl::Status DatasetWriter::Append(const void* data, size_t n) {
  return appender_->Append(data, n);
}

absl::Status DatasetWriter::BeginShot(
    int64_t shot_id, uint32_t n_traces, uint32_t n_samples,
    const std::vector<std::pair<std::string, std::vector<double>>>& headers) {
  if (shot_.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat("shot ", shot_id, " begins before shot ",
                                                   shot_->id, " ended (shot_end)"));
  }
  if (n_traces == 0) {
    return absl::InvalidArgumentError(absl::StrCat("shot ", shot_id, " has no traces"));
  }
  if (shot_id < INT32_MIN || shot_id > INT32_MAX) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shot ", shot_id, ": SEG-Y keeps shot ids (field_record) in 4 bytes"));
  }
  if (n_samples == 0 || n_samples > segy::kMaxSegyTraceSamples) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shot ", shot_id, " has ", n_samples, " samples per trace; SEG-Y rev 1 holds 1 to ",
        segy::kMaxSegyTraceSamples));
  }
  if (n_samples_ != 0 && n_samples != n_samples_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shot ", shot_id, " has ", n_samples, " samples per trace where the first shot has ",
        n_samples_, "; the shots of a dataset share the sample count"));
  }
  if (!ids_.insert(shot_id).second) {
    return absl::InvalidArgumentError(absl::StrCat("shot ", shot_id, " is given twice"));
  }
  SS_ASSIGN_OR_RETURN(segy::ShotTraceHeaders h,
                      segy::ShotTraceHeaders::Make(shot_id, n_traces, n_samples,
                                                   spec_.sample_interval_us, headers));
  if (h.max_error() > max_header_error_) {
    max_header_error_ = h.max_error();
    max_header_error_at_ = h.worst();
  }
  if (n_samples_ == 0) {  // the file header's place; its final text is written by Commit
    n_samples_ = n_samples;
    encoded_trace_bytes_ =
        segy::kTraceHeaderBytes + size_t{n_samples} * segy::WrittenBytesPerSample(spec_.format);
    const std::string head =
        segy::FileHeader({}, n_samples_, spec_.sample_interval_us, spec_.format);
    SS_RETURN_IF_ERROR(Append(head.data(), head.size()));
  }
  shot_ = OpenShot{shot_id, n_traces, 0, 0, std::move(h)};
  return absl::OkStatus();
}

absl::Status DatasetWriter::AddSamples(absl::string_view samples) {
  if (!shot_.has_value()) {
    return absl::InvalidArgumentError("samples outside a shot (a shot begins with shot_id, "
                                      "n_traces and n_samples)");
  }
  const size_t trace_bytes = size_t{n_samples_} * sizeof(float);
  if (samples.size() % trace_bytes != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shot ", shot_->id, ": a message of ", samples.size(), " sample bytes is not whole "
        "traces of ", n_samples_, " float32 samples"));
  }
  const uint64_t n = samples.size() / trace_bytes;
  if (shot_->done + n > shot_->n_traces) {
    return absl::InvalidArgumentError(absl::StrCat("shot ", shot_->id, ": more than its ",
                                                   shot_->n_traces, " traces"));
  }
  shot_->crc = Crc32(shot_->crc, samples.data(), samples.size());
  // Each trace is encoded straight into the appender's buffer. The message's bytes are
  // a heap block (aligned) holding whole float32 traces, so they are read as floats.
  const float* src = reinterpret_cast<const float*>(samples.data());
  if (spec_.format != 5) {
    // IBM float and int16 have no NaN or infinity: refused, not turned into numbers.
    for (uint64_t i = 0; i < n * n_samples_; ++i) {
      if (std::isfinite(src[i])) continue;
      return absl::InvalidArgumentError(absl::StrCat(
          "shot ", shot_->id, ", trace ", shot_->done + i / n_samples_ + 1, ", sample ",
          i % n_samples_, " is ", src[i], ": sample_format ", spec_.format,
          spec_.format == 1 ? " (IBM float)" : " (int16)",
          " cannot hold NaN or infinity; write sample_format 5 (IEEE float32), which keeps "
          "them, or replace them"));
    }
  }
  for (uint64_t t = 0; t < n; ++t) {
    uint8_t* dst = appender_->Extend(encoded_trace_bytes_);
    shot_->headers.Fill(shot_->done, traces_ + 1, dst);
    max_error_ = std::max(max_error_, segy::EncodeTraceSamples(src + t * n_samples_, n_samples_,
                                                               spec_.format, dst + 240));
    SS_RETURN_IF_ERROR(appender_->Commit());
    ++shot_->done;
    ++traces_;
  }
  sample_bytes_ += samples.size();
  return absl::OkStatus();
}

absl::Status DatasetWriter::EndShot(uint32_t crc32) {
  if (!shot_.has_value()) return absl::InvalidArgumentError("shot_end outside a shot");
  if (shot_->done != shot_->n_traces) {
    return absl::InvalidArgumentError(absl::StrCat("shot ", shot_->id, " ended after ",
                                                   shot_->done, " of its ", shot_->n_traces,
                                                   " traces"));
  }
  if (crc32 != shot_->crc) {
    return absl::DataLossError(absl::StrCat(
        "shot ", shot_->id, ": CRC-32 of the samples received is ", shot_->crc,
        ", the client's is ", crc32, " (damaged in transit); nothing was kept"));
  }
  shot_.reset();
  ++shots_;
  return absl::OkStatus();
}

absl::StatusOr<std::string> DatasetWriter::Commit() {
  if (shot_.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat("the stream ended inside shot ", shot_->id,
                                                   " (", shot_->done, " of ", shot_->n_traces,
                                                   " traces, no shot_end)"));
  }
  if (shots_ == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("dataset '", spec_.name, "': the write holds no shot"));
  }
  SS_RETURN_IF_ERROR(appender_->Finish());
  appender_.reset();
  const std::string head =
      segy::FileHeader(WrittenTextLines(spec_.name, spec_.writer, shots_, traces_, n_samples_,
                                        spec_.sample_interval_us, spec_.format),
                       n_samples_, spec_.sample_interval_us, spec_.format);
  if (absl::Status s = file_->WriteAt(0, head); !s.ok()) return WriteError(s);
  if (absl::Status s = file_->Sync(); !s.ok()) return WriteError(s);
  const absl::Status closed = file_->Close();
  file_.reset();
  if (!closed.ok()) return WriteError(closed);
  const absl::Status renamed = spec_.replace ? spec_.env->Rename(temp_, final_)
                                             : spec_.env->RenameNoReplace(temp_, final_);
  if (absl::IsAlreadyExists(renamed)) return renamed;
  if (!renamed.ok()) return WriteError(renamed);
  committed_ = true;
  spec_.env->SyncDir(spec_.dir).IgnoreError();  // the file is whole; its name may follow
  return final_;
}

}  // namespace shotstream::write

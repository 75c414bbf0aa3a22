#include "server/source/trace_file_source.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace shotstream::source {

void PutBigEndianField(uint8_t* h, int byte, int size, double v) {
  const double lo = size == 2 ? INT16_MIN : INT32_MIN, hi = size == 2 ? INT16_MAX : INT32_MAX;
  const double r = std::nearbyint(v);
  const int64_t x = static_cast<int64_t>(std::isnan(r) ? 0 : std::min(hi, std::max(lo, r)));
  for (int k = 0; k < size; ++k) {
    h[byte - 1 + k] = static_cast<uint8_t>(static_cast<uint64_t>(x) >> (8 * (size - 1 - k)));
  }
}

absl::Status TraceFileSource::AddFiles(const SourceSpec& spec,
                                       std::vector<std::unique_ptr<io::TraceFile>> files) {
  struct Note {
    std::string text;
    std::string first_path;
    size_t more_files;
  };
  std::vector<Note> notes;
  size_t mapped = 0;
  for (std::unique_ptr<io::TraceFile>& f : files) {
    const io::TraceLayout& l = f->layout();
    if (files_.empty()) {
      info_.n_samples = l.n_samples;
      info_.sample_interval_us = l.sample_interval_us;
      info_.sample_format = static_cast<int>(l.format);
    } else if (l.n_samples != info_.n_samples) {
      return absl::InvalidArgumentError(absl::StrCat(
          f->path(), " has ", l.n_samples, " samples per trace but ", files_[0]->path(),
          " has ", info_.n_samples, "; all files of a dataset must share the sample count"));
    }
    for (const std::string& note : l.notes) {
      auto it = std::find_if(notes.begin(), notes.end(),
                             [&](const Note& n) { return n.text == note; });
      if (it == notes.end()) {
        notes.push_back({note, f->path(), 0});
      } else {
        ++it->more_files;
      }
    }
    info_.file_bytes += f->size();
    mapped += f->mapped();
    file_ptrs_.push_back(f.get());
    files_.push_back(std::move(f));
  }
  for (const Note& n : notes) {
    info_.notes.push_back(n.more_files == 0
                              ? absl::StrCat(n.first_path, ": ", n.text)
                              : absl::StrCat(n.first_path, " (and ", n.more_files,
                                             " more files): ", n.text));
  }
  info_.n_files = files_.size();
  info_.read_by = mapped == files_.size() ? "mmap"
                  : mapped == 0           ? "pread"
                                          : absl::StrCat("mmap ", mapped, ", pread ",
                                                         files_.size() - mapped);
  (void)spec;
  return absl::OkStatus();
}

absl::Status TraceFileSource::CheckUnchanged(uint32_t file_id) const {
  return files_[file_id]->CheckUnchanged();
}

std::string TraceFileSource::Where(const io::TraceRef& t, int header_byte) const {
  return header_byte == 0 ? absl::StrCat("byte offset ", t.offset)
                          : absl::StrCat("byte ", t.offset + header_byte);
}

std::optional<io::StoredForm> TraceFileSource::FormOf(
    absl::Span<const io::TraceRef> traces) const {
  return io::FormOf(file_ptrs_, traces);
}

absl::StatusOr<ReadResult> TraceFileSource::Read(const TraceRead& read) const {
  if (read.form == SampleForm::kLocate && read.skip_checked_headers &&
      read.range.start == 0 && read.range.count == info_.n_samples) {
    ReadResult out;
    SS_ASSIGN_OR_RETURN(out.stored, io::LocateKeptTraces(file_ptrs_, read.traces, read.stats,
                                                         read.shot_id));
    if (out.stored != nullptr) return out;  // else some trace is new: read its header
  }
  bool with_headers = false;
  for (const io::TraceRef& t : read.traces) {
    with_headers |= files_[t.file_id]->layout().header_bytes() > 0;
  }
  std::vector<uint8_t> raw(with_headers ? read.traces.size() * segy::kTraceHeaderBytes : 0);
  uint8_t* header_dst = raw.empty() ? nullptr : raw.data();
  ReadResult out;
  switch (read.form) {
    case SampleForm::kFloat32:
      SS_RETURN_IF_ERROR(io::ReadTraces(file_ptrs_, read.traces, coalesce_,
                                        reinterpret_cast<float* const*>(read.dst), header_dst,
                                        read.stats, read.trace_crc, read.range));
      break;
    case SampleForm::kStored:
      SS_RETURN_IF_ERROR(io::CopyStoredTraces(file_ptrs_, read.traces, coalesce_, read.dst,
                                              header_dst, read.stats, read.trace_crc,
                                              read.range));
      break;
    case SampleForm::kLocate: {
      SS_ASSIGN_OR_RETURN(out.stored,
                          io::LocateStoredTraces(file_ptrs_, read.traces, coalesce_, header_dst,
                                                 read.stats, read.range, read.shot_id));
      break;
    }
  }
  out.headers = MakeHeaders(read, std::move(raw));
  return out;
}

}  // namespace shotstream::source

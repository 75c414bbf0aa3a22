#include "server/dataset/dataset.h"

#include <glob.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/crc32.h"
#include "common/status_macros.h"
#include "server/formats/formats.h"
#include "wire/chunk_cut.h"
#include "wire/sample_encoding.h"

namespace shotstream::dataset {
namespace {

// A window narrower than this a trace is read decoded, not located: a located trace is a
// slice and a guarded visit of its own, and a window's CRC-32 is read on every send, where
// the decoded read swaps and checksums it in cache and the client copies it without a
// swap. Quarter windows of 2000-sample traces (2000 bytes): 1.34x the shots/s decoded;
// half (4000): even; three quarters: 1.10x located (docs/performance.md).
constexpr uint64_t kMinLocatedWindowBytes = 4096;

absl::StatusOr<std::vector<std::string>> ExpandGlobs(const DatasetSpec& spec) {
  std::vector<std::string> paths;
  for (const std::string& pattern : spec.globs) {
    auto matched = ExpandGlob(pattern, /*may_match_nothing=*/true);
    if (!matched.ok()) {
      return absl::Status(matched.status().code(), absl::StrCat("dataset '", spec.name,
                                                                "': ", matched.status().message()));
    }
    paths.insert(paths.end(), matched->begin(), matched->end());
  }
  std::sort(paths.begin(), paths.end());
  paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
  if (paths.empty()) {
    return absl::NotFoundError(absl::StrCat("dataset '", spec.name, "': no file matches '",
                                            absl::StrJoin(spec.globs, ","), "'"));
  }
  return paths;
}

// A file left out under on_bad_file: skip, as DatasetInfo lists it: "PATH: why".
std::string BadFile(const DatasetSpec& spec, const std::string& path, const absl::Status& s) {
  absl::string_view why = s.message();
  const std::string prefix = absl::StrCat("dataset '", spec.name, "': ");
  if (absl::StartsWith(why, prefix)) why.remove_prefix(prefix.size());
  if (absl::StartsWith(why, path)) return std::string(why);
  return absl::StrCat(path, ": ", why);
}

// Bad input, which no retry mends (a file that cannot be read now is not "bad").
bool IsPermanent(const absl::Status& s) {
  return absl::IsFailedPrecondition(s) || absl::IsInvalidArgument(s) || absl::IsDataLoss(s) ||
         absl::IsNotFound(s) || absl::IsOutOfRange(s);
}

source::SourceSpec SourceSpecOf(const DatasetSpec& spec) {
  source::SourceSpec s;
  s.dataset = spec.name;
  s.shot_key = spec.shot_key;
  s.byte_order = spec.byte_order;
  s.io = spec.io;
  s.coalesce = spec.coalesce;
  s.scan_block_bytes = spec.scan_block_bytes;
  s.check_trace_lengths = spec.check_trace_lengths;
  s.array_path = spec.array_path;
  s.sample_interval_us = spec.sample_interval_us;
  if (!spec.catalog_dir.empty()) s.catalog_path = spec.catalog_dir + "/" + spec.name + ".catalog";
  s.ignore_saved_catalog = spec.ignore_saved_catalog;
  return s;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ExpandGlob(const std::string& pattern,
                                                    bool may_match_nothing) {
  std::vector<std::string> paths;
  glob_t g{};
  const int rc = ::glob(pattern.c_str(), GLOB_NOSORT, nullptr, &g);
  if (rc == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) paths.emplace_back(g.gl_pathv[i]);
  }
  globfree(&g);
  if (rc != 0 && rc != GLOB_NOMATCH) {
    return absl::UnavailableError(absl::StrCat("cannot expand '", pattern, "'"));
  }
  if (paths.empty() && !may_match_nothing) {
    return absl::NotFoundError(absl::StrCat("no file matches '", pattern, "'"));
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

absl::Status CheckDatasetFile(const DatasetSpec& spec, const std::string& path) {
  SS_ASSIGN_OR_RETURN(const source::Format* format, source::FindFormat(spec.format));
  if (format == nullptr) format = &source::DetectFormat(path);
  const absl::Status s = format->check_file(SourceSpecOf(spec), path);
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat("dataset '", spec.name, "': ", s.message()));
}

absl::StatusOr<std::unique_ptr<Dataset>> Dataset::Load(const DatasetSpec& spec,
                                                       const catalog::ScanProgress& progress) {
  std::unique_ptr<Dataset> d(new Dataset());
  d->spec_ = spec;
  SS_ASSIGN_OR_RETURN(const source::Format* format, source::FindFormat(spec.format));
  source::SourceSpec source_spec = SourceSpecOf(spec);
  SS_ASSIGN_OR_RETURN(source_spec.paths, ExpandGlobs(spec));
  source_spec.progress = progress;
  const absl::Time start = absl::Now();
  if (!spec.skip_bad_files) {
    SS_ASSIGN_OR_RETURN(d->source_, source::OpenSource(format, source_spec));
    d->catalog_seconds_ = absl::ToDoubleSeconds(absl::Now() - start);
    return d;
  }
  // on_bad_file: skip. Files whose headers do not open as their format are left out
  // first; then a scan that fails naming a file leaves that one out and runs again.
  std::vector<std::string>& paths = source_spec.paths;
  for (auto it = paths.begin(); it != paths.end();) {
    const absl::Status s = CheckDatasetFile(spec, *it);
    if (s.ok()) {
      ++it;
      continue;
    }
    if (!IsPermanent(s)) return s;  // cannot be read now: no reason to leave it out
    d->bad_files_.push_back(BadFile(spec, *it, s));
    it = paths.erase(it);
  }
  for (;;) {
    if (paths.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "dataset '", spec.name, "': every file is bad (on_bad_file: skip): ",
          absl::StrJoin(d->bad_files_, "; ")));
    }
    absl::StatusOr<std::unique_ptr<source::Source>> opened = source::OpenSource(format, source_spec);
    if (opened.ok()) {
      d->source_ = std::move(*opened);
      break;
    }
    // The file the error names (the longest path it contains: a/b.sgy, not a/b).
    auto named = paths.end();
    for (auto it = paths.begin(); it != paths.end(); ++it) {
      if (opened.status().message().find(*it) == absl::string_view::npos) continue;
      if (named == paths.end() || it->size() > named->size()) named = it;
    }
    if (named == paths.end() || !IsPermanent(opened.status())) return opened.status();
    d->bad_files_.push_back(BadFile(spec, *named, opened.status()));
    paths.erase(named);
  }
  d->catalog_seconds_ = absl::ToDoubleSeconds(absl::Now() - start);
  return d;
}

std::unique_ptr<Dataset> Dataset::FromSource(const DatasetSpec& spec,
                                             std::unique_ptr<source::Source> source) {
  std::unique_ptr<Dataset> d(new Dataset());
  d->spec_ = spec;
  d->source_ = std::move(source);
  return d;
}

absl::StatusOr<segy::HeaderSelector> Dataset::ResolveHeader(const std::string& name) const {
  if (info().any_standard_field) return segy::ResolveHeader(name);
  const std::vector<std::string>& fields = header_fields();
  if (std::find(fields.begin(), fields.end(), name) == fields.end()) {
    const std::string close = segy::ClosestName(name, fields);
    return absl::InvalidArgumentError(absl::StrCat(
        "dataset '", spec_.name, "' (", format(), " files) has no header '", name, "'",
        close.empty() ? "" : absl::StrCat(" (did you mean '", close, "'?)"),
        "; it has: ", absl::StrJoin(fields, ", ")));
  }
  // A field of the source's own: the SEG-Y field's scaling where the name is one.
  auto standard = segy::ResolveHeader(name);
  if (standard.ok()) return standard;
  segy::HeaderSelector custom;
  custom.name = name;
  return custom;
}

absl::StatusOr<std::vector<io::TraceRef>> Dataset::ShotTraces(int64_t shot_id,
                                                             const ShotSelection& sel) const {
  const uint32_t ns = n_samples();
  const catalog::ShotEntry* shot = catalog().Find(shot_id);
  if (shot == nullptr) {
    return absl::NotFoundError(absl::StrCat("dataset '", spec_.name, "' has no shot ", shot_id));
  }
  if (uint64_t{sel.start} + sel.count > ns || sel.start >= ns) {
    return absl::InvalidArgumentError(
        absl::StrCat("dataset '", spec_.name, "': samples [", sel.start, ", ",
                     sel.start + sel.count, ") are outside its traces of ", ns));
  }
  std::vector<io::TraceRef> traces = catalog().TracesOf(*shot);
  SS_RETURN_IF_ERROR(CheckFilesOf(traces));
  return traces;
}

io::SampleRange Dataset::RangeOf(const ShotSelection& sel) const {
  return io::SampleRange{sel.start, sel.count == 0 ? n_samples() - sel.start : sel.count};
}

Dataset::TraceBytes Dataset::TraceBytesOf(const ReadPlan& plan,
                                          const std::optional<io::StoredForm>& form) const {
  TraceBytes t;
  const uint64_t count = RangeOf(plan.selection).count;
  t.native_width = plan.native && form.has_value()
                       ? wire::NativeBytesPerSample(static_cast<int>(form->format))
                       : 0;
  t.out = count * sizeof(float);
  t.wire = t.native_width > 0 ? count * t.native_width : t.out;
  // Stored IEEE traces that may go with the headers between them (ShotChunk.trace_gap)
  // are cut so that the message, gaps and all, stays within the limit.
  const bool gapped = plan.selection.accept_trace_gaps && t.native_width == 0 &&
                      form.has_value() && form->mapped &&
                      form->format == segy::SampleFormat::kIeeeFloat32;
  t.per_chunk = gapped ? wire::TracesPerGappedChunk(plan.selection.max_chunk_bytes, t.wire)
                       : wire::TracesPerChunk(plan.selection.max_chunk_bytes, t.wire);
  return t;
}

absl::StatusOr<ShotData> Dataset::ReadShot(int64_t shot_id, const ReadPlan& plan,
                                           io::ReadStats* stats) const {
  SS_ASSIGN_OR_RETURN(const std::vector<io::TraceRef> traces, ShotTraces(shot_id, plan.selection));
  return ReadTraces(shot_id, plan, traces, /*select=*/true, stats);
}

absl::StatusOr<ShotHead> Dataset::ReadShotHead(int64_t shot_id, const ReadPlan& plan,
                                               uint64_t piece_bytes,
                                               io::ReadStats* stats) const {
  const ShotSelection& sel = plan.selection;
  SS_ASSIGN_OR_RETURN(std::vector<io::TraceRef> traces, ShotTraces(shot_id, sel));
  const io::SampleRange range = RangeOf(sel);
  ShotHead head;
  head.shot_id = shot_id;
  head.n_samples = range.count;
  if (!sel.where.empty() || !sel.headers.empty() || sel.raw_trace_headers) {
    // The header pass: one sample a trace, for the headers that come with it.
    std::vector<float> one(traces.size());
    std::vector<uint8_t*> dst(traces.size());
    std::vector<uint32_t> crc(traces.size());
    for (size_t i = 0; i < traces.size(); ++i) dst[i] = reinterpret_cast<uint8_t*>(&one[i]);
    source::TraceRead read;
    read.shot_id = shot_id;
    read.traces = traces;
    read.range = io::SampleRange{range.start, 1};
    read.dst = dst.data();
    read.trace_crc = crc.data();
    read.stats = stats;
    SS_ASSIGN_OR_RETURN(source::ReadResult got, ReadFromSource(read));
    const source::TraceHeaders& headers = *got.headers;
    SS_RETURN_IF_ERROR(CheckShotKeys(shot_id, traces, headers));
    const std::vector<size_t> kept = Kept(sel, headers, traces.size());
    Select(sel, headers, kept, &head.headers, &head.trace_headers);
    std::vector<io::TraceRef> kept_traces;
    kept_traces.reserve(kept.size());
    for (size_t i : kept) kept_traces.push_back(traces[i]);
    traces = std::move(kept_traces);
  }
  head.n_traces = static_cast<uint32_t>(traces.size());
  head.total_bytes = uint64_t{head.n_traces} * range.count * sizeof(float);
  // Whole chunks a piece, at least one: the chunk's traces as ReadTraces will cut them.
  head.form = source_->FormOf(traces);
  const TraceBytes t = TraceBytesOf(plan, head.form);
  const uint64_t chunks = std::max<uint64_t>(1, piece_bytes / (t.per_chunk * t.out));
  head.traces_per_piece =
      static_cast<uint32_t>(std::min<uint64_t>(chunks * t.per_chunk, UINT32_MAX));
  head.traces = std::move(traces);
  return head;
}

absl::StatusOr<ShotData> Dataset::ReadPiece(const ShotHead& head, size_t piece,
                                            const ReadPlan& plan, io::ReadStats* stats) const {
  const uint32_t first = head.piece_first(piece);
  const uint32_t n = head.piece_traces(piece);
  const absl::Span<const io::TraceRef> traces =
      absl::MakeConstSpan(head.traces).subspan(first, n);
  SS_RETURN_IF_ERROR(CheckFilesOf(traces));
  if (traces.empty()) {  // no trace kept: one empty chunk says so
    ShotData out;
    out.shot_id = head.shot_id;
    out.n_samples = head.n_samples;
    out.chunks.emplace_back();
    out.chunk_traces.push_back(0);
    out.chunk_crc32.push_back(0);
    return out;
  }
  SS_ASSIGN_OR_RETURN(ShotData out,
                      ReadTraces(head.shot_id, plan, traces, /*select=*/false, stats, &head.form));
  out.first_trace = first;
  return out;
}

std::vector<size_t> Dataset::Kept(const ShotSelection& sel, const source::TraceHeaders& headers,
                                  size_t n) {
  std::vector<size_t> kept;
  kept.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    bool keep = true;
    for (const TraceCondition& c : sel.where) {
      const double v = headers.Value(i, c.header);
      if (!(v >= c.low && v <= c.high)) keep = false;
    }
    if (keep) kept.push_back(i);
  }
  return kept;
}

void Dataset::Select(const ShotSelection& sel, const source::TraceHeaders& headers,
                     const std::vector<size_t>& kept,
                     std::vector<std::pair<std::string, std::vector<double>>>* columns,
                     std::string* trace_headers) {
  for (const segy::HeaderSelector& h : sel.headers) {
    std::vector<double> column(kept.size());
    for (size_t k = 0; k < kept.size(); ++k) column[k] = headers.Value(kept[k], h);
    columns->emplace_back(h.name, std::move(column));
  }
  if (sel.raw_trace_headers) {
    trace_headers->resize(kept.size() * segy::kTraceHeaderBytes);
    for (size_t k = 0; k < kept.size(); ++k) {
      headers.BigEndianHeader(kept[k], reinterpret_cast<uint8_t*>(&(*trace_headers)[0]) +
                                           k * segy::kTraceHeaderBytes);
    }
  }
}

absl::StatusOr<ShotData> Dataset::ReadTraces(int64_t shot_id, const ReadPlan& plan,
                                             absl::Span<const io::TraceRef> traces, bool select,
                                             io::ReadStats* stats,
                                             const std::optional<io::StoredForm>* shot_form) const {
  const ShotSelection& sel = plan.selection;
  const io::SampleRange range = RangeOf(sel);

  // How the samples are read: as stored for NATIVE where the shot's traces share a format
  // sent natively; located in the mapping (zero copy) where they are mapped IEEE float32
  // of a byte order the plan allows, whole or in a window of at least kMinLocatedWindowBytes
  // a trace; else decoded to float32.
  const std::optional<io::StoredForm> form =
      shot_form != nullptr ? *shot_form : source_->FormOf(traces);
  const TraceBytes t = TraceBytesOf(plan, form);
  const int native_width = t.native_width;
  const bool big = form.has_value() && form->byte_order == segy::ByteOrder::kBigEndian;
  const bool locate = native_width == 0 && plan.zero_copy != ZeroCopy::kOff &&
                      form.has_value() && form->mapped &&
                      form->format == segy::SampleFormat::kIeeeFloat32 &&
                      (!big || plan.zero_copy == ZeroCopy::kAnyByteOrder) && !traces.empty() &&
                      (range.count == n_samples() ||
                       uint64_t{range.count} * sizeof(float) >= kMinLocatedWindowBytes);
  const uint64_t trace_out_bytes = t.out;
  const uint64_t trace_wire_bytes = t.wire;
  const uint64_t per_chunk = t.per_chunk;

  ShotData out;
  out.shot_id = shot_id;
  out.n_samples = range.count;
  // Without conditions the samples go straight into their chunks; with them, into one
  // buffer for the shot, and the traces kept are copied into chunks once the headers say
  // which.
  const bool filter = select && !sel.where.empty();
  std::vector<uint32_t> trace_crc;
  std::vector<SampleBuffer> read_into;
  std::vector<uint8_t*> dst(traces.size());
  source::TraceRead read;
  read.shot_id = shot_id;
  read.traces = traces;
  read.range = range;
  read.stats = stats;
  if (locate) {
    read.form = source::SampleForm::kLocate;
    out.traces_per_chunk = static_cast<uint32_t>(std::min<uint64_t>(per_chunk, UINT32_MAX));
    out.big_endian = big;
  } else {
    const uint64_t run = filter ? std::max<uint64_t>(traces.size(), 1) : per_chunk;
    for (uint64_t t = 0; t < traces.size(); t += run) {
      const uint64_t n = std::min<uint64_t>(run, traces.size() - t);
      read_into.emplace_back(n * trace_wire_bytes);  // not zero-filled: every byte is written
      for (uint64_t i = 0; i < n; ++i) dst[t + i] = read_into.back().data() + i * trace_wire_bytes;
    }
    // Each trace's CRC-32 is taken as it is decoded (in cache), then joined in shot order.
    trace_crc.resize(traces.size());
    read.dst = dst.data();
    read.trace_crc = trace_crc.data();
    if (native_width > 0) {
      read.form = source::SampleForm::kStored;
      out.encoding = wire::Encoding::kNative;
      out.sample_format = static_cast<int>(form->format);
      out.big_endian = big;
    }
  }
  // Whole traces sent zero copy with no header asked: those already checked and sent
  // under these files need not be read and checked again (TraceRead::skip_checked_headers).
  const bool headers_wanted =
      select && (!sel.where.empty() || !sel.headers.empty() || sel.raw_trace_headers);
  read.skip_checked_headers = locate && !headers_wanted;
  SS_ASSIGN_OR_RETURN(source::ReadResult got, ReadFromSource(read));
  if (got.headers != nullptr) SS_RETURN_IF_ERROR(CheckShotKeys(shot_id, traces, *got.headers));

  // The traces kept: all, or those whose header values meet every condition.
  std::vector<size_t> kept;
  if (filter) {
    kept = Kept(sel, *got.headers, traces.size());
  } else {
    kept.resize(traces.size());
    for (size_t i = 0; i < kept.size(); ++i) kept[i] = i;
  }
  out.n_traces = static_cast<uint32_t>(kept.size());
  out.total_bytes = trace_out_bytes * out.n_traces;
  if (locate) {
    out.stored = std::move(got.stored);
    if (filter) out.stored->Keep(kept);
    if (!out.is_stored()) {  // no trace left: an empty decoded chunk says so
      out.stored.reset();
      out.chunks.emplace_back();
      out.chunk_traces.push_back(0);
      out.chunk_crc32.push_back(0);
    }
  } else {
    if (!filter) {
      out.chunks = std::move(read_into);
    } else {
      const uint8_t* all = read_into.empty() ? nullptr : read_into.front().data();
      for (size_t k = 0; k < kept.size(); k += per_chunk) {
        const size_t n = std::min<size_t>(per_chunk, kept.size() - k);
        out.chunks.emplace_back(n * trace_wire_bytes);
        for (size_t i = 0; i < n; ++i) {
          std::memcpy(out.chunks.back().data() + i * trace_wire_bytes,
                      all + kept[k + i] * trace_wire_bytes, trace_wire_bytes);
        }
      }
    }
    if (out.chunks.empty()) out.chunks.emplace_back();
    // Each chunk's CRC-32 joins its traces'; the shot's joins the chunks'.
    const Crc32Joiner join(trace_out_bytes);
    size_t k = 0;
    for (size_t c = 0; c < out.chunks.size(); ++c) {
      const uint32_t n = static_cast<uint32_t>(out.chunks[c].size() / trace_wire_bytes);
      uint32_t crc = 0;
      for (uint32_t i = 0; i < n; ++i) crc = join.Append(crc, trace_crc[kept[k++]]);
      out.chunk_traces.push_back(n);
      out.chunk_crc32.push_back(crc);
      out.crc32 = Crc32Combine(out.crc32, crc, uint64_t{n} * trace_out_bytes);
    }
  }
  if (headers_wanted) Select(sel, *got.headers, kept, &out.headers, &out.trace_headers);
  return out;
}

absl::Status Dataset::FilesChanged(absl::Status why) const {
  if (spec_.on_files_changed) spec_.on_files_changed(*this, why);
  return absl::DataLossError(absl::StrCat(
      "dataset '", spec_.name, "': ", why.message(),
      spec_.on_files_changed ? "; its catalog is being rebuilt" : "; its catalog must be rebuilt"));
}

absl::StatusOr<source::ReadResult> Dataset::ReadFromSource(const source::TraceRead& read) const {
  absl::StatusOr<source::ReadResult> got = source_->Read(read);
  if (got.ok() || !absl::IsDataLoss(got.status())) return got;
  // The read found a change (its shot's bytes moved under it) where the files' check now
  // says so (which starts the rebuild): DATA_LOSS in the read's words. Otherwise (a corrupt
  // chunk) the read's error as it is: no rebuild mends it.
  if (CheckFilesOf(read.traces).ok()) return got.status();
  return absl::DataLossError(absl::StrCat("dataset '", spec_.name, "': ",
                                          got.status().message(), "; its catalog is being rebuilt"));
}

absl::Status Dataset::CheckFilesOf(absl::Span<const io::TraceRef> traces) const {
  uint32_t last = UINT32_MAX;
  for (const io::TraceRef& t : traces) {
    if (t.file_id == last) continue;  // traces of a shot run through few files, in order
    last = t.file_id;
    const absl::Status s = source_->CheckUnchanged(t.file_id);
    if (!s.ok()) {
      return FilesChanged(absl::DataLossError(
          absl::StrCat(s.message(), " (found reading the trace at ", source_->Where(t, 0), ")")));
    }
  }
  return absl::OkStatus();
}

absl::Status Dataset::CheckShotKeys(int64_t shot_id, absl::Span<const io::TraceRef> traces,
                                    const source::TraceHeaders& headers) const {
  const source::SourceInfo& i = info();
  if (i.source_xy) {
    const auto& positions = catalog().source_positions();
    if (shot_id < 1 || static_cast<uint64_t>(shot_id) > positions.size()) return absl::OkStatus();
    const catalog::SourcePosition& p = positions[shot_id - 1];
    static const segy::HeaderSelector kSourceX = *segy::ResolveHeader("source_x");
    static const segy::HeaderSelector kSourceY = *segy::ResolveHeader("source_y");
    for (size_t t = 0; t < traces.size(); ++t) {
      const double x = headers.Value(t, kSourceX), y = headers.Value(t, kSourceY);
      if (x == p.x && y == p.y) continue;
      return FilesChanged(absl::DataLossError(absl::StrCat(
          source_->path(traces[t].file_id), ": ", source_->Where(traces[t], 73),
          ": the trace header's source position is (", x, ", ",
          y, ") where the catalog has a trace of shot ", shot_id, " at (", p.x, ", ", p.y,
          "): the file changed since its catalog was built")));
    }
    return absl::OkStatus();
  }
  if (!i.shot_key.has_value()) return absl::OkStatus();
  const segy::HeaderSelector& key = *i.shot_key;
  for (size_t t = 0; t < traces.size(); ++t) {
    const double found = headers.Value(t, key);
    if (found == static_cast<double>(shot_id)) continue;
    return FilesChanged(absl::DataLossError(absl::StrCat(
        source_->path(traces[t].file_id), ": ", source_->Where(traces[t], key.byte),
        ": the trace header says shot ",
        static_cast<int64_t>(found), " (", key.name, ", bytes ", key.byte, "-", key.byte + 3,
        ") where the catalog has a trace of shot ", shot_id,
        ": the file changed since its catalog was built")));
  }
  return absl::OkStatus();
}

}  // namespace shotstream::dataset

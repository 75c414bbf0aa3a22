#include "server/io/coalescing_reader.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <numeric>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/crc32.h"
#include "common/status_macros.h"
#include "server/common/mapping_guard.h"

namespace shotstream::io {
namespace {
// MADV_POPULATE_READ (Linux 5.14), spelled out for older headers.
#ifdef MADV_POPULATE_READ
constexpr int kPopulateRead = MADV_POPULATE_READ;
#else
constexpr int kPopulateRead = 22;
#endif

std::atomic<uint64_t> stored_bytes_touched{0};
}  // namespace

ReadPlan PlanReads(absl::Span<const TraceRef> traces,
                   absl::Span<const uint64_t> trace_bytes_by_file,
                   const CoalesceOptions& options) {
  std::vector<Piece> pieces(traces.size());
  for (size_t i = 0; i < traces.size(); ++i) {
    pieces[i] = {traces[i].file_id, traces[i].offset, trace_bytes_by_file[traces[i].file_id]};
  }
  return PlanPieces(pieces, options);
}

ReadPlan PlanPieces(absl::Span<const Piece> pieces, const CoalesceOptions& options) {
  ReadPlan plan;
  plan.order.resize(pieces.size());
  std::iota(plan.order.begin(), plan.order.end(), size_t{0});
  std::stable_sort(plan.order.begin(), plan.order.end(), [&](size_t a, size_t b) {
    const Piece& x = pieces[a];
    const Piece& y = pieces[b];
    return x.file_id != y.file_id ? x.file_id < y.file_id : x.offset < y.offset;
  });
  for (size_t i = 0; i < plan.order.size(); ++i) {
    const Piece& t = pieces[plan.order[i]];
    if (!plan.reads.empty()) {
      CoalescedRead& r = plan.reads.back();
      const uint64_t end = r.offset + r.length;
      // A repeated piece (inside the current read) costs nothing more.
      const bool same_file = r.file_id == t.file_id;
      if (same_file && t.offset + t.length <= end) {
        ++r.count;
        continue;
      }
      if (same_file && t.offset >= end && t.offset - end <= options.max_gap_bytes &&
          t.offset + t.length - r.offset <= options.max_read_bytes) {
        r.length = t.offset + t.length - r.offset;
        ++r.count;
        continue;
      }
    }
    plan.reads.push_back(CoalescedRead{t.file_id, t.offset, t.length, i, 1});
  }
  return plan;
}

namespace {

// The handles a read holds open (TraceFile::Acquire): for a copy, only the file being
// read; for zero copy, every file the traces are in, kept by the StoredTraces that point
// into them. A plan's reads go file by file, so a file is acquired once per plan.
class Pins {
 public:
  explicit Pins(bool keep_all) : keep_all_(keep_all) {}
  absl::StatusOr<const TraceFile::Handle*> Get(const TraceFile& file, uint32_t file_id) {
    if (!held_.empty() && held_.back().first == file_id) return held_.back().second.get();
    if (!keep_all_) held_.clear();
    SS_ASSIGN_OR_RETURN(std::shared_ptr<const TraceFile::Handle> h, file.Acquire());
    held_.emplace_back(file_id, std::move(h));
    return held_.back().second.get();
  }
  const TraceFile::Handle* Find(uint32_t file_id) const {
    for (const auto& [id, handle] : held_) {
      if (id == file_id) return handle.get();
    }
    return nullptr;
  }

 private:
  const bool keep_all_;
  std::vector<std::pair<uint32_t, std::shared_ptr<const TraceFile::Handle>>> held_;
};

// Calls on_header(i, header) and on_samples(i, samples) for every trace i of `traces`
// (header: its first byte; samples: the first sample of `range`), reading each coalesced
// range once: in place for mapped files (under the SIGBUS guard), else into a per-thread
// scratch buffer, through the handles `pins` holds. A whole-trace range reads each trace
// as one piece; a window reads the header and the window as two.
template <typename OnHeader, typename OnSamples>
absl::Status VisitTraces(absl::Span<const TraceFile* const> files,
                         absl::Span<const TraceRef> traces, const CoalesceOptions& options,
                         ReadStats* stats, SampleRange range, Pins* pins,
                         const OnHeader& on_header, const OnSamples& on_samples) {
  if (traces.empty()) return absl::OkStatus();
  bool whole = true;
  uint32_t last = UINT32_MAX;
  for (const TraceRef& t : traces) {
    if (t.file_id >= files.size()) {
      return absl::InternalError(absl::StrCat("trace refers to file id ", t.file_id, " of ",
                                              files.size()));
    }
    if (t.file_id == last) continue;  // the files of the traces, not of the dataset
    last = t.file_id;
    const TraceFile* f = files[t.file_id];
    const TraceLayout& l = f->layout();
    if (range.count != 0 && (range.start != 0 || range.count != l.n_samples)) whole = false;
    if (uint64_t{range.start} + range.count > l.n_samples) {
      return absl::InternalError(absl::StrCat(f->path(), ": samples [", range.start, ", ",
                                              range.start + range.count, ") beyond its ",
                                              l.n_samples));
    }
  }
  std::vector<Piece> pieces(whole ? traces.size() : 2 * traces.size());
  for (size_t i = 0; i < traces.size(); ++i) {
    const TraceLayout& l = files[traces[i].file_id]->layout();
    if (whole) {
      pieces[i] = {traces[i].file_id, traces[i].offset, l.trace_bytes};
    } else {
      const uint64_t bps = (l.trace_bytes - l.header_bytes()) / l.n_samples;
      pieces[2 * i] = {traces[i].file_id, traces[i].offset, l.header_bytes()};
      pieces[2 * i + 1] = {traces[i].file_id,
                           traces[i].offset + l.header_bytes() + range.start * bps,
                           uint64_t{range.count} * bps};
    }
  }
  const ReadPlan plan = PlanPieces(pieces, options);
  thread_local std::vector<uint8_t> scratch;
  for (const CoalescedRead& r : plan.reads) {
    const io::TraceFile& file = *files[r.file_id];
    const TraceLayout& layout = file.layout();
    auto each = [&](const uint8_t* base) {
      for (size_t k = r.first; k < r.first + r.count; ++k) {
        const size_t p = plan.order[k];
        const uint8_t* at = base + (pieces[p].offset - r.offset);
        // Traces without headers (.npy) have nothing for on_header.
        if (whole) {
          if (layout.header_bytes() > 0) on_header(p, at);
          on_samples(p, at + layout.header_bytes());
        } else if (p % 2 == 0) {
          if (layout.header_bytes() > 0) on_header(p / 2, at);
        } else {
          on_samples(p / 2, at);
        }
      }
    };
    if (stats != nullptr) {
      ++stats->reads;
      stats->bytes_read += r.length;
      for (size_t k = r.first; k < r.first + r.count; ++k) {
        stats->bytes_wanted += pieces[plan.order[k]].length;
      }
    }
    // Memory-mapped files are decoded in place; others are read into the scratch buffer.
    SS_ASSIGN_OR_RETURN(const TraceFile::Handle* handle, pins->Get(file, r.file_id));
    if (file.mapped()) {
      SS_RETURN_IF_ERROR(handle->ReadMapped(r.offset, r.length, each));
    } else {
      if (scratch.size() < r.length) scratch.resize(r.length);
      SS_RETURN_IF_ERROR(handle->ReadAt(r.offset, r.length, scratch.data()));
      each(scratch.data());
    }
  }
  return absl::OkStatus();
}

// The on_header of VisitTraces that copies trace i's 240-byte header to dst + 240 i
// (nothing when dst is null).
auto CopyHeaderTo(uint8_t* dst) {
  return [dst](size_t i, const uint8_t* h) {
    if (dst != nullptr) std::memcpy(dst + 240 * i, h, 240);
  };
}

uint32_t Count(SampleRange range, const TraceLayout& layout) {
  return range.count == 0 ? layout.n_samples : range.count;
}

}  // namespace

absl::Status ReadTraces(absl::Span<const TraceFile* const> files,
                        absl::Span<const TraceRef> traces, const CoalesceOptions& options,
                        float* const* sample_dst, uint8_t* header_dst, ReadStats* stats,
                        uint32_t* trace_crc, SampleRange range) {
  Pins pins(/*keep_all=*/false);
  return VisitTraces(
      files, traces, options, stats, range, &pins,
      CopyHeaderTo(header_dst),
      [&](size_t i, const uint8_t* samples) {
        const TraceLayout& layout = files[traces[i].file_id]->layout();
        const uint32_t n = Count(range, layout);
        segy::DecodeSamples(samples, n, layout.format, layout.byte_order, sample_dst[i]);
        if (trace_crc != nullptr) trace_crc[i] = Crc32(0, sample_dst[i], n * sizeof(float));
      });
}

absl::Status CopyStoredTraces(absl::Span<const TraceFile* const> files,
                              absl::Span<const TraceRef> traces, const CoalesceOptions& options,
                              uint8_t* const* raw_dst, uint8_t* header_dst, ReadStats* stats,
                              uint32_t* trace_crc, SampleRange range) {
  thread_local std::vector<float> decoded;
  Pins pins(/*keep_all=*/false);
  return VisitTraces(
      files, traces, options, stats, range, &pins,
      CopyHeaderTo(header_dst),
      [&](size_t i, const uint8_t* samples) {
        const TraceLayout& layout = files[traces[i].file_id]->layout();
        const uint32_t n = Count(range, layout);
        std::memcpy(raw_dst[i], samples, size_t{n} * segy::BytesPerSample(
                                                         static_cast<int>(layout.format)));
        if (decoded.size() < n) decoded.resize(n);
        segy::DecodeSamples(samples, n, layout.format, layout.byte_order, decoded.data());
        trace_crc[i] = Crc32(0, decoded.data(), n * sizeof(float));
      });
}

namespace {

// Points sample_src[i] at trace i's stored samples inside its file's mapping, held by
// `pins` (which must be keep_all), and copies headers as ReadTraces does.
absl::Status LocateTraces(absl::Span<const TraceFile* const> files,
                          absl::Span<const TraceRef> traces, const CoalesceOptions& options,
                          const uint8_t** sample_src, uint8_t* header_dst, ReadStats* stats,
                          SampleRange range, Pins* pins) {
  for (const TraceRef& t : traces) {
    if (t.file_id < files.size() && !files[t.file_id]->mapped()) {
      return absl::InternalError(absl::StrCat(files[t.file_id]->path(),
                                              ": not mapped; its traces cannot be sent as stored"));
    }
  }
  return VisitTraces(
      files, traces, options, stats, range, pins,
      CopyHeaderTo(header_dst),
      [&](size_t i, const uint8_t* samples) { sample_src[i] = samples; });
}

// The Crc32Joiners made for each length of piece, shared (SharedJoiner).
ABSL_CONST_INIT absl::Mutex joiners_mu(absl::kConstInit);
absl::flat_hash_map<size_t, std::shared_ptr<const Crc32Joiner>>* joiners
    ABSL_GUARDED_BY(joiners_mu) ABSL_PT_GUARDED_BY(joiners_mu) = nullptr;

// The Crc32Joiner for pieces of `bytes`, made once for each length (a 4 KiB table, 32
// zlib operators) and shared: a dataset's traces have one length. Thread-safe.
std::shared_ptr<const Crc32Joiner> SharedJoiner(size_t bytes) {
  constexpr size_t kMaxLengths = 64;  // beyond: one made for each use
  absl::MutexLock lock(&joiners_mu);
  if (joiners == nullptr) {
    joiners = new absl::flat_hash_map<size_t, std::shared_ptr<const Crc32Joiner>>();
  }
  auto it = joiners->find(bytes);
  if (it != joiners->end()) return it->second;
  auto joiner = std::make_shared<const Crc32Joiner>(bytes);
  if (joiners->size() < kMaxLengths) joiners->emplace(bytes, joiner);
  return joiner;
}

// Stored traces inside the mappings of TraceFiles; runs of traces that follow each other
// in one file are touched and checksummed under one guard. Whole traces (no window) have
// their CRC-32s kept in their file's TraceCrcs: computed on first send, joined after.
class MappedTraces final : public StoredTraces {
 public:
  // trace_of[i]: trace i's index in its file, for whole traces; empty for a window.
  MappedTraces(absl::Span<const TraceFile* const> files, std::vector<const uint8_t*> traces,
               std::vector<uint32_t> file_of, std::vector<uint64_t> trace_of,
               size_t trace_bytes, bool big_endian, int64_t shot_id, Pins pins,
               std::vector<uint32_t> kept_crc)
      : StoredTraces(std::move(traces), trace_bytes, big_endian),
        files_(files.begin(), files.end()),
        pins_(std::move(pins)),
        file_of_(std::move(file_of)),
        trace_of_(std::move(trace_of)),
        join_(trace_of_.empty() ? nullptr : SharedJoiner(trace_bytes)),
        shot_id_(shot_id),
        kept_crc_(std::move(kept_crc)) {}

  absl::Status Touch() const override {
    if (!kept_crc_.empty()) return absl::OkStatus();  // every run below would be skipped
    return ForEachRun(0, traces_.size(), [&](size_t first, size_t count, size_t span) {
      // A run whose every trace has its CRC-32 kept was read through this mapping
      // already: its pages are mapped, and populating them again would only walk their
      // page tables (a tenth of the server's CPU a shot). A page the kernel has reclaimed
      // since is faulted in by the send; its bytes are still checked by the client.
      if (AllKept(first, count)) return;
      stored_bytes_touched.fetch_add(span, std::memory_order_relaxed);
      // One madvise(MADV_POPULATE_READ) maps every page of the run (reading from disk
      // what is not in memory) without a fault a page; where the kernel has none (before
      // 5.14) or refuses, a read of a byte a page does it, under the guard.
      const uintptr_t page = 4096;
      const uintptr_t begin = reinterpret_cast<uintptr_t>(traces_[first]) & ~(page - 1);
      const uintptr_t end = reinterpret_cast<uintptr_t>(traces_[first]) + span;
      if (::madvise(reinterpret_cast<void*>(begin), end - begin, kPopulateRead) == 0) return;
      const volatile uint8_t* p = traces_[first];
      uint8_t sink = 0;
      for (size_t off = 0; off < span; off += 4096) sink ^= p[off];
      sink ^= p[span - 1];
      (void)sink;
    });
  }

  absl::Status Visit(size_t first, size_t n,
                     absl::FunctionRef<void(size_t, const uint8_t*)> use) const override {
    return ForEachRun(first, n, [&](size_t from, size_t count, size_t) {
      for (size_t k = from; k < from + count; ++k) use(k, traces_[k]);
    });
  }

  absl::StatusOr<uint32_t> Crc(size_t first, size_t n, uint32_t crc) const override {
    if (trace_of_.empty()) return StoredTraces::Crc(first, n, crc);  // a window: read
    // Kept CRCs are joined; each run of traces not yet kept is read (under the guard),
    // and what it gives is kept and joined.
    for (size_t i = first; i < first + n;) {
      uint32_t kept;
      if (Kept(i, &kept)) {
        crc = join_->Append(crc, kept);
        ++i;
        continue;
      }
      size_t j = i + 1;
      while (j < first + n && !Kept(j, &kept)) ++j;
      SS_RETURN_IF_ERROR(ForEachRun(i, j - i, [&](size_t from, size_t count, size_t) {
        for (size_t k = from; k < from + count; ++k) {
          const uint32_t c = Crc32(0, traces_[k], trace_bytes());
          files_[file_of_[k]]->crcs().Store(trace_of_[k], c);
          crc = join_->Append(crc, c);
        }
      }));
      i = j;
    }
    return crc;
  }

  std::optional<uint32_t> KeptCrc(size_t first, size_t n) const override {
    if (trace_of_.empty()) return std::nullopt;  // a window: its CRC-32 is never kept
    uint32_t crc = 0;
    for (size_t i = first; i < first + n; ++i) {
      uint32_t kept;
      if (!Kept(i, &kept)) return std::nullopt;
      crc = join_->Append(crc, kept);
    }
    return crc;
  }

  void Keep(absl::Span<const size_t> kept) override {
    file_of_ = Select(file_of_, kept);
    if (!trace_of_.empty()) trace_of_ = Select(trace_of_, kept);
    if (!kept_crc_.empty()) kept_crc_ = Select(kept_crc_, kept);
    StoredTraces::Keep(kept);
  }

 private:
  // Calls run(first, count, span) for each run of traces [first, first + count) of
  // [from, from + n) that follow each other in one file (`span` bytes from traces_[first])
  // under the mapping's SIGBUS guard.
  template <typename Run>
  absl::Status ForEachRun(size_t from, size_t n, const Run& run) const {
    for (size_t i = from; i < from + n;) {
      const TraceFile& file = *files_[file_of_[i]];
      const uint64_t step = file.layout().trace_bytes;
      size_t j = i + 1;
      while (j < from + n && file_of_[j] == file_of_[i] && traces_[j] == traces_[j - 1] + step) {
        ++j;
      }
      const size_t span = (j - i - 1) * step + trace_bytes();
      if (!RunGuardingMapping(traces_[i], span, [&] { run(i, j - i, span); })) {
        return absl::DataLossError(absl::StrCat(
            file.path(), ": ", span, " bytes at byte offset ",
            pins_.Find(file_of_[i])->MappedOffset(traces_[i]),
            " (shot ", shot_id_, ") vanished while being sent (file truncated or replaced "
            "while serving)"));
      }
      i = j;
    }
    return absl::OkStatus();
  }

  // Whether trace i's CRC-32 is kept (found when located, or in its file's table; then
  // *crc is it).
  bool Kept(size_t i, uint32_t* crc) const {
    if (!kept_crc_.empty()) {  // found when located
      *crc = kept_crc_[i];
      return true;
    }
    return files_[file_of_[i]]->crcs().Find(trace_of_[i], crc);
  }
  // Whether traces [first, first + n) are whole and all have their CRC-32s kept.
  bool AllKept(size_t first, size_t n) const {
    if (trace_of_.empty()) return false;
    uint32_t crc;
    for (size_t i = first; i < first + n; ++i) {
      if (!Kept(i, &crc)) return false;
    }
    return true;
  }
  // v's elements at `kept`, in that order.
  template <typename T>
  static std::vector<T> Select(const std::vector<T>& v, absl::Span<const size_t> kept) {
    std::vector<T> out;
    out.reserve(kept.size());
    for (size_t i : kept) out.push_back(v[i]);
    return out;
  }

  const std::vector<const TraceFile*> files_;
  const Pins pins_;  // the mappings traces_ point into, open while this lives
  std::vector<uint32_t> file_of_;
  std::vector<uint64_t> trace_of_;
  // Appends one trace's CRC-32; whole traces only (a window's CRC is read, not joined).
  const std::shared_ptr<const Crc32Joiner> join_;
  const int64_t shot_id_;
  // Each trace's CRC-32 where every one was found kept when located (LocateKeptTraces),
  // so that none is looked up again and Touch has nothing to do; else empty.
  std::vector<uint32_t> kept_crc_;
};

// The MappedTraces of `located` (whole traces when trace_of is not empty; kept_crc: each
// one's CRC-32 where all were found kept, else empty).
std::unique_ptr<StoredTraces> MakeMapped(absl::Span<const TraceFile* const> files,
                                         absl::Span<const TraceRef> traces,
                                         std::vector<const uint8_t*> located,
                                         std::vector<uint64_t> trace_of, uint32_t n_samples,
                                         int64_t shot_id, Pins pins,
                                         std::vector<uint32_t> kept_crc) {
  std::vector<uint32_t> file_of(traces.size());
  for (size_t i = 0; i < traces.size(); ++i) file_of[i] = traces[i].file_id;
  const std::optional<StoredForm> form = FormOf(files, traces);
  const bool big_endian = form.has_value() && form->byte_order == segy::ByteOrder::kBigEndian;
  return std::make_unique<MappedTraces>(files, std::move(located), std::move(file_of),
                                        std::move(trace_of), size_t{n_samples} * sizeof(float),
                                        big_endian, shot_id, std::move(pins),
                                        std::move(kept_crc));
}

}  // namespace

absl::StatusOr<std::unique_ptr<StoredTraces>> LocateStoredTraces(
    absl::Span<const TraceFile* const> files, absl::Span<const TraceRef> traces,
    const CoalesceOptions& options, uint8_t* header_dst, ReadStats* stats, SampleRange range,
    int64_t shot_id) {
  std::vector<const uint8_t*> located(traces.size());
  Pins pins(/*keep_all=*/true);
  SS_RETURN_IF_ERROR(
      LocateTraces(files, traces, options, located.data(), header_dst, stats, range, &pins));
  const uint32_t n = traces.empty() ? 0 : Count(range, files[traces[0].file_id]->layout());
  // Whole traces: where each is in its file, for the CRC-32s kept there.
  std::vector<uint64_t> trace_of;
  if (!traces.empty() && n == files[traces[0].file_id]->layout().n_samples) {
    trace_of.resize(traces.size());
    for (size_t i = 0; i < traces.size(); ++i) {
      trace_of[i] = files[traces[i].file_id]->layout().TraceIndex(traces[i].offset);
    }
  }
  return MakeMapped(files, traces, std::move(located), std::move(trace_of), n, shot_id,
                    std::move(pins), /*kept_crc=*/{});
}

absl::StatusOr<std::unique_ptr<StoredTraces>> LocateKeptTraces(
    absl::Span<const TraceFile* const> files, absl::Span<const TraceRef> traces,
    ReadStats* stats, int64_t shot_id) {
  if (traces.empty()) return nullptr;
  std::vector<uint64_t> trace_of(traces.size());
  std::vector<uint32_t> kept_crc(traces.size());
  uint64_t runs = 0, bytes = 0;
  for (size_t i = 0; i < traces.size(); ++i) {
    const TraceRef& t = traces[i];
    if (t.file_id >= files.size() || !files[t.file_id]->mapped()) return nullptr;
    const TraceLayout& l = files[t.file_id]->layout();
    if (l.trace_bytes == 0 || t.offset < l.first_trace_offset) return nullptr;
    trace_of[i] = l.TraceIndex(t.offset);
    if (l.TraceOffset(trace_of[i]) != t.offset) return nullptr;  // not a trace's start
    if (!files[t.file_id]->crcs().Find(trace_of[i], &kept_crc[i])) return nullptr;
    runs += i == 0 || t.file_id != traces[i - 1].file_id ||
            t.offset != traces[i - 1].offset + l.trace_bytes;
    bytes += l.trace_bytes;
  }
  std::vector<const uint8_t*> located(traces.size());
  Pins pins(/*keep_all=*/true);
  const uint32_t n = files[traces[0].file_id]->layout().n_samples;
  for (size_t i = 0; i < traces.size(); ++i) {
    const TraceFile& file = *files[traces[i].file_id];
    SS_ASSIGN_OR_RETURN(const TraceFile::Handle* handle, pins.Get(file, traces[i].file_id));
    located[i] = handle->MappedAt(traces[i].offset + file.layout().header_bytes(),
                                  uint64_t{n} * sizeof(float));
    if (located[i] == nullptr) {
      return absl::DataLossError(absl::StrCat(
          file.path(), ": the trace at byte offset ", traces[i].offset, " (shot ", shot_id,
          ") lies beyond the file's mapping (file truncated or replaced while serving)"));
    }
  }
  if (stats != nullptr) {  // what the sends read: the runs of whole traces
    stats->reads += runs;
    stats->bytes_read += bytes;
    stats->bytes_wanted += bytes;
  }
  return MakeMapped(files, traces, std::move(located), std::move(trace_of), n, shot_id,
                    std::move(pins), std::move(kept_crc));
}

std::optional<StoredForm> FormOf(absl::Span<const TraceFile* const> files,
                                 absl::Span<const TraceRef> traces) {
  if (traces.empty()) return std::nullopt;
  std::optional<StoredForm> form;
  for (const TraceRef& t : traces) {
    if (t.file_id >= files.size()) return std::nullopt;
    const TraceFile& f = *files[t.file_id];
    const TraceLayout& l = f.layout();
    if (!form.has_value()) {
      form = StoredForm{l.format, l.byte_order, f.mapped()};
    } else if (form->format != l.format || form->byte_order != l.byte_order) {
      return std::nullopt;
    } else {
      form->mapped = form->mapped && f.mapped();
    }
  }
  return form;
}

uint64_t StoredBytesTouched() { return stored_bytes_touched.load(std::memory_order_relaxed); }

}  // namespace shotstream::io

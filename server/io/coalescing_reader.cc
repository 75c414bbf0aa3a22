#include "server/io/coalescing_reader.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "common/crc32.h"
#include "common/status_macros.h"

namespace shotstream::io {

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

// Calls on_header(i, header) and on_samples(i, samples) for every trace i of `traces`
// (header: its first byte; samples: the first sample of `range`), reading each coalesced
// range once: in place for mapped files (under the SIGBUS guard), else into a per-thread
// scratch buffer. A whole-trace range reads each trace as one piece; a window reads the
// header and the window as two.
template <typename OnHeader, typename OnSamples>
absl::Status VisitTraces(absl::Span<const segy::SegyFile* const> files,
                         absl::Span<const TraceRef> traces, const CoalesceOptions& options,
                         ReadStats* stats, SampleRange range, const OnHeader& on_header,
                         const OnSamples& on_samples) {
  if (traces.empty()) return absl::OkStatus();
  for (const TraceRef& t : traces) {
    if (t.file_id >= files.size()) {
      return absl::InternalError(absl::StrCat("trace refers to file id ", t.file_id, " of ",
                                              files.size()));
    }
  }
  bool whole = true;
  for (const segy::SegyFile* f : files) {
    const segy::SegyLayout& l = f->layout();
    if (range.count != 0 && (range.start != 0 || range.count != l.n_samples)) whole = false;
    if (uint64_t{range.start} + range.count > l.n_samples) {
      return absl::InternalError(absl::StrCat(f->path(), ": samples [", range.start, ", ",
                                              range.start + range.count, ") beyond its ",
                                              l.n_samples));
    }
  }
  std::vector<Piece> pieces(whole ? traces.size() : 2 * traces.size());
  for (size_t i = 0; i < traces.size(); ++i) {
    const segy::SegyLayout& l = files[traces[i].file_id]->layout();
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
    const segy::SegyFile& file = *files[r.file_id];
    const segy::SegyLayout& layout = file.layout();
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
    if (file.mapped()) {
      SS_RETURN_IF_ERROR(file.ReadMapped(r.offset, r.length, each));
    } else {
      if (scratch.size() < r.length) scratch.resize(r.length);
      SS_RETURN_IF_ERROR(file.ReadAt(r.offset, r.length, scratch.data()));
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

uint32_t Count(SampleRange range, const segy::SegyLayout& layout) {
  return range.count == 0 ? layout.n_samples : range.count;
}

}  // namespace

absl::Status ReadTraces(absl::Span<const segy::SegyFile* const> files,
                        absl::Span<const TraceRef> traces, const CoalesceOptions& options,
                        float* const* sample_dst, uint8_t* header_dst, ReadStats* stats,
                        uint32_t* trace_crc, SampleRange range) {
  return VisitTraces(
      files, traces, options, stats, range,
      CopyHeaderTo(header_dst),
      [&](size_t i, const uint8_t* samples) {
        const segy::SegyLayout& layout = files[traces[i].file_id]->layout();
        const uint32_t n = Count(range, layout);
        segy::DecodeSamples(samples, n, layout.format, layout.byte_order, sample_dst[i]);
        if (trace_crc != nullptr) trace_crc[i] = Crc32(0, sample_dst[i], n * sizeof(float));
      });
}

absl::Status CopyStoredTraces(absl::Span<const segy::SegyFile* const> files,
                              absl::Span<const TraceRef> traces, const CoalesceOptions& options,
                              uint8_t* const* raw_dst, uint8_t* header_dst, ReadStats* stats,
                              uint32_t* trace_crc, SampleRange range) {
  thread_local std::vector<float> decoded;
  return VisitTraces(
      files, traces, options, stats, range,
      CopyHeaderTo(header_dst),
      [&](size_t i, const uint8_t* samples) {
        const segy::SegyLayout& layout = files[traces[i].file_id]->layout();
        const uint32_t n = Count(range, layout);
        std::memcpy(raw_dst[i], samples, size_t{n} * segy::BytesPerSample(
                                                         static_cast<int>(layout.format)));
        if (decoded.size() < n) decoded.resize(n);
        segy::DecodeSamples(samples, n, layout.format, layout.byte_order, decoded.data());
        trace_crc[i] = Crc32(0, decoded.data(), n * sizeof(float));
      });
}

absl::Status LocateTraces(absl::Span<const segy::SegyFile* const> files,
                          absl::Span<const TraceRef> traces, const CoalesceOptions& options,
                          const uint8_t** sample_src, uint8_t* header_dst, ReadStats* stats,
                          SampleRange range) {
  for (const segy::SegyFile* f : files) {
    if (!f->mapped()) {
      return absl::InternalError(
          absl::StrCat(f->path(), ": not mapped; its traces cannot be sent as stored"));
    }
  }
  return VisitTraces(
      files, traces, options, stats, range,
      CopyHeaderTo(header_dst),
      [&](size_t i, const uint8_t* samples) { sample_src[i] = samples; });
}

}  // namespace shotstream::io

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
  ReadPlan plan;
  plan.order.resize(traces.size());
  std::iota(plan.order.begin(), plan.order.end(), size_t{0});
  std::stable_sort(plan.order.begin(), plan.order.end(), [&](size_t a, size_t b) {
    const TraceRef& x = traces[a];
    const TraceRef& y = traces[b];
    return x.file_id != y.file_id ? x.file_id < y.file_id : x.offset < y.offset;
  });
  for (size_t i = 0; i < plan.order.size(); ++i) {
    const TraceRef& t = traces[plan.order[i]];
    const uint64_t tb = trace_bytes_by_file[t.file_id];
    if (!plan.reads.empty()) {
      CoalescedRead& r = plan.reads.back();
      const uint64_t end = r.offset + r.length;
      // A repeated trace (offset inside the current read) costs nothing more.
      const bool same_file = r.file_id == t.file_id;
      if (same_file && t.offset + tb <= end) {
        ++r.count;
        continue;
      }
      if (same_file && t.offset >= end && t.offset - end <= options.max_gap_bytes &&
          t.offset + tb - r.offset <= options.max_read_bytes) {
        r.length = t.offset + tb - r.offset;
        ++r.count;
        continue;
      }
    }
    plan.reads.push_back(CoalescedRead{t.file_id, t.offset, tb, i, 1});
  }
  return plan;
}

namespace {

// Calls visit(i, trace) for every trace of `traces`, where trace points at trace i's
// bytes (header first), reading each coalesced range once: in place for mapped files
// (under the SIGBUS guard), else into a per-thread scratch buffer.
template <typename Visit>
absl::Status VisitTraces(absl::Span<const segy::SegyFile* const> files,
                         absl::Span<const TraceRef> traces, const CoalesceOptions& options,
                         ReadStats* stats, const Visit& visit) {
  if (traces.empty()) return absl::OkStatus();
  std::vector<uint64_t> trace_bytes(files.size());
  for (size_t f = 0; f < files.size(); ++f) trace_bytes[f] = files[f]->layout().trace_bytes;
  for (const TraceRef& t : traces) {
    if (t.file_id >= files.size()) {
      return absl::InternalError(absl::StrCat("trace refers to file id ", t.file_id, " of ",
                                              files.size()));
    }
  }
  const ReadPlan plan = PlanReads(traces, trace_bytes, options);
  thread_local std::vector<uint8_t> scratch;
  for (const CoalescedRead& r : plan.reads) {
    const segy::SegyFile& file = *files[r.file_id];
    auto each = [&](const uint8_t* base) {
      for (size_t k = r.first; k < r.first + r.count; ++k) {
        const size_t i = plan.order[k];
        visit(i, base + (traces[i].offset - r.offset), file.layout());
      }
    };
    if (stats != nullptr) {
      ++stats->reads;
      stats->bytes_read += r.length;
      stats->bytes_wanted += r.count * file.layout().trace_bytes;
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

}  // namespace

absl::Status ReadTraces(absl::Span<const segy::SegyFile* const> files,
                        absl::Span<const TraceRef> traces, const CoalesceOptions& options,
                        float* const* sample_dst, uint8_t* header_dst, ReadStats* stats,
                        uint32_t* trace_crc) {
  return VisitTraces(files, traces, options, stats,
                     [&](size_t i, const uint8_t* trace, const segy::SegyLayout& layout) {
                       segy::DecodeSamples(trace + layout.header_bytes(), layout.n_samples,
                                           layout.format, layout.byte_order, sample_dst[i]);
                       if (header_dst != nullptr) std::memcpy(header_dst + 240 * i, trace, 240);
                       if (trace_crc != nullptr) {
                         trace_crc[i] = Crc32(0, sample_dst[i], layout.n_samples * sizeof(float));
                       }
                     });
}

absl::Status LocateTraces(absl::Span<const segy::SegyFile* const> files,
                          absl::Span<const TraceRef> traces, const CoalesceOptions& options,
                          const uint8_t** sample_src, uint8_t* header_dst, ReadStats* stats) {
  for (const segy::SegyFile* f : files) {
    if (!f->mapped()) {
      return absl::InternalError(
          absl::StrCat(f->path(), ": not mapped; its traces cannot be sent as stored"));
    }
  }
  return VisitTraces(files, traces, options, stats,
                     [&](size_t i, const uint8_t* trace, const segy::SegyLayout& layout) {
                       sample_src[i] = trace + layout.header_bytes();
                       if (header_dst != nullptr) std::memcpy(header_dst + 240 * i, trace, 240);
                     });
}

}  // namespace shotstream::io

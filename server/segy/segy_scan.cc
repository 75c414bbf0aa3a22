#include "server/segy/segy_scan.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/status_macros.h"

namespace shotstream::segy {
namespace {

// A run of consecutive traces at one source position (source_xy keys).
struct XyRun {
  double x, y;
  uint64_t count;
};

// One unit's trace keys in file order, run-length coded: 8 bytes a run of traces of one
// shot, so a shot-ordered file costs a few bytes a shot and a scattered one 8 a trace.
struct UnitScan {
  std::vector<uint64_t> runs;  // (count << 32) | the 4-byte key's bits
  std::vector<XyRun> xy_runs;  // source_xy only
  absl::Status status;
  uint64_t length_mismatches = 0;  // traces whose 115-116 disagree with the file's count
  std::string first_mismatch;
};

// Headers are parsed a batch at a time into plain arrays (inside a mapping's SIGBUS guard
// nothing may be allocated), then appended to the unit's runs.
constexpr uint64_t kBatch = 1024;
struct Batch {
  uint64_t n = 0;
  int32_t keys[kBatch];
  double xs[kBatch], ys[kBatch];
  uint64_t mismatches = 0;
  uint64_t first_mismatch = 0;  // index in the batch
  uint32_t first_mismatch_ns = 0;
};

// Parses the headers at `p`, `p + stride`, ... into `b` (b->n of them).
void ParseHeaders(const uint8_t* p, uint64_t stride, const io::TraceLayout& l, const ShotKey& key,
                  bool check_lengths, Batch* b) {
  static const HeaderSelector kSourceX = *ResolveHeader("source_x");
  static const HeaderSelector kSourceY = *ResolveHeader("source_y");
  b->mismatches = 0;
  const uint16_t file_ns = static_cast<uint16_t>(l.n_samples & 0xffff);
  for (uint64_t i = 0; i < b->n; ++i, p += stride) {
    if (key.source_xy) {
      b->xs[i] = HeaderValue(kSourceX, p, l.byte_order);
      b->ys[i] = HeaderValue(kSourceY, p, l.byte_order);
    } else {
      b->keys[i] = static_cast<int32_t>(ReadHeaderInt(p, key.byte, 4, l.byte_order));
    }
    const uint16_t ns = static_cast<uint16_t>(ReadHeaderInt(p, 115, 2, l.byte_order));
    if (ns == file_ns) continue;
    // A header count of 0 is common and says nothing; others are reported (once per
    // dataset), or refused in strict mode.
    if ((ns != 0 || check_lengths) && b->mismatches++ == 0) {
      b->first_mismatch = i;
      b->first_mismatch_ns = ns;
    }
  }
}

// Appends batch `b` (traces from `first`) to the unit's runs, and its mismatches.
void Append(const io::TraceFile& file, const Batch& b, uint64_t first, const ShotKey& key,
            bool check_lengths, UnitScan* out) {
  const io::TraceLayout& l = file.layout();
  if (b.mismatches > 0) {
    if (out->length_mismatches == 0) {
      const uint64_t trace = first + b.first_mismatch;
      out->first_mismatch = absl::StrCat(
          file.path(), ": trace ", trace, " (byte ", l.TraceOffset(trace) + 115,
          "): its header says ", b.first_mismatch_ns, " samples but the file's traces have ",
          l.n_samples);
      if (check_lengths && b.first_mismatch_ns != 0) {
        out->status = absl::InvalidArgumentError(absl::StrCat(
            out->first_mismatch, "; variable-length traces are not supported "
            "(check_trace_lengths is on: turn it off to read the traces at the length the "
            "binary header and the file size give)"));
      }
    }
    out->length_mismatches += b.mismatches;
  }
  for (uint64_t i = 0; i < b.n; ++i) {
    if (key.source_xy) {
      if (!out->xy_runs.empty() && out->xy_runs.back().x == b.xs[i] &&
          out->xy_runs.back().y == b.ys[i]) {
        ++out->xy_runs.back().count;
      } else {
        out->xy_runs.push_back({b.xs[i], b.ys[i], 1});
      }
      continue;
    }
    const uint64_t bits = static_cast<uint32_t>(b.keys[i]);
    if (!out->runs.empty() && (out->runs.back() & 0xffffffffu) == bits &&
        (out->runs.back() >> 32) < UINT32_MAX) {
      out->runs.back() += uint64_t{1} << 32;
    } else {
      out->runs.push_back(bits | (uint64_t{1} << 32));
    }
  }
}

// Scans traces [begin, end) of one file.
void ScanFile(const io::TraceFile& file, uint64_t begin, uint64_t end,
              const ShotKey& key, uint64_t block_bytes, bool check_lengths,
              std::atomic<uint64_t>* scanned, UnitScan* out) {
  const io::TraceLayout& l = file.layout();
  Batch b;
  uint64_t t = begin;
  if (l.trace_bytes > kStridedScanMinTraceBytes) {
    // Long traces: read only the 240 header bytes of each (far less I/O than whole
    // regions; measured faster from the page cache once traces exceed ~2 KiB) - unless
    // the first reads show that each read costs a round trip (network storage), where
    // few large reads win: then the rest of the file is read in regions.
    uint8_t header[kTraceHeaderBytes];
    constexpr uint64_t kProbe = 16;
    const auto start = std::chrono::steady_clock::now();
    b.n = 1;
    for (; t < end; ++t) {
      if (t == begin + kProbe) {
        const double per_read =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
            kProbe;
        if (per_read > kSlowReadSeconds) break;  // slow storage: switch to regions
      }
      out->status = file.ReadAt(l.TraceOffset(t), sizeof(header), header);
      if (!out->status.ok()) return;
      ParseHeaders(header, 0, l, key, check_lengths, &b);
      Append(file, b, t, key, check_lengths, out);
      if (!out->status.ok()) return;
      if (((t - begin) & 1023) == 1023) scanned->fetch_add(1024, std::memory_order_relaxed);
    }
    scanned->fetch_add((t - begin) & 1023, std::memory_order_relaxed);
    if (t == end) return;
  }
  const uint64_t per_block = std::max<uint64_t>(1, block_bytes / l.trace_bytes);
  if (file.mapped()) {
    // In place, a batch under the guard at a time: no copy, no buffer.
    for (; t < end; t += b.n) {
      b.n = std::min({kBatch, per_block, end - t});
      out->status = file.ReadMapped(
          l.TraceOffset(t), (b.n - 1) * l.trace_bytes + kTraceHeaderBytes,
          [&](const uint8_t* p) { ParseHeaders(p, l.trace_bytes, l, key, check_lengths, &b); });
      if (!out->status.ok()) return;
      Append(file, b, t, key, check_lengths, out);
      if (!out->status.ok()) return;
      scanned->fetch_add(b.n, std::memory_order_relaxed);
    }
    return;
  }
  std::vector<uint8_t> block;
  for (; t < end; t += per_block) {
    const uint64_t n = std::min(per_block, end - t);
    // The last trace of a block needs only its header.
    const uint64_t length = (n - 1) * l.trace_bytes + kTraceHeaderBytes;
    block.resize(length);
    out->status = file.ReadAt(l.TraceOffset(t), length, block.data());
    if (!out->status.ok()) return;
    for (uint64_t i = 0; i < n; i += b.n) {
      b.n = std::min(kBatch, n - i);
      ParseHeaders(block.data() + i * l.trace_bytes, l.trace_bytes, l, key, check_lengths, &b);
      Append(file, b, t + i, key, check_lengths, out);
      if (!out->status.ok()) return;
    }
    scanned->fetch_add(n, std::memory_order_relaxed);
  }
}

}  // namespace

absl::StatusOr<catalog::Catalog> ScanCatalog(absl::Span<const io::TraceFile* const> files,
                                             const ShotKey& key,
                                             const catalog::ScanProgress& progress,
                                             uint64_t scan_block_bytes, bool check_trace_lengths,
                                             uint64_t scan_unit_traces, ScanReport* report) {
  uint64_t total = 0;
  for (const io::TraceFile* f : files) total += f->layout().n_traces;
  // Work units of up to kScanUnitTraces traces of one file, scanned in parallel (across
  // files and within large ones); results are merged in unit order, which is file order.
  struct Unit {
    uint32_t file;
    uint64_t begin, end;
  };
  std::vector<Unit> units;
  for (uint32_t f = 0; f < files.size(); ++f) {
    const uint64_t n = files[f]->layout().n_traces;
    const uint64_t step = std::max<uint64_t>(1, scan_unit_traces);
    for (uint64_t b = 0; b < n; b += step) {
      units.push_back({f, b, std::min(n, b + step)});
    }
  }
  std::vector<catalog::FileGeometry> geometry;
  for (const io::TraceFile* f : files) {
    geometry.push_back({f->layout().first_trace_offset, f->layout().trace_bytes});
  }
  catalog::CatalogBuilder builder(std::move(geometry));
  builder.Reserve(total);
  std::map<std::pair<double, double>, int64_t> ids;  // source_xy: position -> shot id
  std::vector<catalog::SourcePosition> positions;
  if (report != nullptr) *report = ScanReport();

  // Scanners take units in order, at most kUnitsAhead beyond the last merged; this thread
  // merges each unit into the builder as soon as it and those before it are scanned, and
  // frees it, so unmerged keys stay a few units' worth whatever the dataset's size.
  constexpr size_t kUnitsAhead = 8;
  std::vector<UnitScan> scans(units.size());
  std::atomic<uint64_t> scanned{0};
  absl::Mutex mu;
  size_t next_unit = 0;                   // guarded by mu
  size_t merged = 0;                      // guarded by mu
  bool stop = false;                      // guarded by mu: a unit failed
  std::vector<char> done(units.size());   // guarded by mu
  const size_t workers = std::max<size_t>(
      1, std::min<size_t>(units.size(), std::max(1u, std::thread::hardware_concurrency())));
  std::vector<std::thread> threads;
  for (size_t w = 0; w < workers; ++w) {
    threads.emplace_back([&] {
      for (;;) {
        size_t u;
        {
          absl::MutexLock lock(&mu);
          auto may_take = [&] {
            return stop || next_unit >= units.size() || next_unit < merged + kUnitsAhead;
          };
          mu.Await(absl::Condition(&may_take));
          if (stop || next_unit >= units.size()) return;
          u = next_unit++;
        }
        ScanFile(*files[units[u].file], units[u].begin, units[u].end, key, scan_block_bytes,
                 check_trace_lengths, &scanned, &scans[u]);
        scans[u].runs.shrink_to_fit();
        scans[u].xy_runs.shrink_to_fit();
        absl::MutexLock lock(&mu);
        done[u] = 1;
      }
    });
  }
  absl::Status failed;
  for (size_t u = 0; u < units.size(); ++u) {
    {
      absl::MutexLock lock(&mu);
      auto ready = [&] { return done[u] != 0; };
      while (!mu.AwaitWithTimeout(absl::Condition(&ready), absl::Milliseconds(250))) {
        if (progress) progress(scanned.load(), total);
      }
    }
    UnitScan& s = scans[u];
    if (!s.status.ok()) {
      failed = s.status;
      break;
    }
    if (report != nullptr) {
      if (s.length_mismatches > 0 && report->trace_length_mismatches == 0) {
        report->first_trace_length_mismatch = s.first_mismatch;
      }
      report->trace_length_mismatches += s.length_mismatches;
    }
    uint64_t trace = units[u].begin;
    for (uint64_t run : s.runs) {
      const uint64_t n = run >> 32;
      builder.Add(static_cast<int32_t>(static_cast<uint32_t>(run)), units[u].file, trace, n);
      trace += n;
    }
    for (const XyRun& r : s.xy_runs) {  // in file order: ids by first appearance
      auto [it, added] = ids.emplace(std::make_pair(r.x, r.y), static_cast<int64_t>(ids.size()) + 1);
      if (added) positions.push_back({it->second, r.x, r.y});
      builder.Add(it->second, units[u].file, trace, r.count);
      trace += r.count;
    }
    s = UnitScan();
    absl::MutexLock lock(&mu);
    merged = u + 1;
  }
  {
    absl::MutexLock lock(&mu);
    stop = true;
  }
  for (std::thread& t : threads) t.join();
  SS_RETURN_IF_ERROR(failed);
  if (progress) progress(total, total);
  return std::move(builder).Finish(std::move(positions));
}

}  // namespace shotstream::segy

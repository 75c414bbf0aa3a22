#include "server/segy/segy_scan.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <numeric>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/status_macros.h"

namespace shotstream::segy {
namespace {

// One file's trace keys and positions, in file order.
struct FileScan {
  std::vector<int64_t> keys;
  std::vector<std::pair<double, double>> positions;  // source_xy only
  std::vector<uint64_t> offsets;
  absl::Status status;
  uint64_t length_mismatches = 0;  // traces whose 115-116 disagree with the file's count
  std::string first_mismatch;
};

// Scans traces [begin, end) of one file.
void ScanFile(const io::TraceFile& file, uint64_t begin, uint64_t end,
              const ShotKey& key, uint64_t block_bytes, bool check_lengths,
              std::atomic<uint64_t>* scanned, FileScan* out) {
  const io::TraceLayout& l = file.layout();
  out->keys.reserve(end - begin);
  out->offsets.reserve(end - begin);
  static const HeaderSelector kSourceX = *ResolveHeader("source_x");
  static const HeaderSelector kSourceY = *ResolveHeader("source_y");
  auto take = [&](const uint8_t* header, uint64_t trace) {
    if (key.source_xy) {
      out->positions.emplace_back(HeaderValue(kSourceX, header, l.byte_order),
                                  HeaderValue(kSourceY, header, l.byte_order));
    } else {
      out->keys.push_back(ReadHeaderInt(header, key.byte, 4, l.byte_order));
    }
    out->offsets.push_back(l.TraceOffset(trace));
    const uint32_t ns =
        static_cast<uint16_t>(ReadHeaderInt(header, 115, 2, l.byte_order));
    if (ns != (l.n_samples & 0xffff)) {
      // A header count of 0 is common and says nothing; others are reported (once per
      // dataset), or refused in strict mode.
      const bool say = ns != 0 || check_lengths;
      if (say && out->length_mismatches++ == 0) {
        out->first_mismatch = absl::StrCat(
            file.path(), ": trace ", trace, " (byte ", l.TraceOffset(trace) + 115,
            "): its header says ", ns, " samples but the file's traces have ", l.n_samples);
      }
      if (check_lengths && ns != 0 && out->status.ok()) {
        out->status = absl::InvalidArgumentError(absl::StrCat(
            out->first_mismatch, "; variable-length traces are not supported "
            "(check_trace_lengths is on: turn it off to read the traces at the length the "
            "binary header and the file size give)"));
      }
    }
  };
  uint64_t t = begin;
  if (l.trace_bytes > kStridedScanMinTraceBytes) {
    // Long traces: read only the 240 header bytes of each (far less I/O than whole
    // regions; measured faster from the page cache once traces exceed ~2 KiB) - unless
    // the first reads show that each read costs a round trip (network storage), where
    // few large reads win: then the rest of the file is read in regions.
    uint8_t header[kTraceHeaderBytes];
    constexpr uint64_t kProbe = 16;
    const auto start = std::chrono::steady_clock::now();
    for (; t < end; ++t) {
      if (t == begin + kProbe) {
        const double per_read =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
            kProbe;
        if (per_read > kSlowReadSeconds) break;  // slow storage: switch to regions
      }
      out->status = file.ReadAt(l.TraceOffset(t), sizeof(header), header);
      if (!out->status.ok()) return;
      take(header, t);
      if (!out->status.ok()) return;
      if (((t - begin) & 1023) == 1023) scanned->fetch_add(1024, std::memory_order_relaxed);
    }
    scanned->fetch_add((t - begin) & 1023, std::memory_order_relaxed);
    if (t == end) return;
  }
  const uint64_t per_block = std::max<uint64_t>(1, block_bytes / l.trace_bytes);
  std::vector<uint8_t> block;
  for (; t < end; t += per_block) {
    const uint64_t n = std::min(per_block, end - t);
    // The last trace of a block needs only its header.
    const uint64_t length = (n - 1) * l.trace_bytes + kTraceHeaderBytes;
    block.resize(length);
    out->status = file.ReadAt(l.TraceOffset(t), length, block.data());
    if (!out->status.ok()) return;
    for (uint64_t i = 0; i < n; ++i) take(block.data() + i * l.trace_bytes, t + i);
    if (!out->status.ok()) return;
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
  std::vector<FileScan> scans(units.size());
  std::atomic<uint64_t> scanned{0};
  std::atomic<size_t> next_unit{0};
  const size_t workers = std::max<size_t>(
      1, std::min<size_t>(units.size(), std::max(1u, std::thread::hardware_concurrency())));
  absl::Mutex mu;
  size_t finished = 0;  // workers done; guarded by mu
  std::vector<std::thread> threads;
  for (size_t w = 0; w < workers; ++w) {
    threads.emplace_back([&] {
      for (size_t u = next_unit++; u < units.size(); u = next_unit++) {
        ScanFile(*files[units[u].file], units[u].begin, units[u].end, key, scan_block_bytes,
                 check_trace_lengths, &scanned, &scans[u]);
      }
      absl::MutexLock lock(&mu);
      ++finished;
    });
  }
  {
    absl::MutexLock lock(&mu);
    auto all_done = [&]() { return finished == workers; };
    while (!mu.AwaitWithTimeout(absl::Condition(&all_done), absl::Milliseconds(250))) {
      if (progress) progress(scanned.load(), total);
    }
  }
  for (std::thread& t : threads) t.join();
  for (const FileScan& s : scans) SS_RETURN_IF_ERROR(s.status);
  if (report != nullptr) {
    *report = ScanReport();
    for (const FileScan& s : scans) {
      if (s.length_mismatches > 0 && report->trace_length_mismatches == 0) {
        report->first_trace_length_mismatch = s.first_mismatch;
      }
      report->trace_length_mismatches += s.length_mismatches;
    }
  }
  if (progress) progress(total, total);

  std::vector<int64_t> keys;
  std::vector<io::TraceRef> refs;
  keys.reserve(total);
  refs.reserve(total);
  std::map<std::pair<double, double>, int64_t> ids;  // source_xy: position -> shot id
  std::vector<catalog::SourcePosition> positions;
  for (size_t u = 0; u < scans.size(); ++u) {
    keys.insert(keys.end(), scans[u].keys.begin(), scans[u].keys.end());
    for (const auto& xy : scans[u].positions) {  // in file order: ids by first appearance
      auto [it, added] = ids.emplace(xy, static_cast<int64_t>(ids.size()) + 1);
      if (added) positions.push_back({it->second, xy.first, xy.second});
      keys.push_back(it->second);
    }
    for (uint64_t off : scans[u].offsets) refs.push_back({units[u].file, off});
    scans[u] = FileScan();
  }
  std::vector<uint64_t> order(keys.size());
  std::iota(order.begin(), order.end(), uint64_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](uint64_t a, uint64_t b) { return keys[a] < keys[b]; });
  std::vector<catalog::ShotEntry> shots;
  std::vector<io::TraceRef> traces;
  traces.reserve(order.size());
  for (uint64_t i = 0; i < order.size(); ++i) {
    const int64_t k = keys[order[i]];
    if (shots.empty() || shots.back().shot_id != k) shots.push_back({k, i, 0});
    ++shots.back().n_traces;
    traces.push_back(refs[order[i]]);
  }
  return catalog::Catalog::FromColumns(std::move(shots), std::move(traces),
                                       std::move(positions));
}


}  // namespace shotstream::segy

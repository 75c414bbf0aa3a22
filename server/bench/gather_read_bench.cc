// Reads gathers from SEG-Y files through the coalescing reader and prints one JSON line.
//   gather_read_bench --files='dir/*.sgy' --gather=shot|receiver --mode=coalesced|per_trace
// shot: every shot's traces (contiguous in shot-sorted files); receiver: for each receiver
// position, that trace of every shot (strided). per_trace: one pread per trace (no
// coalescing), the way a naive reader works. Used by tools/bench.py.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <glob.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "server/io/coalescing_reader.h"
#include "server/segy/segy_file.h"
#include "server/segy/segy_scan.h"

ABSL_FLAG(std::string, files, "", "glob of the SEG-Y files");
ABSL_FLAG(std::string, gather, "shot", "shot or receiver");
ABSL_FLAG(std::string, mode, "coalesced", "coalesced or per_trace");
ABSL_FLAG(int, reps, 3, "passes over the data (the best is reported)");

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  glob_t g{};
  ::glob(absl::GetFlag(FLAGS_files).c_str(), 0, nullptr, &g);  // sorted by name
  std::vector<std::unique_ptr<shotstream::io::TraceFile>> owned;
  std::vector<const shotstream::io::TraceFile*> files;
  for (size_t i = 0; i < g.gl_pathc; ++i) {
    auto f = shotstream::segy::OpenSegyFile(g.gl_pathv[i]);
    if (!f.ok()) return std::fprintf(stderr, "%s\n", f.status().ToString().c_str()), 1;
    files.push_back(f->get());
    owned.push_back(*std::move(f));
  }
  globfree(&g);
  if (files.empty()) return std::fprintf(stderr, "no file matches --files\n"), 1;
  auto scanned = shotstream::segy::ScanCatalog(files, *shotstream::segy::ParseShotKey("field_record"));
  if (!scanned.ok()) return std::fprintf(stderr, "%s\n", scanned.status().ToString().c_str()), 1;
  const auto& cat = *scanned;
  // Gathers as lists of traces.
  std::vector<std::vector<shotstream::io::TraceRef>> gathers;
  if (absl::GetFlag(FLAGS_gather) == "shot") {
    for (const auto& s : cat.shots()) {
      auto t = cat.TracesOf(s);
      gathers.emplace_back(t.begin(), t.end());
    }
  } else {
    uint32_t most = 0;
    for (const auto& s : cat.shots()) most = std::max(most, s.n_traces);
    gathers.resize(most);
    for (const auto& s : cat.shots()) {
      auto t = cat.TracesOf(s);
      for (uint32_t r = 0; r < t.size(); ++r) gathers[r].push_back(t[r]);
    }
  }
  shotstream::io::CoalesceOptions opts;
  if (absl::GetFlag(FLAGS_mode) == "per_trace") {
    opts.max_gap_bytes = 0;
    opts.max_read_bytes = 1;  // never merge: one read per trace
  }
  const uint32_t ns = files[0]->layout().n_samples;
  double best = 1e300;
  uint64_t bytes = 0, reads = 0;
  std::vector<float> out;
  for (int rep = 0; rep < absl::GetFlag(FLAGS_reps); ++rep) {
    bytes = 0;
    shotstream::io::ReadStats stats;
    const auto t0 = std::chrono::steady_clock::now();
    for (const auto& gather : gathers) {
      out.resize(gather.size() * ns);
      std::vector<float*> dst(gather.size());
      for (size_t i = 0; i < gather.size(); ++i) dst[i] = out.data() + i * ns;
      auto s = shotstream::io::ReadTraces(files, gather, opts, dst.data(), nullptr, &stats);
      if (!s.ok()) return std::fprintf(stderr, "%s\n", s.ToString().c_str()), 1;
      bytes += gather.size() * ns * sizeof(float);
    }
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    reads = stats.reads;
  }
  std::printf("{\"gather\": \"%s\", \"mode\": \"%s\", \"bytes\": %llu, \"seconds\": %.6f, "
              "\"gbps\": %.4f, \"reads\": %llu}\n",
              absl::GetFlag(FLAGS_gather).c_str(), absl::GetFlag(FLAGS_mode).c_str(),
              static_cast<unsigned long long>(bytes), best, bytes / best / 1e9,
              static_cast<unsigned long long>(reads));
  return 0;
}

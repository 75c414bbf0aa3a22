// shotstream: command-line client.
//
//   shotstream ls    --target=HOST:PORT
//   shotstream info  --target=HOST:PORT --dataset=NAME
//   shotstream fetch --target=HOST:PORT --dataset=NAME [--shots=1,2,5|all] --out=DIR
//                    [--headers=group_x,offset]
//   shotstream bench --target=HOST:PORT --dataset=NAME [--shots=...] [--streams=N]
//                    [--queue_depth=N] [--repeat=N] [--pieces]
//   fetch and bench: [--window=START:STOP] [--where=HEADER:LO:HI ...] [--encoding=E]
//                    [--tolerance=T]
//   shotstream put   --target=HOST:PORT --dataset=NAME --from=DIR --sample_interval_us=US
//                    [--sample_format=5|1|3]   (DIR as fetch writes it: shot_ID.npy, and
//                    shot_ID.FIELD.npy header columns; a new dataset on the server)
//   shotstream plot  --target=HOST:PORT --dataset=NAME --shot=N [--out=shot.png] [--clip=99]
//   shotstream plan  --target=HOST:PORT --dataset=NAME --epoch=E --seed=S --rank=R
//                    --world_size=W   (the rank's shot ids of the epoch, on the last line)
//
// bench verifies every checksum and prints one JSON object on its last line with
// shots, bytes (float32 delivered), wire_bytes (sample bytes received, encoded), seconds
// and gbps (= bytes / seconds / 1e9).
#include <dirent.h>
#include <sys/stat.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <chrono>
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "shotstream/client/grpc_tuning.h"
#include "common/malloc_tuning.h"
#include "common/process_cpu.h"
#include "shotstream/client/client.h"
#include "shotstream/client/epoch_shots.h"
#include "client/npy.h"
#include "client/plot.h"
#include "client/segy_writer.h"

ABSL_FLAG(std::string, target, "127.0.0.1:50051",
          "server HOST:PORT, or several separated by commas (each shot goes to a server "
          "that holds it)");
ABSL_FLAG(std::string, token, "", "bearer token (or set SHOTSTREAM_TOKEN)");
ABSL_FLAG(std::string, tls_ca, "", "PEM file of the CA that signed the server's certificate");
ABSL_FLAG(bool, tls, false, "TLS trusting the system's roots (where --tls_ca is not given)");
ABSL_FLAG(std::string, tls_cert, "",
          "mutual TLS: PEM file of this client's certificate (with --tls_key)");
ABSL_FLAG(std::string, tls_key, "", "mutual TLS: PEM file of this client's private key");
ABSL_FLAG(int, retries, 3,
          "resume a broken stream this many times in a row (each shot delivered resets it)");
ABSL_FLAG(absl::Duration, connect_timeout, absl::Seconds(5),
          "a server that cannot be connected to within this long is an error (UNAVAILABLE)");
ABSL_FLAG(std::string, dataset, "", "dataset name");
ABSL_FLAG(std::string, shots, "all", "comma-separated shot ids, or 'all'");
ABSL_FLAG(std::string, headers, "", "comma-separated trace header fields to fetch");
ABSL_FLAG(std::string, out, ".", "fetch: output directory");
ABSL_FLAG(std::string, format, "npy",
          "fetch: npy (shot_ID.npy plus shot_ID.FIELD.npy per header), segy (IEEE float) "
          "or segy-ibm (IBM float): one shot_ID.sgy per shot with its trace headers");
ABSL_FLAG(std::string, from, "", "put: the directory of shot_ID.npy (and shot_ID.FIELD.npy) files");
ABSL_FLAG(double, sample_interval_us, 0,
          "put: the sample interval of the shots in microseconds (required)");
ABSL_FLAG(int, sample_format, 5, "put: the SEG-Y format the server stores: 5 IEEE, 1 IBM, 3 int16");
ABSL_FLAG(uint32_t, queue_depth, 2, "shots read and received ahead");
ABSL_FLAG(uint64_t, max_chunk_bytes, 0,
          "largest sample payload per message to ask the server for (0: its default)");
ABSL_FLAG(bool, trace_gaps, true,
          "let the server send a file's traces with the headers between them, skipped here "
          "(less server CPU a byte; up to 1/32 more bytes on the link)");
ABSL_FLAG(int, streams, 1, "bench: concurrent streams, each over all the shots");
ABSL_FLAG(std::string, buffers, "pool",
          "bench: where shots land: pool (the client's reusable, pinned-when-possible "
          "buffers) or plain (a new pageable buffer per shot, the baseline)");
ABSL_FLAG(int, repeat, 1, "bench: times each stream goes over the shots");
ABSL_FLAG(bool, pieces, false,
          "bench: take each shot in parts as its messages arrive (StreamOptions::pieces): "
          "the client holds parts, not shots");
ABSL_FLAG(int, warmup_shots, 0,
          "bench: the first N shots are streamed once, untimed, before the timed streams "
          "(connection, buffers and first touches out of the figure)");
ABSL_FLAG(bool, progress, true, "fetch: progress bar on stderr");
ABSL_FLAG(std::string, window, "",
          "fetch/bench: START:STOP, only samples [START, STOP) of every trace (STOP empty or "
          "0: to the end)");
ABSL_FLAG(std::string, where, "",
          "fetch/bench: HEADER:LO:HI, only traces with LO <= HEADER <= HI (repeat the flag "
          "for several conditions, all must hold)");
ABSL_FLAG(std::string, encoding, "float32",
          "fetch/bench: how samples travel: float32, native, lossless, int16, zfp, quantized "
          "or auto (they arrive as float32 either way)");
ABSL_FLAG(double, tolerance, 0,
          "fetch/bench: zfp, quantized: error <= tolerance x the shot's RMS (0: 1e-3); with "
          "auto, > 0 lets the server pick quantized or int16 within it");
ABSL_FLAG(uint64_t, epoch, 0, "plan: the epoch");
ABSL_FLAG(uint64_t, seed, 0, "plan: the shuffle's seed");
ABSL_FLAG(int, rank, 0, "plan: this rank (0 .. world_size - 1)");
ABSL_FLAG(int, world_size, 1, "plan: how many ranks share the epoch");
ABSL_FLAG(std::string, shot, "", "plot: the shot id (default: the dataset's first)");
ABSL_FLAG(double, agc, 0, "plot: automatic gain control over a window of this many ms");
ABSL_FLAG(std::string, gain, "", "plot: t^N, each sample times time^N (e.g. t^2)");
ABSL_FLAG(double, clip, 99.0, "plot: clip amplitudes at this percentile of |sample|");
ABSL_FLAG(std::string, x, "",
          "plot: the header across the top (default: offset where the dataset has it, else "
          "trace numbers)");

namespace {

using shotstream::client::Client;
using shotstream::client::Shot;

int Fail(const absl::Status& s) {
  std::cerr << "shotstream: " << absl::StatusCodeToString(s.code()) << ": " << s.message()
            << std::endl;
  return 1;
}

absl::StatusOr<std::vector<int64_t>> ShotList(Client& client, const std::string& dataset) {
  const std::string flag = absl::GetFlag(FLAGS_shots);
  if (flag == "all") {
    auto info = client.GetDataset(dataset);
    if (!info.ok()) return info.status();
    if (info->shot_ids.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("dataset '", dataset, "' has no shots: nothing to do"));
    }
    return info->shot_ids;
  }
  std::vector<int64_t> ids;
  for (absl::string_view part : absl::StrSplit(flag, ',', absl::SkipEmpty())) {
    int64_t id;
    if (!absl::SimpleAtoi(part, &id)) {
      return absl::InvalidArgumentError(absl::StrCat("--shots: '", part, "' is not a shot id"));
    }
    ids.push_back(id);
  }
  if (ids.empty()) return absl::InvalidArgumentError("--shots: no shot id given");
  return ids;
}

std::vector<std::string> HeaderList() {
  return absl::StrSplit(absl::GetFlag(FLAGS_headers), ',', absl::SkipEmpty());
}

int Ls(Client& client) {
  auto list = client.ListDatasets();
  if (!list.ok()) return Fail(list.status());
  std::printf("%-20s %-7s %10s %12s %9s %10s %7s\n", "NAME", "STATE", "SHOTS", "TRACES",
              "SAMPLES", "DT_US", "FORMAT");
  for (const auto& d : *list) {
    std::printf("%-20s %-7s %10llu %12llu %9u %10g %7d%s%s\n", d.name.c_str(), d.state.c_str(),
                static_cast<unsigned long long>(d.n_shots),
                static_cast<unsigned long long>(d.n_traces), d.n_samples, d.sample_interval_us,
                d.sample_format, d.error.empty() ? "" : "  ", d.error.c_str());
  }
  return 0;
}

int Info(Client& client, const std::string& dataset) {
  auto d = client.GetDataset(dataset);
  if (!d.ok()) return Fail(d.status());
  std::printf("name: %s\nstate: %s\nfiles: %u\nshots: %llu\ntraces: %llu\nn_samples: %u\n"
              "sample_interval_us: %g\nsample_format: %d\nshot_key: %s\n",
              d->name.c_str(), d->state.c_str(), d->n_files,
              static_cast<unsigned long long>(d->n_shots),
              static_cast<unsigned long long>(d->n_traces), d->n_samples,
              d->sample_interval_us, d->sample_format, d->shot_key.c_str());
  if (!d->format.empty()) std::printf("format: %s\n", d->format.c_str());
  for (const std::string& bad : d->bad_files) std::printf("bad_file: %s\n", bad.c_str());
  std::printf("header_fields: %s\n", absl::StrJoin(d->header_fields, ",").c_str());
  std::printf("shot_ids:");
  for (size_t i = 0; i < d->shot_ids.size(); ++i) {
    std::printf(" %lld(%u)", static_cast<long long>(d->shot_ids[i]), d->shot_trace_counts[i]);
  }
  std::printf("\n");
  return 0;
}

void ProgressBar(size_t done, size_t total, uint64_t bytes, absl::Time start) {
  const double secs = absl::ToDoubleSeconds(absl::Now() - start);
  const int width = 30;
  const int filled = total ? static_cast<int>(width * done / total) : width;
  std::fprintf(stderr, "\r[%s%s] %zu/%zu shots  %.1f MB  %.2f GB/s", std::string(filled, '#').c_str(),
               std::string(width - filled, ' ').c_str(), done, total, bytes / 1e6,
               secs > 0 ? bytes / secs / 1e9 : 0.0);
  if (done == total) std::fprintf(stderr, "\n");
}

// Every --where=... of the command line (absl keeps only the last of a repeated flag).
std::vector<std::string>& WhereFlags() {
  static std::vector<std::string> where;
  return where;
}

// --window, --where, --encoding and --tolerance into `options`.
absl::Status ApplySelection(shotstream::client::StreamOptions* options) {
  options->accept_trace_gaps = absl::GetFlag(FLAGS_trace_gaps);
  if (const std::string w = absl::GetFlag(FLAGS_window); !w.empty()) {
    std::vector<std::string> parts = absl::StrSplit(w, ':');
    uint32_t start = 0, stop = 0;
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &start) ||
        !(parts[1].empty() || absl::SimpleAtoi(parts[1], &stop))) {
      return absl::InvalidArgumentError(absl::StrCat("--window: '", w, "' is not START:STOP"));
    }
    options->window = std::make_pair(start, stop);
  }
  for (const std::string& w : WhereFlags()) {
    std::vector<std::string> parts = absl::StrSplit(w, ':');
    shotstream::client::StreamOptions::TraceCondition c;
    if (parts.size() != 3 || parts[0].empty() || !absl::SimpleAtod(parts[1], &c.low) ||
        !absl::SimpleAtod(parts[2], &c.high)) {
      return absl::InvalidArgumentError(absl::StrCat("--where: '", w, "' is not HEADER:LO:HI"));
    }
    c.header = parts[0];
    options->where.push_back(c);
  }
  options->encoding = absl::GetFlag(FLAGS_encoding);
  options->tolerance = absl::GetFlag(FLAGS_tolerance);
  return absl::OkStatus();
}

// put: every shot_ID.npy of --from (in id order) with its shot_ID.FIELD.npy columns, one
// shot in memory at a time.
int Put(Client& client, const std::string& dataset) {
  std::string dir = absl::GetFlag(FLAGS_from);
  if (dir.empty()) return Fail(absl::InvalidArgumentError("put needs --from=DIR"));
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();  // dir/ names the same
  if (!(absl::GetFlag(FLAGS_sample_interval_us) > 0)) {
    return Fail(absl::InvalidArgumentError(
        "put needs --sample_interval_us=US, the shots' sample interval in microseconds (> 0, "
        "e.g. 2000 for 2 ms): .npy files do not say theirs"));
  }
  std::vector<int64_t> ids;
  std::map<int64_t, std::vector<std::string>> fields;  // id -> header names
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return Fail(absl::NotFoundError(absl::StrCat(dir, ": cannot read")));
  while (const dirent* e = ::readdir(d)) {
    absl::string_view name = e->d_name;
    if (!absl::ConsumePrefix(&name, "shot_") || !absl::ConsumeSuffix(&name, ".npy")) continue;
    const size_t dot = name.find('.');
    int64_t id = 0;
    if (!absl::SimpleAtoi(name.substr(0, dot), &id)) continue;
    if (dot == absl::string_view::npos) {
      ids.push_back(id);
    } else {
      fields[id].emplace_back(name.substr(dot + 1));
    }
  }
  ::closedir(d);
  std::sort(ids.begin(), ids.end());
  if (ids.empty()) {
    return Fail(absl::NotFoundError(absl::StrCat(dir, ": no shot_ID.npy file")));
  }
  shotstream::client::WriteOptions options;
  options.sample_interval_us = absl::GetFlag(FLAGS_sample_interval_us);
  options.sample_format = absl::GetFlag(FLAGS_sample_format);
  if (absl::GetFlag(FLAGS_max_chunk_bytes) > 0) {
    options.max_chunk_bytes = absl::GetFlag(FLAGS_max_chunk_bytes);
  }
  size_t next = 0;
  uint64_t bytes = 0;
  shotstream::client::NpyArray samples;
  const absl::Time start = absl::Now();
  auto source = [&](shotstream::client::ShotToWrite* shot) -> absl::StatusOr<bool> {
    if (absl::GetFlag(FLAGS_progress) && next > 0) ProgressBar(next, ids.size(), bytes, start);
    if (next == ids.size()) return false;
    const int64_t id = ids[next++];
    const std::string base = absl::StrCat(dir, "/shot_", id);
    auto a = shotstream::client::ReadNpy(base + ".npy", /*as_double=*/false);
    if (!a.ok()) return a.status();
    if (a->shape.size() != 2) {
      return absl::InvalidArgumentError(absl::StrCat(base, ".npy: shape of ", a->shape.size(),
                                                     " dimensions; expected [traces, samples]"));
    }
    samples = *std::move(a);
    shot->shot_id = id;
    shot->n_traces = static_cast<uint32_t>(samples.shape[0]);
    shot->n_samples = static_cast<uint32_t>(samples.shape[1]);
    shot->samples = samples.floats.data();
    shot->headers.clear();
    for (const std::string& field : fields[id]) {
      auto column = shotstream::client::ReadNpy(absl::StrCat(base, ".", field, ".npy"), true);
      if (!column.ok()) return column.status();
      shot->headers.emplace_back(field, std::move(column->doubles));
    }
    bytes += samples.floats.size() * sizeof(float);
    return true;
  };
  auto info = client.Write(dataset, options, source);
  if (!info.ok()) return Fail(info.status());
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  std::printf("put %llu shots (%llu bytes) as dataset %s: %s, %llu traces of %u samples, "
              "largest sample error %g, largest header error %g%s%s; %.3f s, %.3f GB/s\n",
              static_cast<unsigned long long>(info->written_shots),
              static_cast<unsigned long long>(info->written_bytes), info->name.c_str(),
              info->state.c_str(), static_cast<unsigned long long>(info->n_traces),
              info->n_samples, info->write_max_error, info->write_max_header_error,
              info->write_max_header_error_at.empty() ? "" : " at ",
              info->write_max_header_error_at.c_str(), seconds,
              seconds > 0 ? info->written_bytes / seconds / 1e9 : 0.0);
  return 0;
}

int Fetch(Client& client, const std::string& dataset) {
  const std::string format = absl::GetFlag(FLAGS_format);
  if (format != "npy" && format != "segy" && format != "segy-ibm") {
    return Fail(absl::InvalidArgumentError("--format: npy, segy or segy-ibm"));
  }
  auto ids = ShotList(client, dataset);
  if (!ids.ok()) return Fail(ids.status());
  const std::string out = absl::GetFlag(FLAGS_out);
  ::mkdir(out.c_str(), 0755);
  shotstream::client::StreamOptions options;
  options.queue_depth = absl::GetFlag(FLAGS_queue_depth);
  options.max_chunk_bytes = absl::GetFlag(FLAGS_max_chunk_bytes);
  options.headers = HeaderList();
  // SEG-Y export keeps every trace header field as the source has it.
  options.raw_trace_headers = format != "npy";
  if (absl::Status s = ApplySelection(&options); !s.ok()) return Fail(s);
  const size_t total = ids->size();
  auto reader = client.Stream(dataset, *ids, options);
  Shot shot;
  size_t done = 0;
  uint64_t bytes = 0;
  const absl::Time start = absl::Now();
  for (;;) {
    auto more = reader->Next(&shot);
    if (!more.ok()) return Fail(more.status());
    if (!*more) break;
    const std::string base = absl::StrCat(out, "/shot_", shot.shot_id);
    if (format != "npy") {
      shotstream::client::SegyWriteOptions w;
      w.format = format == "segy" ? 5 : 1;
      absl::Status s = shotstream::client::WriteShotSegy(base + ".sgy", shot, w);
      if (!s.ok()) return Fail(s);
      ++done;
      bytes += shot.samples.size() * sizeof(float);
      if (absl::GetFlag(FLAGS_progress)) ProgressBar(done, total, bytes, start);
      continue;
    }
    absl::Status s = shotstream::client::WriteNpy(
        base + ".npy", "<f4", {shot.n_traces, shot.n_samples}, shot.samples.data(),
        shot.samples.size() * sizeof(float));
    if (!s.ok()) return Fail(s);
    for (const auto& [name, values] : shot.headers) {
      s = shotstream::client::WriteNpy(absl::StrCat(base, ".", name, ".npy"), "<f8",
                                       {values.size()}, values.data(),
                                       values.size() * sizeof(double));
      if (!s.ok()) return Fail(s);
    }
    ++done;
    bytes += shot.samples.size() * sizeof(float);
    if (absl::GetFlag(FLAGS_progress)) ProgressBar(done, total, bytes, start);
  }
  std::printf("fetched %zu shots (%llu bytes) to %s\n", done,
              static_cast<unsigned long long>(bytes), out.c_str());
  return 0;
}

// The rank's shots of the epoch (EpochShots over the dataset's shot ids, balanced by their
// trace counts); the ids comma-separated on the last line.
int Plan(Client& client, const std::string& dataset) {
  auto info = client.GetDataset(dataset);
  if (!info.ok()) return Fail(info.status());
  absl::flat_hash_map<int64_t, uint64_t> counts;
  for (size_t i = 0; i < info->shot_ids.size() && i < info->shot_trace_counts.size(); ++i) {
    counts[info->shot_ids[i]] = info->shot_trace_counts[i];
  }
  const int rank = absl::GetFlag(FLAGS_rank), world = absl::GetFlag(FLAGS_world_size);
  auto mine = shotstream::client::EpochShots(info->shot_ids, absl::GetFlag(FLAGS_epoch),
                                             absl::GetFlag(FLAGS_seed), rank, world, counts);
  if (!mine.ok()) return Fail(mine.status());
  uint64_t traces = 0;
  for (int64_t id : *mine) traces += counts[id];
  std::printf("rank %d of %d, epoch %llu, seed %llu: %zu of %zu shots, %llu traces\n", rank,
              world, static_cast<unsigned long long>(absl::GetFlag(FLAGS_epoch)),
              static_cast<unsigned long long>(absl::GetFlag(FLAGS_seed)), mine->size(),
              info->shot_ids.size(), static_cast<unsigned long long>(traces));
  std::printf("%s\n", absl::StrJoin(*mine, ",").c_str());
  return 0;
}

int Plot(Client& client, const std::string& dataset) {
  shotstream::client::PlotOptions po;
  po.clip_percentile = absl::GetFlag(FLAGS_clip);
  po.agc_window_ms = absl::GetFlag(FLAGS_agc);
  if (const std::string g = absl::GetFlag(FLAGS_gain); !g.empty()) {
    auto n = shotstream::client::ParseGain(g);
    if (!n.ok()) return Fail(n.status());
    po.gain_power = *n;
  }
  int64_t id = 0;
  auto info = client.GetDataset(dataset);
  if (!info.ok()) return Fail(info.status());
  if (const std::string flag = absl::GetFlag(FLAGS_shot); !flag.empty()) {
    if (!absl::SimpleAtoi(flag, &id)) {
      return Fail(absl::InvalidArgumentError(absl::StrCat("--shot: '", flag, "' is not a shot id")));
    }
  } else {
    if (info->shot_ids.empty()) {
      return Fail(absl::FailedPreconditionError(absl::StrCat("dataset '", dataset,
                                                             "' has no shots to plot")));
    }
    id = info->shot_ids.front();
  }
  shotstream::client::StreamOptions options;
  options.queue_depth = 1;
  // Across: --x, else offset where the dataset has it (.npy and many HDF5 files do not),
  // else trace numbers.
  po.x_header = absl::GetFlag(FLAGS_x);
  if (po.x_header.empty()) {
    const auto& fields = info->header_fields;
    if (std::find(fields.begin(), fields.end(), "offset") != fields.end()) po.x_header = "offset";
  }
  if (!po.x_header.empty()) options.headers = {po.x_header};
  auto reader = client.Stream(dataset, {id}, options);
  Shot shot;
  auto more = reader->Next(&shot);
  if (!more.ok()) return Fail(more.status());
  if (!*more) return Fail(absl::NotFoundError("no shot received"));
  // --out: a file name ending in .png, else a directory (made when missing) for
  // DIR/<dataset>_shot_<id>.png, so that plots of two datasets never overwrite each other.
  std::string out = absl::GetFlag(FLAGS_out);
  struct stat st;
  const bool is_dir = ::stat(out.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  if (is_dir || !absl::EndsWithIgnoreCase(out, ".png")) {
    if (!is_dir && ::mkdir(out.c_str(), 0755) != 0 && errno != EEXIST) {
      return Fail(absl::FailedPreconditionError(
          absl::StrCat("--out=", out, ": cannot create the directory: ", std::strerror(errno))));
    }
    if (!absl::EndsWith(out, "/")) out += "/";
    out = absl::StrCat(out, dataset, "_shot_", shot.shot_id, ".png");
  }
  absl::Status s = shotstream::client::WriteShotPng(out, shot, po);
  if (!s.ok()) return Fail(s);
  std::printf("wrote %s (shot %lld, %u traces x %u samples)\n", out.c_str(),
              static_cast<long long>(shot.shot_id), shot.n_traces, shot.n_samples);
  return 0;
}

int Bench(Client& client, const std::string& dataset) {
  auto ids = ShotList(client, dataset);
  if (!ids.ok()) return Fail(ids.status());
  const int streams = std::max(1, absl::GetFlag(FLAGS_streams));
  const int repeat = std::max(1, absl::GetFlag(FLAGS_repeat));
  shotstream::client::StreamOptions options;
  options.queue_depth = absl::GetFlag(FLAGS_queue_depth);
  options.max_chunk_bytes = absl::GetFlag(FLAGS_max_chunk_bytes);
  options.headers = HeaderList();
  options.pieces = absl::GetFlag(FLAGS_pieces);
  if (absl::Status s = ApplySelection(&options); !s.ok()) return Fail(s);
  if (const int warm = std::min<int>(absl::GetFlag(FLAGS_warmup_shots), ids->size()); warm > 0) {
    auto reader = client.Stream(
        dataset, std::vector<int64_t>(ids->begin(), ids->begin() + warm), options);
    Shot shot;
    for (;;) {
      auto more = reader->Next(&shot);
      if (!more.ok()) return Fail(more.status());
      if (!*more) break;
    }
  }
  std::atomic<uint64_t> shots{0}, bytes{0}, out_of_order{0}, wire_bytes{0};
  std::vector<std::string> encodings(streams);  // what each stream got (auto: picked)
  std::atomic<int> reconnects{0};
  std::atomic<uint64_t> verified{0};  // counted by the readers, not by this loop
  std::vector<absl::Status> errors(streams);
  std::vector<double> stream_seconds(streams);
  const double cpu_start = shotstream::ProcessCpuSeconds();
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int s = 0; s < streams; ++s) {
    threads.emplace_back([&, s] {
      const auto t0 = std::chrono::steady_clock::now();
      for (int r = 0; r < repeat && errors[s].ok(); ++r) {
        auto reader = client.Stream(dataset, *ids, options);
        Shot shot;
        size_t k = 0;
        for (;; ++k) {
          auto more = reader->Next(&shot);  // checksum verified inside
          if (!more.ok()) {
            errors[s] = more.status();
            break;
          }
          if (!*more) break;
          if (k >= ids->size() || shot.shot_id != (*ids)[k] || shot.index != k) ++out_of_order;
          bytes += uint64_t{shot.n_traces} * shot.n_samples * sizeof(float);
          if (!shot.last_piece) {  // a part: the shot goes on
            --k;
            continue;
          }
          ++shots;
        }
        if (errors[s].ok() && k != ids->size()) {
          errors[s] = absl::DataLossError(absl::StrCat("got ", k, " of ", ids->size(), " shots"));
        }
        reconnects += reader->reconnects();
        verified += reader->checksums_verified();
        wire_bytes += reader->wire_bytes();
        encodings[s] = reader->last_encoding();
      }
      stream_seconds[s] =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    });
  }
  for (auto& t : threads) t.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double cpu_seconds = shotstream::ProcessCpuSeconds() - cpu_start;
  for (const absl::Status& e : errors) {
    if (!e.ok()) return Fail(e);
  }
  double slowest = 0, fastest = 1e300;
  for (double t : stream_seconds) {
    slowest = std::max(slowest, t);
    fastest = std::min(fastest, t);
  }
  const auto pool = client.pool().stats();
  std::printf(
      "{\"shots\": %llu, \"bytes\": %llu, \"seconds\": %.6f, \"gbps\": %.4f, \"streams\": %d, "
      "\"queue_depth\": %u, \"repeat\": %d, \"checksums_verified\": %llu, "
      "\"slowest_stream_seconds\": %.6f, \"fastest_stream_seconds\": %.6f, "
      "\"in_order\": %s, \"reconnects\": %d, \"buffers\": \"%s\", \"pinned\": %s, "
      "\"buffer_allocations\": %llu, \"wire_bytes\": %llu, \"encoding\": \"%s\", "
      "\"pieces\": %s, \"cpu_seconds\": %.6f}\n",
      static_cast<unsigned long long>(shots.load()), static_cast<unsigned long long>(bytes.load()),
      seconds, bytes.load() / seconds / 1e9, streams, options.queue_depth, repeat,
      static_cast<unsigned long long>(verified.load()), slowest, fastest,
      out_of_order.load() == 0 ? "true" : "false", reconnects.load(),
      absl::GetFlag(FLAGS_buffers).c_str(), client.pool().pinned() ? "true" : "false",
      static_cast<unsigned long long>(pool.allocations),
      static_cast<unsigned long long>(wire_bytes.load()), encodings[0].c_str(),
      options.pieces ? "true" : "false", cpu_seconds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  shotstream::TuneMallocForLargeBuffers();
  shotstream::client::TuneGrpcForLargeMessages();
  absl::SetProgramUsageMessage(
      "shotstream COMMAND --target=HOST:PORT [flags]; COMMAND is ls, info, fetch, bench, plot, "
      "plan or put");
  for (int i = 1; i < argc; ++i) {
    const absl::string_view a = argv[i];
    if (absl::StartsWith(a, "--where=")) WhereFlags().emplace_back(a.substr(8));
    if (a == "--where" && i + 1 < argc) WhereFlags().emplace_back(argv[i + 1]);
  }
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() != 2) {
    std::cerr << "usage: shotstream ls|info|fetch|bench|plot|plan|put --target=HOST:PORT "
                 "[--dataset=NAME] "
                 "[flags]; see --help"
              << std::endl;
    return 2;
  }
  const std::string command = args[1];
  constexpr absl::string_view kCommands[] = {"ls",    "info", "fetch", "bench",
                                             "plot", "plan", "put"};
  if (std::find(std::begin(kCommands), std::end(kCommands), command) == std::end(kCommands)) {
    std::cerr << "shotstream: unknown command '" << command
              << "' (ls, info, fetch, bench, plot, plan, put); see --help" << std::endl;
    return 2;
  }
  shotstream::client::ClientOptions options;
  options.token = absl::GetFlag(FLAGS_token);
  if (options.token.empty() && std::getenv("SHOTSTREAM_TOKEN") != nullptr) {
    options.token = std::getenv("SHOTSTREAM_TOKEN");
  }
  options.retries = absl::GetFlag(FLAGS_retries);
  options.connect_timeout = absl::GetFlag(FLAGS_connect_timeout);
  // bench --buffers=plain: every shot in a new pageable buffer, freed after use.
  std::unique_ptr<shotstream::gpu::PinnedBufferPool> plain;
  if (absl::GetFlag(FLAGS_buffers) == "plain") {
    shotstream::gpu::PinnedBufferPool::Options plain_options;
    plain_options.pinned = false;
    plain_options.max_free_buffers = 0;
    plain = std::make_unique<shotstream::gpu::PinnedBufferPool>(plain_options);
    options.pool = plain.get();
  } else if (absl::GetFlag(FLAGS_buffers) != "pool") {
    return Fail(absl::InvalidArgumentError("--buffers: pool or plain"));
  }
  for (auto [flag, pem] : {std::pair{&FLAGS_tls_ca, &options.tls_root_pem},
                           std::pair{&FLAGS_tls_cert, &options.tls_cert_pem},
                           std::pair{&FLAGS_tls_key, &options.tls_key_pem}}) {
    const std::string path = absl::GetFlag(*flag);
    if (path.empty()) continue;
    std::ifstream in(path);
    if (!in) return Fail(absl::NotFoundError(path + ": cannot read"));
    std::stringstream text;
    text << in.rdbuf();
    *pem = text.str();
  }
  options.tls = absl::GetFlag(FLAGS_tls);
  auto client = Client::Connect(
      absl::StrSplit(absl::GetFlag(FLAGS_target), ',', absl::SkipEmpty()), options);
  if (!client.ok()) return Fail(client.status());
  const std::string dataset = absl::GetFlag(FLAGS_dataset);
  if (command == "ls") return Ls(**client);
  if (dataset.empty()) {
    return Fail(absl::InvalidArgumentError(absl::StrCat(command, " needs --dataset=NAME")));
  }
  if (command == "info") return Info(**client, dataset);
  if (command == "plan") return Plan(**client, dataset);
  if (command == "fetch") return Fetch(**client, dataset);
  if (command == "bench") return Bench(**client, dataset);
  if (command == "plot") return Plot(**client, dataset);
  if (command == "put") return Put(**client, dataset);
  std::cerr << "shotstream: unknown command '" << command << "' (ls, info, fetch, bench, plot)"
            << std::endl;
  return 2;
}

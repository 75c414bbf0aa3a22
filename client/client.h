// C++ client library for the shotstream service.
//
// A Client is thread-safe (it wraps gRPC channels). A ShotReader receives ahead on its own
// thread into a bounded queue of `queue_depth` shots, each landing in a reusable (pinned,
// with CUDA) buffer from a PinnedBufferPool, and hands them out in request order, each
// verified against its CRC-32. Next() is for one thread at a time; Cancel() and the
// counters may be called from any thread.
#ifndef SHOTSTREAM_CLIENT_CLIENT_H_
#define SHOTSTREAM_CLIENT_CLIENT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "shotstream/gpu/pinned_buffer_pool.h"

namespace shotstream::client {

struct DatasetSummary {
  std::string name;
  std::string state;  // READY, FAILED, REBUILDING or LOADING
  // LOADING: traces scanned of those the files hold.
  uint64_t loading_traces_done = 0;
  uint64_t loading_traces_total = 0;
  std::string error;
  std::string format;  // "segy", "npy", "hdf5", ...
  uint64_t n_traces = 0;
  uint64_t n_shots = 0;
  uint32_t n_samples = 0;
  double sample_interval_us = 0;
  int sample_format = 0;
  std::string shot_key;
  uint32_t n_files = 0;
  std::vector<std::string> bad_files;  // on_bad_file: skip: "PATH: why" of each left out
  std::vector<std::string> header_fields;     // the trace header fields a stream may ask
  std::vector<int64_t> shot_ids;              // GetDataset and Client::Write only
  std::vector<uint32_t> shot_trace_counts;    // GetDataset and Client::Write only
  // source_xy datasets: each shot's source position (GetDataset only); else empty.
  struct SourcePosition {
    int64_t shot_id = 0;
    double x = 0;
    double y = 0;
  };
  std::vector<SourcePosition> source_positions;
  // Client::Write only: the largest |sample written - given| (0 for format 5), and the
  // shots and float32 sample bytes written.
  double write_max_error = 0;
  // Client::Write only: the largest |header stored - given| and where (WriteShotsResponse).
  double write_max_header_error = 0;
  std::string write_max_header_error_at;
  uint64_t written_shots = 0;
  uint64_t written_bytes = 0;
};

// A shot to write: samples [n_traces][n_samples] float32, borrowed until the next call of
// the shot source; header columns by SEG-Y snake_case name, n_traces values each.
struct ShotToWrite {
  int64_t shot_id = 0;
  uint32_t n_traces = 0;
  uint32_t n_samples = 0;
  const float* samples = nullptr;
  std::vector<std::pair<std::string, std::vector<double>>> headers;
};

struct WriteOptions {
  double sample_interval_us = 0;
  int sample_format = 5;                // 5 IEEE float32 (exact), 1 IBM float, 3 int16
  uint64_t max_chunk_bytes = 1 << 20;   // sample bytes per message (whole traces)
  // A multi-part write (WriteStart.parts; one dataset from several calls, e.g. one per
  // Dask chunk), when parts_write_id is set: this call writes part `part_index` of
  // `parts_count`, kept aside, or with commit_parts (and no shots) joins the parts.
  std::string parts_write_id;
  uint32_t parts_count = 0;
  uint32_t part_index = 0;
  bool commit_parts = false;
};

// Fills *shot with the next shot and returns true, false after the last, or an error
// (the write is then cancelled and the server keeps nothing).
using NextShotToWrite = std::function<absl::StatusOr<bool>(ShotToWrite* shot)>;

// One shot gather: float32 samples [n_traces][n_samples] and header columns. With
// StreamOptions::pieces, a part of one: traces [first_trace, first_trace + n_traces) of
// its shot_traces, the shot's header columns and trace headers with its first part only.
struct Shot {
  uint32_t index = 0;  // position in the request
  int64_t shot_id = 0;
  uint32_t n_traces = 0;  // in `samples`
  uint32_t first_trace = 0;   // pieces: where the part starts in its shot (else 0)
  uint32_t shot_traces = 0;   // the whole shot's traces (n_traces but for a part)
  bool last_piece = true;     // pieces: the shot's last part (always true for a shot)
  uint32_t n_samples = 0;
  double sample_interval_us = 0;
  gpu::HostBuffer samples;  // from the reader's pool; goes back when replaced or destroyed
  std::vector<std::pair<std::string, std::vector<double>>> headers;
  // With StreamOptions::raw_trace_headers: n_traces * 240 bytes, each trace's header
  // big-endian as SEG-Y stores it; empty otherwise.
  std::string trace_headers;
  // How its samples travelled ("float32", "lossless", ...: what an "auto" stream got for
  // this shot; a lossy shot holding NaN came "lossless").
  std::string encoding;
  const std::vector<double>* header(const std::string& name) const {
    for (const auto& [n, v] : headers) {
      if (n == name) return &v;
    }
    return nullptr;
  }
};

struct StreamOptions {
  uint32_t queue_depth = 2;           // server read-ahead and client receive-ahead
  std::vector<std::string> headers;   // trace header fields to return
  uint64_t max_chunk_bytes = 0;       // 0: the server's default
  // Let the server send big-endian IEEE traces as stored (no decode there); the client
  // swaps them in the copy it makes anyway. Shots arrive little-endian either way.
  bool accept_big_endian = true;
  // Let the server send a file's traces that lie one after another as the range they lie
  // in, each followed by the next one's 240-byte header, which the client skips in its
  // copy: less of the server's CPU a byte (its kernel copies fewer, larger pieces) for
  // up to 1/32 more bytes on the link (ShotStream's accept_trace_gaps).
  bool accept_trace_gaps = true;
  // Receive each trace's raw 240-byte header (Shot::trace_headers), for exports that keep
  // every field.
  bool raw_trace_headers = false;
  // Only samples [window->first, window->second) of every trace (second 0: to the end).
  std::optional<std::pair<uint32_t, uint32_t>> window;
  // Only the traces whose header `header` (a header field name) is within [low, high],
  // every condition at once; a shot may come with 0 traces.
  struct TraceCondition {
    std::string header;
    double low = 0;
    double high = 0;
  };
  std::vector<TraceCondition> where;
  // How samples travel: "float32", "native" (integer and IBM samples as stored),
  // "lossless" (c-blosc), "int16" (per-trace scale; error <= max|trace| / 32767), "zfp"
  // and "quantized" (error <= tolerance x the shot's RMS; tolerance 0: 1e-3; quantized is
  // the fast one), "auto" (the server picks; with a tolerance > 0 it may pick quantized
  // or int16, within the tolerance).
  // Shots always arrive as float32.
  std::string encoding = "float32";
  double tolerance = 0;
  // Deliver each shot in parts, as its chunks arrive, each verified by its own CRC-32
  // (Shot::first_trace, last_piece), for consumers that take traces incrementally (a
  // gigabyte gather staged to the GPU a part at a time): the client then holds parts,
  // not shots. The queue depth counts parts. Stream only (a job's shots come whole).
  bool pieces = false;
};

// A job's options: a stream's, and where its consumers resume.
struct JobOptions : StreamOptions {
  // A token that JobReader::Commit (or Client::CommitJob) returned, stored with the
  // trainer's checkpoint: the job rolls back to that commit's step, so that every shot the
  // restored model has not trained on is handed out again, once, among however many
  // consumers resume (docs/epochs.md). Empty: no resume.
  std::string resume;
  // false: the consumer never waits for shots other consumers hold; its stream ends once
  // it is done with what it was handed and none is left to hand out (a DataLoader worker,
  // whose loader takes results in order and would wait on it while the others idle).
  bool takeover = true;
};

// A job as its commits name it, for committing from elsewhere than its reader (a
// DataLoader's main process, whose workers stream).
struct JobCommit {
  std::string dataset;
  std::string job;
  std::vector<int64_t> shot_ids;  // every id of the job, as StreamJob was given them
  uint64_t epoch = 0;
  uint64_t seed = 0;
  std::string resume;  // the token the job's consumers resumed from (empty: none)
};

struct ClientOptions {
  std::string token;           // sent as "authorization: Bearer <token>"
  std::string tls_root_pem;    // PEM of the CA to trust; empty: plaintext, unless `tls`
  bool tls = false;            // TLS trusting the system's roots (where tls_root_pem is empty)
  // Mutual TLS: this client's certificate chain and private key (PEM), both or neither;
  // either turns TLS on.
  std::string tls_cert_pem;
  std::string tls_key_pem;
  // A broken stream (UNAVAILABLE or CANCELLED by the server: restart, shutdown, network)
  // is resumed at the first shot not yet delivered, on another target that holds the
  // shots if there is one, else on the same one once it is back: at most this many
  // failures in a row (each delivered shot resets the count).
  int retries = 0;
  absl::Duration reconnect_timeout = absl::Seconds(10);  // per attempt
  // A target that cannot be connected to within this long fails the call or stream that
  // needs it (UNAVAILABLE naming the target), retries or not.
  absl::Duration connect_timeout = absl::Seconds(5);
  // The longest a metadata call (ListDatasets, GetDataset, GetDatasetPage) waits for its
  // answer once connected: DEADLINE_EXCEEDED after. Streams and writes have none.
  absl::Duration call_timeout = absl::InfiniteDuration();
  // Where shots land; null: the client owns a pool (pinned when a GPU is there).
  gpu::PinnedBufferPool* pool = nullptr;
};

class ShotReader {
 public:
  virtual ~ShotReader() = default;
  // The next shot: true with *shot filled (its previous buffer goes back to the pool),
  // false at the end of the stream, or the error (gRPC's code and the server's message;
  // DATA_LOSS for a checksum mismatch).
  virtual absl::StatusOr<bool> Next(Shot* shot) = 0;
  // Stops the stream, from any thread (a Next waiting for a shot wakes); Next then
  // returns CANCELLED or the end.
  virtual void Cancel() = 0;
  // Streams resumed after a break so far.
  virtual int reconnects() const = 0;
  // Shots whose CRC-32 was computed over the received samples and matched the server's.
  virtual uint64_t checksums_verified() const = 0;
  // Sample bytes received as they travelled (encoded), and the encoding of the last shot
  // received, which may be ahead of the last one Next() gave (Shot::encoding is each
  // shot's own).
  virtual uint64_t wire_bytes() const = 0;
  virtual std::string last_encoding() const = 0;
};

// One consumer of a job (Client::StreamJob). Commit is for the thread that calls Next.
class JobReader : public ShotReader {
 public:
  // Records at the server(s) that every shot this reader has handed out so far is trained
  // as of `step` (a checkpoint: every consumer commits the same step), those shots done;
  // returns once that is durable (with --job_dir: written and synced to the job file),
  // with a token of at most 256 bytes naming (dataset, job, epoch, step) and the job's
  // ids and seed, to store with the checkpoint and give to JobOptions::resume. Works after
  // the stream ended too. Errors: ABORTED when the job was resumed from another checkpoint
  // since; FAILED_PRECONDITION when the server no longer has the job or the step is
  // before one committed; UNAVAILABLE when a server cannot be reached (nothing lost: the
  // shots stay to be committed by the next Commit).
  virtual absl::StatusOr<std::string> Commit(int64_t step) = 0;
};

class Client {
 public:
  // Connects lazily to each HOST:PORT ("dns:///NAME:PORT" stands for every address NAME
  // resolves to, e.g. a Kubernetes headless Service); with several targets each shot is
  // fetched from a server that holds it (learned from GetDataset), shots held by several
  // are spread.
  static absl::StatusOr<std::unique_ptr<Client>> Connect(const std::vector<std::string>& targets,
                                                         const ClientOptions& options = {});
  static absl::StatusOr<std::unique_ptr<Client>> Connect(const std::string& target) {
    return Connect(std::vector<std::string>{target});
  }
  ~Client();

  // Every dataset of every target (first target first, by name).
  absl::StatusOr<std::vector<DatasetSummary>> ListDatasets();
  // The dataset; with several targets, the union of their shots.
  absl::StatusOr<DatasetSummary> GetDataset(const std::string& name);
  // One page of the dataset's shots, for datasets too large to hold every id at once: the
  // summary with up to `page_size` shots (ids and trace counts) from `*page_token` (empty:
  // the first page); *page_token becomes the next page's, empty after the last. With
  // several targets the pages go through each target in turn (a shot that several targets
  // hold comes once per target). NOT_FOUND when no target has the dataset.
  absl::StatusOr<DatasetSummary> GetDatasetPage(const std::string& name, uint32_t page_size,
                                                std::string* page_token);
  std::unique_ptr<ShotReader> Stream(const std::string& dataset, std::vector<int64_t> shot_ids,
                                     const StreamOptions& options);
  // One consumer of a job shared by every consumer of (dataset, job, epoch): the epoch's
  // permutation of shot_ids (EpochPermutation with `seed`), each shot to one consumer at
  // a time. A shot is done once Next() is called again (or the stream ends); a reader
  // destroyed or cancelled early gives back what it held. Next() returns false when every
  // shot of the job is done. options: as Stream's (a job's shots are selected, encoded and
  // delivered exactly as a stream's with the same options).
  // options.resume: see JobOptions (a token for another dataset, job, epoch, seed or set of
  // ids is INVALID_ARGUMENT, a step the server has no record of FAILED_PRECONDITION,
  // before any data).
  std::unique_ptr<JobReader> StreamJob(const std::string& dataset, const std::string& job,
                                       std::vector<int64_t> shot_ids, uint64_t epoch,
                                       uint64_t seed, const JobOptions& options);
  std::unique_ptr<JobReader> StreamJob(const std::string& dataset, const std::string& job,
                                       std::vector<int64_t> shot_ids, uint64_t epoch,
                                       uint64_t seed, const StreamOptions& options) {
    JobOptions o;
    static_cast<StreamOptions&>(o) = options;
    return StreamJob(dataset, job, std::move(shot_ids), epoch, seed, o);
  }
  // JobReader::Commit for shots trained on by any consumer of `job`: `trained` (the ids
  // trained since the last commit) recorded as of `step` on every target that runs part of
  // the job; the token. With several targets, each call learns which holds what
  // (GetDataset).
  absl::StatusOr<std::string> CommitJob(const JobCommit& job, int64_t step,
                                        const std::vector<int64_t>& trained);
  // Creates dataset `name` on the first target from the shots `next` gives, each sent
  // (with its CRC-32) before the next is asked for; the server writes SEG-Y into its
  // write_dir and makes the dataset visible once the last shot is in. The new dataset's
  // summary, or the server's error (ALREADY_EXISTS, INVALID_ARGUMENT, PERMISSION_DENIED,
  // FAILED_PRECONDITION when writing is off, DATA_LOSS, RESOURCE_EXHAUSTED); on any error
  // nothing of the dataset is kept.
  absl::StatusOr<DatasetSummary> Write(const std::string& name, const WriteOptions& options,
                                       const NextShotToWrite& next);
  gpu::PinnedBufferPool& pool();

  struct Impl;  // internal; public only so that the reader in client.cc can name it

 private:
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Targets as given, except that "dns:///NAME:PORT" becomes one target per address.
absl::StatusOr<std::vector<std::string>> ExpandTargets(const std::vector<std::string>& targets);

// OK for HOST:PORT (a port number given; [IPv6]:PORT) or unix:PATH; INVALID_ARGUMENT
// naming the target otherwise (a target without a port is not port 0).
absl::Status CheckTarget(absl::string_view target);

}  // namespace shotstream::client

#endif  // SHOTSTREAM_CLIENT_CLIENT_H_

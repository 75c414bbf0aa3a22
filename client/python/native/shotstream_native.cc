// shotstream._native: the C++ client (shotstream/client/client.h) bound to Python with
// pybind11. shotstream.Client runs on it wherever it is importable: streams and jobs
// (samples land in the C++ client's pool buffers in one copy from gRPC's slices, CRC-32
// checked on the way, and numpy views those buffers without a copy), writes and the
// metadata calls. The grpcio stubs are the fallback where it is not built (client.py).
//
//   Client(targets, *, token="", tls_root_pem=b"", tls=False, tls_cert_pem=b"",
//          tls_key_pem=b"", retries=0, reconnect_timeout=10.0, connect_timeout=5.0,
//          call_timeout=None)
//     .stream(dataset, shot_ids, *, queue_depth=2, headers=[], max_chunk_bytes=0,
//             trace_headers=False, window=None, where=[(header, low, high)],
//             encoding="float32",
//             tolerance=0.0, pieces=False, trace_gaps=True) -> Reader
//     .stream_job(dataset, job, shot_ids, *, epoch=0, seed=0, and stream's options but
//                 pieces) -> Reader
//     .write(dataset, shots, *, sample_interval_us, sample_format=5,
//            max_chunk_bytes=1 MiB, parts_write_id="", parts_count=0, part_index=0,
//            commit_parts=False) -> dict (the new dataset's summary); `shots` an
//            iterator of (shot_id, float32 C-order [n_traces, n_samples], {name: float64})
//     .list_datasets() -> [dict], .dataset(name) -> dict,
//     .dataset_page(name, page_size, page_token) -> (dict, next_token)
//     .close()  closes the connections once no Reader is left
//   Reader: an iterator of shotstream.types.Shot; .cancel(), .reconnects, .wire_bytes
//   tune(): the process-wide malloc and gRPC settings of the C++ tools (shotstream.tune).
//
// Errors raise shotstream.errors.ShotstreamError with the C++ status's gRPC code. Every
// call that waits (connecting, the next shot, a write) releases the GIL. Client is
// thread-safe; a Reader is for one thread at a time, but cancel() may come from any.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "shotstream/client/client.h"
#include "shotstream/client/grpc_tuning.h"
#include "common/malloc_tuning.h"
#include "shotstream/gpu/pinned_buffer_pool.h"

namespace py = pybind11;
using namespace pybind11::literals;  // NOLINT: "name"_a for keyword arguments

namespace shotstream::python {
namespace {

using client::Client;
using client::DatasetSummary;
using client::Shot;
using client::ShotReader;
using client::StreamOptions;
using gpu::HostBuffer;
using gpu::PinnedBufferPool;

// A failed absl::Status on its way to Python (translated to ShotstreamError).
struct StatusError {
  absl::Status status;
};

template <typename T>
T ValueOrThrow(absl::StatusOr<T> v) {
  if (!v.ok()) throw StatusError{v.status()};
  return *std::move(v);
}

// The C++ client and the pool its shots land in. The pool is shared with every shot's
// samples, so a shot outlives the client that received it.
class PyClient {
 public:
  PyClient(const std::vector<std::string>& targets, const std::string& token,
           const py::bytes& tls_root_pem, bool tls, const py::bytes& tls_cert_pem,
           const py::bytes& tls_key_pem, int retries, double reconnect_timeout,
           double connect_timeout, std::optional<double> call_timeout)
      : pool_(std::make_shared<PinnedBufferPool>()) {
    client::ClientOptions options;
    options.token = token;
    options.tls_root_pem = tls_root_pem;
    options.tls = tls;
    options.tls_cert_pem = tls_cert_pem;
    options.tls_key_pem = tls_key_pem;
    options.retries = retries;
    options.reconnect_timeout = absl::Seconds(reconnect_timeout);
    options.connect_timeout = absl::Seconds(connect_timeout);
    if (call_timeout) options.call_timeout = absl::Seconds(*call_timeout);
    options.pool = pool_.get();
    absl::StatusOr<std::unique_ptr<Client>> c;
    {
      py::gil_scoped_release nogil;
      c = Client::Connect(targets, options);
    }
    client_ = std::shared_ptr<Client>(ValueOrThrow(std::move(c)).release());
  }

  // The client for a new call; FAILED_PRECONDITION once closed.
  std::shared_ptr<Client> Get() const {
    if (client_ == nullptr) throw StatusError{absl::FailedPreconditionError("the client is closed")};
    return client_;
  }
  const std::shared_ptr<PinnedBufferPool>& pool() const { return pool_; }

  // Readers keep their own reference: the channels close when the last one goes.
  void Close() {
    std::shared_ptr<Client> c = std::move(client_);
    py::gil_scoped_release nogil;
    c.reset();
  }

 private:
  std::shared_ptr<PinnedBufferPool> pool_;
  std::shared_ptr<Client> client_;
};

// Python's view of one stream or job: each Next() is one shotstream.types.Shot.
class PyReader {
 public:
  PyReader(std::shared_ptr<Client> client, std::shared_ptr<PinnedBufferPool> pool,
           std::unique_ptr<ShotReader> reader)
      : client_(std::move(client)), pool_(std::move(pool)), reader_(std::move(reader)) {}
  PyReader(std::shared_ptr<Client> client, std::shared_ptr<PinnedBufferPool> pool,
           std::unique_ptr<shotstream::client::JobReader> reader)
      : client_(std::move(client)), pool_(std::move(pool)), job_(reader.get()),
        reader_(std::move(reader)) {}

  ~PyReader() {
    py::gil_scoped_release nogil;
    reader_->Cancel();
    reader_.reset();  // joins the receive thread
    client_.reset();
  }

  py::object Next() {
    Shot shot;
    absl::StatusOr<bool> more;
    {
      py::gil_scoped_release nogil;
      absl::MutexLock lock(&mu_);
      more = reader_->Next(&shot);
    }
    if (!ValueOrThrow(std::move(more))) throw py::stop_iteration();
    return ToPython(std::move(shot));
  }

  void Cancel() {
    py::gil_scoped_release nogil;  // not under mu_: it wakes a Next() on another thread
    reader_->Cancel();
  }
  int reconnects() const { return reader_->reconnects(); }
  uint64_t wire_bytes() const { return reader_->wire_bytes(); }

  // A job's commit (JobReader::Commit): the token.
  py::bytes Commit(int64_t step) {
    if (job_ == nullptr) {
      throw std::invalid_argument("commit() is for a job's stream (stream_job)");
    }
    absl::StatusOr<std::string> token;
    {
      py::gil_scoped_release nogil;
      absl::MutexLock lock(&mu_);
      token = job_->Commit(step);
    }
    return py::bytes(ValueOrThrow(std::move(token)));
  }

 private:
  // A pool buffer kept alive by the numpy arrays that view it; the pool outlives it.
  struct Owned {
    std::shared_ptr<PinnedBufferPool> pool;
    HostBuffer buffer;
  };

  // A numpy array over `data` that `owner` keeps alive; read-only unless `writable`.
  template <typename T>
  static py::array View(const T* data, std::vector<py::ssize_t> shape, py::capsule owner,
                        bool writable) {
    py::array a(py::dtype::of<T>(), std::move(shape), data, std::move(owner));
    if (!writable) {
      py::detail::array_proxy(a.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
    }
    return a;
  }

  py::object ToPython(Shot shot) {
    auto* owned = new Owned{pool_, std::move(shot.samples)};
    py::capsule samples_owner(owned, [](void* p) { delete static_cast<Owned*>(p); });
    py::array samples = View(owned->buffer.data(),
                             {static_cast<py::ssize_t>(shot.n_traces),
                              static_cast<py::ssize_t>(shot.n_samples)},
                             samples_owner, /*writable=*/false);  // the pool's buffer
    py::dict headers;
    for (auto& [name, values] : shot.headers) {
      auto* v = new std::vector<double>(std::move(values));
      py::capsule owner(v, [](void* p) { delete static_cast<std::vector<double>*>(p); });
      headers[py::str(name)] =  // the caller's own copy
          View(v->data(), {static_cast<py::ssize_t>(v->size())}, owner, /*writable=*/true);
    }
    py::object trace_headers = py::none();
    if (!shot.trace_headers.empty()) {
      const py::ssize_t n = static_cast<py::ssize_t>(shot.trace_headers.size() / 240);
      py::array_t<uint8_t> raw({n, py::ssize_t{240}});
      std::memcpy(raw.mutable_data(), shot.trace_headers.data(), shot.trace_headers.size());
      trace_headers = std::move(raw);
    }
    // Looked up once and kept for the process (a handle: never released at exit).
    static const py::handle shot_type =
        py::object(py::module_::import("shotstream.types").attr("Shot")).release();
    return shot_type(shot.index, shot.shot_id, std::move(samples), std::move(headers),
                     shot.sample_interval_us, std::move(trace_headers), shot.encoding,
                     shot.first_trace, shot.shot_traces, shot.last_piece);
  }

  std::shared_ptr<Client> client_;
  std::shared_ptr<PinnedBufferPool> pool_;
  shotstream::client::JobReader* job_ = nullptr;  // reader_'s, for a job
  absl::Mutex mu_;  // one Next() (or commit) at a time
  std::unique_ptr<ShotReader> reader_;
};

// Stream's and StreamJob's options from the keyword arguments client.py passes through.
StreamOptions Options(uint32_t queue_depth, std::vector<std::string> headers,
                      uint64_t max_chunk_bytes, bool trace_headers,
                      std::optional<std::pair<uint32_t, uint32_t>> window,
                      const std::vector<std::tuple<std::string, double, double>>& where,
                      std::string encoding, double tolerance, bool pieces, bool trace_gaps) {
  StreamOptions o;
  o.queue_depth = std::max<uint32_t>(1, queue_depth);
  o.headers = std::move(headers);
  o.max_chunk_bytes = max_chunk_bytes;
  o.raw_trace_headers = trace_headers;
  o.window = window;
  for (const auto& [header, low, high] : where) o.where.push_back({header, low, high});
  o.encoding = std::move(encoding);
  o.tolerance = tolerance;
  o.pieces = pieces;
  o.accept_trace_gaps = trace_gaps;
  return o;
}

py::dict Summary(const DatasetSummary& d) {
  py::dict out("name"_a = d.name, "state"_a = d.state, "error"_a = d.error,
               "format"_a = d.format, "n_traces"_a = d.n_traces, "n_shots"_a = d.n_shots,
               "n_samples"_a = d.n_samples, "sample_interval_us"_a = d.sample_interval_us,
               "sample_format"_a = d.sample_format, "shot_key"_a = d.shot_key,
               "n_files"_a = d.n_files, "bad_files"_a = d.bad_files,
               "loading_traces_done"_a = d.loading_traces_done,
               "loading_traces_total"_a = d.loading_traces_total,
               "header_fields"_a = d.header_fields,
               "write_max_error"_a = d.write_max_error,
               "write_max_header_error"_a = d.write_max_header_error,
               "write_max_header_error_at"_a = d.write_max_header_error_at,
               "written_shots"_a = d.written_shots,
               "written_bytes"_a = d.written_bytes);
  out["shot_ids"] = py::array_t<int64_t>(d.shot_ids.size(), d.shot_ids.data());
  py::array_t<int64_t> counts(d.shot_trace_counts.size());
  std::copy(d.shot_trace_counts.begin(), d.shot_trace_counts.end(), counts.mutable_data());
  out["shot_trace_counts"] = std::move(counts);
  py::dict positions;
  for (const auto& p : d.source_positions) positions[py::int_(p.shot_id)] = py::make_tuple(p.x, p.y);
  out["source_positions"] = std::move(positions);
  return out;
}

// Client::Write's shot source over a Python iterator: takes the next item with the GIL
// and keeps its samples array until the next call; an exception the iterator raises is
// kept to be raised again once the write has been cancelled.
class PythonShots {
 public:
  explicit PythonShots(py::iterator it) : it_(std::move(it)) {}

  absl::StatusOr<bool> Next(client::ShotToWrite* shot) {
    py::gil_scoped_acquire gil;
    try {
      held_ = py::none();
      if (it_ == py::iterator::sentinel()) return false;
      py::tuple item = py::reinterpret_borrow<py::tuple>(*it_);
      ++it_;
      auto samples = item[1].cast<py::array_t<float, py::array::c_style>>();
      if (samples.ndim() != 2) {
        return absl::InvalidArgumentError("a shot's samples are not [n_traces, n_samples]");
      }
      shot->shot_id = item[0].cast<int64_t>();
      shot->n_traces = static_cast<uint32_t>(samples.shape(0));
      shot->n_samples = static_cast<uint32_t>(samples.shape(1));
      shot->samples = samples.data();
      shot->headers.clear();
      for (auto [name, values] : item[2].cast<py::dict>()) {
        auto v = values.cast<py::array_t<double, py::array::c_style | py::array::forcecast>>();
        shot->headers.emplace_back(name.cast<std::string>(),
                                   std::vector<double>(v.data(), v.data() + v.size()));
      }
      held_ = std::move(samples);
      return true;
    } catch (py::error_already_set& e) {
      error_ = std::move(e);
      return absl::CancelledError("the shots' iterable raised");
    } catch (const std::exception& e) {  // a malformed item (pybind11's cast errors)
      return absl::InvalidArgumentError(absl::StrCat("a shot to write: ", e.what()));
    }
  }

  // After the write, with the GIL: the iterator's own exception, raised again.
  void RaiseIfFailed() {
    held_ = py::none();
    if (error_) throw *error_;
  }

 private:
  py::iterator it_;
  py::object held_ = py::none();
  std::optional<py::error_already_set> error_;
};

}  // namespace
}  // namespace shotstream::python

PYBIND11_MODULE(_native, m) {
  using namespace shotstream::python;  // NOLINT
  m.doc() = "The shotstream C++ client, bound with pybind11 (used by shotstream.Client).";

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      py::object error = py::module_::import("shotstream.errors")
                             .attr("ShotstreamError")
                             .attr("from_status")(static_cast<int>(e.status.code()),
                                                  std::string(e.status.message()));
      PyErr_SetObject(error.get_type().ptr(), error.ptr());
    }
  });

  m.def(
      "tune",
      [] {
        shotstream::TuneMallocForLargeBuffers();
        shotstream::client::TuneGrpcForLargeMessages();
      },
      "glibc malloc kept for large buffers and gRPC's socket reads into large slices, as "
      "the C++ tools set them; for the process, before its first channel.");

  py::class_<PyReader>(m, "Reader")
      .def("__iter__", [](PyReader& r) -> PyReader& { return r; })
      .def("__next__", &PyReader::Next)
      .def("cancel", &PyReader::Cancel)
      .def("commit", &PyReader::Commit, "step"_a)
      .def_property_readonly("reconnects", &PyReader::reconnects)
      .def_property_readonly("wire_bytes", &PyReader::wire_bytes);

  py::class_<PyClient>(m, "Client")
      .def(py::init<const std::vector<std::string>&, const std::string&, const py::bytes&, bool,
                    const py::bytes&, const py::bytes&, int, double, double,
                    std::optional<double>>(),
           "targets"_a, py::kw_only(), "token"_a = "", "tls_root_pem"_a = py::bytes(),
           "tls"_a = false, "tls_cert_pem"_a = py::bytes(), "tls_key_pem"_a = py::bytes(),
           "retries"_a = 0, "reconnect_timeout"_a = 10.0, "connect_timeout"_a = 5.0,
           "call_timeout"_a = py::none())
      .def(
          "stream",
          [](PyClient& self, const std::string& dataset, std::vector<int64_t> shot_ids,
             uint32_t queue_depth, std::vector<std::string> headers, uint64_t max_chunk_bytes,
             bool trace_headers, std::optional<std::pair<uint32_t, uint32_t>> window,
             const std::vector<std::tuple<std::string, double, double>>& where,
             std::string encoding, double tolerance, bool pieces, bool trace_gaps) {
            auto client = self.Get();
            StreamOptions o = Options(queue_depth, std::move(headers), max_chunk_bytes,
                                      trace_headers, window, where, std::move(encoding),
                                      tolerance, pieces, trace_gaps);
            std::unique_ptr<ShotReader> reader;
            {
              py::gil_scoped_release nogil;
              reader = client->Stream(dataset, std::move(shot_ids), o);
            }
            return std::make_unique<PyReader>(std::move(client), self.pool(), std::move(reader));
          },
          "dataset"_a, "shot_ids"_a, py::kw_only(), "queue_depth"_a = 2,
          "headers"_a = std::vector<std::string>{}, "max_chunk_bytes"_a = 0,
          "trace_headers"_a = false, "window"_a = py::none(),
          "where"_a = std::vector<std::tuple<std::string, double, double>>{},
          "encoding"_a = "float32", "tolerance"_a = 0.0, "pieces"_a = false,
          "trace_gaps"_a = true)
      .def(
          "stream_job",
          [](PyClient& self, const std::string& dataset, const std::string& job,
             std::vector<int64_t> shot_ids, uint64_t epoch, uint64_t seed, uint32_t queue_depth,
             std::vector<std::string> headers, uint64_t max_chunk_bytes, bool trace_headers,
             std::optional<std::pair<uint32_t, uint32_t>> window,
             const std::vector<std::tuple<std::string, double, double>>& where,
             std::string encoding, double tolerance, const py::bytes& resume, bool takeover,
             bool trace_gaps) {
            auto client = self.Get();
            shotstream::client::JobOptions o;
            static_cast<StreamOptions&>(o) =
                Options(queue_depth, std::move(headers), max_chunk_bytes, trace_headers,
                        window, where, std::move(encoding), tolerance, /*pieces=*/false,
                        trace_gaps);
            o.resume = resume;
            o.takeover = takeover;
            std::unique_ptr<shotstream::client::JobReader> reader;
            {
              py::gil_scoped_release nogil;
              reader = client->StreamJob(dataset, job, std::move(shot_ids), epoch, seed, o);
            }
            return std::make_unique<PyReader>(std::move(client), self.pool(), std::move(reader));
          },
          "dataset"_a, "job"_a, "shot_ids"_a, py::kw_only(), "epoch"_a = 0, "seed"_a = 0,
          "queue_depth"_a = 2, "headers"_a = std::vector<std::string>{},
          "max_chunk_bytes"_a = 0, "trace_headers"_a = false, "window"_a = py::none(),
          "where"_a = std::vector<std::tuple<std::string, double, double>>{},
          "encoding"_a = "float32", "tolerance"_a = 0.0, "resume"_a = py::bytes(),
          "takeover"_a = true, "trace_gaps"_a = true)
      .def(
          "commit_job",
          [](PyClient& self, const std::string& dataset, const std::string& job,
             std::vector<int64_t> shot_ids, int64_t step, std::vector<int64_t> trained,
             uint64_t epoch, uint64_t seed, const py::bytes& resume) {
            auto client = self.Get();
            shotstream::client::JobCommit c{dataset, job, std::move(shot_ids), epoch, seed,
                                            resume};
            absl::StatusOr<std::string> token;
            {
              py::gil_scoped_release nogil;
              token = client->CommitJob(c, step, trained);
            }
            return py::bytes(ValueOrThrow(std::move(token)));
          },
          "dataset"_a, "job"_a, "shot_ids"_a, "step"_a, "trained"_a, py::kw_only(),
          "epoch"_a = 0, "seed"_a = 0, "resume"_a = py::bytes())
      .def(
          "write",
          [](PyClient& self, const std::string& dataset, py::iterable shots,
             double sample_interval_us, int sample_format, uint64_t max_chunk_bytes,
             const std::string& parts_write_id, uint32_t parts_count, uint32_t part_index,
             bool commit_parts) {
            auto client = self.Get();
            shotstream::client::WriteOptions o;
            o.sample_interval_us = sample_interval_us;
            o.sample_format = sample_format;
            o.parts_write_id = parts_write_id;
            o.parts_count = parts_count;
            o.part_index = part_index;
            o.commit_parts = commit_parts;
            if (max_chunk_bytes > 0) o.max_chunk_bytes = max_chunk_bytes;
            PythonShots source(py::iter(shots));
            absl::StatusOr<DatasetSummary> info;
            {
              py::gil_scoped_release nogil;
              info = client->Write(dataset, o, [&source](shotstream::client::ShotToWrite* s) {
                return source.Next(s);
              });
            }
            source.RaiseIfFailed();
            return Summary(ValueOrThrow(std::move(info)));
          },
          "dataset"_a, "shots"_a, py::kw_only(), "sample_interval_us"_a,
          "sample_format"_a = 5, "max_chunk_bytes"_a = uint64_t{1} << 20,
          "parts_write_id"_a = "", "parts_count"_a = 0u, "part_index"_a = 0u,
          "commit_parts"_a = false)
      .def("list_datasets",
           [](PyClient& self) {
             auto client = self.Get();
             absl::StatusOr<std::vector<DatasetSummary>> all;
             {
               py::gil_scoped_release nogil;
               all = client->ListDatasets();
             }
             py::list out;
             for (const DatasetSummary& d : ValueOrThrow(std::move(all))) out.append(Summary(d));
             return out;
           })
      .def(
          "dataset",
          [](PyClient& self, const std::string& name) {
            auto client = self.Get();
            absl::StatusOr<DatasetSummary> d;
            {
              py::gil_scoped_release nogil;
              d = client->GetDataset(name);
            }
            return Summary(ValueOrThrow(std::move(d)));
          },
          "name"_a)
      .def(
          "dataset_page",
          [](PyClient& self, const std::string& name, uint32_t page_size,
             std::string page_token) {
            auto client = self.Get();
            absl::StatusOr<DatasetSummary> d;
            {
              py::gil_scoped_release nogil;
              d = client->GetDatasetPage(name, page_size, &page_token);
            }
            return py::make_tuple(Summary(ValueOrThrow(std::move(d))), page_token);
          },
          "name"_a, "page_size"_a, "page_token"_a = "")
      .def("close", &PyClient::Close);
}

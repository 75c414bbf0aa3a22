// shotstream._native: the C++ client (client/client.h) as a CPython extension, so that
// Python streams shots at the C++ client's rate: samples go from gRPC's slices into a
// pool buffer in one copy, with the CRC-32 checked on the way, and numpy views that buffer
// (no further copy). Used by shotstream.Client.stream when importable; the package falls
// back to the generated grpcio stubs otherwise (see client.py).
//
// Objects:
//   NativeClient(targets, token, tls_root_pem, retries, reconnect_timeout_s,
//                connect_timeout_s)
//     .stream(dataset, shot_ids, queue_depth, headers, max_chunk_bytes,
//             raw_trace_headers=False, has_window=False, window_start=0, window_stop=0,
//             where=[(header, lo, hi)], encoding="float32", tolerance=0, pieces=False)
//         -> NativeStream
//     .write(dataset, next_shot, sample_interval_us, sample_format, max_chunk_bytes)
//         -> dict of the new dataset's summary (Client::Write); next_shot() returns None
//         at the end or (shot_id, samples, n_traces, n_samples, [(header, values)]) with
//         samples a contiguous float32 buffer and values float64 buffers; an exception it
//         raises cancels the write and is raised again.
//     .close()  closes the connections once no stream is left (shots keep the pool only)
//   NativeStream.next() -> None at the end, or (index, shot_id, sample_interval_us,
//       n_traces, n_samples, samples, [(header name, bytearray of float64)],
//       raw trace headers or None, the shot's encoding name, first_trace, shot_traces,
//       last_piece): with pieces, a part of a shot (StreamOptions::pieces)
//       where samples is a read-only buffer of n_traces * n_samples float32 that owns the
//       shot's pool buffer (it goes back to the pool when the last view of it dies).
//     .cancel(), .reconnects
//   Errors raise NativeError(code, message), code being gRPC's status code number.
//
// Thread-safety: NativeClient is thread-safe; a NativeStream serialises its calls with a
// mutex. Blocking calls release the GIL.
//
// On import it tunes glibc malloc for large buffers as the C++ tools do (gRPC's read
// buffers otherwise come and go with mmap/munmap and page faults; BENCHMARKS.md, "What
// each setting buys", has the figure), and calls TuneGrpcForLargeMessages
// (client/grpc_tuning.h: tcp_read_chunks off, one malloc arena, unless the environment
// sets them); SHOTSTREAM_TUNING=0 in the environment does neither.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "client/grpc_tuning.h"
#include "gpu/pinned_buffer_pool.h"
#include "common/malloc_tuning.h"

namespace {

using shotstream::client::Client;
using shotstream::client::ClientOptions;
using shotstream::client::Shot;
using shotstream::client::ShotReader;
using shotstream::client::StreamOptions;
using shotstream::gpu::HostBuffer;
using shotstream::gpu::PinnedBufferPool;

PyObject* g_native_error = nullptr;  // shotstream._native.NativeError

// Raises NativeError(code, message); returns nullptr for `return RaiseStatus(s);`.
PyObject* RaiseStatus(const absl::Status& s) {
  PyObject* args = Py_BuildValue("(is#)", static_cast<int>(s.code()), s.message().data(),
                                 static_cast<Py_ssize_t>(s.message().size()));
  if (args != nullptr) {
    PyErr_SetObject(g_native_error, args);
    Py_DECREF(args);
  }
  return nullptr;
}

bool StringList(PyObject* seq, const char* what, std::vector<std::string>* out) {
  PyObject* fast = PySequence_Fast(seq, what);
  if (fast == nullptr) return false;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  for (Py_ssize_t i = 0; i < n; ++i) {
    Py_ssize_t len = 0;
    const char* s = PyUnicode_AsUTF8AndSize(PySequence_Fast_GET_ITEM(fast, i), &len);
    if (s == nullptr) {
      Py_DECREF(fast);
      return false;
    }
    out->emplace_back(s, len);
  }
  Py_DECREF(fast);
  return true;
}

// ---- NativeClient ---------------------------------------------------------------------

struct NativeClientObject {
  PyObject_HEAD
  // The pool outlives the client (its readers) and every Samples object (they hold a
  // reference to this object).
  PinnedBufferPool* pool;
  Client* client;     // null once closed and no stream is left
  int live_streams;   // NativeStreams not yet destroyed; these fields are guarded by the GIL
  bool closed;
};

// Destroys the C++ client (its channels) once closed and no stream uses it.
void MaybeDestroyClient(NativeClientObject* self) {
  if (!self->closed || self->live_streams > 0 || self->client == nullptr) return;
  Client* client = self->client;
  self->client = nullptr;
  Py_BEGIN_ALLOW_THREADS
  delete client;
  Py_END_ALLOW_THREADS
}

PyObject* NativeClientClose(NativeClientObject* self, PyObject*) {
  self->closed = true;
  MaybeDestroyClient(self);
  Py_RETURN_NONE;
}

void NativeClientDealloc(NativeClientObject* self) {
  Py_BEGIN_ALLOW_THREADS
  delete self->client;
  delete self->pool;
  Py_END_ALLOW_THREADS
  Py_TYPE(self)->tp_free(reinterpret_cast<PyObject*>(self));
}

int NativeClientInit(NativeClientObject* self, PyObject* args, PyObject* kwargs) {
  static const char* kKeywords[] = {"targets", "token", "tls_root_pem", "retries",
                                    "reconnect_timeout", "connect_timeout", nullptr};
  PyObject* targets_obj = nullptr;
  const char* token = "";
  Py_ssize_t token_len = 0;
  const char* pem = "";
  Py_ssize_t pem_len = 0;
  int retries = 0;
  double reconnect_timeout = 10.0;
  double connect_timeout = 5.0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|s#y#idd", const_cast<char**>(kKeywords),
                                   &targets_obj, &token, &token_len, &pem, &pem_len, &retries,
                                   &reconnect_timeout, &connect_timeout)) {
    return -1;
  }
  std::vector<std::string> targets;
  if (!StringList(targets_obj, "targets must be a sequence of str", &targets)) return -1;
  if (self->client != nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "NativeClient initialised twice");
    return -1;
  }
  ClientOptions options;
  options.token.assign(token, token_len);
  options.tls_root_pem.assign(pem, pem_len);
  options.retries = retries;
  options.reconnect_timeout = absl::Seconds(reconnect_timeout);
  options.connect_timeout = absl::Seconds(connect_timeout);
  auto pool = std::make_unique<PinnedBufferPool>();
  options.pool = pool.get();
  absl::StatusOr<std::unique_ptr<Client>> client;
  Py_BEGIN_ALLOW_THREADS
  client = Client::Connect(targets, options);
  Py_END_ALLOW_THREADS
  if (!client.ok()) {
    RaiseStatus(client.status());
    return -1;
  }
  self->pool = pool.release();
  self->client = client->release();
  return 0;
}

// ---- Samples: a read-only buffer over one shot's pool buffer --------------------------

struct SamplesObject {
  PyObject_HEAD
  PyObject* owner;  // the NativeClient whose pool the buffer came from
  HostBuffer* buffer;
  Py_ssize_t shape[1];
  Py_ssize_t strides[1];
};

void SamplesDealloc(SamplesObject* self) {
  delete self->buffer;  // back to the pool (thread-safe, never waits on the GIL)
  Py_XDECREF(self->owner);
  Py_TYPE(self)->tp_free(reinterpret_cast<PyObject*>(self));
}

int SamplesGetBuffer(SamplesObject* self, Py_buffer* view, int flags) {
  if (flags & PyBUF_WRITABLE) {
    PyErr_SetString(PyExc_BufferError, "shot samples are read-only");
    return -1;
  }
  self->shape[0] = static_cast<Py_ssize_t>(self->buffer->size());
  self->strides[0] = sizeof(float);
  view->buf = self->buffer->data();
  view->obj = reinterpret_cast<PyObject*>(self);
  Py_INCREF(self);
  view->len = self->shape[0] * static_cast<Py_ssize_t>(sizeof(float));
  view->readonly = 1;
  view->itemsize = sizeof(float);
  view->format = (flags & PyBUF_FORMAT) ? const_cast<char*>("<f") : nullptr;
  view->ndim = 1;
  view->shape = (flags & PyBUF_ND) ? self->shape : nullptr;
  view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? self->strides : nullptr;
  view->suboffsets = nullptr;
  view->internal = nullptr;
  return 0;
}

PyBufferProcs g_samples_buffer_procs = {
    reinterpret_cast<getbufferproc>(SamplesGetBuffer),
    nullptr,
};

PyTypeObject g_samples_type = {PyVarObject_HEAD_INIT(nullptr, 0)};

// ---- NativeStream ---------------------------------------------------------------------

struct NativeStreamObject {
  PyObject_HEAD
  PyObject* client;  // NativeClientObject, kept alive while the stream is
  absl::Mutex* mu;   // serialises next/cancel/dealloc across Python threads
  ShotReader* reader;
};

void NativeStreamDealloc(NativeStreamObject* self) {
  Py_BEGIN_ALLOW_THREADS
  if (self->reader != nullptr) self->reader->Cancel();
  delete self->reader;  // joins the receive thread
  delete self->mu;
  Py_END_ALLOW_THREADS
  auto* client = reinterpret_cast<NativeClientObject*>(self->client);
  --client->live_streams;
  MaybeDestroyClient(client);
  Py_XDECREF(self->client);
  Py_TYPE(self)->tp_free(reinterpret_cast<PyObject*>(self));
}

PyObject* NativeStreamNext(NativeStreamObject* self, PyObject*) {
  Shot shot;
  absl::StatusOr<bool> more;
  Py_BEGIN_ALLOW_THREADS
  absl::MutexLock lock(self->mu);
  more = self->reader->Next(&shot);
  Py_END_ALLOW_THREADS
  if (!more.ok()) return RaiseStatus(more.status());
  if (!*more) Py_RETURN_NONE;

  SamplesObject* samples = PyObject_New(SamplesObject, &g_samples_type);
  if (samples == nullptr) return nullptr;
  samples->buffer = new HostBuffer(std::move(shot.samples));
  samples->owner = self->client;
  Py_INCREF(self->client);

  PyObject* headers = PyList_New(static_cast<Py_ssize_t>(shot.headers.size()));
  if (headers == nullptr) {
    Py_DECREF(samples);
    return nullptr;
  }
  for (size_t i = 0; i < shot.headers.size(); ++i) {
    const auto& [name, values] = shot.headers[i];
    PyObject* item = Py_BuildValue(
        "(s#N)", name.data(), static_cast<Py_ssize_t>(name.size()),
        PyByteArray_FromStringAndSize(reinterpret_cast<const char*>(values.data()),
                                      static_cast<Py_ssize_t>(values.size() * sizeof(double))));
    if (item == nullptr) {
      Py_DECREF(headers);
      Py_DECREF(samples);
      return nullptr;
    }
    PyList_SET_ITEM(headers, static_cast<Py_ssize_t>(i), item);
  }
  PyObject* trace_headers = nullptr;
  if (shot.trace_headers.empty()) {
    Py_INCREF(Py_None);
    trace_headers = Py_None;
  } else {
    trace_headers = PyBytes_FromStringAndSize(shot.trace_headers.data(),
                                              static_cast<Py_ssize_t>(shot.trace_headers.size()));
    if (trace_headers == nullptr) {
      Py_DECREF(headers);
      Py_DECREF(samples);
      return nullptr;
    }
  }
  return Py_BuildValue("(ILdIINNNs#IIN)", shot.index, static_cast<long long>(shot.shot_id),
                       shot.sample_interval_us, shot.n_traces, shot.n_samples, samples, headers,
                       trace_headers, shot.encoding.data(),
                       static_cast<Py_ssize_t>(shot.encoding.size()), shot.first_trace,
                       shot.shot_traces, PyBool_FromLong(shot.last_piece));
}

PyObject* NativeStreamCancel(NativeStreamObject* self, PyObject*) {
  // Not under mu: Cancel is what wakes a Next blocked on another thread.
  Py_BEGIN_ALLOW_THREADS
  self->reader->Cancel();
  Py_END_ALLOW_THREADS
  Py_RETURN_NONE;
}

PyObject* NativeStreamReconnects(NativeStreamObject* self, void*) {
  return PyLong_FromLong(self->reader->reconnects());
}

PyObject* NativeStreamWireBytes(NativeStreamObject* self, void*) {
  return PyLong_FromUnsignedLongLong(self->reader->wire_bytes());
}

PyObject* NativeStreamLastEncoding(NativeStreamObject* self, void*) {
  const std::string e = self->reader->last_encoding();
  return PyUnicode_FromStringAndSize(e.data(), static_cast<Py_ssize_t>(e.size()));
}

PyTypeObject g_stream_type = {PyVarObject_HEAD_INIT(nullptr, 0)};

PyObject* NativeClientStream(NativeClientObject* self, PyObject* args, PyObject* kwargs) {
  static const char* kKeywords[] = {"dataset",     "shot_ids",     "queue_depth",
                                    "headers",     "max_chunk_bytes", "raw_trace_headers",
                                    "has_window",  "window_start", "window_stop",
                                    "where",       "encoding",     "tolerance",
                                    "pieces",      nullptr};
  const char* dataset = nullptr;
  Py_ssize_t dataset_len = 0;
  PyObject* ids_obj = nullptr;
  unsigned int queue_depth = 2;
  PyObject* headers_obj = nullptr;
  unsigned long long max_chunk_bytes = 0;
  int raw_trace_headers = 0;
  int has_window = 0;
  unsigned int window_start = 0, window_stop = 0;
  PyObject* where_obj = nullptr;
  const char* encoding = "float32";
  double tolerance = 0;
  int pieces = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s#O|IOKppIIOsdp", const_cast<char**>(kKeywords),
                                   &dataset, &dataset_len, &ids_obj, &queue_depth, &headers_obj,
                                   &max_chunk_bytes, &raw_trace_headers, &has_window,
                                   &window_start, &window_stop, &where_obj, &encoding,
                                   &tolerance, &pieces)) {
    return nullptr;
  }
  if (self->client == nullptr || self->closed) {
    return RaiseStatus(absl::FailedPreconditionError("the client is closed"));
  }
  std::vector<int64_t> ids;
  PyObject* fast = PySequence_Fast(ids_obj, "shot_ids must be a sequence of int");
  if (fast == nullptr) return nullptr;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  ids.reserve(n);
  for (Py_ssize_t i = 0; i < n; ++i) {
    const long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, i));
    if (v == -1 && PyErr_Occurred()) {
      Py_DECREF(fast);
      return nullptr;
    }
    ids.push_back(v);
  }
  Py_DECREF(fast);
  StreamOptions options;
  options.queue_depth = queue_depth;
  options.max_chunk_bytes = max_chunk_bytes;
  options.raw_trace_headers = raw_trace_headers != 0;
  if (has_window) options.window = std::make_pair(window_start, window_stop);
  options.encoding = encoding;
  options.tolerance = tolerance;
  options.pieces = pieces != 0;
  if (where_obj != nullptr && where_obj != Py_None) {  // [(header, low, high), ...]
    PyObject* list = PySequence_Fast(where_obj, "where must be a sequence of (str, lo, hi)");
    if (list == nullptr) return nullptr;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(list); ++i) {
      const char* h = nullptr;
      StreamOptions::TraceCondition c;
      if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(list, i), "sdd", &h, &c.low, &c.high)) {
        Py_DECREF(list);
        return nullptr;
      }
      c.header = h;
      options.where.push_back(std::move(c));
    }
    Py_DECREF(list);
  }
  if (headers_obj != nullptr &&
      !StringList(headers_obj, "headers must be a sequence of str", &options.headers)) {
    return nullptr;
  }
  NativeStreamObject* stream = PyObject_New(NativeStreamObject, &g_stream_type);
  if (stream == nullptr) return nullptr;
  stream->mu = new absl::Mutex;
  stream->client = reinterpret_cast<PyObject*>(self);
  Py_INCREF(self);
  ++self->live_streams;
  const std::string name(dataset, dataset_len);
  std::unique_ptr<ShotReader> reader;
  Py_BEGIN_ALLOW_THREADS
  reader = self->client->Stream(name, std::move(ids), options);
  Py_END_ALLOW_THREADS
  stream->reader = reader.release();
  return reinterpret_cast<PyObject*>(stream);
}

// The shot source of NativeClientWrite: calls next_shot with the GIL, keeps the shot's
// sample buffer until the next call, and records a Python exception to raise afterwards.
struct PythonShotSource {
  PyObject* next_shot;
  Py_buffer samples{};
  bool holding = false;
  PyObject* error_type = nullptr;
  PyObject* error_value = nullptr;
  PyObject* error_trace = nullptr;

  void Release() {
    if (holding) PyBuffer_Release(&samples);
    holding = false;
  }

  absl::StatusOr<bool> Next(shotstream::client::ShotToWrite* shot) {
    PyGILState_STATE gil = PyGILState_Ensure();
    Release();
    absl::StatusOr<bool> out = Take(shot);
    if (!out.ok() && PyErr_Occurred()) PyErr_Fetch(&error_type, &error_value, &error_trace);
    PyGILState_Release(gil);
    return out;
  }

 private:
  absl::StatusOr<bool> Take(shotstream::client::ShotToWrite* shot) {
    PyObject* item = PyObject_CallObject(next_shot, nullptr);
    if (item == nullptr) return absl::CancelledError("the shots' iterable raised");
    if (item == Py_None) {
      Py_DECREF(item);
      return false;
    }
    long long id = 0;
    PyObject* samples_obj = nullptr;
    unsigned int n_traces = 0, n_samples = 0;
    PyObject* headers = nullptr;
    if (!PyArg_ParseTuple(item, "LOIIO", &id, &samples_obj, &n_traces, &n_samples, &headers) ||
        PyObject_GetBuffer(samples_obj, &samples, PyBUF_C_CONTIGUOUS) != 0) {
      Py_DECREF(item);
      return absl::InvalidArgumentError("next_shot returned a malformed shot");
    }
    holding = true;
    if (static_cast<uint64_t>(samples.len) != uint64_t{n_traces} * n_samples * sizeof(float)) {
      Py_DECREF(item);
      return absl::InvalidArgumentError("a shot's samples are not n_traces x n_samples float32");
    }
    shot->shot_id = id;
    shot->n_traces = n_traces;
    shot->n_samples = n_samples;
    shot->samples = static_cast<const float*>(samples.buf);
    shot->headers.clear();
    PyObject* fast = PySequence_Fast(headers, "headers");
    const Py_ssize_t n = fast == nullptr ? 0 : PySequence_Fast_GET_SIZE(fast);
    for (Py_ssize_t i = 0; i < n; ++i) {
      const char* name = nullptr;
      Py_buffer values;
      if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fast, i), "sy*", &name, &values)) {
        Py_DECREF(fast);
        Py_DECREF(item);
        return absl::InvalidArgumentError("a shot's header is not (name, float64 bytes)");
      }
      const double* v = static_cast<const double*>(values.buf);
      shot->headers.emplace_back(name, std::vector<double>(v, v + values.len / sizeof(double)));
      PyBuffer_Release(&values);
    }
    Py_XDECREF(fast);
    Py_DECREF(item);  // the buffer keeps the samples alive
    return true;
  }
};

PyObject* NativeClientWrite(NativeClientObject* self, PyObject* args) {
  const char* dataset = nullptr;
  Py_ssize_t dataset_len = 0;
  PyObject* next_shot = nullptr;
  shotstream::client::WriteOptions options;
  unsigned long long max_chunk = 0;
  if (!PyArg_ParseTuple(args, "s#OdiK", &dataset, &dataset_len, &next_shot,
                        &options.sample_interval_us, &options.sample_format, &max_chunk)) {
    return nullptr;
  }
  if (self->client == nullptr) return RaiseStatus(absl::FailedPreconditionError("closed"));
  if (max_chunk > 0) options.max_chunk_bytes = max_chunk;
  PythonShotSource source{next_shot};
  const std::string name(dataset, dataset_len);
  absl::StatusOr<shotstream::client::DatasetSummary> info;
  Py_BEGIN_ALLOW_THREADS
  info = self->client->Write(name, options, [&source](shotstream::client::ShotToWrite* shot) {
    return source.Next(shot);
  });
  Py_END_ALLOW_THREADS
  source.Release();
  if (source.error_type != nullptr) {  // the iterable's own exception
    PyErr_Restore(source.error_type, source.error_value, source.error_trace);
    return nullptr;
  }
  if (!info.ok()) return RaiseStatus(info.status());
  PyObject* fields = PyList_New(0);
  if (fields == nullptr) return nullptr;
  for (const std::string& h : info->header_fields) {
    PyObject* s = PyUnicode_FromStringAndSize(h.data(), static_cast<Py_ssize_t>(h.size()));
    if (s == nullptr || PyList_Append(fields, s) != 0) {
      Py_XDECREF(s);
      Py_DECREF(fields);
      return nullptr;
    }
    Py_DECREF(s);
  }
  // The written ids and counts as raw int64 / uint32 bytes (numpy views them).
  return Py_BuildValue(
      "{s:s#,s:s#,s:K,s:K,s:I,s:d,s:i,s:s#,s:I,s:d,s:K,s:K,s:N,s:y#,s:y#,s:s#}", "name",
      info->name.data(),
      static_cast<Py_ssize_t>(info->name.size()), "state", info->state.data(),
      static_cast<Py_ssize_t>(info->state.size()),
      "n_traces", static_cast<unsigned long long>(info->n_traces), "n_shots",
      static_cast<unsigned long long>(info->n_shots), "n_samples", info->n_samples,
      "sample_interval_us", info->sample_interval_us, "sample_format", info->sample_format,
      "shot_key", info->shot_key.data(), static_cast<Py_ssize_t>(info->shot_key.size()),
      "n_files", info->n_files, "write_max_error", info->write_max_error, "written_shots",
      static_cast<unsigned long long>(info->written_shots), "written_bytes",
      static_cast<unsigned long long>(info->written_bytes), "header_fields", fields,
      "shot_ids", reinterpret_cast<const char*>(info->shot_ids.data()),
      static_cast<Py_ssize_t>(info->shot_ids.size() * sizeof(int64_t)), "shot_trace_counts",
      reinterpret_cast<const char*>(info->shot_trace_counts.data()),
      static_cast<Py_ssize_t>(info->shot_trace_counts.size() * sizeof(uint32_t)), "format",
      info->format.data(), static_cast<Py_ssize_t>(info->format.size()));
}

PyMethodDef g_client_methods[] = {
    {"write", reinterpret_cast<PyCFunction>(NativeClientWrite), METH_VARARGS,
     "Creates a dataset from the shots next_shot() gives; returns its summary."},
    {"stream", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(NativeClientStream)),
     METH_VARARGS | METH_KEYWORDS, "Starts streaming shots; returns a NativeStream."},
    {"close", reinterpret_cast<PyCFunction>(NativeClientClose), METH_NOARGS,
     "Closes the connections once no stream is left."},
    {nullptr, nullptr, 0, nullptr},
};

PyMethodDef g_stream_methods[] = {
    {"next", reinterpret_cast<PyCFunction>(NativeStreamNext), METH_NOARGS,
     "The next shot as a tuple, None at the end; raises NativeError."},
    {"cancel", reinterpret_cast<PyCFunction>(NativeStreamCancel), METH_NOARGS,
     "Stops the stream."},
    {nullptr, nullptr, 0, nullptr},
};

PyGetSetDef g_stream_getset[] = {
    {"reconnects", reinterpret_cast<getter>(NativeStreamReconnects), nullptr,
     "Streams resumed after a break so far.", nullptr},
    {"wire_bytes", reinterpret_cast<getter>(NativeStreamWireBytes), nullptr,
     "Sample bytes received as they travelled (encoded).", nullptr},
    {"last_encoding", reinterpret_cast<getter>(NativeStreamLastEncoding), nullptr,
     "The encoding of the last shot received.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyTypeObject g_client_type = {PyVarObject_HEAD_INIT(nullptr, 0)};

PyModuleDef g_module = {PyModuleDef_HEAD_INIT, "shotstream._native",
                        "The shotstream C++ client as a Python extension.", -1, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__native() {
  const char* tuning = std::getenv("SHOTSTREAM_TUNING");
  if (tuning == nullptr || std::strcmp(tuning, "0") != 0) {
    shotstream::TuneMallocForLargeBuffers();
    shotstream::client::TuneGrpcForLargeMessages();
  }
  g_client_type.tp_name = "shotstream._native.NativeClient";
  g_client_type.tp_basicsize = sizeof(NativeClientObject);
  g_client_type.tp_flags = Py_TPFLAGS_DEFAULT;
  g_client_type.tp_new = PyType_GenericNew;
  g_client_type.tp_init = reinterpret_cast<initproc>(NativeClientInit);
  g_client_type.tp_dealloc = reinterpret_cast<destructor>(NativeClientDealloc);
  g_client_type.tp_methods = g_client_methods;

  g_stream_type.tp_name = "shotstream._native.NativeStream";
  g_stream_type.tp_basicsize = sizeof(NativeStreamObject);
  g_stream_type.tp_flags = Py_TPFLAGS_DEFAULT;
  g_stream_type.tp_dealloc = reinterpret_cast<destructor>(NativeStreamDealloc);
  g_stream_type.tp_methods = g_stream_methods;
  g_stream_type.tp_getset = g_stream_getset;

  g_samples_type.tp_name = "shotstream._native.Samples";
  g_samples_type.tp_basicsize = sizeof(SamplesObject);
  g_samples_type.tp_flags = Py_TPFLAGS_DEFAULT;
  g_samples_type.tp_dealloc = reinterpret_cast<destructor>(SamplesDealloc);
  g_samples_type.tp_as_buffer = &g_samples_buffer_procs;

  if (PyType_Ready(&g_client_type) < 0 || PyType_Ready(&g_stream_type) < 0 ||
      PyType_Ready(&g_samples_type) < 0) {
    return nullptr;
  }
  PyObject* m = PyModule_Create(&g_module);
  if (m == nullptr) return nullptr;
  g_native_error = PyErr_NewException("shotstream._native.NativeError", nullptr, nullptr);
  Py_INCREF(&g_client_type);
  if (g_native_error == nullptr ||
      PyModule_AddObject(m, "NativeError", g_native_error) < 0 ||
      PyModule_AddObject(m, "NativeClient", reinterpret_cast<PyObject*>(&g_client_type)) < 0) {
    Py_DECREF(m);
    return nullptr;
  }
  Py_INCREF(g_native_error);
  return m;
}

#include "server/hdf5/hdf5_file.h"

#include <hdf5.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "common/status_macros.h"

namespace shotstream::hdf5 {
namespace {

static_assert(sizeof(hid_t) == sizeof(int64_t), "hid_t is stored as int64_t");

// Every call into the library holds this lock.
absl::Mutex& LibraryMutex() {
  static absl::Mutex* mu = new absl::Mutex();
  return *mu;
}

// The files open now, by device and inode (guarded by LibraryMutex). libhdf5 shares one
// open file's state (superblock, object headers, chunk cache) between every H5Fopen of the
// same device and inode, so a file rewritten in place would be read through the old state
// while an older handle of it is open; Open retires such handles first.
std::multimap<std::pair<uint64_t, uint64_t>, Hdf5File*>& OpenFiles() {
  static auto* open = new std::multimap<std::pair<uint64_t, uint64_t>, Hdf5File*>();
  return *open;
}

// The library's error stack, innermost message last, as one line; the stack is cleared.
// Called with LibraryMutex held, right after the failing call.
std::string TakeLibraryError() {
  std::vector<std::string> lines;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_DOWNWARD,
      [](unsigned, const H5E_error2_t* e, void* out) -> herr_t {
        if (e->desc != nullptr && e->desc[0] != '\0') {
          static_cast<std::vector<std::string>*>(out)->push_back(e->desc);
        }
        return 0;
      },
      &lines);
  H5Eclear2(H5E_DEFAULT);
  return lines.empty() ? "no message from the HDF5 library" : absl::StrJoin(lines, ": ");
}

// Silences the library's printing of its error stack (the messages go into statuses).
void SilenceLibrary() {
  static const bool once = [] {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)once;
}

// Closes an HDF5 identifier at scope exit.
class Handle {
 public:
  explicit Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Handle() {
    if (id_ >= 0) close_(id_);
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

// The parent group of an object path ("/a/b" -> "/a", "/data" -> "/").
std::string Parent(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0) return "/";
  return path.substr(0, slash);
}

std::string Child(const std::string& group, const std::string& name) {
  return group == "/" ? "/" + name : group + "/" + name;
}

// Whether every component of `path` exists (H5Lexists needs the parents to).
bool Exists(hid_t file, const std::string& path) {
  size_t at = 1;
  while (at <= path.size()) {
    size_t next = path.find('/', at);
    if (next == std::string::npos) next = path.size();
    const std::string part = path.substr(0, next);
    if (H5Lexists(file, part.c_str(), H5P_DEFAULT) <= 0) {
      H5Eclear2(H5E_DEFAULT);
      return false;
    }
    at = next + 1;
  }
  return true;
}

struct TypeInfo {
  segy::SampleFormat format;
  segy::ByteOrder order;
  std::string name;
};

absl::StatusOr<TypeInfo> DescribeType(hid_t type, const std::string& where) {
  const H5T_class_t cls = H5Tget_class(type);
  const size_t size = H5Tget_size(type);
  const H5T_order_t order = H5Tget_order(type);
  TypeInfo t;
  t.order = order == H5T_ORDER_BE ? segy::ByteOrder::kBigEndian : segy::ByteOrder::kLittleEndian;
  const char* order_name = size == 1 ? "" : order == H5T_ORDER_BE ? " big-endian" : " little-endian";
  using F = segy::SampleFormat;
  if (cls == H5T_FLOAT && (size == 4 || size == 8)) {
    t.format = size == 4 ? F::kIeeeFloat32 : F::kIeeeFloat64;
    t.name = absl::StrCat("float", size * 8, order_name);
    return t;
  }
  if (cls == H5T_INTEGER && (size == 1 || size == 2 || size == 4 || size == 8)) {
    const bool is_signed = H5Tget_sign(type) == H5T_SGN_2;
    static constexpr F kSigned[] = {F::kInt8, F::kInt16, F::kInt32, F::kInt64};
    static constexpr F kUnsigned[] = {F::kUInt8, F::kUInt16, F::kUInt32, F::kUInt64};
    const int i = size == 1 ? 0 : size == 2 ? 1 : size == 4 ? 2 : 3;
    t.format = is_signed ? kSigned[i] : kUnsigned[i];
    t.name = absl::StrCat(is_signed ? "int" : "uint", size * 8, order_name);
    return t;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      where, ": its type (class ", static_cast<int>(cls), ", ", size, " bytes) is not an "
      "integer or IEEE float of 1 to 8 bytes"));
}

// Reads a numeric attribute of `object` as float64, if it has one by that name.
bool ReadDoubleAttribute(hid_t object, const char* name, double* value) {
  if (H5Aexists(object, name) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return false;
  }
  Handle attr(H5Aopen(object, name, H5P_DEFAULT), H5Aclose);
  if (!attr.ok()) return false;
  Handle space(H5Aget_space(attr.get()), H5Sclose);
  if (H5Sget_simple_extent_npoints(space.get()) != 1) return false;
  Handle type(H5Aget_type(attr.get()), H5Tclose);
  const H5T_class_t cls = H5Tget_class(type.get());
  if (cls != H5T_INTEGER && cls != H5T_FLOAT) return false;
  return H5Aread(attr.get(), H5T_NATIVE_DOUBLE, value) >= 0;
}

// The dims of a dataset's dataspace.
std::vector<uint64_t> Dims(hid_t dataset) {
  Handle space(H5Dget_space(dataset), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  std::vector<hsize_t> dims(rank > 0 ? rank : 0);
  if (rank > 0) H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  return std::vector<uint64_t>(dims.begin(), dims.end());
}

// A whole 1D or 2D dataset of `expected` values (one per trace, or per shot for shot_ids)
// read as `mem_type` into `out`.
template <typename T>
absl::Status ReadColumn(hid_t file, const std::string& path, const std::string& object,
                        hid_t mem_type, uint64_t expected, std::vector<T>* out) {
  Handle d(H5Dopen2(file, object.c_str(), H5P_DEFAULT), H5Dclose);
  if (!d.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", object, ": cannot open: ", TakeLibraryError()));
  }
  Handle type(H5Dget_type(d.get()), H5Tclose);
  const H5T_class_t cls = H5Tget_class(type.get());
  if (cls != H5T_INTEGER && cls != H5T_FLOAT) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", object, ": not a numeric dataset"));
  }
  uint64_t n = 1;
  const std::vector<uint64_t> dims = Dims(d.get());
  for (uint64_t x : dims) n *= x;
  if (dims.empty() || dims.size() > 2 || n != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": ", object, " has shape (", absl::StrJoin(dims, ", "), "): expected ",
        expected, " values"));
  }
  out->resize(n);
  if (n > 0 && H5Dread(d.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out->data()) < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": ", object, ": read failed: ", TakeLibraryError()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Hdf5File>> Hdf5File::Open(const std::string& path,
                                                         const OpenOptions& options) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    std::string msg = absl::StrCat(path, ": cannot open: ", std::strerror(err));
    return err == ENOENT ? absl::NotFoundError(msg) : absl::PermissionDeniedError(msg);
  }
  if (!S_ISREG(st.st_mode)) return absl::InvalidArgumentError(path + ": not a regular file");
  std::unique_ptr<Hdf5File> f(new Hdf5File(path, FileIdentity::Of(st)));
  absl::MutexLock lock(&LibraryMutex());
  SilenceLibrary();
  const auto key = std::make_pair(f->identity_.device, f->identity_.inode);
  for (auto [it, end] = OpenFiles().equal_range(key); it != end; ++it) {
    const FileIdentity& old = it->second->identity_;
    if (old.size != f->identity_.size || old.mtime_ns != f->identity_.mtime_ns) {
      it->second->RetireLocked();  // changed since it was opened: never read through it again
    }
  }
  OpenFiles().emplace(key, f.get());
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": byte 0: not an HDF5 file (no HDF5 signature)"));
  }
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  // No flock: files on NFS and files another process holds open still read.
  H5Pset_file_locking(fapl.get(), false, true);
  f->file_ = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get());
  if (f->file_ < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": cannot open as HDF5: ", TakeLibraryError()));
  }
  Hdf5Layout& l = f->layout_;
  l.h5_path = options.h5_path.empty() || options.h5_path[0] != '/' ? "/" + options.h5_path
                                                                    : options.h5_path;
  if (!Exists(f->file_, l.h5_path)) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": no dataset ", l.h5_path, " (expected [shots, traces, samples] or [traces, "
        "samples]; h5_path: names another)"));
  }
  Handle dapl(H5Pcreate(H5P_DATASET_ACCESS), H5Pclose);
  // w0 1: chunks wholly read are evicted first.
  H5Pset_chunk_cache(dapl.get(), 12421, options.chunk_cache_bytes, 1.0);
  f->dataset_ = H5Dopen2(f->file_, l.h5_path.c_str(), dapl.get());
  if (f->dataset_ < 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", l.h5_path,
                                                   ": not a dataset: ", TakeLibraryError()));
  }
  const std::string where = absl::StrCat(path, ": ", l.h5_path);
  l.shape = Dims(f->dataset_);
  if (l.shape.size() != 2 && l.shape.size() != 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, " has ", l.shape.size(), " dimensions (shape (", absl::StrJoin(l.shape, ", "),
        ")); expected [shots, traces, samples] or [traces, samples]"));
  }
  if (l.shape.back() == 0 || l.shape.back() > UINT32_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": ", l.shape.back(), " samples per trace"));
  }
  l.n_samples = static_cast<uint32_t>(l.shape.back());
  l.n_traces = l.shape.size() == 3 ? l.shape[0] * l.shape[1] : l.shape[0];
  {
    Handle type(H5Dget_type(f->dataset_), H5Tclose);
    SS_ASSIGN_OR_RETURN(TypeInfo t, DescribeType(type.get(), where));
    l.format = t.format;
    l.byte_order = t.order;
    l.type_name = t.name;
  }
  {
    Handle dcpl(H5Dget_create_plist(f->dataset_), H5Pclose);
    if (H5Pget_layout(dcpl.get()) == H5D_CHUNKED) {
      std::vector<hsize_t> chunk(l.shape.size());
      H5Pget_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data());
      l.chunk.assign(chunk.begin(), chunk.end());
    }
    const int n_filters = H5Pget_nfilters(dcpl.get());
    for (int i = 0; i < n_filters; ++i) {
      unsigned flags = 0, config = 0;
      size_t n_values = 0;
      char name[256] = {0};
      const H5Z_filter_t id =
          H5Pget_filter2(dcpl.get(), i, &flags, &n_values, nullptr, sizeof(name), name, &config);
      const std::string label = name[0] != '\0' ? name : absl::StrCat("filter ", id);
      if (H5Zfilter_avail(id) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return absl::FailedPreconditionError(absl::StrCat(
            where, " is compressed with '", label, "' (HDF5 filter id ", id, "), which this "
            "HDF5 library cannot decode (no such filter or plugin; HDF5_PLUGIN_PATH names "
            "where plugins are)"));
      }
      l.filters.push_back(label);
    }
  }
  double value = 0;
  if (ReadDoubleAttribute(f->dataset_, "sample_interval_us", &value) && value > 0) {
    l.sample_interval_us = value;
  } else if (ReadDoubleAttribute(f->dataset_, "dt", &value) && value > 0) {
    l.sample_interval_us = value * 1e6;  // seconds
  } else {
    l.sample_interval_us = options.sample_interval_us;
    if (l.sample_interval_us <= 0) {
      l.notes.push_back(absl::StrCat(
          l.h5_path, " has no sample_interval_us (or dt, seconds) attribute: give it with "
          "--sample_interval_us (or sample_interval_us: in the config); 0 is served"));
    }
  }
  const std::string group = Parent(l.h5_path);
  if (l.shape.size() == 3) {
    const std::string ids = Child(group, "shot_ids");
    if (Exists(f->file_, ids)) {
      SS_RETURN_IF_ERROR(
          ReadColumn(f->file_, path, ids, H5T_NATIVE_INT64, l.shape[0], &l.shot_ids));
    }
  }
  const std::string headers = Child(group, "headers");
  if (Exists(f->file_, headers)) {
    Handle g(H5Gopen2(f->file_, headers.c_str(), H5P_DEFAULT), H5Gclose);
    if (!g.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": ", headers, ": not a group: ", TakeLibraryError()));
    }
    std::vector<std::string> names;
    hsize_t idx = 0;
    H5Literate(g.get(), H5_INDEX_NAME, H5_ITER_INC, &idx,
               [](hid_t, const char* name, const H5L_info_t*, void* out) -> herr_t {
                 static_cast<std::vector<std::string>*>(out)->push_back(name);
                 return 0;
               },
               &names);
    for (const std::string& name : names) {
      std::vector<double> column;
      SS_RETURN_IF_ERROR(ReadColumn(f->file_, path, Child(headers, name), H5T_NATIVE_DOUBLE,
                                    l.n_traces, &column));
      f->columns_.emplace_back(name, std::move(column));
    }
  }
  return f;
}

void Hdf5File::RetireLocked() {
  if (dataset_ >= 0) H5Dclose(dataset_);
  if (file_ >= 0) H5Fclose(file_);
  dataset_ = file_ = -1;
  retired_ = true;
}

Hdf5File::~Hdf5File() {
  absl::MutexLock lock(&LibraryMutex());
  if (!retired_) RetireLocked();
  for (auto [it, end] = OpenFiles().equal_range({identity_.device, identity_.inode}); it != end;
       ++it) {
    if (it->second == this) {
      OpenFiles().erase(it);
      break;
    }
  }
}

absl::Status Hdf5File::ReadTraces(uint64_t first, uint64_t n, uint32_t start, uint32_t count,
                                  float* dst) const {
  if (n == 0) return absl::OkStatus();
  const Hdf5Layout& l = layout_;
  if (first + n > l.n_traces || uint64_t{start} + count > l.n_samples) {
    return absl::InternalError(absl::StrCat(path_, ": traces [", first, ", ", first + n,
                                            ") x samples [", start, ", ", start + count,
                                            ") outside ", l.h5_path));
  }
  absl::MutexLock lock(&LibraryMutex());
  if (retired_) {
    return absl::DataLossError(absl::StrCat(
        path_, ": changed since it was opened (a newer open of the file found it rewritten)"));
  }
  Handle file_space(H5Dget_space(dataset_), H5Sclose);
  if (l.shape.size() == 2) {
    const hsize_t offset[2] = {first, start};
    const hsize_t size[2] = {n, count};
    H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, offset, nullptr, size, nullptr);
  } else {
    // Rank 3: the run may cross shots; one hyperslab per shot it touches.
    const uint64_t per_shot = l.shape[1];
    uint64_t t = first;
    bool set = false;
    while (t < first + n) {
      const uint64_t shot = t / per_shot, trace = t % per_shot;
      const uint64_t take = std::min(per_shot - trace, first + n - t);
      const hsize_t offset[3] = {shot, trace, start};
      const hsize_t size[3] = {1, take, count};
      H5Sselect_hyperslab(file_space.get(), set ? H5S_SELECT_OR : H5S_SELECT_SET, offset,
                          nullptr, size, nullptr);
      set = true;
      t += take;
    }
  }
  const hsize_t mem_dims[2] = {n, count};
  Handle mem_space(H5Screate_simple(2, mem_dims, nullptr), H5Sclose);
  if (H5Dread(dataset_, H5T_NATIVE_FLOAT, mem_space.get(), file_space.get(), H5P_DEFAULT,
              dst) < 0) {
    // A chunk that fails its checksum or does not inflate: the file is damaged there.
    return absl::DataLossError(absl::StrCat(path_, ": ", l.h5_path, ": reading traces [",
                                            first, ", ", first + n, "): ",
                                            TakeLibraryError()));
  }
  return absl::OkStatus();
}

}  // namespace shotstream::hdf5

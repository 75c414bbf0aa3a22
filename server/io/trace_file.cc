#include "server/io/trace_file.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/common/mapping_guard.h"

namespace shotstream::io {
namespace {

// An open's error naming the file, its code the Env's (NOT_FOUND, FAILED_PRECONDITION for
// no permission, UNAVAILABLE when transient); out of descriptors also says what to change.
absl::Status OpenError(const std::string& path, const absl::Status& s) {
  std::string msg = absl::StrCat(path, ": cannot open: ", env::WithoutPath(s, path));
  if (absl::StrContains(s.message(), "no file descriptor left")) {
    absl::StrAppend(&msg, " (the server keeps at most ", OpenFileCache::Default().capacity(),
                    " data files open: lower open_files or raise the limit, ulimit -n)");
  }
  return absl::Status(s.code(), msg);
}

// Opens `path` through `env`, mapped whole or for positioned reads.
absl::StatusOr<std::unique_ptr<env::RandomAccessFile>> OpenIn(env::Env* env,
                                                             const std::string& path,
                                                             bool map) {
  return map ? env->OpenMapped(path, /*populate=*/false) : env->OpenRead(path);
}

}  // namespace

absl::StatusOr<std::unique_ptr<TraceFile>> TraceFile::Open(const std::string& path, IoMode io,
                                                           size_t head_bytes,
                                                           const LayoutParser& parse,
                                                           OpenFileCache* cache,
                                                           env::Env* env) {
  if (env == nullptr) env = env::Env::Default();
  absl::StatusOr<env::FileStat> named = env->Stat(path);
  if (!named.ok()) return OpenError(path, named.status());
  if (!named->regular) return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  bool map = io == IoMode::kMmap;
  if (io == IoMode::kAuto) {
    const absl::StatusOr<int64_t> fs = env->FilesystemType(path);
    map = fs.ok() && IsLocalFilesystem(*fs);
  }
  absl::StatusOr<std::unique_ptr<env::RandomAccessFile>> opened = OpenIn(env, path, map);
  if (!opened.ok()) return OpenError(path, opened.status());
  SS_ASSIGN_OR_RETURN(const env::FileStat st, (*opened)->Stat());
  std::unique_ptr<TraceFile> file(new TraceFile(
      path, FileIdentity::Of(st), cache != nullptr ? cache : &OpenFileCache::Default(), env));
  std::shared_ptr<Handle> handle(new Handle(file.get(), *std::move(opened)));
  std::vector<uint8_t> head(std::min<uint64_t>(file->size(), head_bytes));
  SS_RETURN_IF_ERROR(handle->ReadAt(0, head.size(), head.data()));
  const ReadFn read_at = [h = handle.get()](uint64_t off, uint64_t len, uint8_t* dst) {
    return h->ReadAt(off, len, dst);
  };
  SS_ASSIGN_OR_RETURN(file->layout_, parse(path, head.data(), head.size(), file->size(), read_at));
  file->mapped_ = !handle->open_->mapping().empty();
  file->crcs_ = std::make_unique<const TraceCrcs>(file->layout_.n_traces);
  {
    absl::MutexLock lock(&file->mu_);
    file->open_ = std::move(handle);
  }
  file->cache_->Opened(file.get());
  return file;
}

TraceFile::~TraceFile() { cache_->Forget(this); }

TraceFile::Handle::~Handle() = default;

absl::StatusOr<std::shared_ptr<TraceFile::Handle>> TraceFile::Reopen() const {
  absl::StatusOr<std::unique_ptr<env::RandomAccessFile>> opened = OpenIn(env_, path_, mapped_);
  if (!opened.ok()) {
    if (absl::IsNotFound(opened.status())) {
      return absl::DataLossError(absl::StrCat(path_, ": gone since its catalog was built (",
                                              env::WithoutPath(opened.status(), path_), ")"));
    }
    return OpenError(path_, opened.status());
  }
  SS_ASSIGN_OR_RETURN(const env::FileStat st, (*opened)->Stat());
  // Closed by the cache and opened again: still the file the catalog describes?
  SS_RETURN_IF_ERROR(identity_.Matches(FileIdentity::Of(st), path_));
  return std::shared_ptr<Handle>(new Handle(this, *std::move(opened)));
}

absl::StatusOr<std::shared_ptr<const TraceFile::Handle>> TraceFile::Acquire() const {
  std::shared_ptr<const Handle> held;
  {
    absl::MutexLock lock(&mu_);
    held = open_;
  }
  if (held != nullptr) {
    cache_->Used(const_cast<TraceFile*>(this));
    return held;
  }
  SS_ASSIGN_OR_RETURN(std::shared_ptr<Handle> opened, Reopen());
  bool first = false;
  {
    absl::MutexLock lock(&mu_);
    if (open_ == nullptr) {  // else another reader reopened it meanwhile: use theirs
      open_ = opened;
      first = true;
    }
    held = open_;
  }
  if (first) {
    cache_->Opened(const_cast<TraceFile*>(this));
  } else {
    cache_->Used(const_cast<TraceFile*>(this));
  }
  return held;
}

void TraceFile::Close() {
  std::shared_ptr<const Handle> closing;
  absl::MutexLock lock(&mu_);
  closing.swap(open_);  // closed here unless a read still holds it (then when it ends)
}

bool TraceFile::is_open() const {
  absl::MutexLock lock(&mu_);
  return open_ != nullptr;
}

absl::Status TraceFile::ReadAt(uint64_t offset, uint64_t length, uint8_t* dst) const {
  SS_ASSIGN_OR_RETURN(std::shared_ptr<const Handle> h, Acquire());
  return h->ReadAt(offset, length, dst);
}

absl::Status TraceFile::ReadMapped(uint64_t offset, uint64_t length,
                                   absl::FunctionRef<void(const uint8_t*)> use) const {
  SS_ASSIGN_OR_RETURN(std::shared_ptr<const Handle> h, Acquire());
  return h->ReadMapped(offset, length, use);
}

absl::Status TraceFile::Handle::ReadMapped(uint64_t offset, uint64_t length,
                                           absl::FunctionRef<void(const uint8_t*)> use) const {
  const std::string& path = file_->path();
  const absl::Span<const uint8_t> map = open_->mapping();
  if (map.empty()) return absl::InternalError(absl::StrCat(path, ": not mapped"));
  file_->read_calls_.fetch_add(1, std::memory_order_relaxed);
  const absl::StatusOr<env::FileStat> st = open_->Stat();
  const uint64_t now = st.ok() ? st->size : 0;
  if (offset + length > std::min<uint64_t>(now, map.size())) {
    return absl::DataLossError(absl::StrCat(
        path, ": file is now ", now, " bytes but ", length, " bytes were expected at byte "
        "offset ", offset, " (file truncated or replaced while serving)"));
  }
  const uint8_t* bytes = map.data() + offset;
  if (!RunGuardingMapping(bytes, length, [&] { use(bytes); })) {
    return absl::DataLossError(absl::StrCat(
        path, ": ", length, " bytes at byte offset ", offset,
        " vanished while being read (file truncated or replaced while serving)"));
  }
  return absl::OkStatus();
}

absl::Status TraceFile::Handle::ReadAt(uint64_t offset, uint64_t length, uint8_t* dst) const {
  if (!open_->mapping().empty()) {
    return ReadMapped(offset, length,
                      [&](const uint8_t* bytes) { std::memcpy(dst, bytes, length); });
  }
  const std::string& path = file_->path();
  file_->read_calls_.fetch_add(1, std::memory_order_relaxed);
  const absl::StatusOr<size_t> n = open_->Read(offset, length, reinterpret_cast<char*>(dst));
  if (!n.ok()) {
    return absl::Status(n.status().code(),
                        absl::StrCat(path, ": read of ", length, " bytes at byte offset ",
                                     offset, " failed: ", env::WithoutPath(n.status(), path)));
  }
  if (*n < length) {
    return absl::DataLossError(absl::StrCat(
        path, ": file ends at byte ", offset + *n, " but ", length,
        " bytes were expected at byte offset ", offset,
        " (file truncated or replaced while serving)"));
  }
  return absl::OkStatus();
}

}  // namespace shotstream::io

#include "server/common/file_identity.h"

#include "absl/strings/str_cat.h"

namespace shotstream {

FileIdentity FileIdentity::Of(const struct stat& st) {
  FileIdentity id;
  id.device = static_cast<uint64_t>(st.st_dev);
  id.inode = static_cast<uint64_t>(st.st_ino);
  id.size = static_cast<uint64_t>(st.st_size);
  id.mtime_ns = int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
  id.ctime_ns = int64_t{st.st_ctim.tv_sec} * 1'000'000'000 + st.st_ctim.tv_nsec;
  return id;
}

FileIdentity FileIdentity::Of(const env::FileStat& st) {
  FileIdentity id;
  id.device = st.device;
  id.inode = st.inode;
  id.size = st.size;
  id.mtime_ns = absl::ToUnixNanos(st.modified);
  id.ctime_ns = absl::ToUnixNanos(st.changed);
  return id;
}

absl::Status FileIdentity::CheckUnchanged(const std::string& path, env::Env* env) const {
  absl::StatusOr<env::FileStat> st = (env != nullptr ? env : env::Env::Default())->Stat(path);
  if (!st.ok()) {
    return absl::DataLossError(absl::StrCat(path, ": gone since its catalog was built (",
                                            env::WithoutPath(st.status(), path), ")"));
  }
  return Matches(Of(*st), path);
}

absl::Status FileIdentity::Matches(const FileIdentity& now, const std::string& path) const {
  std::string what;
  if (now.device != device || now.inode != inode) {
    what = "replaced by another file";
  } else if (now.size != size) {
    what = absl::StrCat("now ", now.size, " bytes, was ", size);
  } else if (now.mtime_ns != mtime_ns) {
    what = "rewritten in place (its modification time moved)";
  } else {
    return absl::OkStatus();
  }
  return absl::DataLossError(absl::StrCat(path, ": changed since its catalog was built: ", what));
}

}  // namespace shotstream

#include "server/dataset/dataset_healer.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "server/common/file_identity.h"
#include "server/dataset/dataset.h"

namespace shotstream::dataset {
namespace {

constexpr size_t kMaxDirectoryEntries = 4096;  // a store's top level, not its chunks

void AppendIdentity(const std::string& path, const struct stat& st, std::string* out) {
  const FileIdentity id = FileIdentity::Of(st);
  absl::StrAppend(out, path, " ", id.inode, " ", id.size, " ", id.mtime_ns, " ", id.ctime_ns, ";");
}

void AppendStat(const std::string& path, std::string* out) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    absl::StrAppend(out, path, " gone;");
    return;
  }
  AppendIdentity(path, st, out);
  if (!S_ISDIR(st.st_mode)) return;
  std::vector<std::string> names;
  if (DIR* dir = ::opendir(path.c_str())) {
    while (const dirent* e = ::readdir(dir)) {
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      names.push_back(name);
      if (names.size() == kMaxDirectoryEntries) break;
    }
    ::closedir(dir);
  }
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    const std::string child = path + "/" + name;
    if (::stat(child.c_str(), &st) == 0) AppendIdentity(child, st, out);
  }
}

// Unwell: FAILED, or served with files left out.
bool Unwell(const DatasetEntry& e) {
  if (e.state() == DatasetEntry::State::kFailed) return true;
  const std::shared_ptr<const Dataset> d = e.dataset();
  return d != nullptr && !d->bad_files().empty();
}

}  // namespace

std::string FilesFingerprint(const std::vector<std::string>& globs) {
  std::string out;
  for (const std::string& glob : globs) {
    auto paths = ExpandGlob(glob, /*may_match_nothing=*/true);
    if (!paths.ok()) continue;
    for (const std::string& path : *paths) AppendStat(path, &out);
  }
  return out;
}

DatasetHealer::DatasetHealer(DatasetRegistry* registry, absl::Duration interval)
    : registry_(registry) {
  Check(/*force=*/false);  // the files of those unwell now, as they failed
  if (interval <= absl::ZeroDuration()) return;
  thread_ = std::thread([this, interval] {
    while (!stop_.WaitForNotificationWithTimeout(interval)) Check(/*force=*/false);
  });
}

DatasetHealer::~DatasetHealer() {
  stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

std::vector<std::string> DatasetHealer::Check(bool force) {
  absl::MutexLock lock(&mu_);
  std::map<const DatasetEntry*, std::string> still;
  std::vector<std::pair<DatasetEntry*, DatasetSpec>> reload;
  for (DatasetEntry* e : registry_->AllToChange()) {
    if (!Unwell(*e)) continue;
    const DatasetSpec spec = e->spec();
    std::string now = FilesFingerprint(spec.globs);
    auto it = seen_.find(e);
    const bool changed = it != seen_.end() && it->second != now;
    still[e] = std::move(now);
    if (changed || force) reload.emplace_back(e, spec);
  }
  seen_ = std::move(still);  // entries that got well, or were removed, are forgotten
  std::vector<std::string> names;
  for (auto& [entry, spec] : reload) {
    entry->Reload(std::move(spec), force ? "SIGHUP" : "its files changed");
    names.push_back(entry->name);
  }
  return names;
}

}  // namespace shotstream::dataset

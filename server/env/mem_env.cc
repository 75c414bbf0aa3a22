#include "server/env/mem_env.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace shotstream::env {
namespace {

// The tmpfs magic number: a MemEnv's files are as local as memory.
constexpr int64_t kTmpfsMagic = 0x01021994;

FileStat StatOf(MemEnv::Node& node) {
  absl::MutexLock lock(&node.mu);
  FileStat st;
  st.size = node.bytes.size();
  st.modified = node.modified;
  st.changed = node.modified;
  st.inode = node.inode;
  return st;
}

class MemReadFile final : public RandomAccessFile {
 public:
  explicit MemReadFile(std::shared_ptr<MemEnv::Node> node) : node_(std::move(node)) {}
  // Maps the file: a copy of its bytes now, as a mapping keeps the pages it was given
  // (what the file loses later shows in Stat(), not in the mapping).
  void Map() {
    {
      absl::MutexLock lock(&node_->mu);
      mapped_ = node_->bytes;
    }
    mapping_ = absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(mapped_.data()),
                                   mapped_.size());
  }
  absl::StatusOr<FileStat> Stat() const override { return StatOf(*node_); }
  absl::StatusOr<size_t> Read(uint64_t offset, size_t n, char* dst) const override {
    MemEnv::Node* const node = node_.get();
    absl::MutexLock lock(&node->mu);
    const size_t size = node->bytes.size();
    if (offset >= size) return size_t{0};
    const size_t got = std::min<uint64_t>(n, size - offset);
    std::memcpy(dst, node->bytes.data() + offset, got);
    return got;
  }

 private:
  const std::shared_ptr<MemEnv::Node> node_;
  std::string mapped_;
};

class MemWriteFile final : public WritableFile {
 public:
  MemWriteFile(std::shared_ptr<MemEnv::Node> node, MemEnv* env)
      : node_(std::move(node)), env_(env) {}
  absl::Status Append(absl::string_view data) override {
    if (closed_) return absl::FailedPreconditionError("append to a closed file");
    const absl::Time now = env_->Now();
    absl::MutexLock lock(&node_->mu);
    node_->bytes.append(data.data(), data.size());
    node_->modified = now;
    return absl::OkStatus();
  }
  absl::Status WriteAt(uint64_t offset, absl::string_view data) override {
    if (closed_) return absl::FailedPreconditionError("write to a closed file");
    const absl::Time now = env_->Now();
    absl::MutexLock lock(&node_->mu);
    if (node_->bytes.size() < offset + data.size()) node_->bytes.resize(offset + data.size());
    node_->bytes.replace(offset, data.size(), data.data(), data.size());
    node_->modified = now;
    return absl::OkStatus();
  }
  absl::Status Sync() override { return absl::OkStatus(); }
  absl::Status Close() override {
    closed_ = true;
    return absl::OkStatus();
  }

 private:
  const std::shared_ptr<MemEnv::Node> node_;
  MemEnv* const env_;
  bool closed_ = false;
};

}  // namespace

absl::StatusOr<std::shared_ptr<MemEnv::Node>> MemEnv::Find(const std::string& path) {
  absl::MutexLock lock(&mu_);
  auto it = files_.find(path);
  if (it == files_.end()) return absl::NotFoundError(absl::StrCat(path, ": no such file"));
  return it->second;
}

absl::StatusOr<std::unique_ptr<RandomAccessFile>> MemEnv::OpenRead(const std::string& path) {
  absl::StatusOr<std::shared_ptr<Node>> node = Find(path);
  if (!node.ok()) return node.status();
  return std::unique_ptr<RandomAccessFile>(new MemReadFile(*std::move(node)));
}

absl::StatusOr<std::unique_ptr<RandomAccessFile>> MemEnv::OpenMapped(const std::string& path,
                                                                     bool /*populate*/) {
  absl::StatusOr<std::shared_ptr<Node>> node = Find(path);
  if (!node.ok()) return node.status();
  auto file = std::make_unique<MemReadFile>(*std::move(node));
  file->Map();
  return std::unique_ptr<RandomAccessFile>(std::move(file));
}

absl::StatusOr<std::unique_ptr<WritableFile>> MemEnv::OpenWrite(const std::string& path,
                                                                WriteMode mode) {
  std::shared_ptr<Node> node;
  {
    absl::MutexLock lock(&mu_);
    auto it = files_.find(path);
    if (it != files_.end() && mode == WriteMode::kCreateNew) {
      return absl::AlreadyExistsError(absl::StrCat(path, ": exists"));
    }
    if (it == files_.end()) {
      node = std::make_shared<Node>();
      node->inode = next_inode_++;
      files_[path] = node;
    } else {
      node = it->second;
    }
  }
  if (mode == WriteMode::kTruncate) {
    const absl::Time now = Now();
    absl::MutexLock lock(&node->mu);
    node->bytes.clear();
    node->modified = now;
  }
  return std::unique_ptr<WritableFile>(new MemWriteFile(std::move(node), this));
}

absl::StatusOr<FileStat> MemEnv::Stat(const std::string& path) {
  absl::StatusOr<std::shared_ptr<Node>> node = Find(path);
  if (node.ok()) return StatOf(**node);
  if (IsDir(path)) {
    FileStat dir;
    dir.regular = false;
    dir.directory = true;
    return dir;
  }
  return node.status();
}

bool MemEnv::IsDir(const std::string& path) {
  std::string dir = path;
  while (dir.size() > 1 && absl::EndsWith(dir, "/")) dir.pop_back();
  absl::MutexLock lock(&mu_);
  if (dirs_.count(dir) > 0) return true;
  auto it = files_.lower_bound(dir + "/");
  return it != files_.end() && absl::StartsWith(it->first, dir + "/");
}

absl::StatusOr<int64_t> MemEnv::FilesystemType(const std::string& path) {
  absl::StatusOr<std::shared_ptr<Node>> node = Find(path);
  if (!node.ok()) return node.status();
  return kTmpfsMagic;
}

absl::StatusOr<std::vector<std::string>> MemEnv::List(const std::string& dir) {
  const std::string prefix = absl::EndsWith(dir, "/") ? dir : dir + "/";
  if (!IsDir(dir)) return absl::NotFoundError(absl::StrCat(dir, ": no such directory"));
  std::set<std::string> names;
  absl::MutexLock lock(&mu_);
  for (auto it = files_.lower_bound(prefix); it != files_.end(); ++it) {
    if (!absl::StartsWith(it->first, prefix)) break;
    const std::string rest = it->first.substr(prefix.size());
    names.insert(rest.substr(0, rest.find('/')));  // a file, or the subdirectory it is in
  }
  for (auto it = dirs_.lower_bound(prefix); it != dirs_.end(); ++it) {
    if (!absl::StartsWith(*it, prefix)) break;
    const std::string rest = it->substr(prefix.size());
    names.insert(rest.substr(0, rest.find('/')));
  }
  return std::vector<std::string>(names.begin(), names.end());
}

absl::Status MemEnv::Rename(const std::string& from, const std::string& to) {
  absl::MutexLock lock(&mu_);
  auto it = files_.find(from);
  if (it == files_.end()) return absl::NotFoundError(absl::StrCat(from, ": no such file"));
  std::shared_ptr<Node> node = std::move(it->second);
  files_.erase(it);
  files_[to] = std::move(node);
  return absl::OkStatus();
}

absl::Status MemEnv::RenameNoReplace(const std::string& from, const std::string& to) {
  absl::MutexLock lock(&mu_);
  auto it = files_.find(from);
  if (it == files_.end()) return absl::NotFoundError(absl::StrCat(from, ": no such file"));
  if (files_.count(to) > 0) return absl::AlreadyExistsError(absl::StrCat(to, " exists"));
  std::shared_ptr<Node> node = std::move(it->second);
  files_.erase(it);
  files_[to] = std::move(node);
  return absl::OkStatus();
}

absl::Status MemEnv::CreateDir(const std::string& dir) {
  absl::MutexLock lock(&mu_);
  dirs_.insert(dir);
  return absl::OkStatus();
}

absl::Status MemEnv::RemoveDir(const std::string& dir) {
  absl::MutexLock lock(&mu_);
  auto it = files_.lower_bound(dir + "/");
  if (it != files_.end() && absl::StartsWith(it->first, dir + "/")) {
    return absl::FailedPreconditionError(absl::StrCat(dir, ": remove the directory: not empty"));
  }
  if (dirs_.erase(dir) == 0) return absl::NotFoundError(absl::StrCat(dir, ": no such directory"));
  return absl::OkStatus();
}

absl::Status MemEnv::Remove(const std::string& path) {
  absl::MutexLock lock(&mu_);
  if (files_.erase(path) == 0) return absl::NotFoundError(absl::StrCat(path, ": no such file"));
  return absl::OkStatus();
}

absl::Status MemEnv::Truncate(const std::string& path, uint64_t size) {
  absl::StatusOr<std::shared_ptr<Node>> node = Find(path);
  if (!node.ok()) return node.status();
  const absl::Time now = Now();
  absl::MutexLock lock(&(*node)->mu);
  (*node)->bytes.resize(size, '\0');
  (*node)->modified = now;
  return absl::OkStatus();
}

absl::Status MemEnv::SyncDir(const std::string&) { return absl::OkStatus(); }

absl::Time MemEnv::Now() {
  absl::MutexLock lock(&mu_);
  return now_;
}

void MemEnv::Advance(absl::Duration d) {
  absl::MutexLock lock(&mu_);
  now_ += d;
}

void MemEnv::Put(const std::string& path, std::string bytes) {
  auto node = std::make_shared<Node>();
  absl::MutexLock lock(&mu_);
  node->inode = next_inode_++;
  {
    absl::MutexLock node_lock(&node->mu);
    node->bytes = std::move(bytes);
    node->modified = now_;
  }
  files_[path] = std::move(node);
}

}  // namespace shotstream::env

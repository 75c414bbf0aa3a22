#include "server/dataset/dataset_registry.h"

#include "absl/strings/str_cat.h"

namespace shotstream::dataset {

size_t DatasetRegistry::size() const {
  absl::MutexLock lock(&mu_);
  return entries_.size();
}

DatasetEntry& DatasetRegistry::at(size_t i) {
  absl::MutexLock lock(&mu_);
  return entries_.at(i);
}

bool DatasetRegistry::Visible(const DatasetEntry& e) const {
  return unpublished_.count(&e) == 0 && removed_.count(&e) == 0;
}

std::vector<const DatasetEntry*> DatasetRegistry::All() const {
  absl::MutexLock lock(&mu_);
  std::vector<const DatasetEntry*> all;
  all.reserve(entries_.size());
  for (const DatasetEntry& e : entries_) {
    if (Visible(e)) all.push_back(&e);
  }
  return all;
}

std::vector<DatasetEntry*> DatasetRegistry::AllToChange() {
  absl::MutexLock lock(&mu_);
  std::vector<DatasetEntry*> all;
  for (DatasetEntry& e : entries_) {
    if (Visible(e)) all.push_back(&e);
  }
  return all;
}

const DatasetEntry* DatasetRegistry::Find(absl::string_view name) const {
  absl::MutexLock lock(&mu_);
  for (const DatasetEntry& e : entries_) {
    if (e.name == name && Visible(e)) return &e;
  }
  return nullptr;
}

absl::Status DatasetRegistry::Reserve(const std::string& name) {
  absl::MutexLock lock(&mu_);
  for (const DatasetEntry& e : entries_) {
    if (e.name == name && removed_.count(&e) == 0) {
      return absl::AlreadyExistsError(absl::StrCat("dataset '", name, "' exists"));
    }
  }
  if (!reserved_.insert(name).second) {
    return absl::AlreadyExistsError(
        absl::StrCat("dataset '", name, "' is being written by another client"));
  }
  return absl::OkStatus();
}

void DatasetRegistry::Release(const std::string& name) {
  absl::MutexLock lock(&mu_);
  reserved_.erase(name);
}

DatasetEntry* DatasetRegistry::Add(const std::string& name) {
  absl::MutexLock lock(&mu_);
  reserved_.erase(name);
  DatasetEntry& e = entries_.emplace_back();
  e.name = name;
  unpublished_.insert(&e);
  return &e;
}

void DatasetRegistry::Publish(const DatasetEntry* entry) {
  absl::MutexLock lock(&mu_);
  unpublished_.erase(entry);
}

bool DatasetRegistry::Remove(absl::string_view name) {
  absl::MutexLock lock(&mu_);
  for (const DatasetEntry& e : entries_) {
    if (e.name == name && Visible(e)) {
      removed_.insert(&e);
      return true;
    }
  }
  return false;
}

}  // namespace shotstream::dataset

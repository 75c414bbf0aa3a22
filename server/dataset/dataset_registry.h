// DatasetRegistry: the datasets a server serves, those it started with and then those
// written to it (WriteShots) or configured on SIGHUP. Entries are never destroyed and
// never move, so a pointer to one stays valid for the registry's life; one taken out of
// the configuration is hidden (Remove), and its name is free again. A name being written is reserved, so that two
// writers cannot create one dataset and a written name never shadows another.
//
// Thread-safe.
#ifndef SHOTSTREAM_SERVER_DATASET_DATASET_REGISTRY_H_
#define SHOTSTREAM_SERVER_DATASET_DATASET_REGISTRY_H_

#include <cstddef>
#include <deque>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "server/dataset/dataset_entry.h"

namespace shotstream::dataset {

class DatasetRegistry {
 public:
  // `n` entries to set up before serving (at(i)).
  explicit DatasetRegistry(size_t n = 0) : entries_(n) {}
  DatasetRegistry(const DatasetRegistry&) = delete;
  DatasetRegistry& operator=(const DatasetRegistry&) = delete;

  size_t size() const ABSL_LOCKS_EXCLUDED(mu_);
  DatasetEntry& at(size_t i) ABSL_LOCKS_EXCLUDED(mu_);
  // Every entry in the order added (a snapshot).
  std::vector<const DatasetEntry*> All() const ABSL_LOCKS_EXCLUDED(mu_);
  // Every entry, as All, for those that change them (a reload, the healer).
  std::vector<DatasetEntry*> AllToChange() ABSL_LOCKS_EXCLUDED(mu_);
  // The entry named `name`, or null.
  const DatasetEntry* Find(absl::string_view name) const ABSL_LOCKS_EXCLUDED(mu_);

  // Reserves `name` for a write: ALREADY_EXISTS when an entry or another write has it.
  absl::Status Reserve(const std::string& name) ABSL_LOCKS_EXCLUDED(mu_);
  // Ends a reservation (the write failed).
  void Release(const std::string& name) ABSL_LOCKS_EXCLUDED(mu_);
  // Adds an entry for a reserved name, ending the reservation; set it up, then Publish.
  // Until then Find and All do not show it.
  DatasetEntry* Add(const std::string& name) ABSL_LOCKS_EXCLUDED(mu_);
  void Publish(const DatasetEntry* entry) ABSL_LOCKS_EXCLUDED(mu_);
  // Hides the entry named `name` from Find and All (streams that hold its dataset finish
  // with it); false when none is visible.
  bool Remove(absl::string_view name) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  bool Visible(const DatasetEntry& e) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::deque<DatasetEntry> entries_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> reserved_ ABSL_GUARDED_BY(mu_);
  std::set<const DatasetEntry*> unpublished_ ABSL_GUARDED_BY(mu_);
  std::set<const DatasetEntry*> removed_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shotstream::dataset

#endif  // SHOTSTREAM_SERVER_DATASET_DATASET_REGISTRY_H_

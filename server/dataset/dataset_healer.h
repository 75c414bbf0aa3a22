// DatasetHealer: datasets that heal. A FAILED dataset, or one served with files left out
// (on_bad_file: skip), is loaded again once its files change: every `interval` the healer
// takes a fingerprint of each such dataset's files (the paths its patterns match now,
// each with its inode, size, mtime and ctime; a directory's top-level entries too, for
// Zarr stores) and reloads the dataset when the fingerprint differs from the one it had
// when first seen unwell. Polled rather than watched: inotify misses network file
// systems, where surveys live, and a poll of a few stat calls a dataset costs nothing.
// SIGHUP calls Check(/*force=*/true), which retries them all.
//
// Thread-safe; with an interval, one thread of its own while it lives.
#ifndef SHOTSTREAM_SERVER_DATASET_DATASET_HEALER_H_
#define SHOTSTREAM_SERVER_DATASET_DATASET_HEALER_H_

#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "server/dataset/dataset_registry.h"

namespace shotstream::dataset {

// The fingerprint of the files `globs` match now (see above); "" matches nothing.
std::string FilesFingerprint(const std::vector<std::string>& globs);

class DatasetHealer {
 public:
  // Takes the fingerprints of the datasets unwell now. `interval` zero: no thread; only
  // Check heals.
  DatasetHealer(DatasetRegistry* registry, absl::Duration interval);
  ~DatasetHealer();
  DatasetHealer(const DatasetHealer&) = delete;
  DatasetHealer& operator=(const DatasetHealer&) = delete;

  // One pass now: reloads every unwell dataset whose files changed since it was first
  // seen unwell, or every unwell one when `force`. The names reloaded, in registry order.
  std::vector<std::string> Check(bool force) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  DatasetRegistry* const registry_;
  absl::Mutex mu_;  // one pass at a time
  // An unwell entry's fingerprint, when it was first seen unwell or last reloaded.
  std::map<const DatasetEntry*, std::string> seen_ ABSL_GUARDED_BY(mu_);
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace shotstream::dataset

#endif  // SHOTSTREAM_SERVER_DATASET_DATASET_HEALER_H_

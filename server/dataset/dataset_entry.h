// One configured dataset as the service sees it: READY (a loaded Dataset), FAILED (its
// load error, permanent), or REBUILDING: a read found its files changed since the catalog
// was built, and it is loaded again (catalog scanned afresh) on a thread of its own, then
// READY again with the new catalog, or FAILED.
//
// Thread-safe: every method may be called from any thread; `name` is set before serving
// and read-only after. Streams hold the Dataset they started with (shared_ptr), so a
// rebuild never pulls files from under a running read.
#ifndef SHOTSTREAM_SERVER_DATASET_DATASET_ENTRY_H_
#define SHOTSTREAM_SERVER_DATASET_DATASET_ENTRY_H_

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "server/dataset/dataset.h"

namespace shotstream::dataset {

class DatasetEntry {
 public:
  DatasetEntry() = default;
  ~DatasetEntry();  // waits for a rebuild under way
  DatasetEntry(const DatasetEntry&) = delete;
  DatasetEntry& operator=(const DatasetEntry&) = delete;

  std::string name;

  enum class State { kReady, kFailed, kRebuilding };

  // Loads `spec` now (on this thread); READY or FAILED. The loaded dataset reports
  // changed files to this entry, which then rebuilds it.
  absl::Status Load(DatasetSpec spec, const catalog::ScanProgress& progress = nullptr);
  // For tests and tools: a dataset loaded elsewhere (it does not rebuild itself), or a
  // failure.
  void SetLoaded(std::unique_ptr<Dataset> dataset);
  void SetFailed(absl::Status status);

  // The dataset while READY, else null.
  std::shared_ptr<const Dataset> dataset() const ABSL_LOCKS_EXCLUDED(mu_);
  State state() const ABSL_LOCKS_EXCLUDED(mu_);
  // OK while READY; the load error when FAILED; UNAVAILABLE saying why while REBUILDING.
  absl::Status status() const ABSL_LOCKS_EXCLUDED(mu_);

  // Called after every change of state (a rebuild starting or ending), from the thread
  // that changed it. Set before serving.
  void set_on_change(std::function<void(const DatasetEntry&)> on_change) {
    on_change_ = std::move(on_change);
  }

  // Waits until the entry is not REBUILDING and on_change has been told (tests).
  void AwaitSettled() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // The hook of a loaded dataset: `seen` found its files changed.
  void Rebuild(const Dataset& seen, const absl::Status& why) ABSL_LOCKS_EXCLUDED(mu_);
  DatasetSpec WithHook(DatasetSpec spec);

  mutable absl::Mutex mu_;
  std::shared_ptr<const Dataset> dataset_ ABSL_GUARDED_BY(mu_);
  absl::Status status_ ABSL_GUARDED_BY(mu_) = absl::FailedPreconditionError("not loaded");
  bool rebuilding_ ABSL_GUARDED_BY(mu_) = false;
  bool telling_ ABSL_GUARDED_BY(mu_) = false;  // a rebuild's end is being told to on_change
  std::thread rebuild_ ABSL_GUARDED_BY(mu_);
  std::function<void(const DatasetEntry&)> on_change_;
};

}  // namespace shotstream::dataset

#endif  // SHOTSTREAM_SERVER_DATASET_DATASET_ENTRY_H_

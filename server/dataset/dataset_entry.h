// One configured dataset as the service sees it: LOADING (its first load, not ended yet:
// the server listens meanwhile), READY (a loaded Dataset), FAILED (its load error), or
// REBUILDING (being loaded again, nothing served meanwhile). It is loaded
// again on a thread of its own when a read finds its files changed since the catalog was
// built (Rebuild, through the dataset's hook), when a FAILED dataset's files change or
// SIGHUP retries it, and when its configuration changes (Reload: the dataset it has
// keeps serving until the new one is loaded).
//
// Thread-safe: every method may be called from any thread; `name` is set before serving
// and read-only after. Streams hold the Dataset they started with (shared_ptr), so a
// load never pulls files from under a running read.
#ifndef SHOTSTREAM_SERVER_DATASET_DATASET_ENTRY_H_
#define SHOTSTREAM_SERVER_DATASET_DATASET_ENTRY_H_

#include <cstdint>
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
  ~DatasetEntry();  // waits for a load under way
  DatasetEntry(const DatasetEntry&) = delete;
  DatasetEntry& operator=(const DatasetEntry&) = delete;

  std::string name;

  enum class State { kReady, kFailed, kRebuilding, kLoading };

  // How far the load under way is: traces scanned of those the files hold (0 of 0 before
  // the scan starts).
  struct LoadProgress {
    uint64_t traces_done = 0;
    uint64_t traces_total = 0;
  };

  // LOADING until Load ends: requests meanwhile get UNAVAILABLE saying so. Called before
  // serving, for an entry whose Load is to come on another thread.
  void MarkLoading() ABSL_LOCKS_EXCLUDED(mu_);
  // Loads `spec` now (on this thread); READY or FAILED. The loaded dataset reports
  // changed files to this entry, which then rebuilds it.
  absl::Status Load(DatasetSpec spec, const catalog::ScanProgress& progress = nullptr);
  // Loads `spec` again on a thread of its own, after any load under way (the newest
  // spec wins); `why` says what moved it ("its files changed", "SIGHUP"). A READY entry
  // keeps serving until the new dataset is loaded; a FAILED one is REBUILDING meanwhile
  // (UNAVAILABLE, which clients retry). Then READY or FAILED, told to on_change.
  void Reload(DatasetSpec spec, const std::string& why) ABSL_LOCKS_EXCLUDED(mu_);
  // For tests and tools: a dataset loaded elsewhere (it does not rebuild itself), or a
  // failure.
  void SetLoaded(std::unique_ptr<Dataset> dataset);
  void SetFailed(absl::Status status);

  // The dataset while READY, else null.
  std::shared_ptr<const Dataset> dataset() const ABSL_LOCKS_EXCLUDED(mu_);
  State state() const ABSL_LOCKS_EXCLUDED(mu_);
  // OK while READY; the load error when FAILED; UNAVAILABLE saying why while REBUILDING
  // or LOADING.
  absl::Status status() const ABSL_LOCKS_EXCLUDED(mu_);
  LoadProgress progress() const ABSL_LOCKS_EXCLUDED(mu_);
  // The spec last loaded (the one being loaded, during a load).
  DatasetSpec spec() const ABSL_LOCKS_EXCLUDED(mu_);
  // What the last load in the background was: "rebuilt", "loaded" (the first: an entry
  // added on SIGHUP), "loaded again" (it had failed) or "reloaded" (it was READY); for
  // the lines on_change prints; empty before one.
  std::string last_load() const ABSL_LOCKS_EXCLUDED(mu_);

  // Called after every change of state (a load in the background starting or ending),
  // from the thread that changed it. Set before serving.
  void set_on_change(std::function<void(const DatasetEntry&)> on_change) {
    on_change_ = std::move(on_change);
  }

  // Waits until no load is under way and on_change has been told.
  void AwaitSettled() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // The hook of a loaded dataset: `seen` found its files changed.
  void Rebuild(const Dataset& seen, const absl::Status& why) ABSL_LOCKS_EXCLUDED(mu_);
  DatasetSpec WithHook(DatasetSpec spec);
  // Starts loading `spec` on rebuild_ (mu_ held, no load under way): `keep_serving` keeps
  // a READY dataset until the new one is loaded; otherwise `unavailable` is the status
  // meanwhile. Returns the finished thread of an earlier load, for the caller to join.
  std::thread StartLoadLocked(DatasetSpec spec, bool keep_serving, absl::Status unavailable,
                              std::string kind) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::shared_ptr<const Dataset> dataset_ ABSL_GUARDED_BY(mu_);
  absl::Status status_ ABSL_GUARDED_BY(mu_) = absl::FailedPreconditionError("not loaded");
  DatasetSpec spec_ ABSL_GUARDED_BY(mu_);
  std::string last_load_ ABSL_GUARDED_BY(mu_);
  bool rebuilding_ ABSL_GUARDED_BY(mu_) = false;  // a load in the background is under way
  bool tried_ ABSL_GUARDED_BY(mu_) = false;       // a load has ended, either way
  bool loading_ ABSL_GUARDED_BY(mu_) = false;     // MarkLoading'd, Load not ended
  LoadProgress progress_ ABSL_GUARDED_BY(mu_);
  bool telling_ ABSL_GUARDED_BY(mu_) = false;  // a load's end is being told to on_change
  std::thread rebuild_ ABSL_GUARDED_BY(mu_);
  std::function<void(const DatasetEntry&)> on_change_;
};

}  // namespace shotstream::dataset

#endif  // SHOTSTREAM_SERVER_DATASET_DATASET_ENTRY_H_

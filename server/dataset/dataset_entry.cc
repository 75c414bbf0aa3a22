#include "server/dataset/dataset_entry.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace shotstream::dataset {

DatasetEntry::~DatasetEntry() {
  std::thread t;
  {
    absl::MutexLock lock(&mu_);
    t = std::move(rebuild_);
  }
  if (t.joinable()) t.join();
}

DatasetSpec DatasetEntry::WithHook(DatasetSpec spec) {
  spec.on_files_changed = [this](const Dataset& seen, const absl::Status& why) {
    Rebuild(seen, why);
  };
  return spec;
}

void DatasetEntry::MarkLoading() {
  absl::MutexLock lock(&mu_);
  loading_ = true;
  status_ = absl::UnavailableError(absl::StrCat(
      "dataset '", name, "' is loading (its catalog is being built: ListDatasets shows how "
      "far); try again shortly"));
}

absl::Status DatasetEntry::Load(DatasetSpec spec, const catalog::ScanProgress& progress) {
  {
    absl::MutexLock lock(&mu_);
    spec_ = spec;
  }
  auto counted = [this, &progress](uint64_t done, uint64_t total) {
    {
      absl::MutexLock lock(&mu_);
      progress_ = {done, total};
    }
    if (progress) progress(done, total);
  };
  auto loaded = Dataset::Load(WithHook(std::move(spec)), counted);
  absl::Status status = loaded.ok() ? absl::OkStatus() : loaded.status();
  {
    absl::MutexLock lock(&mu_);
    if (loaded.ok()) {
      dataset_ = std::shared_ptr<const Dataset>(std::move(*loaded));
    } else {
      dataset_.reset();
    }
    status_ = status;
    tried_ = true;
    loading_ = false;
  }
  return status;
}

DatasetEntry::LoadProgress DatasetEntry::progress() const {
  absl::MutexLock lock(&mu_);
  return progress_;
}

void DatasetEntry::SetLoaded(std::unique_ptr<Dataset> dataset) {
  absl::MutexLock lock(&mu_);
  dataset_ = std::shared_ptr<const Dataset>(std::move(dataset));
  status_ = absl::OkStatus();
  tried_ = true;
}

void DatasetEntry::SetFailed(absl::Status status) {
  absl::MutexLock lock(&mu_);
  dataset_.reset();
  status_ = std::move(status);
  tried_ = true;
}

std::shared_ptr<const Dataset> DatasetEntry::dataset() const {
  absl::MutexLock lock(&mu_);
  return dataset_;
}

DatasetEntry::State DatasetEntry::state() const {
  absl::MutexLock lock(&mu_);
  if (dataset_ != nullptr) return State::kReady;  // a reload keeps serving meanwhile
  if (loading_ || (rebuilding_ && !tried_)) return State::kLoading;  // the first load
  return rebuilding_ ? State::kRebuilding : State::kFailed;
}

absl::Status DatasetEntry::status() const {
  absl::MutexLock lock(&mu_);
  return status_;
}

DatasetSpec DatasetEntry::spec() const {
  absl::MutexLock lock(&mu_);
  return spec_;
}

std::string DatasetEntry::last_load() const {
  absl::MutexLock lock(&mu_);
  return last_load_;
}

void DatasetEntry::AwaitSettled() const {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](const DatasetEntry* e) ABSL_NO_THREAD_SAFETY_ANALYSIS {
        return !e->rebuilding_ && !e->telling_;
      },
      this));
}

std::thread DatasetEntry::StartLoadLocked(DatasetSpec spec, bool keep_serving,
                                          absl::Status unavailable, std::string kind) {
  rebuilding_ = true;
  last_load_ = std::move(kind);
  spec_ = spec;
  const bool stops_serving = !keep_serving || dataset_ == nullptr;
  if (stops_serving) {
    dataset_.reset();  // streams that hold it finish with it; new ones wait
    status_ = std::move(unavailable);
  }
  std::thread finished = std::move(rebuild_);  // a load that ended earlier
  rebuild_ = std::thread([this, stops_serving, spec = std::move(spec)]() mutable {
    if (stops_serving && on_change_) on_change_(*this);  // told before the load can end
    auto loaded = Dataset::Load(WithHook(std::move(spec)));
    {
      absl::MutexLock lock(&mu_);
      if (loaded.ok()) {
        dataset_ = std::shared_ptr<const Dataset>(std::move(*loaded));
        status_ = absl::OkStatus();
      } else {
        dataset_.reset();
        status_ = loaded.status();
      }
      rebuilding_ = false;
      tried_ = true;
      telling_ = true;
    }
    if (on_change_) on_change_(*this);
    absl::MutexLock lock(&mu_);
    telling_ = false;
  });
  return finished;
}

void DatasetEntry::Rebuild(const Dataset& seen, const absl::Status& why) {
  std::thread finished;
  {
    absl::MutexLock lock(&mu_);
    // Only the dataset being served starts a rebuild, once.
    if (rebuilding_ || dataset_.get() != &seen) return;
    DatasetSpec spec = seen.spec();
    spec.ignore_saved_catalog = true;
    finished = StartLoadLocked(
        std::move(spec), /*keep_serving=*/false,
        absl::UnavailableError(absl::StrCat("dataset '", name, "' is being rebuilt: ",
                                            why.message(), "; try again shortly")),
        "rebuilt");
  }
  if (finished.joinable()) finished.join();
}

void DatasetEntry::Reload(DatasetSpec spec, const std::string& why) {
  std::thread finished;
  for (;;) {
    AwaitSettled();  // a load under way ends first: the newest spec wins
    absl::MutexLock lock(&mu_);
    if (rebuilding_) continue;  // another started meanwhile
    const char* kind = dataset_ != nullptr ? "reloaded" : tried_ ? "loaded again" : "loaded";
    finished = StartLoadLocked(
        std::move(spec), /*keep_serving=*/true,
        absl::UnavailableError(absl::StrCat("dataset '", name, "' is being ", kind, " (", why,
                                            "); try again shortly")),
        kind);
    break;
  }
  if (finished.joinable()) finished.join();
}

}  // namespace shotstream::dataset

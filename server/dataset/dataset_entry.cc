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

absl::Status DatasetEntry::Load(DatasetSpec spec, const catalog::ScanProgress& progress) {
  auto loaded = Dataset::Load(WithHook(std::move(spec)), progress);
  absl::Status status = loaded.ok() ? absl::OkStatus() : loaded.status();
  {
    absl::MutexLock lock(&mu_);
    if (loaded.ok()) {
      dataset_ = std::shared_ptr<const Dataset>(std::move(*loaded));
    } else {
      dataset_.reset();
    }
    status_ = status;
  }
  return status;
}

void DatasetEntry::SetLoaded(std::unique_ptr<Dataset> dataset) {
  absl::MutexLock lock(&mu_);
  dataset_ = std::shared_ptr<const Dataset>(std::move(dataset));
  status_ = absl::OkStatus();
}

void DatasetEntry::SetFailed(absl::Status status) {
  absl::MutexLock lock(&mu_);
  dataset_.reset();
  status_ = std::move(status);
}

std::shared_ptr<const Dataset> DatasetEntry::dataset() const {
  absl::MutexLock lock(&mu_);
  return dataset_;
}

DatasetEntry::State DatasetEntry::state() const {
  absl::MutexLock lock(&mu_);
  if (rebuilding_) return State::kRebuilding;
  return dataset_ != nullptr ? State::kReady : State::kFailed;
}

absl::Status DatasetEntry::status() const {
  absl::MutexLock lock(&mu_);
  return status_;
}

void DatasetEntry::AwaitSettled() const {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](const DatasetEntry* e) ABSL_NO_THREAD_SAFETY_ANALYSIS {
        return !e->rebuilding_ && !e->telling_;
      },
      this));
}

void DatasetEntry::Rebuild(const Dataset& seen, const absl::Status& why) {
  DatasetSpec spec;
  std::thread finished;
  {
    absl::MutexLock lock(&mu_);
    // Only the dataset being served starts a rebuild, once.
    if (rebuilding_ || dataset_.get() != &seen) return;
    rebuilding_ = true;
    status_ = absl::UnavailableError(absl::StrCat(
        "dataset '", name, "' is being rebuilt: ", why.message(), "; try again shortly"));
    dataset_.reset();  // streams that hold it finish with it; new ones wait
    spec = seen.spec();
    spec.ignore_saved_catalog = true;
    finished = std::move(rebuild_);  // a rebuild that ended earlier
  }
  if (finished.joinable()) finished.join();
  if (on_change_) on_change_(*this);  // told before the rebuild can end
  absl::MutexLock lock(&mu_);
  rebuild_ = std::thread([this, spec = std::move(spec)]() mutable {
    auto loaded = Dataset::Load(WithHook(std::move(spec)));
    {
      absl::MutexLock lock(&mu_);
      if (loaded.ok()) {
        dataset_ = std::shared_ptr<const Dataset>(std::move(*loaded));
        status_ = absl::OkStatus();
      } else {
        status_ = loaded.status();
      }
      rebuilding_ = false;
      telling_ = true;
    }
    if (on_change_) on_change_(*this);
    absl::MutexLock lock(&mu_);
    telling_ = false;
  });
}

}  // namespace shotstream::dataset

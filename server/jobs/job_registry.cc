#include "server/jobs/job_registry.h"

#include <algorithm>
#include <cinttypes>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "shotstream/common/epoch_shots.h"

namespace shotstream::jobs {
namespace {

std::string KeyOf(const JobSpec& s) { return absl::StrCat(s.dataset, "\n", s.job, "\n", s.epoch); }

std::string Name(const JobSpec& s) {
  return absl::StrCat("job '", s.job, "' of dataset '", s.dataset, "' epoch ", s.epoch);
}

// The first line of a job's file: what it is the progress of.
std::string Header(const JobSpec& s, uint64_t fingerprint) {
  return absl::StrCat("shotstream job v1 dataset=", s.dataset, " job=", s.job, " epoch=",
                      s.epoch, " seed=", s.seed, " ids=", s.shot_ids.size(), " fingerprint=",
                      fingerprint, "\n");
}

}  // namespace

uint64_t JobFingerprint(std::vector<int64_t> ids) {
  std::sort(ids.begin(), ids.end());
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the sorted ids' bytes
  for (int64_t id : ids) {
    for (int b = 0; b < 8; ++b) {
      h ^= (static_cast<uint64_t>(id) >> (8 * b)) & 0xFF;
      h *= 1099511628211ull;
    }
  }
  return h;
}

void JobLog::Append(int64_t shot_id) {
  {
    absl::MutexLock lock(&mu_);
    queued_.push_back(shot_id);
    if (writing_ && executor_ != nullptr) return;  // the running task takes it
    writing_ = true;
  }
  if (executor_ == nullptr) {
    Write();
  } else {
    executor_->Submit([self = shared_from_this()] { self->Write(); });
  }
}

void JobLog::Write() {
  for (;;) {
    std::vector<int64_t> lines;
    {
      absl::MutexLock lock(&mu_);
      if (queued_.empty()) {
        writing_ = false;
        return;
      }
      lines.swap(queued_);
    }
    for (int64_t id : lines) std::fprintf(file_.get(), "done %" PRId64 "\n", id);
    std::fflush(file_.get());  // in the page cache: it survives the process
  }
}

void JobLog::AwaitWritten() const {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(this, &JobLog::Idle));
}

Job::Job(JobSpec spec, std::vector<int64_t> permutation, const std::vector<int64_t>& done,
         std::shared_ptr<JobLog> log, JobCounters* counters)
    : spec_(std::move(spec)),
      order_(std::move(permutation)),
      counters_(counters),
      idle_since_(absl::Now()),
      log_(std::move(log)) {
  for (int64_t id : done) done_[id] = 1;
  for (int64_t id : order_) left_ += done_.contains(id) ? 0 : 1;
  counters_->jobs++;
}

Job::~Job() { counters_->jobs--; }

int64_t Job::Join(std::function<void()> wake) {
  absl::MutexLock lock(&mu_);
  const int64_t id = next_consumer_++;
  consumers_[id].wake = std::move(wake);
  return id;
}

Job::Take Job::Next(int64_t consumer, size_t limit, int64_t* shot_id) {
  absl::MutexLock lock(&mu_);
  auto it = consumers_.find(consumer);
  if (left_ == 0 || it == consumers_.end()) return Take::kEnd;  // or it left
  Consumer& c = it->second;
  if (c.held.size() >= limit) return Take::kWait;
  if (!returned_.empty()) {
    *shot_id = returned_.front();
    returned_.pop_front();
  } else {
    while (cursor_ < order_.size() && done_.contains(order_[cursor_])) ++cursor_;
    if (cursor_ == order_.size()) return Take::kWait;  // the rest is held by others
    *shot_id = order_[cursor_++];
  }
  c.held.push_back(*shot_id);
  counters_->shots_handed++;
  return Take::kShot;
}

void Job::WakeAll(std::vector<std::function<void()>>* out) {
  for (auto& [id, c] : consumers_) out->push_back(c.wake);
}

void Job::Done(int64_t consumer, int64_t shot_id) {
  std::vector<std::function<void()>> wake;
  {
    absl::MutexLock lock(&mu_);
    auto it = consumers_.find(consumer);
    if (it == consumers_.end()) return;
    std::vector<int64_t>& held = it->second.held;
    auto h = std::find(held.begin(), held.end(), shot_id);
    if (h == held.end()) return;  // not one it holds
    held.erase(h);
    if (done_[shot_id]++ == 0) {
      --left_;
      counters_->shots_done++;
      if (log_ != nullptr) log_->Append(shot_id);
    }
    if (left_ == 0) {
      WakeAll(&wake);  // every stream ends
    } else {
      wake.push_back(it->second.wake);  // it may take again
    }
  }
  for (auto& w : wake) w();
}

void Job::Leave(int64_t consumer) {
  std::vector<std::function<void()>> wake;
  {
    absl::MutexLock lock(&mu_);
    auto it = consumers_.find(consumer);
    if (it == consumers_.end()) return;
    for (int64_t id : it->second.held) {
      if (!done_.contains(id)) {
        returned_.push_back(id);
        counters_->shots_returned++;
      }
    }
    const bool gave_back = !it->second.held.empty();
    consumers_.erase(it);
    if (consumers_.empty()) idle_since_ = absl::Now();
    if (gave_back) WakeAll(&wake);  // a waiting consumer may take them
  }
  for (auto& w : wake) w();
}

void Job::GiveBack(int64_t consumer, const std::vector<int64_t>& shot_ids) {
  std::vector<std::function<void()>> wake;
  {
    absl::MutexLock lock(&mu_);
    auto it = consumers_.find(consumer);
    if (it == consumers_.end()) return;
    std::vector<int64_t>& held = it->second.held;
    for (auto id = shot_ids.rbegin(); id != shot_ids.rend(); ++id) {  // kept in order
      auto h = std::find(held.begin(), held.end(), *id);
      if (h == held.end() || done_.contains(*id)) continue;
      held.erase(h);
      returned_.push_front(*id);
      counters_->shots_returned++;
    }
    WakeAll(&wake);  // a waiting consumer may take them
  }
  for (auto& w : wake) w();
}

bool Job::idle_since(absl::Time* since) const {
  absl::MutexLock lock(&mu_);
  *since = idle_since_;
  return consumers_.empty();
}

size_t Job::shots_left() const {
  absl::MutexLock lock(&mu_);
  return left_;
}

std::string JobRegistry::PathOf(const JobSpec& s) const {
  return absl::StrCat(job_dir_, "/", s.dataset, ".", s.job, ".", s.epoch, ".job");
}

absl::StatusOr<std::shared_ptr<Job>> JobRegistry::Create(const JobSpec& spec,
                                                         uint64_t fingerprint) {
  std::vector<int64_t> done;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> log(nullptr, &std::fclose);
  if (!job_dir_.empty()) {
    const std::string path = PathOf(spec);
    const std::string header = Header(spec, fingerprint);
    if (std::FILE* in = std::fopen(path.c_str(), "r")) {
      char line[512];
      const bool same = std::fgets(line, sizeof line, in) != nullptr && header == line;
      while (same && std::fgets(line, sizeof line, in) != nullptr) {
        int64_t id;
        if (std::sscanf(line, "done %" SCNd64, &id) == 1 && line[std::strlen(line) - 1] == '\n') {
          done.push_back(id);
        }
      }
      std::fclose(in);
      if (!same) {
        return absl::FailedPreconditionError(absl::StrCat(
            Name(spec), ": ", path, " records another job (other shot ids or seed); remove "
            "it to start this one afresh"));
      }
      log.reset(std::fopen(path.c_str(), "a"));
    } else {
      log.reset(std::fopen(path.c_str(), "w"));
      if (log != nullptr) {
        std::fputs(header.c_str(), log.get());
        std::fflush(log.get());
      }
    }
    if (log == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(Name(spec), ": cannot write ", path, ": ",
                                                        std::strerror(errno)));
    }
  }
  std::shared_ptr<JobLog> job_log =
      log == nullptr ? nullptr : std::make_shared<JobLog>(std::move(log), executor_);
  return std::make_shared<Job>(spec, EpochPermutation(spec.shot_ids, spec.epoch, spec.seed), done,
                               std::move(job_log), counters_);
}

void JobRegistry::DropIdleLocked() {
  const absl::Time now = absl::Now();
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    absl::Time since;
    const bool idle = it->second.job->idle_since(&since);
    if (idle && now - since >= idle_timeout_) {
      it = jobs_.erase(it);  // streams still running hold their own reference
    } else {
      ++it;
    }
  }
}

absl::StatusOr<std::shared_ptr<Job>> JobRegistry::Find(const JobSpec& spec) {
  if (spec.job.empty() ||
      !std::all_of(spec.job.begin(), spec.job.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
      })) {
    return absl::InvalidArgumentError(absl::StrCat("job: '", spec.job,
                                                   "' is not a name of [A-Za-z0-9_.-]"));
  }
  std::vector<int64_t> sorted = spec.shot_ids;
  std::sort(sorted.begin(), sorted.end());
  if (auto d = std::adjacent_find(sorted.begin(), sorted.end()); d != sorted.end()) {
    return absl::InvalidArgumentError(absl::StrCat(Name(spec), ": shot ", *d,
                                                   " is named twice"));
  }
  const uint64_t fingerprint = JobFingerprint(spec.shot_ids);
  absl::MutexLock lock(&mu_);
  DropIdleLocked();
  auto it = jobs_.find(KeyOf(spec));
  if (it != jobs_.end()) {
    const JobSpec& held = it->second.job->spec();
    if (it->second.fingerprint != fingerprint) {
      return absl::FailedPreconditionError(absl::StrCat(
          Name(spec), ": its consumers disagree on the shot ids (", spec.shot_ids.size(),
          " ids here, ", held.shot_ids.size(), " in the job)"));
    }
    if (held.seed != spec.seed) {
      return absl::FailedPreconditionError(absl::StrCat(Name(spec),
                                                        ": its consumers disagree on the seed (",
                                                        spec.seed, " here, ", held.seed,
                                                        " in the job)"));
    }
    return it->second.job;
  }
  auto job = Create(spec, fingerprint);
  if (!job.ok()) return job.status();
  jobs_.emplace(KeyOf(spec), Entry{*job, fingerprint});
  return *job;
}

size_t JobRegistry::size() const {
  absl::MutexLock lock(&mu_);
  return jobs_.size();
}

}  // namespace shotstream::jobs

#include "server/jobs/job_registry.h"

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "shotstream/common/epoch_shots.h"
#include "wire/job_token.h"

namespace shotstream::jobs {
namespace {

std::string KeyOf(const std::string& dataset, const std::string& job, uint64_t epoch) {
  return absl::StrCat(dataset, "\n", job, "\n", epoch);
}
std::string KeyOf(const JobSpec& s) { return KeyOf(s.dataset, s.job, s.epoch); }

std::string NameOf(const std::string& dataset, const std::string& job, uint64_t epoch) {
  return absl::StrCat("job '", job, "' of dataset '", dataset, "' epoch ", epoch);
}
std::string NameOf(const JobSpec& s) { return NameOf(s.dataset, s.job, s.epoch); }

// The first line of a job's file: what it is the history of.
std::string Header(const JobSpec& s, uint64_t fingerprint) {
  return absl::StrCat("shotstream job v1 dataset=", s.dataset, " job=", s.job, " epoch=",
                      s.epoch, " seed=", s.seed, " ids=", s.shot_ids.size(), " fingerprint=",
                      fingerprint, "\n");
}

// One line of a job's file into `h`: "done ID", "commit STEP ID...", "rollback STEP
// LINEAGE". A line the server did not finish writing (no newline) is not one.
void Replay(absl::string_view line, JobHistory* h) {
  std::vector<absl::string_view> w = absl::StrSplit(line, ' ', absl::SkipEmpty());
  if (w.size() < 2) return;
  int64_t a;
  if (!absl::SimpleAtoi(w[1], &a)) return;
  if (w[0] == "done") {
    h->done.insert(a);
  } else if (w[0] == "commit") {
    h->steps.insert(a);
    for (size_t i = 2; i < w.size(); ++i) {
      int64_t id;
      if (!absl::SimpleAtoi(w[i], &id)) continue;
      h->committed.emplace(id, a);
      h->done.insert(id);
    }
  } else if (w[0] == "rollback" && w.size() >= 3) {
    uint64_t lineage;
    if (!absl::SimpleAtoi(w[2], &lineage)) return;
    h->RollBack(a);
    h->lineage = lineage;
  }
}

}  // namespace

uint64_t JobFingerprint(std::vector<int64_t> ids) { return wire::JobFingerprint(std::move(ids)); }

void JobHistory::RollBack(int64_t step) {
  steps.erase(steps.upper_bound(step), steps.end());
  for (auto it = committed.begin(); it != committed.end();) {
    if (it->second > step) {
      committed.erase(it++);
    } else {
      ++it;
    }
  }
  done.clear();
  for (const auto& [id, s] : committed) done.insert(id);
}

void JobLog::Append(std::string line) {
  {
    absl::MutexLock lock(&mu_);
    queued_.push_back(std::move(line));
    if (writing_ && executor_ != nullptr) return;  // the running task takes it
    writing_ = true;
  }
  if (executor_ == nullptr) {
    Write();
  } else {
    executor_->Submit([self = shared_from_this()] { self->Write(); });
  }
}

absl::Status JobLog::WriteQueued() {
  std::vector<std::string> lines;
  {
    absl::MutexLock lock(&mu_);
    lines.swap(queued_);
  }
  // One write for the lines queued (in the page cache; Sync puts them on storage).
  return file_->Append(absl::StrJoin(lines, ""));
}

void JobLog::Write() {
  for (;;) {
    {
      absl::MutexLock file_lock(&file_mu_);
      // A line the file would not take is lost from the file only: the job in memory has
      // it, and the next commit's Sync reports the file's error to its caller.
      WriteQueued().IgnoreError();
    }
    absl::MutexLock lock(&mu_);
    if (queued_.empty()) {
      writing_ = false;
      return;
    }
  }
}

absl::Status JobLog::Sync() {
  absl::MutexLock file_lock(&file_mu_);
  absl::Status s = WriteQueued();
  if (s.ok()) s = file_->Sync();
  if (!s.ok()) {
    return absl::UnavailableError(
        absl::StrCat("cannot write the job file ", path_, ": ", s.message()));
  }
  return absl::OkStatus();
}

void JobLog::AwaitWritten() const {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(this, &JobLog::Idle));
}

Job::Job(JobSpec spec, std::vector<int64_t> permutation, JobHistory history,
         std::shared_ptr<JobLog> log, JobCounters* counters, env::Env* clock)
    : spec_(std::move(spec)),
      order_(std::move(permutation)),
      in_job_(order_.begin(), order_.end()),
      counters_(counters),
      history_(std::move(history)),
      clock_(clock),
      idle_since_(clock->Now()),
      log_(std::move(log)) {
  for (int64_t id : order_) left_ += history_.done.contains(id) ? 0 : 1;
  counters_->jobs++;
}

Job::~Job() { counters_->jobs--; }

std::string Job::Name() const { return NameOf(spec_); }

absl::Status Job::CheckStep(int64_t step) const {
  absl::MutexLock lock(&mu_);
  return StepStatusLocked(step);
}

absl::Status Job::StepStatusLocked(int64_t step) const {
  if ((history_.steps.count(step) != 0)) return absl::OkStatus();
  std::string known = history_.steps.empty()
                          ? "none is"
                          : absl::StrCat(history_.steps.size(), " are (", *history_.steps.begin(),
                                         "..", *history_.steps.rbegin(), ")");
  return absl::FailedPreconditionError(absl::StrCat(
      "resume: ", Name(), " has no commit at step ", step, " on record (", known,
      "); resume from a token that a commit of this job returned"));
}

bool Job::RollbackOpenLocked(uint64_t lineage) const {
  if (!rollback_open_ || history_.lineage != lineage) return false;
  for (const auto& [id, c] : consumers_) {
    if (!c.aborted && c.lineage == lineage) return true;
  }
  return false;
}

void Job::RollBackLocked(const Resume& r,
                         std::vector<std::function<void(const absl::Status&)>>* aborts) {
  history_.RollBack(r.step);
  history_.lineage = r.lineage;
  rollback_open_ = true;
  cursor_ = 0;
  returned_.clear();
  left_ = 0;
  for (int64_t id : order_) left_ += history_.done.contains(id) ? 0 : 1;
  const absl::Status why = absl::AbortedError(absl::StrCat(
      Name(), " was resumed from step ", r.step,
      " by another consumer; the shots this stream held are handed out again"));
  for (auto& [id, c] : consumers_) {
    if (c.aborted) continue;
    c.aborted = true;
    c.held.clear();
    if (c.abort) aborts->push_back([abort = c.abort, why](const absl::Status&) { abort(why); });
  }
  counters_->rollbacks++;
  if (log_ != nullptr) log_->Append(absl::StrCat("rollback ", r.step, " ", r.lineage, "\n"));
}

absl::StatusOr<int64_t> Job::Join(std::function<void()> wake,
                                  std::function<void(const absl::Status&)> abort,
                                  const std::optional<Resume>& resume, bool takeover) {
  std::vector<std::function<void(const absl::Status&)>> aborts;
  int64_t id;
  bool rolled_back = false;
  {
    absl::MutexLock lock(&mu_);
    if (resume.has_value()) {
      if (absl::Status s = StepStatusLocked(resume->step); !s.ok()) return s;
      if (!RollbackOpenLocked(resume->lineage)) {
        RollBackLocked(*resume, &aborts);
        rolled_back = true;
      }
    }
    id = next_consumer_++;
    Consumer& c = consumers_[id];
    c.wake = std::move(wake);
    c.abort = std::move(abort);
    c.lineage = history_.lineage;
    c.takeover = takeover;
  }
  for (auto& a : aborts) a(absl::OkStatus());
  if (rolled_back && log_ != nullptr) {
    if (absl::Status s = log_->Sync(); !s.ok()) {
      Leave(id);
      return s;
    }
  }
  return id;
}

Job::Take Job::Next(int64_t consumer, size_t limit, int64_t* shot_id) {
  absl::MutexLock lock(&mu_);
  auto it = consumers_.find(consumer);
  if (it == consumers_.end()) return Take::kEnd;  // it left
  Consumer& c = it->second;
  if (c.aborted) return Take::kWait;  // its abort ends the stream
  if (left_ == 0) return Take::kEnd;
  if (c.held.size() >= limit) return Take::kWait;
  while (!returned_.empty() && history_.done.contains(returned_.front())) returned_.pop_front();
  if (!returned_.empty()) {
    *shot_id = returned_.front();
    returned_.pop_front();
  } else {
    while (cursor_ < order_.size() && history_.done.contains(order_[cursor_])) ++cursor_;
    if (cursor_ == order_.size()) {  // the rest is held by others
      return c.takeover || !c.held.empty() ? Take::kWait : Take::kEnd;
    }
    *shot_id = order_[cursor_++];
  }
  c.held.push_back(*shot_id);
  counters_->shots_handed++;
  return Take::kShot;
}

void Job::WakeAll(std::vector<std::function<void()>>* out) {
  for (auto& [id, c] : consumers_) out->push_back(c.wake);
}

void Job::MarkDoneLocked(int64_t shot_id, std::vector<std::function<void()>>* wake) {
  if (!history_.done.insert(shot_id).second) return;
  for (auto& [id, c] : consumers_) {
    auto h = std::find(c.held.begin(), c.held.end(), shot_id);
    if (h == c.held.end()) continue;
    c.held.erase(h);
    if (c.wake) wake->push_back(c.wake);  // under its limit again, or (no takeover) may end
  }
  --left_;
  counters_->shots_done++;
}

void Job::Done(int64_t consumer, int64_t shot_id) {
  std::vector<std::function<void()>> wake;
  {
    absl::MutexLock lock(&mu_);
    auto it = consumers_.find(consumer);
    if (it == consumers_.end() || it->second.aborted) return;
    std::vector<int64_t>& held = it->second.held;
    auto h = std::find(held.begin(), held.end(), shot_id);
    if (h == held.end()) return;  // not one it holds
    held.erase(h);
    if (history_.done.insert(shot_id).second) {
      --left_;
      counters_->shots_done++;
      if (log_ != nullptr) log_->Append(absl::StrCat("done ", shot_id, "\n"));
    }
    if (left_ == 0) {
      WakeAll(&wake);  // every stream ends
    } else {
      wake.push_back(it->second.wake);  // it may take again
    }
  }
  for (auto& w : wake) w();
}

absl::StatusOr<Job::Committed> Job::Commit(int64_t step, const std::vector<int64_t>& shot_ids,
                                           uint64_t lineage) {
  std::vector<std::function<void()>> wake;
  Committed out;
  {
    absl::MutexLock lock(&mu_);
    if (lineage != history_.lineage) {
      return absl::AbortedError(absl::StrCat(
          "commit: ", Name(), " was resumed since from another checkpoint than this "
          "consumer's; its model is not the one being trained (resume from the newest "
          "checkpoint's token)"));
    }
    if (!history_.steps.empty() && step < *history_.steps.rbegin()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "commit: step ", step, " of ", Name(), " is before step ", *history_.steps.rbegin(),
          ", already committed (steps only go forward; resume to go back)"));
    }
    for (int64_t id : shot_ids) {
      if (!in_job_.contains(id)) {
        return absl::InvalidArgumentError(
            absl::StrCat("commit: shot ", id, " is not one of the ", order_.size(),
                         " shots of ", Name()));
      }
    }
    std::string line = absl::StrCat("commit ", step);
    for (int64_t id : shot_ids) {
      if (!history_.committed.emplace(id, step).second) continue;
      absl::StrAppend(&line, " ", id);
      MarkDoneLocked(id, &wake);
    }
    history_.steps.insert(step);
    rollback_open_ = false;  // the rollback's consumers trained on: a resume rolls back anew
    counters_->commits++;
    if (log_ != nullptr) log_->Append(line + "\n");
    if (left_ == 0) WakeAll(&wake);
    out.shots_committed = history_.committed.size();
    out.shots_left = left_;
  }
  for (auto& w : wake) w();
  if (log_ != nullptr) {
    if (absl::Status s = log_->Sync(); !s.ok()) return s;
  }
  return out;
}

void Job::Leave(int64_t consumer) {
  std::vector<std::function<void()>> wake;
  {
    absl::MutexLock lock(&mu_);
    auto it = consumers_.find(consumer);
    if (it == consumers_.end()) return;
    for (int64_t id : it->second.held) {
      if (!history_.done.contains(id)) {
        returned_.push_back(id);
        counters_->shots_returned++;
      }
    }
    const bool gave_back = !it->second.held.empty();
    consumers_.erase(it);
    if (consumers_.empty()) idle_since_ = clock_->Now();
    if (gave_back) WakeAll(&wake);  // a waiting consumer may take them
  }
  for (auto& w : wake) w();
}

void Job::GiveBack(int64_t consumer, const std::vector<int64_t>& shot_ids) {
  std::vector<std::function<void()>> wake;
  {
    absl::MutexLock lock(&mu_);
    auto it = consumers_.find(consumer);
    if (it == consumers_.end() || it->second.aborted) return;
    std::vector<int64_t>& held = it->second.held;
    for (auto id = shot_ids.rbegin(); id != shot_ids.rend(); ++id) {  // kept in order
      auto h = std::find(held.begin(), held.end(), *id);
      if (h == held.end() || history_.done.contains(*id)) continue;
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
                                                         uint64_t fingerprint, bool resuming) {
  JobHistory history;
  std::unique_ptr<env::WritableFile> log;
  const std::string path = job_dir_.empty() ? "" : PathOf(spec);
  if (job_dir_.empty()) {
    if (resuming) {
      return absl::FailedPreconditionError(absl::StrCat(
          "resume: this server has no record of ", NameOf(spec), " (it was restarted, or "
          "dropped the job after job_idle_timeout, and it keeps jobs in memory only: start "
          "it with --job_dir=DIR to resume jobs across restarts)"));
    }
  } else {
    const std::string header = Header(spec, fingerprint);
    absl::StatusOr<std::string> recorded = env::ReadFileToString(env_, path);
    if (recorded.ok()) {
      const absl::string_view file = *recorded;
      if (!absl::StartsWith(file, header)) {
        return absl::FailedPreconditionError(absl::StrCat(
            NameOf(spec), ": ", path, " records another job (other shot ids or seed); remove "
            "it to start this one afresh"));
      }
      size_t whole = header.size();  // the end of the last complete line
      for (size_t eol; (eol = file.find('\n', whole)) != absl::string_view::npos;
           whole = eol + 1) {
        Replay(file.substr(whole, eol - whole), &history);
      }
      // A torn last line (the server was killed while writing it) is never replayed, and
      // is cut off, so that what is appended next starts a line of its own.
      if (whole < file.size()) {
        if (absl::Status cut = env_->Truncate(path, whole); !cut.ok()) {
          return absl::FailedPreconditionError(absl::StrCat(
              NameOf(spec), ": cannot cut the torn last line of ", path, ": ", cut.message()));
        }
      }
    } else if (!absl::IsNotFound(recorded.status())) {
      return absl::FailedPreconditionError(absl::StrCat(
          NameOf(spec), ": cannot read its job file: ", recorded.status().message()));
    } else if (resuming) {
      return absl::FailedPreconditionError(absl::StrCat(
          "resume: this server has no record of ", NameOf(spec), " (no ", path,
          "); the token is from another server or job directory"));
    }
    absl::StatusOr<std::unique_ptr<env::WritableFile>> opened =
        env_->OpenWrite(path, recorded.ok() ? env::WriteMode::kAppend : env::WriteMode::kTruncate);
    absl::Status s = opened.status();
    if (s.ok() && !recorded.ok()) s = (*opened)->Append(header);
    if (!s.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat(NameOf(spec), ": cannot write its job file: ", s.message()));
    }
    log = *std::move(opened);
  }
  std::shared_ptr<JobLog> job_log =
      log == nullptr ? nullptr : std::make_shared<JobLog>(std::move(log), path, executor_);
  return std::make_shared<Job>(spec, EpochPermutation(spec.shot_ids, spec.epoch, spec.seed),
                               std::move(history), std::move(job_log), counters_, env_);
}

void JobRegistry::DropIdleLocked() {
  const absl::Time now = env_->Now();
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

absl::StatusOr<std::shared_ptr<Job>> JobRegistry::Find(const JobSpec& spec, bool resuming) {
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
    return absl::InvalidArgumentError(absl::StrCat(NameOf(spec), ": shot ", *d,
                                                   " is named twice"));
  }
  const uint64_t fingerprint = JobFingerprint(spec.shot_ids);
  const std::string key = KeyOf(spec);
  {
    absl::MutexLock lock(&mu_);
    DropIdleLocked();
    // Another Find is creating this job (its file's I/O runs without the lock): wait for it.
    Creating creating{&creating_, &key};
    mu_.Await(absl::Condition(&NotBeingCreated, &creating));
    auto it = jobs_.find(key);
    if (it != jobs_.end()) return CheckConsumer(spec, fingerprint, it->second);
    creating_.insert(key);
  }
  // The job's file is read (or made) without the registry's lock: other jobs' consumers
  // find theirs meanwhile.
  absl::StatusOr<std::shared_ptr<Job>> job = Create(spec, fingerprint, resuming);
  absl::MutexLock lock(&mu_);
  creating_.erase(key);
  if (!job.ok()) return job.status();
  jobs_.emplace(key, Entry{*job, fingerprint});
  return *job;
}

bool JobRegistry::NotBeingCreated(Creating* c) { return c->set->count(*c->key) == 0; }

absl::StatusOr<std::shared_ptr<Job>> JobRegistry::CheckConsumer(const JobSpec& spec,
                                                                      uint64_t fingerprint,
                                                                      const Entry& entry) {
  const JobSpec& held = entry.job->spec();
  if (entry.fingerprint != fingerprint) {
    return absl::FailedPreconditionError(absl::StrCat(
        NameOf(spec), ": its consumers disagree on the shot ids (", spec.shot_ids.size(),
        " ids here, ", held.shot_ids.size(), " in the job)"));
  }
  if (held.seed != spec.seed) {
    return absl::FailedPreconditionError(absl::StrCat(NameOf(spec),
                                                      ": its consumers disagree on the seed (",
                                                      spec.seed, " here, ", held.seed,
                                                      " in the job)"));
  }
  return entry.job;
}

absl::StatusOr<std::shared_ptr<Job>> JobRegistry::Held(const std::string& dataset,
                                                       const std::string& job, uint64_t epoch,
                                                       uint64_t seed) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(KeyOf(dataset, job, epoch));
  if (it == jobs_.end()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "commit: ", NameOf(dataset, job, epoch), " is not running on this server (it was "
        "never streamed here, or was dropped after job_idle_timeout, or the server "
        "restarted): stream it (with resume=) before committing"));
  }
  if (it->second.job->spec().seed != seed) {
    return absl::FailedPreconditionError(absl::StrCat(
        "commit: ", NameOf(dataset, job, epoch), " has seed ", it->second.job->spec().seed,
        ", not ", seed));
  }
  return it->second.job;
}

size_t JobRegistry::size() const {
  absl::MutexLock lock(&mu_);
  return jobs_.size();
}

}  // namespace shotstream::jobs

// Jobs: one epoch of a dataset's shots shared by every consumer that names the same
// (dataset, job, epoch). The shots go out in the epoch's permutation (EpochPermutation of
// the ids and the seed), each to one consumer at a time; a consumer holds at most its
// queue depth + 1 shots not yet done, so faster consumers take more. A consumer that
// leaves abnormally returns what it held to the queue (at-least-once, duplicates bounded
// by what it held); when every shot is done, every consumer's stream ends.
//
// Commits and resume (docs/epochs.md): a consumer commits the shots its model has trained
// on as of a step; they are done. A consumer that resumes from a step rolls the job back:
// the shots committed at steps <= it are done, every other shot is handed out again, the
// commits after it are forgotten, and the consumers from before end ABORTED. Consumers
// resuming from the same token while that rollback's consumers are connected and none has
// committed since join it instead. A job's lineage is the token it was last rolled back
// with (0: never); a commit from another lineage is ABORTED.
//
// With a job directory, the job's history is appended to DIR/DATASET.JOB.EPOCH.job: shots
// done (by a task on the registry's executor, never on the caller's thread), commits and
// rollbacks (written and synced before the call returns: call those where file I/O may
// run). A job created again (after a restart) replays its file.
//
// Thread-safe: every method of Job, JobLog and JobRegistry may be called from any thread.
// A Job's wake and abort callbacks are called without its lock held.
#ifndef SHOTSTREAM_SERVER_JOBS_JOB_REGISTRY_H_
#define SHOTSTREAM_SERVER_JOBS_JOB_REGISTRY_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/env/env.h"
#include "server/stream/executor.h"

namespace shotstream::jobs {

// What /metrics shows of the jobs. Atomics, safe to read at any time.
struct JobCounters {
  std::atomic<int64_t> jobs{0};           // jobs held now
  std::atomic<int64_t> shots_handed{0};   // shots handed to a consumer
  // Handed, then given back by a consumer that left, or that stalled (its read-ahead).
  std::atomic<int64_t> shots_returned{0};
  std::atomic<int64_t> shots_done{0};
  std::atomic<int64_t> commits{0};        // CommitJob calls recorded
  std::atomic<int64_t> rollbacks{0};      // resumes that rolled a job back
};

struct JobSpec {
  std::string dataset;
  std::string job;
  uint64_t epoch = 0;
  uint64_t seed = 0;
  std::vector<int64_t> shot_ids;  // any order; the permutation sorts them first
};

// What a job's file says happened, replayed (and what a live job keeps of it).
struct JobHistory {
  absl::flat_hash_set<int64_t> done;
  absl::flat_hash_map<int64_t, int64_t> committed;  // shot -> the step it was committed at
  std::set<int64_t> steps;                          // steps committed
  uint64_t lineage = 0;
  // Back to `step`: commits after it forgotten, done = what is committed.
  void RollBack(int64_t step);
};

// A job's file: Append queues a line and returns (one task at a time on the executor
// writes what is queued and flushes it to the page cache: it survives the process); Sync
// writes what is queued itself, then fdatasync: it survives the machine. Lines stay in the
// order they were appended. Thread-safe; the tasks keep it alive.
class JobLog : public std::enable_shared_from_this<JobLog> {
 public:
  // `executor` null: each Append writes at once (tests).
  JobLog(std::unique_ptr<env::WritableFile> file, std::string path, stream::Executor* executor)
      : file_(std::move(file)), path_(std::move(path)), executor_(executor) {}
  void Append(std::string line) ABSL_LOCKS_EXCLUDED(mu_);
  // Every line appended so far written and synced; UNAVAILABLE naming the file if not.
  absl::Status Sync() ABSL_LOCKS_EXCLUDED(mu_, file_mu_);
  // Returns once every line appended so far is written (tests, shutdown).
  void AwaitWritten() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Writes what is queued (under file_mu_): the file's error if it would not take it.
  absl::Status WriteQueued() ABSL_EXCLUSIVE_LOCKS_REQUIRED(file_mu_) ABSL_LOCKS_EXCLUDED(mu_);
  void Write() ABSL_LOCKS_EXCLUDED(mu_, file_mu_);
  bool Idle() const ABSL_SHARED_LOCKS_REQUIRED(mu_) { return !writing_ && queued_.empty(); }

  absl::Mutex file_mu_ ABSL_ACQUIRED_BEFORE(mu_);  // who writes the file
  std::unique_ptr<env::WritableFile> file_ ABSL_GUARDED_BY(file_mu_);
  const std::string path_;
  stream::Executor* const executor_;
  mutable absl::Mutex mu_;
  std::vector<std::string> queued_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;  // a task is queued or running
};

class Job {
 public:
  enum class Take { kShot, kWait, kEnd };

  // `history`: what the job's file says (empty for a new job). `log`: where to append
  // (may be null).
  // `clock` (an Env: its Now()) outlives the job.
  Job(JobSpec spec, std::vector<int64_t> permutation, JobHistory history,
      std::shared_ptr<JobLog> log, JobCounters* counters, env::Env* clock = env::Env::Default());
  ~Job();

  const JobSpec& spec() const { return spec_; }

  struct Resume {
    int64_t step = 0;
    uint64_t lineage = 0;  // wire::JobLineage of the token
  };
  // A new consumer; `wake` is called (without the lock) when a consumer that got kWait
  // may take again: a shot came back, a shot of its was done, or the job ended. `abort`
  // is called once if a rollback ends it. With `resume`: rolls the job back to its step,
  // or joins the open rollback from the same token (see the file comment);
  // FAILED_PRECONDITION when no commit at that step is on record (nothing changes).
  // `takeover` false: the consumer never waits for shots others hold (Next's kEnd).
  absl::StatusOr<int64_t> Join(std::function<void()> wake,
                               std::function<void(const absl::Status&)> abort,
                               const std::optional<Resume>& resume, bool takeover = true)
      ABSL_LOCKS_EXCLUDED(mu_);
  int64_t Join(std::function<void()> wake) ABSL_LOCKS_EXCLUDED(mu_) {
    return *Join(std::move(wake), nullptr, std::nullopt);
  }
  // FAILED_PRECONDITION unless a commit at `step` is on record (a resume's early check).
  absl::Status CheckStep(int64_t step) const ABSL_LOCKS_EXCLUDED(mu_);
  // The next shot for `consumer` (kShot, `*shot_id` set): shots given back first, then the
  // permutation's next; kWait while the consumer holds `limit` shots not done, every shot
  // left is held by others, or a rollback ended it; kEnd once every shot is done (or for
  // a consumer that left), and for one joined without takeover once it holds nothing and
  // nothing is left to hand out.
  Take Next(int64_t consumer, size_t limit, int64_t* shot_id) ABSL_LOCKS_EXCLUDED(mu_);
  // The consumer is done with a shot it was handed.
  void Done(int64_t consumer, int64_t shot_id) ABSL_LOCKS_EXCLUDED(mu_);
  // The consumer is gone; what it held and had not done goes back to the queue.
  void Leave(int64_t consumer) ABSL_LOCKS_EXCLUDED(mu_);
  // The consumer gives back shots it holds and has not begun to send (it stalled): they
  // go back to the queue, first in line (in their order), for any consumer.
  void GiveBack(int64_t consumer, const std::vector<int64_t>& shot_ids) ABSL_LOCKS_EXCLUDED(mu_);

  // Records that a model of `lineage` trained on `shot_ids` as of `step`; they are done.
  // Returns once durable (the job file synced). ABORTED for another lineage than the
  // job's; FAILED_PRECONDITION for a step before one committed; INVALID_ARGUMENT for an
  // id not in the job (nothing recorded then).
  struct Committed {
    uint64_t shots_committed = 0;
    uint64_t shots_left = 0;
  };
  absl::StatusOr<Committed> Commit(int64_t step, const std::vector<int64_t>& shot_ids,
                                   uint64_t lineage) ABSL_LOCKS_EXCLUDED(mu_);

  bool idle_since(absl::Time* since) const ABSL_LOCKS_EXCLUDED(mu_);
  size_t shots_left() const ABSL_LOCKS_EXCLUDED(mu_);  // not done

 private:
  struct Consumer {
    std::function<void()> wake;
    std::function<void(const absl::Status&)> abort;
    std::vector<int64_t> held;  // handed, not done
    uint64_t lineage = 0;
    bool aborted = false;  // by a rollback: takes nothing more
    bool takeover = true;  // waits for shots others hold (false: ends instead)
  };
  void WakeAll(std::vector<std::function<void()>>* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The shot is done (once): off the holders and the count.
  void MarkDoneLocked(int64_t shot_id, std::vector<std::function<void()>>* wake)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status StepStatusLocked(int64_t step) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  bool RollbackOpenLocked(uint64_t lineage) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  void RollBackLocked(const Resume& resume,
                      std::vector<std::function<void(const absl::Status&)>>* aborts)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string Name() const;

  const JobSpec spec_;
  const std::vector<int64_t> order_;  // the epoch's permutation
  const absl::flat_hash_set<int64_t> in_job_;
  JobCounters* const counters_;
  mutable absl::Mutex mu_;
  size_t cursor_ ABSL_GUARDED_BY(mu_) = 0;            // next of order_ never handed
  std::deque<int64_t> returned_ ABSL_GUARDED_BY(mu_);  // given back, to hand first
  JobHistory history_ ABSL_GUARDED_BY(mu_);            // done, committed, lineage
  bool rollback_open_ ABSL_GUARDED_BY(mu_) = false;    // joinable by the same token
  size_t left_ ABSL_GUARDED_BY(mu_) = 0;               // shots not done
  std::map<int64_t, Consumer> consumers_ ABSL_GUARDED_BY(mu_);
  int64_t next_consumer_ ABSL_GUARDED_BY(mu_) = 0;
  env::Env* const clock_;
  absl::Time idle_since_ ABSL_GUARDED_BY(mu_);
  const std::shared_ptr<JobLog> log_;  // null without a job directory
};

class JobRegistry {
 public:
  // `job_dir`: where progress is kept (empty: in memory only), its files written on
  // `executor` (null: by the caller). Jobs with no consumer for `idle_timeout` are dropped
  // (their file stays). Files and time through `env` (outlives the registry).
  JobRegistry(std::string job_dir, absl::Duration idle_timeout, JobCounters* counters,
              stream::Executor* executor = nullptr, env::Env* env = env::Env::Default())
      : job_dir_(std::move(job_dir)),
        idle_timeout_(idle_timeout),
        counters_(counters),
        executor_(executor),
        env_(env) {}

  // The job of (dataset, job, epoch), created at its first consumer (reading its file:
  // call it where file I/O may run). FAILED_PRECONDITION naming the job when `spec`
  // disagrees with the job's shot ids or seed (or with its file's); INVALID_ARGUMENT for a
  // job name that is not [A-Za-z0-9_.-]+. `resuming`: a job that is neither held nor on
  // file is FAILED_PRECONDITION (nothing to resume) instead of created.
  absl::StatusOr<std::shared_ptr<Job>> Find(const JobSpec& spec, bool resuming = false)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The job held now for (dataset, job, epoch) with `seed`, for a commit (no ids given:
  // none is created). FAILED_PRECONDITION when there is none or its seed differs.
  absl::StatusOr<std::shared_ptr<Job>> Held(const std::string& dataset, const std::string& job,
                                            uint64_t epoch, uint64_t seed)
      ABSL_LOCKS_EXCLUDED(mu_);

  size_t size() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  std::string PathOf(const JobSpec& spec) const;
  absl::StatusOr<std::shared_ptr<Job>> Create(const JobSpec& spec, uint64_t fingerprint,
                                              bool resuming);
  void DropIdleLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  struct Entry {
    std::shared_ptr<Job> job;
    uint64_t fingerprint;  // of the sorted ids
  };
  // The held job `entry` for a consumer of `spec`: FAILED_PRECONDITION where they disagree.
  static absl::StatusOr<std::shared_ptr<Job>> CheckConsumer(const JobSpec& spec,
                                                                  uint64_t fingerprint,
                                                                  const Entry& entry);
  // For mu_.Await: no Find is creating the job of key `key` (in `set`, creating_).
  struct Creating {
    const std::set<std::string>* set;
    const std::string* key;
  };
  static bool NotBeingCreated(Creating* c);

  const std::string job_dir_;
  const absl::Duration idle_timeout_;
  JobCounters* const counters_;
  stream::Executor* const executor_;
  env::Env* const env_;
  mutable absl::Mutex mu_;
  std::map<std::string, Entry> jobs_ ABSL_GUARDED_BY(mu_);
  // Jobs a Find is creating now, their files read or made without mu_ (by key).
  std::set<std::string> creating_ ABSL_GUARDED_BY(mu_);
};

// The fingerprint of a job's ids, order-free: consumers must agree on it (and on the seed).
uint64_t JobFingerprint(std::vector<int64_t> shot_ids);

}  // namespace shotstream::jobs

#endif  // SHOTSTREAM_SERVER_JOBS_JOB_REGISTRY_H_

// Jobs: one epoch of a dataset's shots shared by every consumer that names the same
// (dataset, job, epoch). The shots go out in the epoch's permutation (EpochPermutation of
// the ids and the seed), each to one consumer at a time; a consumer holds at most its
// queue depth + 1 shots not yet done, so faster consumers take more. A consumer that
// leaves abnormally returns what it held to the queue (at-least-once, duplicates bounded
// by what it held); when every shot is done, every consumer's stream ends.
//
// With a job directory, each shot done is appended to DIR/DATASET.JOB.EPOCH.job (by a task
// on the registry's executor, never on the caller's thread: the caller may be a gRPC
// reaction), and a job created again (after a restart) resumes without the shots recorded
// there. A shot done but not yet written when the server dies is done again after it.
//
// Thread-safe: every method of Job and JobRegistry may be called from any thread. A Job's
// wake callbacks are called without its lock held.
#ifndef SHOTSTREAM_SERVER_JOBS_JOB_REGISTRY_H_
#define SHOTSTREAM_SERVER_JOBS_JOB_REGISTRY_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/stream/executor.h"

namespace shotstream::jobs {

// What /metrics shows of the jobs. Atomics, safe to read at any time.
struct JobCounters {
  std::atomic<int64_t> jobs{0};           // jobs held now
  std::atomic<int64_t> shots_handed{0};   // shots handed to a consumer
  // Handed, then given back by a consumer that left, or that stalled (its read-ahead).
  std::atomic<int64_t> shots_returned{0};
  std::atomic<int64_t> shots_done{0};
};

struct JobSpec {
  std::string dataset;
  std::string job;
  uint64_t epoch = 0;
  uint64_t seed = 0;
  std::vector<int64_t> shot_ids;  // any order; the permutation sorts them first
};

// A job's file of shots done: Append queues a line and returns; one task at a time on the
// executor writes what is queued and flushes it (to the page cache: it survives the
// process). Thread-safe; the tasks keep it alive.
class JobLog : public std::enable_shared_from_this<JobLog> {
 public:
  // `executor` null: each Append writes at once (tests).
  JobLog(std::unique_ptr<std::FILE, int (*)(std::FILE*)> file, stream::Executor* executor)
      : file_(std::move(file)), executor_(executor) {}
  void Append(int64_t shot_id) ABSL_LOCKS_EXCLUDED(mu_);
  // Returns once every line appended so far is written (tests, shutdown).
  void AwaitWritten() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Write() ABSL_LOCKS_EXCLUDED(mu_);
  bool Idle() const ABSL_SHARED_LOCKS_REQUIRED(mu_) { return !writing_; }

  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file_;  // the writing task's alone
  stream::Executor* const executor_;
  mutable absl::Mutex mu_;
  std::vector<int64_t> queued_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;  // a task is queued or running
};

class Job {
 public:
  enum class Take { kShot, kWait, kEnd };

  // `done`: shots already done (from the job's file). `log`: where to append shots done
  // (may be null).
  Job(JobSpec spec, std::vector<int64_t> permutation, const std::vector<int64_t>& done,
      std::shared_ptr<JobLog> log, JobCounters* counters);
  ~Job();

  const JobSpec& spec() const { return spec_; }

  // A new consumer; `wake` is called (without the lock) when a consumer that got kWait
  // may take again: a shot came back, a shot of its was done, or the job ended.
  int64_t Join(std::function<void()> wake) ABSL_LOCKS_EXCLUDED(mu_);
  // The next shot for `consumer` (kShot, `*shot_id` set): shots given back first, then the
  // permutation's next; kWait while the consumer holds `limit` shots not done or every
  // shot left is held by others; kEnd once every shot is done (or for a consumer that left).
  Take Next(int64_t consumer, size_t limit, int64_t* shot_id) ABSL_LOCKS_EXCLUDED(mu_);
  // The consumer is done with a shot it was handed.
  void Done(int64_t consumer, int64_t shot_id) ABSL_LOCKS_EXCLUDED(mu_);
  // The consumer is gone; what it held and had not done goes back to the queue.
  void Leave(int64_t consumer) ABSL_LOCKS_EXCLUDED(mu_);
  // The consumer gives back shots it holds and has not begun to send (it stalled): they
  // go back to the queue, first in line (in their order), for any consumer.
  void GiveBack(int64_t consumer, const std::vector<int64_t>& shot_ids) ABSL_LOCKS_EXCLUDED(mu_);

  bool idle_since(absl::Time* since) const ABSL_LOCKS_EXCLUDED(mu_);
  size_t shots_left() const ABSL_LOCKS_EXCLUDED(mu_);  // not done

 private:
  void WakeAll(std::vector<std::function<void()>>* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const JobSpec spec_;
  const std::vector<int64_t> order_;  // the epoch's permutation
  JobCounters* const counters_;
  mutable absl::Mutex mu_;
  size_t cursor_ ABSL_GUARDED_BY(mu_) = 0;            // next of order_ never handed
  std::deque<int64_t> returned_ ABSL_GUARDED_BY(mu_);  // given back, to hand first
  absl::flat_hash_map<int64_t, uint32_t> done_ ABSL_GUARDED_BY(mu_);  // id -> times done
  size_t left_ ABSL_GUARDED_BY(mu_) = 0;               // shots not done
  struct Consumer {
    std::function<void()> wake;
    std::vector<int64_t> held;  // handed, not done
  };
  std::map<int64_t, Consumer> consumers_ ABSL_GUARDED_BY(mu_);
  int64_t next_consumer_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time idle_since_ ABSL_GUARDED_BY(mu_);
  const std::shared_ptr<JobLog> log_;  // null without a job directory
};

class JobRegistry {
 public:
  // `job_dir`: where progress is kept (empty: in memory only), its files written on
  // `executor` (null: by the caller). Jobs with no consumer for `idle_timeout` are dropped
  // (their file stays).
  JobRegistry(std::string job_dir, absl::Duration idle_timeout, JobCounters* counters,
              stream::Executor* executor = nullptr)
      : job_dir_(std::move(job_dir)),
        idle_timeout_(idle_timeout),
        counters_(counters),
        executor_(executor) {}

  // The job of (dataset, job, epoch), created at its first consumer (reading its file:
  // call it where file I/O may run). FAILED_PRECONDITION naming the job when `spec`
  // disagrees with the job's shot ids or seed (or with its file's); INVALID_ARGUMENT for a
  // job name that is not [A-Za-z0-9_.-]+.

  absl::StatusOr<std::shared_ptr<Job>> Find(const JobSpec& spec) ABSL_LOCKS_EXCLUDED(mu_);

  size_t size() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  std::string PathOf(const JobSpec& spec) const;
  absl::StatusOr<std::shared_ptr<Job>> Create(const JobSpec& spec, uint64_t fingerprint);
  void DropIdleLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string job_dir_;
  const absl::Duration idle_timeout_;
  JobCounters* const counters_;
  stream::Executor* const executor_;
  mutable absl::Mutex mu_;
  struct Entry {
    std::shared_ptr<Job> job;
    uint64_t fingerprint;  // of the sorted ids
  };
  std::map<std::string, Entry> jobs_ ABSL_GUARDED_BY(mu_);
};

// The fingerprint of a job's ids, order-free: consumers must agree on it (and on the seed).
uint64_t JobFingerprint(std::vector<int64_t> shot_ids);

}  // namespace shotstream::jobs

#endif  // SHOTSTREAM_SERVER_JOBS_JOB_REGISTRY_H_

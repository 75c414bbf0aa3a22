#include "server/jobs/job_registry.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <fstream>
#include <functional>
#include <set>
#include <vector>

#include "shotstream/common/epoch_shots.h"
#include "gtest/gtest.h"
#include "server/env/fault_env.h"
#include "server/env/mem_env.h"

namespace shotstream::jobs {
namespace {

JobSpec Spec(int n, uint64_t seed = 7, std::string job = "fwi") {
  JobSpec s;
  s.dataset = "line1";
  s.job = std::move(job);
  s.epoch = 3;
  s.seed = seed;
  for (int i = 1; i <= n; ++i) s.shot_ids.push_back(i * 10);
  return s;
}

std::string Dir() {
  const char* d = std::getenv("TEST_TMPDIR");
  return d ? d : "/tmp";
}

TEST(JobTest, HandsTheEpochsPermutationOnceEachAndEndsWhenAllAreDone) {
  JobCounters counters;
  JobRegistry registry("", absl::Minutes(10), &counters);
  auto job = registry.Find(Spec(20));
  ASSERT_TRUE(job.ok()) << job.status();
  int wakes = 0;
  const int64_t a = (*job)->Join([&] { ++wakes; });
  const int64_t b = (*job)->Join([] {});
  std::vector<int64_t> order;
  int64_t id;
  // Each takes up to its limit, then waits until it is done with one.
  for (int k = 0; k < 3; ++k) {
    ASSERT_EQ((*job)->Next(a, 3, &id), Job::Take::kShot);
    order.push_back(id);
  }
  EXPECT_EQ((*job)->Next(a, 3, &id), Job::Take::kWait);
  (*job)->Done(a, order[0]);
  EXPECT_EQ(wakes, 1);
  std::set<int64_t> seen(order.begin(), order.end());
  for (;;) {
    Job::Take t = (*job)->Next(b, 100, &id);
    if (t != Job::Take::kShot) {
      EXPECT_EQ(t, Job::Take::kWait);  // a still holds two
      break;
    }
    EXPECT_TRUE(seen.insert(id).second);
    order.push_back(id);
    (*job)->Done(b, id);
  }
  EXPECT_EQ(seen.size(), 20u);
  EXPECT_EQ(order, EpochPermutation(Spec(20).shot_ids, 3, 7));  // in the epoch's order
  (*job)->Done(a, order[1]);
  (*job)->Done(a, order[2]);
  EXPECT_EQ((*job)->Next(b, 100, &id), Job::Take::kEnd);
  EXPECT_EQ((*job)->Next(a, 3, &id), Job::Take::kEnd);
  EXPECT_EQ(counters.shots_done, 20);
  EXPECT_EQ(counters.shots_handed, 20);
}

TEST(JobTest, AConsumerWithoutTakeoverEndsInsteadOfWaitingForOthersShots) {
  JobCounters counters;
  JobRegistry registry("", absl::Minutes(10), &counters);
  auto job = registry.Find(Spec(4));
  ASSERT_TRUE(job.ok()) << job.status();
  // Two DataLoader workers: b must not wait for the shot a holds (a's loader waits on b).
  const int64_t a = *(*job)->Join([] {}, nullptr, std::nullopt, /*takeover=*/false);
  const int64_t b = *(*job)->Join([] {}, nullptr, std::nullopt, /*takeover=*/false);
  const int64_t c = *(*job)->Join([] {}, nullptr, std::nullopt, /*takeover=*/false);
  int64_t held_by_a, id;
  ASSERT_EQ((*job)->Next(a, 2, &held_by_a), Job::Take::kShot);
  std::set<int64_t> seen{held_by_a};
  for (int k = 0; k < 3; ++k) {
    ASSERT_EQ((*job)->Next(b, 2, &id), Job::Take::kShot);
    EXPECT_TRUE(seen.insert(id).second);
    if (k < 2) {
      (*job)->Done(b, id);
    }
  }
  EXPECT_EQ((*job)->Next(b, 2, &id), Job::Take::kWait) << "b is not done with its last";
  (*job)->Done(b, id);
  EXPECT_EQ((*job)->Next(b, 2, &id), Job::Take::kEnd) << "the rest is a's: b ends";
  // A shot given back (a consumer died) is still taken by one that has not ended.
  (*job)->Leave(a);
  ASSERT_EQ((*job)->Next(c, 2, &id), Job::Take::kShot);
  EXPECT_EQ(id, held_by_a);
  (*job)->Done(c, id);
  EXPECT_EQ((*job)->Next(c, 2, &id), Job::Take::kEnd);
  EXPECT_EQ(counters.shots_done, 4);
  EXPECT_EQ(seen.size(), 4u);
}

TEST(JobTest, AConsumerThatLeavesGivesBackWhatItHeld) {
  JobCounters counters;
  JobRegistry registry("", absl::Minutes(10), &counters);
  auto job = *registry.Find(Spec(5));
  const int64_t a = job->Join([] {});
  int woken = 0;
  const int64_t b = job->Join([&] { ++woken; });
  int64_t x, y, z;
  ASSERT_EQ(job->Next(a, 2, &x), Job::Take::kShot);
  ASSERT_EQ(job->Next(a, 2, &y), Job::Take::kShot);
  job->Done(a, x);
  job->Leave(a);  // died holding y
  EXPECT_EQ(woken, 1);
  EXPECT_EQ(counters.shots_returned, 1);
  ASSERT_EQ(job->Next(b, 10, &z), Job::Take::kShot);
  EXPECT_EQ(z, y);  // what came back goes first
  EXPECT_EQ(job->shots_left(), 4u);
}

TEST(JobTest, AStalledConsumerGivesBackWhatItHasNotSentFirstInLineInOrder) {
  JobCounters counters;
  JobRegistry registry("", absl::Minutes(10), &counters);
  auto job = *registry.Find(Spec(6));
  const int64_t a = job->Join([] {});
  int woken = 0;
  const int64_t b = job->Join([&] { ++woken; });
  std::vector<int64_t> held(4);
  for (int64_t& id : held) ASSERT_EQ(job->Next(a, 4, &id), Job::Take::kShot);
  EXPECT_EQ(job->Next(a, 4, &held[0]), Job::Take::kWait);
  job->GiveBack(a, {held[2], held[3], 12345});  // read ahead, not sent; one never held
  EXPECT_EQ(woken, 1);
  EXPECT_EQ(counters.shots_returned, 2);
  int64_t id;
  ASSERT_EQ(job->Next(b, 10, &id), Job::Take::kShot);
  EXPECT_EQ(id, held[2]);
  ASSERT_EQ(job->Next(b, 10, &id), Job::Take::kShot);
  EXPECT_EQ(id, held[3]);
  ASSERT_EQ(job->Next(a, 4, &id), Job::Take::kShot) << "a holds two now";
  job->GiveBack(a, {held[0]});
  job->Done(a, held[0]);  // given back: no longer a's to be done with
  EXPECT_EQ(job->shots_left(), 6u);
}

TEST(JobRegistryTest, ConsumersMustAgreeAndJobNamesAreChecked) {
  JobCounters counters;
  JobRegistry registry("", absl::Minutes(10), &counters);
  ASSERT_TRUE(registry.Find(Spec(5)).ok());
  auto ids = registry.Find(Spec(6));
  EXPECT_EQ(ids.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(ids.status().message().find("job 'fwi'"), absl::string_view::npos);
  EXPECT_NE(ids.status().message().find("shot ids"), absl::string_view::npos);
  auto seed = registry.Find(Spec(5, 8));
  EXPECT_EQ(seed.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(seed.status().message().find("seed"), absl::string_view::npos);
  EXPECT_EQ(registry.Find(Spec(5, 7, "../x")).status().code(),
            absl::StatusCode::kInvalidArgument);
  JobSpec twice = Spec(3);
  twice.shot_ids.push_back(10);
  EXPECT_EQ(registry.Find(twice).status().code(), absl::StatusCode::kInvalidArgument);
  // Another epoch is another job.
  JobSpec next = Spec(6);
  next.epoch = 4;
  EXPECT_TRUE(registry.Find(next).ok());
  EXPECT_EQ(registry.size(), 2u);
}

TEST(JobRegistryTest, IdleJobsExpire) {
  JobCounters counters;
  JobRegistry registry("", absl::ZeroDuration(), &counters);
  {
    auto job = *registry.Find(Spec(5));
    job->Leave(job->Join([] {}));
  }
  ASSERT_TRUE(registry.Find(Spec(3, 7, "other")).ok());  // the first expired on this call
  EXPECT_EQ(registry.size(), 1u);
  EXPECT_EQ(counters.jobs, 1);
}

TEST(JobRegistryTest, AJobDirectoryResumesWithoutTheShotsDone) {
  const std::string dir = Dir() + "/jobs";
  std::system(("rm -rf " + dir + " && mkdir -p " + dir).c_str());
  std::set<int64_t> done;
  {
    JobCounters counters;
    JobRegistry registry(dir, absl::Minutes(10), &counters);
    auto job = *registry.Find(Spec(10));
    const int64_t c = job->Join([] {});
    int64_t id;
    for (int k = 0; k < 4; ++k) {
      ASSERT_EQ(job->Next(c, 10, &id), Job::Take::kShot);
      job->Done(c, id);
      done.insert(id);
    }
    ASSERT_EQ(job->Next(c, 10, &id), Job::Take::kShot);  // handed, not done: a crash now
  }
  // A torn last line (the crash mid-write) is ignored.
  std::ofstream(dir + "/line1.fwi.3.job", std::ios::app) << "done 9";
  JobCounters counters;
  JobRegistry registry(dir, absl::Minutes(10), &counters);
  auto job = registry.Find(Spec(10));
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ((*job)->shots_left(), 6u);
  const int64_t c = (*job)->Join([] {});
  int64_t id;
  std::set<int64_t> rest;
  while ((*job)->Next(c, 10, &id) == Job::Take::kShot) {
    EXPECT_EQ(done.count(id), 0u) << id;
    rest.insert(id);
    (*job)->Done(c, id);
  }
  EXPECT_EQ(rest.size(), 6u);
  // Another seed is another job: its file's header says so.
  JobRegistry again(dir, absl::Minutes(10), &counters);
  auto other = again.Find(Spec(10, 99));
  EXPECT_EQ(other.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(other.status().message().find("line1.fwi.3.job"), absl::string_view::npos);
}

// Runs tasks only when told (the disk executor of a server).
class ManualExecutor final : public stream::Executor {
 public:
  void Submit(std::function<void()> task) override { tasks_.push_back(std::move(task)); }
  size_t pending() const { return tasks_.size(); }
  void RunAll() {
    while (!tasks_.empty()) {
      auto task = std::move(tasks_.front());
      tasks_.erase(tasks_.begin());
      task();
    }
  }

 private:
  std::vector<std::function<void()>> tasks_;
};

std::string Read(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Done shots reach the job's file from a task on the executor, never from Done's caller;
// shots done while a write is queued go in that one write.
// A job whose file blocks its read (a FIFO no one writes yet) holds up only its own
// consumer: another job is found meanwhile; then the blocked one gets its answer.
TEST(JobRegistryTest, AJobFilesIoHoldsNoLockOverOtherJobs) {
  const std::string dir = Dir() + "/jobs_fifo";
  std::system(("rm -rf " + dir + " && mkdir -p " + dir).c_str());
  const std::string fifo = dir + "/line1.slow.3.job";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  JobCounters counters;
  JobRegistry registry(dir, absl::Minutes(10), &counters);
  auto slow = std::async(std::launch::async, [&] { return registry.Find(Spec(5, 7, "slow")); });
  auto other = std::async(std::launch::async, [&] { return registry.Find(Spec(5, 7, "fast")); });
  ASSERT_EQ(other.wait_for(std::chrono::seconds(30)), std::future_status::ready)
      << "another job's Find waited on the blocked job's file";
  ASSERT_TRUE(other.get().ok());
  EXPECT_EQ(registry.size(), 1u);  // the blocked job is not held yet
  // The FIFO's writer: not a job file, so the blocked consumer's answer is an error
  // naming it (a FIFO cannot be read at an offset; a regular one would record another job).
  ::signal(SIGPIPE, SIG_IGN);  // the reader may close the FIFO before this writes
  { std::ofstream(fifo) << "not a job header\n"; }
  absl::StatusOr<std::shared_ptr<Job>> a = slow.get();
  EXPECT_EQ(a.status().code(), absl::StatusCode::kFailedPrecondition) << a.status();
  EXPECT_NE(a.status().message().find("line1.slow.3.job"), std::string::npos) << a.status();
  EXPECT_EQ(registry.size(), 1u);
}

// The job file through an in-memory Env: progress survives a new registry (a restart),
// and a line torn by a crash is neither replayed nor left to corrupt the next append.
TEST(JobFileTest, AJobResumesFromItsFileAndATornLineIsCut) {
  env::MemEnv mem;
  std::set<int64_t> done;
  {
    JobCounters counters;
    JobRegistry registry("/jobs", absl::Minutes(10), &counters, nullptr, &mem);
    auto job = *registry.Find(Spec(10));
    const int64_t c = job->Join([] {});
    int64_t id;
    for (int k = 0; k < 4; ++k) {
      ASSERT_EQ(job->Next(c, 10, &id), Job::Take::kShot);
      job->Done(c, id);
      done.insert(id);
    }
  }
  const std::string path = "/jobs/line1.fwi.3.job";
  {
    auto torn = mem.OpenWrite(path, env::WriteMode::kAppend);
    ASSERT_TRUE((*torn)->Append("done 9").ok());  // the crash mid-line
  }
  JobCounters counters;
  JobRegistry registry("/jobs", absl::Minutes(10), &counters, nullptr, &mem);
  auto job = registry.Find(Spec(10));
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ((*job)->shots_left(), 6u);
  const std::string file = *env::ReadFileToString(&mem, path);
  EXPECT_EQ(file.back(), '\n');
  EXPECT_EQ(file.find("done 9\n"), std::string::npos);
  EXPECT_EQ(file.find("done 9", file.size() - 7), std::string::npos);
}

// No space for a new job's file: the consumer hears FAILED_PRECONDITION naming the file.
TEST(JobFileTest, NoSpaceForTheJobFileIsAnErrorNamingIt) {
  env::MemEnv mem;
  env::FaultEnv faults(&mem);
  faults.Inject(env::Fault::kNoSpace, ".job");
  JobCounters counters;
  JobRegistry registry("/jobs", absl::Minutes(10), &counters, nullptr, &faults);
  auto job = registry.Find(Spec(5));
  EXPECT_EQ(job.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(job.status().message().find("/jobs/line1.fwi.3.job"), std::string::npos)
      << job.status();
  EXPECT_NE(job.status().message().find("No space"), std::string::npos);
  EXPECT_EQ(registry.size(), 0u);
}

// A commit is durable before it returns: a sync that fails is UNAVAILABLE (retry), naming
// the job file.
TEST(JobFileTest, ACommitWhoseSyncFailsIsUnavailable) {
  env::MemEnv mem;
  env::FaultEnv faults(&mem);
  JobCounters counters;
  JobRegistry registry("/jobs", absl::Minutes(10), &counters, nullptr, &faults);
  auto job = *registry.Find(Spec(5));
  const int64_t c = job->Join([] {});
  int64_t id;
  ASSERT_EQ(job->Next(c, 10, &id), Job::Take::kShot);
  faults.Inject(env::Fault::kSyncError, ".job", 0, 1);
  auto committed = job->Commit(1, {id}, 0);
  EXPECT_EQ(committed.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(committed.status().message().find("line1.fwi.3.job"), std::string::npos)
      << committed.status();
  EXPECT_TRUE(job->Commit(2, {id}, 0).ok());  // the next sync goes through
}

// A job file that cannot be read is an error, never taken for a missing file (which would
// start the job afresh over its progress).
TEST(JobFileTest, AnUnreadableJobFileIsNotStartedAfresh) {
  env::MemEnv mem;
  env::FaultEnv faults(&mem);
  {
    JobCounters counters;
    JobRegistry registry("/jobs", absl::Minutes(10), &counters, nullptr, &mem);
    auto job = *registry.Find(Spec(5));
    const int64_t c = job->Join([] {});
    int64_t id;
    ASSERT_EQ(job->Next(c, 10, &id), Job::Take::kShot);
    job->Done(c, id);
  }
  const std::string before = *env::ReadFileToString(&mem, "/jobs/line1.fwi.3.job");
  faults.Inject(env::Fault::kOpenError, ".job", 0, 1);
  JobCounters counters;
  JobRegistry registry("/jobs", absl::Minutes(10), &counters, nullptr, &faults);
  auto job = registry.Find(Spec(5));
  EXPECT_EQ(job.status().code(), absl::StatusCode::kFailedPrecondition) << job.status();
  EXPECT_NE(job.status().message().find("cannot read its job file"), std::string::npos);
  EXPECT_EQ(*env::ReadFileToString(&mem, "/jobs/line1.fwi.3.job"), before);
  EXPECT_EQ((*registry.Find(Spec(5)))->shots_left(), 4u);  // read on the next try
}

// Idle jobs expire by the Env's clock, not the wall's.
TEST(JobFileTest, IdleJobsExpireByTheEnvsClock) {
  env::MemEnv mem;
  JobCounters counters;
  JobRegistry registry("", absl::Minutes(1), &counters, nullptr, &mem);
  {
    auto job = *registry.Find(Spec(5));
    job->Leave(job->Join([] {}));
  }
  ASSERT_TRUE(registry.Find(Spec(3, 7, "other")).ok());
  EXPECT_EQ(registry.size(), 2u);
  mem.Advance(absl::Minutes(2));
  ASSERT_TRUE(registry.Find(Spec(3, 7, "third")).ok());
  EXPECT_EQ(registry.size(), 1u);
}

TEST(JobRegistryTest, TheJobFileIsWrittenOnTheExecutorNotByTheCaller) {
  const std::string dir = Dir() + "/jobs_async";
  std::system(("rm -rf " + dir + " && mkdir -p " + dir).c_str());
  ManualExecutor disk;
  JobCounters counters;
  JobRegistry registry(dir, absl::Minutes(10), &counters, &disk);
  auto job = *registry.Find(Spec(5));
  const std::string path = dir + "/line1.fwi.3.job";
  const std::string header = Read(path);
  ASSERT_NE(header.find("shotstream job v1"), std::string::npos);
  const int64_t c = job->Join([] {});
  std::vector<int64_t> ids(3);
  for (int64_t& id : ids) ASSERT_EQ(job->Next(c, 10, &id), Job::Take::kShot);
  job->Done(c, ids[0]);
  job->Done(c, ids[1]);
  EXPECT_EQ(Read(path), header) << "nothing written by Done itself";
  EXPECT_EQ(disk.pending(), 1u) << "one write for both";
  disk.RunAll();
  EXPECT_EQ(Read(path), header + "done " + std::to_string(ids[0]) + "\ndone " +
                            std::to_string(ids[1]) + "\n");
  job->Done(c, ids[2]);
  EXPECT_EQ(disk.pending(), 1u);
  disk.RunAll();
  EXPECT_NE(Read(path).find("done " + std::to_string(ids[2])), std::string::npos);
  EXPECT_EQ(disk.pending(), 0u);
}


// Takes and finishes `n` shots for consumer `c`; their ids.
std::vector<int64_t> TakeDone(Job* job, int64_t c, int n) {
  std::vector<int64_t> out;
  int64_t id;
  for (int k = 0; k < n && job->Next(c, 100, &id) == Job::Take::kShot; ++k) {
    job->Done(c, id);
    out.push_back(id);
  }
  return out;
}

// Everything `c` can take to the end of the job.
std::vector<int64_t> Drain(Job* job, int64_t c) { return TakeDone(job, c, 1 << 20); }

// Committed shots stay done; a resume to the commit's step hands out every other shot,
// once, and ends the consumers from before with ABORTED.
TEST(JobResumeTest, ARollbackHandsOutExactlyWhatWasNotCommitted) {
  JobCounters counters;
  JobRegistry registry("", absl::Minutes(10), &counters);
  auto job = *registry.Find(Spec(20));
  absl::Status aborted;
  const int64_t a = *job->Join([] {}, [&](const absl::Status& s) { aborted = s; }, std::nullopt);
  std::vector<int64_t> trained = TakeDone(job.get(), a, 6);
  auto c1 = job->Commit(10, trained, 0);
  ASSERT_TRUE(c1.ok()) << c1.status();
  EXPECT_EQ(c1->shots_committed, 6u);
  std::vector<int64_t> lost = TakeDone(job.get(), a, 5);  // done, never committed
  int64_t held;
  ASSERT_EQ(job->Next(a, 100, &held), Job::Take::kShot);
  EXPECT_EQ(job->shots_left(), 9u);

  const int64_t b = *job->Join([] {}, nullptr, Job::Resume{10, 77});
  EXPECT_EQ(aborted.code(), absl::StatusCode::kAborted);
  EXPECT_NE(aborted.message().find("resumed from step 10"), absl::string_view::npos);
  int64_t id;
  EXPECT_EQ(job->Next(a, 100, &id), Job::Take::kWait) << "an aborted consumer takes nothing";
  std::vector<int64_t> rest = Drain(job.get(), b);
  std::set<int64_t> all(trained.begin(), trained.end());
  for (int64_t r : rest) EXPECT_TRUE(all.insert(r).second) << r;
  EXPECT_EQ(all.size(), 20u);
  EXPECT_EQ(rest.size(), 14u);
  EXPECT_EQ(counters.rollbacks, 1);
}

// A commit that marks the shot its consumer still held done (a lockstep rank commits its
// last yielded shot before asking for the next) wakes that consumer: without takeover it
// may now end, and no later Done (for a shot already done) would wake it.
TEST(JobResumeTest, ACommitOfAHeldShotWakesItsConsumer) {
  JobCounters counters;
  JobRegistry registry("", absl::Minutes(10), &counters);
  auto job = *registry.Find(Spec(2));
  int woken_a = 0;
  const int64_t a = *job->Join([&] { ++woken_a; }, nullptr, std::nullopt, /*takeover=*/false);
  const int64_t b = *job->Join([] {}, nullptr, std::nullopt, /*takeover=*/false);
  int64_t mine, theirs, id;
  ASSERT_EQ(job->Next(a, 2, &mine), Job::Take::kShot);
  ASSERT_EQ(job->Next(b, 2, &theirs), Job::Take::kShot);
  EXPECT_EQ(job->Next(a, 2, &id), Job::Take::kWait) << "a holds its shot, none left";
  ASSERT_TRUE(job->Commit(1, {mine}, 0).ok());
  EXPECT_EQ(woken_a, 1) << "the commit took a's last held shot: a is woken";
  EXPECT_EQ(job->Next(a, 2, &id), Job::Take::kEnd) << "a holds nothing, nothing is left";
  job->Done(a, mine);  // the consumer's own done for it comes later: a no-op
  EXPECT_EQ(job->shots_left(), 1u);
}

// A second consumer with the same token joins the open rollback; after a commit, or once
// every consumer of it is gone, the same token rolls back anew.
TEST(JobResumeTest, TheSameTokenJoinsAnOpenRollbackAndRollsBackAfterACommit) {
  JobCounters counters;
  JobRegistry registry("", absl::Minutes(10), &counters);
  auto job = *registry.Find(Spec(30));
  const int64_t a = job->Join([] {});
  ASSERT_TRUE(job->Commit(1, TakeDone(job.get(), a, 4), 0).ok());
  TakeDone(job.get(), a, 4);
  bool b_aborted = false;
  const int64_t b = *job->Join([] {}, [&](const absl::Status&) { b_aborted = true; },
                               Job::Resume{1, 5});
  std::vector<int64_t> b_took = TakeDone(job.get(), b, 3);
  const int64_t c = *job->Join([] {}, nullptr, Job::Resume{1, 5});  // joins: b is connected
  EXPECT_FALSE(b_aborted);
  EXPECT_EQ(counters.rollbacks, 1);
  EXPECT_EQ(job->shots_left(), 30u - 4 - 3);
  ASSERT_TRUE(job->Commit(2, b_took, 5).ok());
  // Committed since: the same token is a new restart.
  const int64_t d = *job->Join([] {}, nullptr, Job::Resume{1, 5});
  EXPECT_TRUE(b_aborted);
  EXPECT_EQ(counters.rollbacks, 2);
  EXPECT_EQ(job->shots_left(), 26u) << "step 2's commit forgotten";
  job->Leave(b);
  job->Leave(c);
  job->Leave(d);
  // Nobody of the rollback is connected: rolls back again.
  const int64_t e = *job->Join([] {}, nullptr, Job::Resume{1, 5});
  EXPECT_EQ(counters.rollbacks, 3);
  EXPECT_EQ(Drain(job.get(), e).size(), 26u);
}

TEST(JobResumeTest, RefusalsNameWhatIsWrong) {
  JobCounters counters;
  JobRegistry registry("", absl::Minutes(10), &counters);
  auto job = *registry.Find(Spec(10));
  const int64_t a = job->Join([] {});
  std::vector<int64_t> took = TakeDone(job.get(), a, 2);
  ASSERT_TRUE(job->Commit(5, took, 0).ok());
  auto unknown = job->Join([] {}, nullptr, Job::Resume{4, 1});
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(unknown.status().message().find("no commit at step 4"), absl::string_view::npos);
  EXPECT_EQ(job->Commit(4, {}, 0).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(job->Commit(6, {12345}, 0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(job->Commit(6, {}, 99).status().code(), absl::StatusCode::kAborted);
  ASSERT_TRUE(job->Join([] {}, nullptr, Job::Resume{5, 3}).ok());
  EXPECT_EQ(job->Commit(6, {}, 0).status().code(), absl::StatusCode::kAborted)
      << "a consumer from before the rollback";
  EXPECT_TRUE(job->Commit(6, {}, 3).ok());
  // A server that keeps jobs in memory has nothing to resume after a restart.
  JobRegistry fresh("", absl::Minutes(10), &counters);
  auto none = fresh.Find(Spec(10), /*resuming=*/true);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(none.status().message().find("--job_dir"), absl::string_view::npos);
  EXPECT_EQ(fresh.Held("line1", "fwi", 3, 7).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

// The job's file replays commits and rollbacks: a restarted server resumes from it.
TEST(JobResumeTest, ARestartedServerReplaysCommitsAndRollbacks) {
  const std::string dir = Dir() + "/jobs_resume";
  std::system(("rm -rf " + dir + " && mkdir -p " + dir).c_str());
  JobCounters counters;
  std::set<int64_t> committed;
  {
    JobRegistry registry(dir, absl::Minutes(10), &counters);
    auto job = *registry.Find(Spec(25));
    const int64_t a = job->Join([] {});
    std::vector<int64_t> s1 = TakeDone(job.get(), a, 5);
    ASSERT_TRUE(job->Commit(1, s1, 0).ok());
    std::vector<int64_t> s2 = TakeDone(job.get(), a, 5);
    ASSERT_TRUE(job->Commit(2, s2, 0).ok());
    TakeDone(job.get(), a, 5);
    const int64_t b = *job->Join([] {}, nullptr, Job::Resume{1, 42});  // forgets step 2
    std::vector<int64_t> s3 = TakeDone(job.get(), b, 3);
    ASSERT_TRUE(job->Commit(3, s3, 42).ok());
    TakeDone(job.get(), b, 4);  // done, not committed
    committed.insert(s1.begin(), s1.end());
    committed.insert(s3.begin(), s3.end());
  }
  JobRegistry restarted(dir, absl::Minutes(10), &counters);
  auto job = restarted.Find(Spec(25), /*resuming=*/true);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ((*job)->CheckStep(2).code(), absl::StatusCode::kFailedPrecondition)
      << "rolled back past";
  ASSERT_TRUE((*job)->CheckStep(3).ok());
  EXPECT_TRUE((*job)->Commit(4, {}, 42).ok()) << "the lineage survives the restart";
  const int64_t c = *(*job)->Join([] {}, nullptr, Job::Resume{3, 43});
  std::vector<int64_t> rest = Drain(job->get(), c);
  std::set<int64_t> all = committed;
  for (int64_t r : rest) EXPECT_TRUE(all.insert(r).second) << r;
  EXPECT_EQ(all.size(), 25u);
  // A partly written last line (a crash mid-write) is not replayed.
  std::ofstream(dir + "/line1.fwi.3.job", std::ios::app) << "commit 9 10 20";
  JobRegistry again(dir, absl::Minutes(10), &counters);
  auto j2 = again.Find(Spec(25));
  ASSERT_TRUE(j2.ok());
  EXPECT_EQ((*j2)->CheckStep(9).code(), absl::StatusCode::kFailedPrecondition);
  // The torn line was cut off: a commit appended after it starts a line and replays.
  ASSERT_TRUE((*j2)->Commit(10, {}, 43).ok());
  j2->reset();
  JobRegistry third(dir, absl::Minutes(10), &counters);
  auto j3 = third.Find(Spec(25), /*resuming=*/true);
  ASSERT_TRUE(j3.ok()) << j3.status();
  EXPECT_TRUE((*j3)->CheckStep(10).ok());
  EXPECT_EQ((*j3)->CheckStep(9).code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace shotstream::jobs

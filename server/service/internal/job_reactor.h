// The StreamJob reactor: one consumer of a job. Its first message (start) is handed to the
// starter on the disk executor (the gate's checks, and the job found or created, which may
// read its progress file); once admitted, shots come from the job through the window's
// feed and are written as StreamShots writes them, and later messages (progress) say how
// many shots the consumer is done with. Private to the service.
#ifndef SHOTSTREAM_SERVER_SERVICE_INTERNAL_JOB_REACTOR_H_
#define SHOTSTREAM_SERVER_SERVICE_INTERNAL_JOB_REACTOR_H_

#include <functional>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "server/jobs/job_registry.h"
#include "server/service/internal/stream_reactor.h"
#include "server/stream/shot_window.h"
#include "shotstream/v1/shotstream.pb.h"

namespace shotstream::service {

// What an admitted start begins: the window's plan (its feed the job's), the job with the
// consumer's id in it, and the gate's pass.
struct JobStream {
  stream::WindowPlan plan;
  std::shared_ptr<jobs::Job> job;
  std::optional<jobs::Job::Resume> resume;  // the start's token, checked
  int64_t consumer = 0;
  std::unique_ptr<Gate::Pass> pass;
};
// Runs on the disk executor; its error (already counted and logged by the gate) finishes
// the call before any data.
using JobStarter = std::function<absl::StatusOr<JobStream>(const v1::JobStart&)>;
// A protocol error before the start was admitted (counted and logged by the gate).
using JobRefusal = std::function<absl::Status(absl::Status)>;

// Reads the first message and streams (or finishes with the starter's error). Reads and
// on_ready run on `readers`, the starter on `disk`. `context.pass` is set by the start.
// The reactor deletes itself after gRPC's OnDone.
grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* StartJobStream(
    JobStarter starter, JobRefusal refuse, stream::Executor* readers, stream::Executor* disk,
    StreamContext context);

// The feed of a job's consumer, joined (with `resume`: rolled back or joined to the open
// rollback): at most `limit` shots held not done; a rollback by another consumer stops
// its window with ABORTED; `takeover` as Job::Join's.
absl::StatusOr<std::shared_ptr<stream::ShotFeed>> MakeJobFeed(
    std::shared_ptr<jobs::Job> job, size_t limit,
    const std::optional<jobs::Job::Resume>& resume, bool takeover, int64_t* consumer);

}  // namespace shotstream::service

#endif  // SHOTSTREAM_SERVER_SERVICE_INTERNAL_JOB_REACTOR_H_

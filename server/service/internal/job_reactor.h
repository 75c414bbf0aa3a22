// The StreamJob reactor: one consumer of a job. Its first message (start) names the job
// (the starter validates it and joins the job); later ones (progress) say how many shots
// the consumer is done with. Shots come from the job through the window's feed and are written as
// StreamShots writes them.
#ifndef SHOTSTREAM_SERVER_SERVICE_INTERNAL_JOB_REACTOR_H_
#define SHOTSTREAM_SERVER_SERVICE_INTERNAL_JOB_REACTOR_H_

#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "server/jobs/job_registry.h"
#include "server/service/internal/stream_reactor.h"
#include "server/stream/shot_window.h"
#include "shotstream/v1/shotstream.pb.h"

namespace shotstream::service {

// What the first JobRequest starts: the window's plan (its feed the job's) and the job
// with the consumer's id in it.
struct JobStream {
  stream::WindowPlan plan;
  std::shared_ptr<jobs::Job> job;
  int64_t consumer = 0;
};
using JobStarter = std::function<absl::StatusOr<JobStream>(const v1::JobStart&)>;

// Reads the first message, calls `starter`, and streams (or finishes with its error
// before any data). The reactor deletes itself after gRPC's OnDone.
grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* StartJobStream(
    JobStarter starter, stream::Executor* executor, StreamContext context);

// The feed of a job's consumer: at most `limit` shots held not done.
std::shared_ptr<stream::ShotFeed> MakeJobFeed(std::shared_ptr<jobs::Job> job, size_t limit,
                                              int64_t* consumer);

}  // namespace shotstream::service

#endif  // SHOTSTREAM_SERVER_SERVICE_INTERNAL_JOB_REACTOR_H_

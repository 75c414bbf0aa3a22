// The one place where absl::Status becomes grpc::Status.
#ifndef SHOTSTREAM_SERVER_SERVICE_GRPC_STATUS_H_
#define SHOTSTREAM_SERVER_SERVICE_GRPC_STATUS_H_

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace shotstream::service {

// Same code (absl and gRPC share the canonical codes), same message.
grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace shotstream::service

#endif  // SHOTSTREAM_SERVER_SERVICE_GRPC_STATUS_H_

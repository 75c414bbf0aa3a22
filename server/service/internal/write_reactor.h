// The WriteShots reactor: reads the call's messages one at a time into a WriteSession and
// finishes with the new dataset's info, or with the first error (nothing is then left).
#ifndef SHOTSTREAM_SERVER_SERVICE_INTERNAL_WRITE_REACTOR_H_
#define SHOTSTREAM_SERVER_SERVICE_INTERNAL_WRITE_REACTOR_H_

#include <functional>

#include "absl/status/status.h"
#include "grpcpp/grpcpp.h"
#include "server/write/write_session.h"
#include "shotstream/v1/shotstream.pb.h"

namespace shotstream::service {

// Called once, as the call ends: its status, the session (name, shots, bytes), and the
// new entry when it is OK (then `response` is to be filled).
using WriteEnd = std::function<void(const absl::Status&, const write::WriteSession&,
                                    const dataset::DatasetEntry*)>;

// `refused`: a status found before any message (authentication, permission, draining).
// The reactor deletes itself after gRPC's OnDone.
grpc::ServerReadReactor<v1::WriteShotsRequest>* StartWrite(absl::Status refused,
                                                           write::SessionContext context,
                                                           WriteEnd on_end);

}  // namespace shotstream::service

#endif  // SHOTSTREAM_SERVER_SERVICE_INTERNAL_WRITE_REACTOR_H_

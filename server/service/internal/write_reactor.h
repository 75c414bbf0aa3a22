// The WriteShots reactor: reads the call's messages one at a time and hands each to a
// WriteSession on the disk executor (appends, the commit's fsyncs, rename and catalog scan
// never run on gRPC's threads); the next message is read once the session has taken the
// last. It finishes with the new dataset's response, or with the first error (nothing is
// then left). Private to the service.
#ifndef SHOTSTREAM_SERVER_SERVICE_INTERNAL_WRITE_REACTOR_H_
#define SHOTSTREAM_SERVER_SERVICE_INTERNAL_WRITE_REACTOR_H_

#include <functional>

#include "absl/status/status.h"
#include "grpcpp/grpcpp.h"
#include "server/stream/executor.h"
#include "server/write/write_session.h"
#include "shotstream/v1/shotstream.pb.h"

namespace shotstream::service {

struct WriteHooks {
  // The write is committed (on the disk executor, before the call finishes): fill the
  // response from the new entry (null for a part of a multi-part write).
  std::function<void(const write::WriteSession&, const dataset::DatasetEntry*)> committed;
  // The call is over (once, on a gRPC thread): how it really ended (CANCELLED for a client
  // that cancelled or left, whatever the reactor finished with), for counters and the log.
  std::function<void(const absl::Status&, const write::WriteSession&)> ended;
};

// `refused`: the gate's status (then the call finishes at once). The reactor deletes itself
// after gRPC's OnDone.
grpc::ServerReadReactor<v1::WriteShotsRequest>* StartWrite(absl::Status refused,
                                                           write::SessionContext context,
                                                           stream::Executor* disk,
                                                           WriteHooks hooks);

}  // namespace shotstream::service

#endif  // SHOTSTREAM_SERVER_SERVICE_INTERNAL_WRITE_REACTOR_H_

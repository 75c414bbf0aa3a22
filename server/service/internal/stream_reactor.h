// The StreamShots reactors: a thin gRPC adapter over a ShotWindow (encode each chunk with
// the wire codec, write one at a time, finish once), and the reactor of a call refused
// before any data. Private to the service.
#ifndef SHOTSTREAM_SERVER_SERVICE_INTERNAL_STREAM_REACTOR_H_
#define SHOTSTREAM_SERVER_SERVICE_INTERNAL_STREAM_REACTOR_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/server_callback.h"
#include "server/service/gate.h"
#include "server/service/grpc_status.h"
#include "server/service/service_counters.h"
#include "server/stream/shot_window.h"

namespace shotstream::service {

class StreamReactor;

// The running streams, so that a shutdown can finish them with its own status.
// Thread-safe.
class StreamRegistry {
 public:
  void Add(StreamReactor* r) ABSL_LOCKS_EXCLUDED(mu_);
  void Remove(StreamReactor* r) ABSL_LOCKS_EXCLUDED(mu_);
  // Every stream running now finishes with `status` once no write of its is on the wire.
  void CutAll(const absl::Status& status) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  absl::Mutex mu_;
  std::set<StreamReactor*> live_ ABSL_GUARDED_BY(mu_);
};

// Whose turn it is to write a window's chunks to a call: one message on the wire at a time,
// one finish. Both reactors pump through it. Thread-safe.
class WriteTurn {
 public:
  enum class Step { kNothing, kWrite, kFinish };
  // Unless a write is on the wire or the call is finished: the window's next chunk
  // encoded into *msg (kWrite: the caller starts the write), or its end in *end (kFinish:
  // the caller finishes the call); kNothing otherwise.
  Step Next(stream::ShotWindow* window, grpc::ByteBuffer* msg, absl::Status* end)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The write started by kWrite is done.
  void WriteDone() ABSL_LOCKS_EXCLUDED(mu_);
  // Takes the finish for the caller (false when it was taken): a call refused before
  // any data.
  bool TakeFinish() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  absl::Mutex mu_;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
};

// Writes `window`'s next chunk on `reactor` (a ServerWriteReactor or ServerBidiReactor),
// or finishes the call with the window's end (kept in *end), when `turn` makes the
// caller the writer; *msg is the write's own until its OnWriteDone. Both reactors pump
// through it.
template <typename Reactor>
void PumpWindow(Reactor* reactor, WriteTurn* turn, stream::ShotWindow* window,
                grpc::ByteBuffer* msg, absl::Status* end) {
  absl::Status how;
  grpc::ByteBuffer next;
  switch (turn->Next(window, &next, &how)) {
    case WriteTurn::Step::kNothing:
      return;
    case WriteTurn::Step::kFinish:
      *end = how;  // the finish is this call's alone
      reactor->Finish(ToGrpcStatus(how));
      return;
    case WriteTurn::Step::kWrite:
      *msg = std::move(next);
      reactor->StartWrite(msg);
      return;
  }
}

// Who a stream is for, for its log lines and counters, and its admission.
struct StreamContext {
  ServiceCounters* counters = nullptr;  // never null
  StreamRegistry* registry = nullptr;   // never null
  std::string peer;
  std::string dataset;
  bool log = false;
  // The gate's pass: the stream's number and slot (given back when the stream is gone),
  // and where its end is counted and logged (Pass::End).
  std::unique_ptr<Gate::Pass> pass;
};

// Starts one StreamShots call over `plan`; reads and ready callbacks run on `executor`.
// The reactor deletes itself after gRPC's OnDone.
grpc::ServerWriteReactor<grpc::ByteBuffer>* StartStream(stream::WindowPlan plan,
                                                        stream::Executor* executor,
                                                        StreamContext context);

// A call the gate refused (it counted and logged it): finished at once with `error`.
grpc::ServerWriteReactor<grpc::ByteBuffer>* RejectStream(const absl::Status& error);

}  // namespace shotstream::service

#endif  // SHOTSTREAM_SERVER_SERVICE_INTERNAL_STREAM_REACTOR_H_

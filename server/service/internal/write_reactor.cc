#include "server/service/internal/write_reactor.h"

#include <atomic>
#include <utility>

#include "server/service/grpc_status.h"

namespace shotstream::service {
namespace {

// Thread-safe: one read or one session step is outstanding at a time (a step starts the
// next read), so message_ and session_ have one user at a time; OnCancel only sets a flag.
class WriteReactor final : public grpc::ServerReadReactor<v1::WriteShotsRequest> {
 public:
  WriteReactor(absl::Status refused, write::SessionContext context, stream::Executor* disk,
               WriteHooks hooks)
      : session_(std::move(context)), disk_(disk), hooks_(std::move(hooks)) {
    if (!refused.ok()) {  // counted and logged by the gate
      Finish(ToGrpcStatus(refused));
      return;
    }
    admitted_ = true;
    StartRead(&message_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the stream ended (half-closed or broken) without `finish`
      disk_->Submit([this] {
        End(absl::InvalidArgumentError(
            "the write ended without its `finish` message, which is required; nothing was "
            "kept"));
      });
      return;
    }
    disk_->Submit([this] { Take(); });
  }

  void OnCancel() override { cancelled_ = true; }

  void OnDone() override {
    // A client that cancelled or went away hears nothing of ours: say what happened.
    const absl::Status how =
        cancelled_ ? absl::CancelledError(
                         "the client cancelled or left, or sent a message over the server's "
                         "receive limit (gRPC then tells the client RESOURCE_EXHAUSTED and the "
                         "server only that the call was cancelled); nothing was kept")
                   : status_;
    if (admitted_ && hooks_.ended) hooks_.ended(how, session_);
    delete this;
  }

 private:
  // On the disk executor: the message read, taken by the session.
  void Take() {
    if (absl::Status s = session_.Take(message_); !s.ok()) return End(s);
    if (!session_.finishing()) {
      StartRead(&message_);
      return;
    }
    absl::StatusOr<const dataset::DatasetEntry*> entry = session_.Commit();
    if (entry.ok() && hooks_.committed) hooks_.committed(session_, *entry);
    End(entry.status());
  }

  // On the disk executor: a failed write gives its name and temporary up before the
  // client hears why (a retry then finds the name free).
  void End(const absl::Status& status) {
    if (!status.ok()) session_.Abandon();
    status_ = status;
    Finish(ToGrpcStatus(status));
  }

  write::WriteSession session_;
  stream::Executor* const disk_;
  const WriteHooks hooks_;
  v1::WriteShotsRequest message_;
  bool admitted_ = false;  // the gate let it in (set before any other reaction)
  absl::Status status_;   // what the reactor finished with (set before Finish)
  std::atomic<bool> cancelled_{false};
};

}  // namespace

grpc::ServerReadReactor<v1::WriteShotsRequest>* StartWrite(absl::Status refused,
                                                           write::SessionContext context,
                                                           stream::Executor* disk,
                                                           WriteHooks hooks) {
  return new WriteReactor(std::move(refused), std::move(context), disk, std::move(hooks));
}

}  // namespace shotstream::service

#include "server/service/internal/write_reactor.h"

#include <utility>

#include "server/service/grpc_status.h"

namespace shotstream::service {
namespace {

class WriteReactor final : public grpc::ServerReadReactor<v1::WriteShotsRequest> {
 public:
  WriteReactor(absl::Status refused, write::SessionContext context, WriteEnd on_end)
      : session_(std::move(context)), on_end_(std::move(on_end)) {
    if (!refused.ok()) {
      End(refused, nullptr);
      return;
    }
    StartRead(&message_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the stream ended (or broke) without `finish`
      End(absl::InvalidArgumentError(
              "the write ended without its `finish` message, which is required; nothing "
              "was kept"),
          nullptr);
      return;
    }
    if (absl::Status s = session_.Take(message_); !s.ok()) {
      End(s, nullptr);
      return;
    }
    if (!session_.finishing()) {
      StartRead(&message_);
      return;
    }
    absl::StatusOr<const dataset::DatasetEntry*> entry = session_.Commit();
    End(entry.status(), entry.ok() ? *entry : nullptr);
  }

  void OnDone() override { delete this; }

 private:
  void End(const absl::Status& status, const dataset::DatasetEntry* entry) {
    on_end_(status, session_, entry);
    if (!status.ok()) session_.Abandon();  // nothing left once the client hears why
    Finish(ToGrpcStatus(status));
  }

  write::WriteSession session_;
  WriteEnd on_end_;
  v1::WriteShotsRequest message_;
};

}  // namespace

grpc::ServerReadReactor<v1::WriteShotsRequest>* StartWrite(absl::Status refused,
                                                           write::SessionContext context,
                                                           WriteEnd on_end) {
  return new WriteReactor(std::move(refused), std::move(context), std::move(on_end));
}

}  // namespace shotstream::service

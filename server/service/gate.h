// Gate: what every RPC passes before it runs, in one place for all five: who the caller is
// (a bearer token), the dataset it names (known, readable by the caller, READY), whether
// the server is draining, the request's own checks, and, for streams, a slot (admission).
// A refusal is counted (streams_rejected, by code and by RPC) and logged once, here, and
// never counts as a running stream. Transport-free: the gRPC adapter hands in the
// `authorization` metadata and the peer, and maps the status out.
//
// Thread-safe: every method may be called from any thread.
#ifndef SHOTSTREAM_SERVER_SERVICE_GATE_H_
#define SHOTSTREAM_SERVER_SERVICE_GATE_H_

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/dataset/dataset_registry.h"
#include "server/service/access_policy.h"
#include "server/service/service_counters.h"
#include "server/service/stream_admission.h"

namespace shotstream::service {

// Who a call is from, as the transport says.
struct Caller {
  std::optional<std::string> authorization;  // the metadata value; nullopt when absent
  std::string peer;                          // gRPC's peer string, "ipv4:10.0.0.7:53412"
};

class Gate {
 public:
  struct Options {
    const TokenStore* tokens = nullptr;  // null: no authentication
    AccessRules access;
    const std::atomic<bool>* draining = nullptr;  // true: new streams and writes refused
    uint32_t max_streams = 256;           // StreamShots and StreamJob calls at once
    uint32_t max_streams_per_peer = 64;   // from one peer address
    uint32_t max_writes = 16;             // WriteShots calls at once, all peers
    bool log = true;                      // a stderr line per refusal
  };

  // `datasets` and `counters` outlive the gate.
  Gate(const dataset::DatasetRegistry* datasets, ServiceCounters* counters, Options options);

  // An admitted call: who it is, (streams) its number, and (streams, writes) a slot that
  // is given back when the Pass goes. The call's end is counted and logged in one place,
  // End, as its start is in Enter. Thread-safe.
  class Pass {
   public:
    ~Pass();  // a call that never said its end is counted as ending UNKNOWN
    Pass(const Pass&) = delete;
    Pass& operator=(const Pass&) = delete;
    const std::string& who() const { return who_; }
    const std::string& peer_address() const { return peer_address_; }
    int64_t id() const { return id_; }  // a stream's number (from 1); 0 for other calls

    // The call ended with `status`: counted by RPC and code (a stream no longer runs and
    // counts as finished by code; a write as committed or failed), and `line` (when not
    // empty, and the gate logs) written to stderr as one line. Once: later calls do nothing.
    void End(const absl::Status& status, const std::string& line = "");

   private:
    friend class Gate;
    Pass(Gate* gate, Rpc rpc, std::string who, std::string peer_address,
         StreamAdmission* slot, int64_t id)
        : gate_(gate),
          rpc_(rpc),
          who_(std::move(who)),
          peer_address_(std::move(peer_address)),
          slot_(slot),
          id_(id) {}
    Gate* const gate_;
    const Rpc rpc_;
    const std::string who_;
    const std::string peer_address_;
    StreamAdmission* const slot_;  // where its slot was taken (null: none)
    const int64_t id_;
    std::atomic<bool> ended_{false};
  };

  // The checks of `rpc` for `caller` naming `dataset` (ListDatasets and WriteShots name
  // none), in order: authentication (UNAUTHENTICATED); for GetDataset and the streams,
  // the dataset (NOT_FOUND naming the datasets the caller may read and the closest name),
  // access (PERMISSION_DENIED) and readiness (FAILED_PRECONDITION for a FAILED dataset,
  // UNAVAILABLE while REBUILDING); for WriteShots the right to write (PERMISSION_DENIED);
  // for the streams and WriteShots draining (UNAVAILABLE); then `check` (the request's own
  // validation), then for the streams and writes a slot (RESOURCE_EXHAUSTED naming the limit). Any
  // refusal is counted and logged before it is returned.
  absl::StatusOr<std::unique_ptr<Pass>> Enter(Rpc rpc, const Caller& caller,
                                              const std::string& dataset = "",
                                              const std::function<absl::Status()>& check = {});

  // A call refused for a reason the gate's checks do not see (a malformed first message):
  // counted and logged as Enter's refusals are; returns `why`.
  absl::Status Refuse(Rpc rpc, const Caller& caller, const std::string& dataset,
                      absl::Status why);

  // Whether `who` may see dataset `name` (ListDatasets leaves the others out).
  bool MayRead(const std::string& who, const std::string& name) const;

  uint32_t running_streams() const { return admission_.running(); }

 private:
  absl::Status Checks(Rpc rpc, const Caller& caller, const std::string& dataset,
                      const std::function<absl::Status()>& check, std::string* who) const;
  absl::Status UnknownDataset(const std::string& name, const std::string& who) const;

  const dataset::DatasetRegistry* const datasets_;
  ServiceCounters* const counters_;
  const Options options_;
  const AccessPolicy access_;
  StreamAdmission admission_;  // max_streams, max_streams_per_peer
  StreamAdmission write_admission_;  // max_writes
};

}  // namespace shotstream::service

#endif  // SHOTSTREAM_SERVER_SERVICE_GATE_H_

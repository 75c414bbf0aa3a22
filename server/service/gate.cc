#include "server/service/gate.h"

#include <cstdio>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "segy/trace_header.h"
#include "server/service/request_validation.h"

namespace shotstream::service {

Gate::Gate(const dataset::DatasetRegistry* datasets, ServiceCounters* counters, Options options)
    : datasets_(datasets),
      counters_(counters),
      options_(std::move(options)),
      access_(options_.tokens, options_.access),
      admission_(options_.max_streams, options_.max_streams_per_peer),
      // One limit for writes, whoever sends them (the per-peer one is the same).
      write_admission_(options_.max_writes, options_.max_writes, "writes", "max_writes") {}

Gate::Pass::~Pass() {
  End(absl::UnknownError("the call ended without saying how"));
  if (slot_ != nullptr) slot_->Release(peer_address_);
}

void Gate::Pass::End(const absl::Status& status, const std::string& line) {
  if (ended_.exchange(true)) return;
  ServiceCounters* c = gate_->counters_;
  const int code = static_cast<int>(status.code()) % 17;
  c->ended_by_rpc[static_cast<int>(rpc_)][code]++;
  switch (rpc_) {
    case Rpc::kStreamShots:
    case Rpc::kStreamJob:
      c->finished_by_code[code]++;
      c->active_streams--;
      break;
    case Rpc::kWriteShots:
      if (status.ok()) {
        c->writes_committed++;
      } else {
        c->writes_failed_by_code[code]++;
      }
      break;
    default:
      break;
  }
  if (gate_->options_.log && !line.empty()) {
    std::fputs(absl::StrCat(line, "\n").c_str(), stderr);  // one write: no interleaving
  }
}

bool Gate::MayRead(const std::string& who, const std::string& name) const {
  return access_.MayRead(who, name).ok();
}

absl::StatusOr<std::unique_ptr<Gate::Pass>> Gate::Enter(
    Rpc rpc, const Caller& caller, const std::string& dataset,
    const std::function<absl::Status()>& check) {
  std::string who;
  if (absl::Status s = Checks(rpc, caller, dataset, check, &who); !s.ok()) {
    return Refuse(rpc, caller, dataset, std::move(s));
  }
  std::string address = StreamAdmission::PeerAddress(caller.peer);
  StreamAdmission* slots = nullptr;
  if (rpc == Rpc::kStreamShots || rpc == Rpc::kStreamJob) slots = &admission_;
  if (rpc == Rpc::kWriteShots) slots = &write_admission_;
  // Limits last, so that a slot is taken only by a call that will run.
  if (slots != nullptr) {
    if (absl::Status s = slots->Admit(address); !s.ok()) {
      return Refuse(rpc, caller, dataset, std::move(s));
    }
  }
  int64_t id = 0;
  if (slots == &admission_) {  // a stream begins: running, and numbered
    counters_->active_streams++;
    id = ++counters_->streams_started;
  }
  return std::unique_ptr<Pass>(
      new Pass(this, rpc, std::move(who), std::move(address), slots, id));
}

absl::Status Gate::Checks(Rpc rpc, const Caller& caller, const std::string& dataset,
                          const std::function<absl::Status()>& check, std::string* who) const {
  std::optional<absl::string_view> authorization;
  if (caller.authorization.has_value()) authorization = *caller.authorization;
  if (absl::Status s = access_.Authenticate(authorization, who); !s.ok()) return s;
  const bool names_dataset =
      rpc == Rpc::kGetDataset || rpc == Rpc::kStreamShots || rpc == Rpc::kStreamJob;
  if (names_dataset) {
    const dataset::DatasetEntry* e = datasets_->Find(dataset);
    if (e == nullptr) return UnknownDataset(dataset, *who);
    if (absl::Status s = access_.MayRead(*who, dataset); !s.ok()) return s;
    if (e->state() != dataset::DatasetEntry::State::kReady) return NotReadyError(*e);
  }
  if (rpc == Rpc::kCommitJob) {  // reads nothing: a checkpoint goes through while draining
    if (datasets_->Find(dataset) == nullptr) return UnknownDataset(dataset, *who);
    if (absl::Status s = access_.MayRead(*who, dataset); !s.ok()) return s;
  }
  if (rpc == Rpc::kWriteShots) {
    if (absl::Status s = access_.MayWrite(*who); !s.ok()) return s;
  }
  const bool draining = options_.draining != nullptr && options_.draining->load();
  if (draining && (names_dataset || rpc == Rpc::kWriteShots) && rpc != Rpc::kGetDataset) {
    return absl::UnavailableError(absl::StrCat(
        "the server is shutting down; no new ",
        rpc == Rpc::kWriteShots ? "writes" : "streams (try another server)"));
  }
  if (check) return check();
  return absl::OkStatus();
}

absl::Status Gate::UnknownDataset(const std::string& name, const std::string& who) const {
  std::vector<std::string> visible;
  for (const dataset::DatasetEntry* e : datasets_->All()) {
    if (MayRead(who, e->name)) visible.push_back(e->name);
  }
  const std::string closest = segy::ClosestName(name, visible);
  return absl::NotFoundError(absl::StrCat(
      "unknown dataset '", name, "'",
      closest.empty() ? "" : absl::StrCat(": did you mean '", closest, "'?"),
      " (datasets here: ", visible.empty() ? "none you may read" : absl::StrJoin(visible, ", "),
      ")"));
}

absl::Status Gate::Refuse(Rpc rpc, const Caller& caller, const std::string& dataset,
                          absl::Status why) {
  const int code = static_cast<int>(why.code()) % 17;
  counters_->streams_rejected++;
  counters_->rejected_by_code[code]++;
  counters_->rejected_by_rpc[static_cast<int>(rpc)][code]++;
  if (options_.log) {
    const std::string line = absl::StrCat(
        rpc == Rpc::kStreamShots ? "stream" : RpcName(rpc), " refused: peer ", caller.peer,
        dataset.empty() ? "" : absl::StrCat(" dataset ", dataset), ": ",
        absl::StatusCodeToString(why.code()), ": ", why.message(), "\n");
    std::fputs(line.c_str(), stderr);  // one write: lines of other threads do not interleave
  }
  return why;
}

}  // namespace shotstream::service

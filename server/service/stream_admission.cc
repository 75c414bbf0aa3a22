#include "server/service/stream_admission.h"

#include "absl/strings/str_cat.h"

namespace shotstream::service {

std::string StreamAdmission::PeerAddress(const std::string& peer) {
  const size_t colon = peer.rfind(':');
  const size_t first = peer.find(':');
  return colon != std::string::npos && colon != first ? peer.substr(0, colon) : peer;
}

absl::Status StreamAdmission::Admit(const std::string& address) {
  absl::MutexLock lock(&mu_);
  if (running_ >= max_streams_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the server runs ", running_, " ", what_, ", its limit (", limit_, ")"));
  }
  auto it = per_peer_.find(address);
  const uint32_t mine = it == per_peer_.end() ? 0 : it->second;
  if (mine >= max_streams_per_peer_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        address, " runs ", mine, " ", what_, ", the limit per peer (", limit_, "_per_peer)"));
  }
  ++per_peer_[address];
  ++running_;
  return absl::OkStatus();
}

void StreamAdmission::Release(const std::string& address) {
  absl::MutexLock lock(&mu_);
  auto it = per_peer_.find(address);
  if (it == per_peer_.end()) return;  // not admitted: nothing to give back
  --running_;
  if (--it->second == 0) per_peer_.erase(it);
}

uint32_t StreamAdmission::running() const {
  absl::MutexLock lock(&mu_);
  return running_;
}

}  // namespace shotstream::service

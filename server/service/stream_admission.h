// StreamAdmission: how many StreamShots calls may run, in all and from one peer address.
// Transport-free (peers are gRPC's peer strings, "ipv4:10.0.0.7:53412"; streams count
// per address, the port dropped).
//
// Thread-safe.
#ifndef SHOTSTREAM_SERVER_SERVICE_STREAM_ADMISSION_H_
#define SHOTSTREAM_SERVER_SERVICE_STREAM_ADMISSION_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace shotstream::service {

class StreamAdmission {
 public:
  // `what` names what is admitted in errors ("streams"), `limit` the setting that bounds
  // it ("max_streams"; the per-peer one is `limit`_per_peer).
  StreamAdmission(uint32_t max_streams, uint32_t max_streams_per_peer,
                  std::string what = "streams", std::string limit = "max_streams")
      : max_streams_(max_streams),
        max_streams_per_peer_(max_streams_per_peer),
        what_(std::move(what)),
        limit_(std::move(limit)) {}

  // "ipv4:127.0.0.1:5555" -> "ipv4:127.0.0.1"; a peer without a port stays as it is.
  static std::string PeerAddress(const std::string& peer);

  // Takes a slot for a stream from `address` (PeerAddress), or RESOURCE_EXHAUSTED naming
  // the limit that is reached (max_streams or max_streams_per_peer).
  absl::Status Admit(const std::string& address) ABSL_LOCKS_EXCLUDED(mu_);
  // Gives back a slot Admit took.
  void Release(const std::string& address) ABSL_LOCKS_EXCLUDED(mu_);

  uint32_t running() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const uint32_t max_streams_;
  const uint32_t max_streams_per_peer_;
  const std::string what_;
  const std::string limit_;
  mutable absl::Mutex mu_;
  uint32_t running_ ABSL_GUARDED_BY(mu_) = 0;                      // slots taken
  std::map<std::string, uint32_t> per_peer_ ABSL_GUARDED_BY(mu_);  // by address, never 0
};

}  // namespace shotstream::service

#endif  // SHOTSTREAM_SERVER_SERVICE_STREAM_ADMISSION_H_

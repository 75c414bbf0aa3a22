// Why a listening address cannot be taken, found by binding it once: for the error a
// server prints when its RPC or metrics listener fails ("127.0.0.1:50081: address in use").
//
// Thread-safe: a pure function of the address (it opens and closes one socket).
#ifndef SHOTSTREAM_SERVER_COMMON_LISTEN_PROBE_H_
#define SHOTSTREAM_SERVER_COMMON_LISTEN_PROBE_H_

#include <string>

#include "absl/status/status.h"

namespace shotstream {

// OK when HOST:PORT could be bound exclusively now; otherwise the reason, naming the
// address: UNAVAILABLE "HOST:PORT: address in use", INVALID_ARGUMENT for an address that
// does not parse or resolve, or the bind error.
absl::Status ProbeListen(const std::string& host_port);

}  // namespace shotstream

#endif  // SHOTSTREAM_SERVER_COMMON_LISTEN_PROBE_H_

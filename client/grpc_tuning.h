// Process-wide gRPC settings for clients that receive large messages: gRPC 1.51's
// `tcp_read_chunks` experiment reads the socket into many 8-64 KiB slices; with it off,
// reads go into one slice of up to 1 MiB (the channel argument set by Client::Connect),
// which costs the client less CPU per byte and streams faster (BENCHMARKS.md, "What each
// setting buys", measured by `bazel run -c opt //:bench`).
//
// For binaries (and the Python extension's init), not libraries: call once at the top of
// main(), before any gRPC call and before other threads start (it calls setenv). A
// GRPC_EXPERIMENTS the user has set is left as it is.
#ifndef SHOTSTREAM_CLIENT_GRPC_TUNING_H_
#define SHOTSTREAM_CLIENT_GRPC_TUNING_H_

#include <cstdlib>

namespace shotstream::client {

inline void TuneGrpcForLargeMessages() {
  setenv("GRPC_EXPERIMENTS", "-tcp_read_chunks", /*overwrite=*/0);
}

}  // namespace shotstream::client

#endif  // SHOTSTREAM_CLIENT_GRPC_TUNING_H_

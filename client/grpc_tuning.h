// Process-wide gRPC settings for clients that receive large messages, measured with
// `shotstream bench` in paired runs (BENCHMARKS.md): gRPC 1.51's `tcp_read_chunks`
// experiment reads the socket into many 8-64 KiB slices; with it off, reads go into one
// slice of up to 1 MiB (the channel argument set by Client::Connect). Five paired runs of
// 400 shots: median 1.45 GB/s and 0.54 client CPU ns per byte, against 1.29 GB/s and 0.61
// with the experiment on (it won 4 of 5 pairs).
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

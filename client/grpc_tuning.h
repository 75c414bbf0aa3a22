// Process-wide gRPC settings for clients that receive large messages: gRPC 1.51's
// `tcp_read_chunks` experiment reads the socket into many 8-64 KiB slices; with it off,
// reads go into one slice of up to 1 MiB (the channel argument set by Client::Connect),
// which costs the client less CPU per byte and streams faster (BENCHMARKS.md, "What each
// setting buys", measured by `bazel run -c opt //:bench`).
//
// It also puts every thread's malloc in one arena. gRPC allocates the receive slices on
// the stream's reader thread; in a per-thread arena glibc unmaps a secondary heap as soon
// as it is wholly free (M_TRIM_THRESHOLD does not cover that), so each shot's slices
// faulted their pages in again: one arena took the C++ client from 20 K to 7 K page
// faults per 1.5 GB and 0.56-0.70 to 0.47-0.52 ns of CPU per byte (BENCHMARKS.md, "What
// each setting buys"). A MALLOC_ARENA_MAX or GLIBC_TUNABLES the user has set is left as
// it is.
//
// For binaries (and the Python extension's init), not libraries: call once at the top of
// main(), before any gRPC call and before other threads start (it calls setenv). A
// GRPC_EXPERIMENTS the user has set is left as it is.
#ifndef SHOTSTREAM_CLIENT_GRPC_TUNING_H_
#define SHOTSTREAM_CLIENT_GRPC_TUNING_H_

#include <malloc.h>

#include <cstdlib>

namespace shotstream::client {

inline void TuneGrpcForLargeMessages() {
  setenv("GRPC_EXPERIMENTS", "-tcp_read_chunks", /*overwrite=*/0);
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr && std::getenv("GLIBC_TUNABLES") == nullptr) {
    mallopt(M_ARENA_MAX, 1);
  }
}

}  // namespace shotstream::client

#endif  // SHOTSTREAM_CLIENT_GRPC_TUNING_H_

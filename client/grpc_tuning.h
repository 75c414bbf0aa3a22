// Process-wide gRPC settings for clients that receive large messages: gRPC 1.51's
// `tcp_read_chunks` experiment reads the socket into many 8-64 KiB slices; with it off,
// reads go into one slice of up to 1 MiB (the channel argument set by Client::Connect),
// which costs the client less CPU per byte and streams faster (BENCHMARKS.md, "What each
// setting buys", measured by `bazel run -c opt //:bench`).
//
// It also puts every thread's malloc in one arena. gRPC allocates the receive slices on
// the stream's reader thread; in a per-thread arena glibc unmaps a secondary heap as soon
// as it is wholly free (M_TRIM_THRESHOLD does not cover that), so shots' slices faulted
// their pages in again: streaming 1.5 GB from tools/grpc_ceiling, five runs alternated,
// 12-14 K page faults against 17-26 K and 0.81-0.92 against 0.90-1.19 CPU seconds
// (docs/clients.md, "C++ client and GPU staging", gives the command). A
// MALLOC_ARENA_MAX or GLIBC_TUNABLES the user has set is left as it is.
//
// For binaries (and the Python extension's init), not libraries: call once at the top of
// main(), before any gRPC call and before other threads start (it calls setenv). A
// GRPC_EXPERIMENTS the user has set is left as it is.
#ifndef SHOTSTREAM_CLIENT_GRPC_TUNING_H_
#define SHOTSTREAM_CLIENT_GRPC_TUNING_H_

#include <malloc.h>

#include <cstdlib>

#include "grpcpp/support/channel_arguments.h"

namespace shotstream::client {

inline void TuneGrpcForLargeMessages() {
  setenv("GRPC_EXPERIMENTS", "-tcp_read_chunks", /*overwrite=*/0);
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr && std::getenv("GLIBC_TUNABLES") == nullptr) {
    mallopt(M_ARENA_MAX, 1);
  }
}

// The channel arguments of Client::Connect (and tools/grpc_ceiling's receiver): HTTP/2
// frames and windows sized for multi-MB messages, socket reads of up to 1 MiB into one
// slice where tcp_read_chunks is off (with it on, gRPC ignores that one). Thread-safe.
inline grpc::ChannelArguments LargeMessageChannelArguments() {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_FRAME_SIZE, 16 * 1024 * 1024 - 1);
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 64 * 1024 * 1024);
  args.SetInt(GRPC_ARG_HTTP2_WRITE_BUFFER_SIZE, 8 * 1024 * 1024);
  args.SetInt(GRPC_ARG_TCP_MAX_READ_CHUNK_SIZE, 1024 * 1024);
  return args;
}

}  // namespace shotstream::client

#endif  // SHOTSTREAM_CLIENT_GRPC_TUNING_H_

// Spread: a loop of independent steps (a shot's chunks) run on the calling thread and on
// an executor's other threads at once.
//
// Spread(executor, n, fn) calls fn(0) ... fn(n - 1), each once, on the calling thread and
// on up to executor->parallelism() - 1 helper tasks, and returns when every call has
// returned. The caller works too and never waits for a helper that has not started: a
// helper that starts late (its executor busy with other streams' reads) finds nothing left
// and returns, so a full executor costs no parallelism it did not have, and a caller on
// one of the executor's own threads cannot deadlock. Thread-safe; fn must be too.
#ifndef SHOTSTREAM_SERVER_STREAM_SPREAD_H_
#define SHOTSTREAM_SERVER_STREAM_SPREAD_H_

#include <cstddef>
#include <functional>

#include "server/stream/executor.h"

namespace shotstream::stream {

// `executor` may be null: everything runs on the calling thread.
void Spread(Executor* executor, size_t n, const std::function<void(size_t)>& fn);

}  // namespace shotstream::stream

#endif  // SHOTSTREAM_SERVER_STREAM_SPREAD_H_

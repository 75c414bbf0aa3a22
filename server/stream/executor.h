// Executor: where a stream's work runs (reads, chunk preparation, ready callbacks).
// The server's is the ReaderPool; tests use a manual one that runs tasks when told.
#ifndef SHOTSTREAM_SERVER_STREAM_EXECUTOR_H_
#define SHOTSTREAM_SERVER_STREAM_EXECUTOR_H_

#include <functional>

namespace shotstream::stream {

class Executor {
 public:
  virtual ~Executor() = default;
  // Runs `task` later, on a thread of the executor's, never inside this call.
  // Thread-safe.
  virtual void Submit(std::function<void()> task) = 0;
  // How many tasks it runs at once (Spread's helpers: one fewer). Thread-safe.
  virtual int parallelism() const { return 1; }
};

}  // namespace shotstream::stream

#endif  // SHOTSTREAM_SERVER_STREAM_EXECUTOR_H_

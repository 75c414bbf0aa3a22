// A fixed pool of reader threads that runs disk reads for every stream.
//
// Thread-safe: Submit may be called from any thread. The destructor finishes the tasks
// already queued, then joins the threads.
#ifndef SHOTSTREAM_SERVER_STREAM_READER_POOL_H_
#define SHOTSTREAM_SERVER_STREAM_READER_POOL_H_

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "server/stream/executor.h"

namespace shotstream::stream {

class ReaderPool final : public Executor {
 public:
  explicit ReaderPool(int threads);
  ~ReaderPool() override;
  ReaderPool(const ReaderPool&) = delete;
  ReaderPool& operator=(const ReaderPool&) = delete;

  void Submit(std::function<void()> task) override ABSL_LOCKS_EXCLUDED(mu_);
  int threads() const { return static_cast<int>(threads_.size()); }
  int parallelism() const override { return threads(); }

 private:
  void Run() ABSL_LOCKS_EXCLUDED(mu_);

  absl::Mutex mu_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);  // FIFO
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;                      // set by the destructor
  std::vector<std::thread> threads_;
};

}  // namespace shotstream::stream

#endif  // SHOTSTREAM_SERVER_STREAM_READER_POOL_H_

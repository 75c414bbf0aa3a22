// A scratch buffer of this thread's, one for each Tag type: at least `bytes` long, kept for
// the thread's life and grown to the largest size asked; what it held before is not kept.
// Thread-safe (each thread has its own); a Tag's users must not nest.
#ifndef SHOTSTREAM_COMMON_THREAD_SCRATCH_H_
#define SHOTSTREAM_COMMON_THREAD_SCRATCH_H_

#include <cstddef>
#include <cstdint>
#include <memory>

namespace shotstream {

template <typename Tag>
uint8_t* ThreadScratch(size_t bytes) {
  thread_local std::unique_ptr<uint8_t[]> buffer;
  thread_local size_t size = 0;
  if (size < bytes) {
    buffer.reset(new uint8_t[bytes]);
    size = bytes;
  }
  return buffer.get();
}

}  // namespace shotstream

#endif  // SHOTSTREAM_COMMON_THREAD_SCRATCH_H_

// Keeps large buffers (shots, chunks) on the heap and the heap from shrinking, so that a
// steady stream of same-sized shots does not pay mmap/munmap and page faults per shot
// (measured: it halved the client's CPU time per byte). For binaries only, not libraries:
// call once at the top of main() (or where a Python extension module is initialised,
// with an opt-out: client/python/native).
#ifndef SHOTSTREAM_SERVER_COMMON_MALLOC_TUNING_H_
#define SHOTSTREAM_SERVER_COMMON_MALLOC_TUNING_H_

#include <malloc.h>

namespace shotstream {

inline void TuneMallocForLargeBuffers() {
  mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);   // glibc's maximum
  mallopt(M_TRIM_THRESHOLD, 1024 * 1024 * 1024);
  mallopt(M_TOP_PAD, 64 * 1024 * 1024);
}

}  // namespace shotstream

#endif  // SHOTSTREAM_SERVER_COMMON_MALLOC_TUNING_H_

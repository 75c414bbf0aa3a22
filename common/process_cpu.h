// ProcessCpuSeconds: the CPU time this process has used so far (user + system, all its
// threads), for tools that report their own cost over a timed part of a run, leaving out
// what starting up cost. Thread-safe.
#ifndef SHOTSTREAM_COMMON_PROCESS_CPU_H_
#define SHOTSTREAM_COMMON_PROCESS_CPU_H_

#include <sys/resource.h>

namespace shotstream {

inline double ProcessCpuSeconds() {
  struct rusage u {};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

}  // namespace shotstream

#endif  // SHOTSTREAM_COMMON_PROCESS_CPU_H_

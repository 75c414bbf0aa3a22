// LD_PRELOAD shim for benchmarks: every pread/pread64/fread on a regular file waits
// SLOW_IO_US microseconds first, as if each read were a round trip to network storage.
//   gcc -shared -fPIC -O2 -o slow_io.so tools/slow_io.c -ldl
//   SLOW_IO_US=200 LD_PRELOAD=./slow_io.so COMMAND
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static long delay_us(void) {
  static long us = -1;
  if (us < 0) {
    const char* e = getenv("SLOW_IO_US");
    us = e ? atol(e) : 0;
  }
  return us;
}

static void wait_if_file(int fd) {
  struct stat st;
  if (delay_us() > 0 && fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    struct timespec ts = {delay_us() / 1000000, (delay_us() % 1000000) * 1000};
    nanosleep(&ts, NULL);
  }
}

ssize_t pread(int fd, void* buf, size_t n, off_t off) {
  static ssize_t (*real)(int, void*, size_t, off_t);
  if (!real) real = dlsym(RTLD_NEXT, "pread");
  wait_if_file(fd);
  return real(fd, buf, n, off);
}

ssize_t pread64(int fd, void* buf, size_t n, off_t off) {
  static ssize_t (*real)(int, void*, size_t, off_t);
  if (!real) real = dlsym(RTLD_NEXT, "pread64");
  wait_if_file(fd);
  return real(fd, buf, n, off);
}

size_t fread(void* p, size_t size, size_t n, FILE* f) {
  static size_t (*real)(void*, size_t, size_t, FILE*);
  if (!real) real = dlsym(RTLD_NEXT, "fread");
  wait_if_file(fileno(f));
  return real(p, size, n, f);
}

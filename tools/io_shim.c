// LD_PRELOAD shim that makes file reads slow or failing, for benchmarks and tests.
//   SLOW_IO_US=N: every pread/pread64/fread on a regular file waits N microseconds
//     first, as if each read were a round trip to network storage.
//   FAULT_IO_PATH=S, FAULT_IO_SWITCH=F [, FAULT_IO_OFFSET=B]: while file F exists, every
//     pread/pread64 of a file whose path contains S, reaching at or past byte B (default
//     0), fails with EIO, as a failing disk or a broken network mount does.
//   FULL_DISK_PATH=S, FULL_DISK_BYTES=N: a write(2) to a file whose path contains S that
//     would take the file past N bytes fails with ENOSPC, as on a full filesystem.
// Built by Bazel as //:libio_shim.so; run as LD_PRELOAD=libio_shim.so COMMAND.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

// The path of descriptor fd into `path` (4096 bytes); 0 when it has none.
static int fd_path(int fd, char* path) {
  char link[64];
  snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  const ssize_t len = readlink(link, path, 4095);
  if (len <= 0) return 0;
  path[len] = '\0';
  return 1;
}

ssize_t write(int fd, const void* buf, size_t n) {
  static ssize_t (*real)(int, const void*, size_t);
  if (!real) real = dlsym(RTLD_NEXT, "write");
  const char* match = getenv("FULL_DISK_PATH");
  const char* limit = getenv("FULL_DISK_BYTES");
  if (match != NULL && limit != NULL && fd > 2) {
    char path[4096];
    const off_t at = lseek(fd, 0, SEEK_CUR);
    if (at >= 0 && fd_path(fd, path) && strstr(path, match) != NULL &&
        (unsigned long long)at + n > strtoull(limit, NULL, 10)) {
      errno = ENOSPC;
      return -1;
    }
  }
  return real(fd, buf, n);
}

static int should_fail(int fd, size_t n, off_t off) {
  const char* match = getenv("FAULT_IO_PATH");
  const char* on = getenv("FAULT_IO_SWITCH");
  if (match == NULL || on == NULL || access(on, F_OK) != 0) return 0;
  const char* from = getenv("FAULT_IO_OFFSET");
  if (from != NULL && (unsigned long long)off + n <= strtoull(from, NULL, 10)) return 0;
  char link[64], path[4096];
  snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  const ssize_t len = readlink(link, path, sizeof(path) - 1);
  if (len <= 0) return 0;
  path[len] = '\0';
  return strstr(path, match) != NULL;
}

typedef ssize_t (*pread_fn)(int, void*, size_t, off_t);

static ssize_t shimmed_pread(pread_fn* real, const char* name, int fd, void* buf, size_t n,
                             off_t off) {
  if (*real == NULL) *real = (pread_fn)dlsym(RTLD_NEXT, name);
  if (should_fail(fd, n, off)) {
    errno = EIO;
    return -1;
  }
  wait_if_file(fd);
  return (*real)(fd, buf, n, off);
}

ssize_t pread(int fd, void* buf, size_t n, off_t off) {
  static pread_fn real;
  return shimmed_pread(&real, "pread", fd, buf, n, off);
}

ssize_t pread64(int fd, void* buf, size_t n, off_t off) {
  static pread_fn real;
  return shimmed_pread(&real, "pread64", fd, buf, n, off);
}

size_t fread(void* p, size_t size, size_t n, FILE* f) {
  static size_t (*real)(void*, size_t, size_t, FILE*);
  if (!real) real = dlsym(RTLD_NEXT, "fread");
  wait_if_file(fileno(f));
  return real(p, size, n, f);
}

// LD_PRELOAD shim for tests: read errors on demand. While the file named by
// FAULT_IO_SWITCH exists, every pread/pread64 of a file whose path contains
// FAULT_IO_PATH, reaching at or past byte FAULT_IO_OFFSET (default 0), fails with EIO, as
// a failing disk or a broken network mount does. Other files and reads are untouched.
//   LD_PRELOAD=libfault_io.so FAULT_IO_PATH=bad.sgy FAULT_IO_SWITCH=/tmp/on COMMAND
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

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

static ssize_t faulty_pread(pread_fn* real, const char* name, int fd, void* buf, size_t n,
                            off_t off) {
  if (*real == NULL) *real = (pread_fn)dlsym(RTLD_NEXT, name);
  if (should_fail(fd, n, off)) {
    errno = EIO;
    return -1;
  }
  return (*real)(fd, buf, n, off);
}

ssize_t pread(int fd, void* buf, size_t n, off_t off) {
  static pread_fn real;
  return faulty_pread(&real, "pread", fd, buf, n, off);
}

ssize_t pread64(int fd, void* buf, size_t n, off_t off) {
  static pread_fn real;
  return faulty_pread(&real, "pread64", fd, buf, n, off);
}

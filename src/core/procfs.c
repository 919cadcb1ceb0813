#include "core/procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

ssize_t cprof__procfs_read(const char *path, char *buf, size_t len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  size_t n = 0;
  while (n + 1 < len) {
    ssize_t r = read(fd, buf + n, len - 1 - n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    n += (size_t)r;
  }
  close(fd);
  buf[n] = '\0';
  return (ssize_t)n;
}

const char *cprof__procfs_self(void) {
  static int emulated = -1; /* atomic; -1: not decided yet */
  int e = __atomic_load_n(&emulated, __ATOMIC_RELAXED);
  if (e < 0) {
    char a[512], b[512];
    ssize_t na = readlink("/proc/thread-self/exe", a, sizeof a - 1);
    ssize_t nb = readlink("/proc/self/exe", b, sizeof b - 1);
    e = na > 0 && nb > 0 && (na != nb || memcmp(a, b, (size_t)na) != 0);
    __atomic_store_n(&emulated, e, __ATOMIC_RELAXED);
  }
  return e ? "/proc/self" : "/proc/thread-self";
}

int64_t cprof__procfs_field(const char *text, const char *key) {
  size_t kl = strlen(key);
  for (const char *s = text; s && *s; s = strchr(s, '\n'), s = s ? s + 1 : NULL)
    if (strncmp(s, key, kl) == 0)
      return strtoll(s + kl, NULL, 10);
  return -1;
}

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

int64_t cprof__procfs_field(const char *text, const char *key) {
  size_t kl = strlen(key);
  for (const char *s = text; s && *s; s = strchr(s, '\n'), s = s ? s + 1 : NULL)
    if (strncmp(s, key, kl) == 0)
      return strtoll(s + kl, NULL, 10);
  return -1;
}

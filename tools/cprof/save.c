#include "save.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int save_write_all(int fd, const void *data, size_t n) {
  const unsigned char *p = data;
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0)
      return -errno;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

int save_file(const char *path, const void *data, size_t len) {
  /* POSIX dirname and basename may write into their argument. */
  char *dup = strdup(path), *dup2 = strdup(path), *tmp = NULL;
  int fd = -1, rc = -ENOMEM;
  if (!dup || !dup2 || asprintf(&tmp, "%s/.%s.XXXXXX", dirname(dup), basename(dup2)) < 0) {
    tmp = NULL;
    goto out;
  }
  if ((fd = mkstemp(tmp)) < 0) {
    rc = -errno;
    free(tmp);
    tmp = NULL;
    goto out;
  }
  mode_t mask = umask(0);
  umask(mask);
  if (fchmod(fd, 0666 & ~mask) != 0 || (rc = save_write_all(fd, data, len)) != 0 ||
      fsync(fd) != 0) {
    rc = rc ? rc : -errno;
    goto out;
  }
  if (close(fd) != 0) {
    fd = -1;
    rc = -errno;
    goto out;
  }
  fd = -1;
  rc = rename(tmp, path) == 0 ? 0 : -errno;
out:
  if (fd >= 0)
    close(fd);
  if (rc && tmp)
    unlink(tmp);
  free(tmp);
  free(dup);
  free(dup2);
  return rc;
}

#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/fds.h"

void cprof__log(const char *fmt, ...) {
  char line[1024] = "cprof: ";
  size_t n = strlen(line);
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
  va_end(ap);
  if (k < 0)
    return;
  n += (size_t)k < sizeof line - n - 1 ? (size_t)k : sizeof line - n - 2;
  line[n++] = '\n';
  /* The server's threads have /dev/null on 2: they borrow the program's. */
  int to_close, fd = cprof__fds_stderr(&to_close);
  if (fd >= 0) {
    ssize_t unused = write(fd, line, n);
    (void)unused;
  }
  if (to_close >= 0)
    close(to_close);
}

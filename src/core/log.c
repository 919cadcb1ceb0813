#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
  ssize_t unused = write(STDERR_FILENO, line, n);
  (void)unused;
}

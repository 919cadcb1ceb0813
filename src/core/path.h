/* Paths as Go's path/filepath reads them, for the offline model's names
 * of object files. */
#ifndef CPROF_CORE_PATH_H
#define CPROF_CORE_PATH_H

#include <stddef.h>
#include <string.h>

/* Go's filepath.Base on a Unix path, without a copy: the last element of
 * p, trailing slashes dropped, as its start and *len; "/" for a path of
 * slashes only. p must not be empty (Go says "." for it). */
static inline const char *cprof__path_base(const char *p, size_t *len) {
  size_t end = strlen(p);
  while (end > 1 && p[end - 1] == '/')
    end--;
  size_t start = end;
  while (start > 0 && p[start - 1] != '/')
    start--;
  if (start == end) /* only slashes */
    start = end - 1;
  *len = end - start;
  return p + start;
}

#endif

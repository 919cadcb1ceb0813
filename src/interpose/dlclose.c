/* dlclose, interposed: the unwinders' walks from signals must not read a
 * module while it is unmapped, so the real call runs between
 * cprof__unload_begin and cprof__unload_end (unwind/unload.h). errno is
 * the real call's. */
#include <dlfcn.h>
#include <errno.h>

#include "core/next.h"
#include "cprof.h"
#include "unwind/unload.h"

#ifndef CPROF_NO_INTERPOSE

CPROF_EXTERN int dlclose(void *handle) {
  static void *real;
  int (*next)(void *) = (int (*)(void *))cprof__next(&real, "dlclose");
  int saved = errno;
  cprof__unload_begin();
  errno = saved;
  int rc = next(handle);
  saved = errno;
  cprof__unload_end();
  errno = saved;
  return rc;
}

#endif

/* cprof_strerror: the one-line text of a code a cprof function returned,
 * for every part of cprof that reports one (start.c, output.c, the
 * endpoints), so that none of them reaches into another for it. */
#include <errno.h>
#include <string.h>

#include "cprof.h"

const char *cprof_strerror(int err) {
  switch (err) {
  case 0:
    return "success";
  case -EALREADY:
    return "cprof is already running";
  case -EINVAL:
    return "invalid setting";
  case -EBUSY:
    return "resource in use";
  case -ENOMEM:
    return "out of memory";
  default:
    return err < 0 ? strerror(-err) : "unknown error";
  }
}

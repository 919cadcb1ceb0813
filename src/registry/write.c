/* cprof_profile_write: Go's pprof.Lookup(name).WriteTo(w, debug), onto a
 * descriptor. The profile is built whole in memory first, so that a
 * profile that cannot be made writes nothing rather than half a file. */
#include <errno.h>

#include "core/fds.h"
#include "cprof.h"
#include "registry/registry.h"
#include "core/guard.h"

int cprof_profile_write(const char *name, int fd, int debug) {
  if (!name || debug < 0)
    return -EINVAL;
  const cprof__profile_t *p = cprof__registry_lookup(name);
  if (!p)
    return -ENOENT;
  int saved = errno;
  int err = cprof__fd_writable(fd);
  if (err)
    return err;
  /* Building a profile allocates: not the program's allocations. */
  cprof__guard_enter();
  cprof__buf_t out;
  cprof__buf_init(&out);
  cprof__collect_t c = {.debug = debug};
  err = cprof__profile_collect(p, &c, &out);
  if (!err)
    err = cprof__write_all(fd, out.data, out.len);
  cprof__buf_free(&out);
  cprof__guard_leave();
  errno = saved;
  return err;
}

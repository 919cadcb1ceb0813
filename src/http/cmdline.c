/* /debug/pprof/cmdline: the program's arguments joined by NUL bytes, as Go
 * joins os.Args. /proc/self/cmdline has a NUL after every argument; Go has
 * none after the last. */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "core/procfs.h"

#include "http/response.h"
#include "http/routes.h"

void cprof__serve_cmdline(const cprof_request_t *req, const cprof__config_t *cfg,
                          cprof_response_t *resp) {
  cprof__buf_t b;
  cprof__buf_init(&b);
  char path[64];
  snprintf(path, sizeof path, "%s/cmdline", cprof__procfs_self());
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    cprof__resp_error(resp, 500, "cannot read /proc/self/cmdline");
    return;
  }
  char chunk[4096];
  ssize_t n;
  while ((n = read(fd, chunk, sizeof chunk)) > 0)
    cprof__buf_append(&b, chunk, (size_t)n);
  close(fd);
  if (b.len > 0 && b.data[b.len - 1] == '\0')
    b.len--;
  cprof__resp_body(resp, CPROF_TEXT, &b);
}

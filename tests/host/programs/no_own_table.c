/* Runs a command where the kernel will not give a thread a descriptor table
 * of its own, or only the old way:
 *
 *   host_no_own_table old-kernel COMMAND...  close_range fails with ENOSYS,
 *                                            as before Linux 5.9
 *   host_no_own_table refused COMMAND...     unshare fails with EPERM too,
 *                                            as under Docker's default
 *                                            seccomp profile
 *
 * A seccomp filter does it; it stays through the exec of COMMAND. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

#include "../../seccomp_deny.h"

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s old-kernel|refused COMMAND...\n", argv[0]);
    return 2;
  }
  seccomp_denial_t d[] = {{SYS_close_range, ENOSYS}, {SYS_unshare, EPERM}};
  size_t n = strcmp(argv[1], "refused") == 0 ? 2 : 1;
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || seccomp_deny(d, n, 0) != 0) {
    perror("seccomp");
    return 77;
  }
  execvp(argv[2], argv + 2);
  perror(argv[2]);
  return 127;
}

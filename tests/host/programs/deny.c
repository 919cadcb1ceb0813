/* Runs a command with some system calls denied, as a container's or a
 * sandbox's seccomp filter denies them:
 *
 *   host_deny CALL[,CALL...] COMMAND...
 *
 * Each CALL (a name from the table below) fails with EPERM without being
 * made; every other call is allowed. The filter stays through the exec of
 * COMMAND and is inherited by every thread it makes (seccomp(2)). Exit code
 * 77 when no filter can be installed here. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

#include "../../seccomp_deny.h"

static const struct {
  const char *name;
  int nr;
} calls[] = {
    {"timer_create", SYS_timer_create},
    {"process_vm_readv", SYS_process_vm_readv},
    {"rt_tgsigqueueinfo", SYS_rt_tgsigqueueinfo},
    {"tgkill", SYS_tgkill},
};
#define NCALLS (sizeof calls / sizeof calls[0])

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s CALL[,CALL...] COMMAND...\n", argv[0]);
    return 2;
  }
  seccomp_denial_t d[NCALLS];
  size_t n = 0;
  char list[256];
  snprintf(list, sizeof list, "%s", argv[1]);
  for (char *save, *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
    size_t i = 0;
    while (i < NCALLS && strcmp(calls[i].name, name) != 0)
      i++;
    if (i == NCALLS || n == NCALLS) {
      fprintf(stderr, "%s: unknown or repeated call %s\n", argv[0], name);
      return 2;
    }
    d[n++] = (seccomp_denial_t){calls[i].nr, EPERM};
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || seccomp_deny(d, n, 0) != 0) {
    perror("seccomp");
    return 77;
  }
  execvp(argv[2], argv + 2);
  perror(argv[2]);
  return 127;
}

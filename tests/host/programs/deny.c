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
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#endif

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
#ifndef ARCH
  fprintf(stderr, "no seccomp filter for this architecture\n");
  return 77;
#else
  if (argc < 3) {
    fprintf(stderr, "usage: %s CALL[,CALL...] COMMAND...\n", argv[0]);
    return 2;
  }
  /* The arch check, the number load, two instructions per call, allow. */
  struct sock_filter f[4 + 2 * NCALLS + 1];
  int n = 0;
  f[n++] =
      (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
  f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0);
  f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  f[n++] =
      (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
  char list[256];
  snprintf(list, sizeof list, "%s", argv[1]);
  for (char *save, *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
    size_t i = 0;
    while (i < NCALLS && strcmp(calls[i].name, name) != 0)
      i++;
    if (i == NCALLS || n + 3 > (int)(sizeof f / sizeof f[0])) {
      fprintf(stderr, "%s: unknown or repeated call %s\n", argv[0], name);
      return 2;
    }
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, calls[i].nr, 0, 1);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
  }
  f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  struct sock_fprog prog = {.len = (unsigned short)n, .filter = f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
      prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
    perror("seccomp");
    return 77;
  }
  execvp(argv[2], argv + 2);
  perror(argv[2]);
  return 127;
#endif
}

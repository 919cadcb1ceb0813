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
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif

int main(int argc, char **argv) {
#ifndef ARCH
  fprintf(stderr, "no seccomp filter for this architecture\n");
  return 77;
#else
  if (argc < 3) {
    fprintf(stderr, "usage: %s old-kernel|refused COMMAND...\n", argv[0]);
    return 2;
  }
  int refuse_unshare = strcmp(argv[1], "refused") == 0;
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_close_range, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_unshare, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, refuse_unshare ? SECCOMP_RET_ERRNO | EPERM : SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {.len = sizeof filter / sizeof filter[0], .filter = filter};
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

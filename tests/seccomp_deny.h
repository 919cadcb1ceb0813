/* A seccomp filter that makes chosen system calls fail with an errno of
 * the test's choosing, as a container's or a sandbox's filter does, for
 * the tests of what cprof does when a call is denied. Every other call,
 * and every call of another architecture, is allowed. Shared by unit tests
 * and by the host tests' programs (tests/host/programs). */
#ifndef CPROF_TESTS_SECCOMP_DENY_H
#define CPROF_TESTS_SECCOMP_DENY_H

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define SECCOMP_DENY_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SECCOMP_DENY_ARCH AUDIT_ARCH_AARCH64
#endif

typedef struct seccomp_denial {
  long nr;  /* SYS_... */
  int err;  /* the errno it fails with */
} seccomp_denial_t;

#define SECCOMP_DENY_MAX 16

/* Installs the filter on the calling thread, or with
 * SECCOMP_FILTER_FLAG_TSYNC in flags on every thread of the process. The
 * caller sets PR_SET_NO_NEW_PRIVS first when it runs without privilege.
 * Returns 0, or -1 with errno set (ENOSYS for an architecture this does not
 * know). */
static inline int seccomp_deny(const seccomp_denial_t *d, size_t n, unsigned flags) {
#ifndef SECCOMP_DENY_ARCH
  (void)d, (void)n, (void)flags;
  errno = ENOSYS;
  return -1;
#else
  if (n > SECCOMP_DENY_MAX) {
    errno = EINVAL;
    return -1;
  }
  /* The arch check, the number load, two instructions per call, allow. */
  struct sock_filter f[4 + 2 * SECCOMP_DENY_MAX + 1];
  size_t k = 0;
  f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
  f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SECCOMP_DENY_ARCH, 1, 0);
  f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
  for (size_t i = 0; i < n; i++) {
    f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)d[i].nr, 0, 1);
    f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
                                          SECCOMP_RET_ERRNO | ((unsigned)d[i].err & SECCOMP_RET_DATA));
  }
  f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  struct sock_fprog prog = {.len = (unsigned short)k, .filter = f};
  return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
#endif
}

#endif

/* capset and prctl, interposed, so that cprof's threads always carry the
 * program's credentials.
 *
 * Linux keeps capabilities, securebits (PR_SET_KEEPCAPS among them), the
 * capability bounding set, ambient capabilities and no_new_privs per
 * thread, and glibc changes them only on the calling thread. Its setuid
 * family, on the other hand, changes the ids of every thread, and aborts
 * the process (setxid_error) if that fails on any one. cprof's threads
 * are made before main, so a program that drops privileges as setpriv(1)
 * does (PR_SET_KEEPCAPS, setresuid, capset, setresgid) would leave them
 * behind: without the kept capabilities, setresgid fails on them and the
 * program aborts; and a program that drops every capability with capset
 * would leave the thread that parses HTTP requests with all of them.
 *
 * So when one of the program's threads changes any of these, cprof's
 * threads are ended and made again by that thread, from which a new
 * thread copies all its credentials. That is rare (programs do it at
 * start), and costs a few milliseconds when it happens. cprof's own calls
 * (its threads, with the guard raised) pass straight through. The same
 * calls made through syscall() are followed too (raw_syscall.c), and so
 * are the setuid family's there, which change the calling thread alone. */
#include <linux/capability.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <grp.h>
#include <sys/types.h>

#include <errno.h>

#include "core/clock.h"
#include "core/next.h"
#include "cprof.h"
#include "interpose/creds.h"
#include "core/guard.h"

void (*cprof__follow_credentials_hook)(void);
void (*cprof__before_credentials_hook)(void);

void cprof__creds_before(void) {
  void (*hook)(void) = __atomic_load_n(&cprof__before_credentials_hook, __ATOMIC_ACQUIRE);
  if (!hook || cprof__guarded())
    return;
  int saved = errno;
  hook();
  errno = saved;
}

void cprof__creds_follow(void) {
  void (*hook)(void) = __atomic_load_n(&cprof__follow_credentials_hook, __ATOMIC_ACQUIRE);
  if (!hook || cprof__guarded())
    return;
  int saved = errno;
  hook();
  errno = saved;
}

/* The prctl options that change a thread's credentials. */
static int changes_credentials(int option, unsigned long arg2) {
  switch (option) {
  case PR_SET_KEEPCAPS:
  case PR_SET_SECUREBITS:
  case PR_CAPBSET_DROP:
  case PR_SET_NO_NEW_PRIVS:
    return 1;
  case PR_CAP_AMBIENT:
    return arg2 != PR_CAP_AMBIENT_IS_SET;
  default:
    return 0;
  }
}

void cprof__prctl_done(int option, unsigned long arg2) {
  if (option == PR_SET_TSC) /* core/clock.h: cprof's clock reads on this thread */
    cprof__tsc_off = arg2 == PR_TSC_SIGSEGV;
  if (changes_credentials(option, arg2))
    cprof__creds_follow();
}

#ifndef CPROF_NO_INTERPOSE

typedef int (*capset_fn)(cap_user_header_t, const cap_user_data_t);

CPROF_EXTERN int capset(cap_user_header_t hdr, const cap_user_data_t data) {
  static void *real;
  int rc = ((capset_fn)cprof__next(&real, "capset"))(hdr, data);
  /* pid 0 or its own id is the calling thread; on any other, capset
   * fails. */
  if (rc == 0 && hdr && (hdr->pid == 0 || hdr->pid == (pid_t)syscall(SYS_gettid)))
    cprof__creds_follow();
  return rc;
}

typedef int (*prctl_fn)(int, unsigned long, unsigned long, unsigned long, unsigned long);

/* prctl(2) takes up to four more arguments, each an unsigned long, and
 * glibc's passes all four to the system call whatever the option; so does
 * this. */
CPROF_EXTERN int prctl(int option, ...) {
  static void *real;
  va_list ap;
  va_start(ap, option);
  unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long),
                a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
  va_end(ap);
  int rc = ((prctl_fn)cprof__next(&real, "prctl"))(option, a2, a3, a4, a5);
  if (rc == 0)
    cprof__prctl_done(option, a2);
  return rc;
}

/* The calls that change a process's user or groups: glibc changes every
 * thread's (cprof's too, by its setxid signal), so nothing follows them;
 * but before the first, a forked process of a tree joins it, while its
 * socket can still be made (cprof__creds_before). */
#define CHANGES_IDS(name, params, args)                                                            \
  typedef int(*name##_fn) params;                                                                  \
  CPROF_EXTERN int name params {                                                                   \
    static void *real;                                                                             \
    cprof__creds_before();                                                                         \
    return ((name##_fn)cprof__next(&real, #name))args;                                             \
  }
CHANGES_IDS(setuid, (uid_t u), (u))
CHANGES_IDS(setgid, (gid_t g), (g))
CHANGES_IDS(seteuid, (uid_t u), (u))
CHANGES_IDS(setegid, (gid_t g), (g))
CHANGES_IDS(setreuid, (uid_t r, uid_t e), (r, e))
CHANGES_IDS(setregid, (gid_t r, gid_t e), (r, e))
CHANGES_IDS(setresuid, (uid_t r, uid_t e, uid_t s), (r, e, s))
CHANGES_IDS(setresgid, (gid_t r, gid_t e, gid_t s), (r, e, s))
CHANGES_IDS(setgroups, (size_t n, const gid_t *list), (n, list))
CHANGES_IDS(initgroups, (const char *user, gid_t g), (user, g))

#endif

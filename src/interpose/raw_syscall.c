/* syscall(), interposed, for the calls cprof follows when the program
 * makes them through glibc's wrappers: credentials (creds.c) and
 * namespaces (namespaces.c).
 *
 * A program (or a runtime: Rust's, Go's cgo, a sandbox's) may make these
 * calls with syscall(SYS_capset, ...) rather than capset(), and a wrapper
 * of capset alone then never sees them: setpriv's sequence done that way
 * left cprof's threads without PR_SET_KEEPCAPS, so glibc's setresgid,
 * which changes every thread, failed on them and aborted the program; and
 * a program that dropped every capability left the HTTP server's threads
 * with all of them. The setuid family, made raw, changes the calling
 * thread alone (glibc's wrappers change every thread), which would leave
 * cprof's threads root under a program that dropped root. The other way,
 * cprof's threads dropping everything themselves at start, would break
 * the glibc path: its setuid family needs CAP_SETUID on every thread, and
 * aborts when one refuses. So cprof's threads follow: after such a call
 * succeeds on a program's thread they are made again from it (creds.c),
 * and an unshare or setns refused for cprof's threads is made again with
 * them stopped (namespaces.c).
 *
 * Every other number is forwarded untouched: glibc's syscall takes the
 * number and six longs, whatever the call uses (its assembly reads six
 * registers and the first word above the return address), and so does
 * this, passing each on as it came; the return value and errno are the
 * next syscall()'s (glibc's: -1 and errno on failure). On x86-64 and
 * aarch64 a variadic function's integer arguments arrive where a fixed
 * one's do, so the wrapper is defined with seven longs, as glibc's
 * assembly reads them: then the compiler forwards them with a jump, and
 * the wrapper leaves no frame on the stack, where a thread asleep in a
 * raw system call is unwound from outside (unwind/outside.c) and where
 * cprof's handlers that call syscall() run. Elsewhere it reads them with
 * va_arg. Nothing is allocated or locked on that path, and the next
 * definition is found at load, not at the first call. setfsuid and
 * setfsgid are left alone: glibc's change the calling thread only, too.
 * (<unistd.h>, which declares syscall variadic, is not included here.) */
#include <errno.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <sys/types.h>

#include "core/next.h"
#include "cprof.h"
#include "interpose/creds.h"
#include "interpose/namespaces.h"

#ifndef CPROF_NO_INTERPOSE

typedef long (*syscall_fn)(long, ...);

static void *real;

/* Before any handler of cprof's can run (they are installed by
 * cprof_start, from a later constructor): the lookup is no call for a
 * signal handler to make. */
__attribute__((constructor(101))) static void find_syscall(void) { cprof__next(&real, "syscall"); }

typedef struct raw {
  syscall_fn fn;
  long number, a[6];
} raw_t;

static long raw_again(void *arg) {
  raw_t *r = arg;
  return r->fn(r->number, r->a[0], r->a[1], r->a[2], r->a[3], r->a[4], r->a[5]);
}

/* The numbers that change a thread's user or groups. */
static int changes_ids(long number) {
  switch (number) {
  case SYS_setuid:
  case SYS_setgid:
  case SYS_setreuid:
  case SYS_setregid:
  case SYS_setresuid:
  case SYS_setresgid:
  case SYS_setgroups:
    return 1;
  default:
    return 0;
  }
}

/* The numbers cprof follows. */
static int followed(long number) {
  return changes_ids(number) || number == SYS_capset || number == SYS_prctl ||
         number == SYS_unshare || number == SYS_setns;
}

/* A credential call that returned 0. */
static void follow_credentials(const raw_t *r) {
  switch (r->number) {
  case SYS_capset: {
    /* As capset(): pid 0 or the caller's own id is the calling thread. */
    const struct {
      unsigned version;
      int pid;
    } *hdr = (const void *)r->a[0];
    if (hdr && (hdr->pid == 0 || hdr->pid == (pid_t)r->fn(SYS_gettid)))
      cprof__creds_follow();
    break;
  }
  case SYS_prctl:
    cprof__prctl_done((int)r->a[0], (unsigned long)r->a[1]);
    break;
  default:
    cprof__creds_follow();
  }
}

/* One of the calls cprof follows, made. */
__attribute__((noinline)) static long follow(raw_t *r) {
  if (changes_ids(r->number))
    cprof__creds_before();
  long rc = raw_again(r);
  switch (r->number) {
  case SYS_unshare:
    if (rc != 0 && cprof__unshare_needs_alone((unsigned long)r->a[0]))
      rc = cprof__ns_again(rc, raw_again, r);
    break;
  case SYS_setns:
    if (rc != 0)
      rc = cprof__ns_again(rc, raw_again, r);
    break;
  default:
    if (rc == 0)
      follow_credentials(r);
  }
  return rc;
}

#if defined(__x86_64__) || defined(__aarch64__)

CPROF_EXTERN long syscall(long number, long a1, long a2, long a3, long a4, long a5, long a6) {
  syscall_fn fn = (syscall_fn)cprof__next(&real, "syscall");
  if (__builtin_expect(!followed(number), 1))
    return fn(number, a1, a2, a3, a4, a5, a6);
  raw_t r = {fn, number, {a1, a2, a3, a4, a5, a6}};
  return follow(&r);
}

#else

CPROF_EXTERN long syscall(long number, ...) {
  va_list ap;
  va_start(ap, number);
  raw_t r = {(syscall_fn)cprof__next(&real, "syscall"), number, {0}};
  for (int i = 0; i < 6; i++)
    r.a[i] = va_arg(ap, long);
  va_end(ap);
  return followed(number) ? follow(&r)
                          : r.fn(number, r.a[0], r.a[1], r.a[2], r.a[3], r.a[4], r.a[5]);
}

#endif

#endif

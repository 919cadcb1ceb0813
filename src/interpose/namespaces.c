/* unshare and setns, interposed, so that cprof's threads never make the
 * kernel refuse them.
 *
 * Linux grants some namespace changes only to a process with one thread:
 * unshare(CLONE_NEWUSER) implies CLONE_THREAD, which needs an empty
 * thread group (kernel/fork.c, check_unshare_flags); setns into a user
 * namespace needs that too, and into a user or mount namespace a
 * filesystem context (fs_struct: root and working directory) used by the
 * caller alone, which every thread pthread_create makes shares (CLONE_FS;
 * glibc gives no way to create one without it); setns into a time
 * namespace fails with EUSERS unless the process has one thread
 * (kernel/time/namespace.c, timens_install). cprof's threads (the
 * server's, the metrics sampler, a CPU recording's drainer, the push's)
 * run from load, so under cprof every such call failed, where it works in
 * a single-threaded program: container runtimes, sandboxes (bubblewrap,
 * unshare(1), nsenter(1)) and test harnesses make it at start.
 *
 * So when such a call fails with EINVAL (or EUSERS) and the caller is the
 * program's only thread, cprof's threads are stopped (as when the program
 * changes its credentials: start.c), the call is made again alone, and
 * cprof's threads are started again by the caller, now in its new
 * namespaces and with its new credentials. The server's listening socket
 * is kept meanwhile, and listens on where it was made. A program with
 * threads of its own gets the refusal it would get without cprof, and
 * nothing is stopped. A call that succeeds, or fails otherwise, costs
 * nothing more. cprof's own calls (with the guard raised: fds.c unshares
 * CLONE_FILES) pass straight through. */
#include "interpose/namespaces.h"

#include <errno.h>
#include <sched.h>

#include "core/next.h"
#include "cprof.h"
#include "core/guard.h"

int (*cprof__alone_hook)(long (*call)(void *), void *arg, long *rc);

int cprof__ns_refused(int err) { return err == EINVAL || err == EUSERS; }

int cprof__unshare_needs_alone(unsigned long flags) {
  return (flags & (CLONE_NEWUSER | CLONE_THREAD | CLONE_SIGHAND | CLONE_VM)) != 0;
}

long cprof__ns_again(long rc, long (*call)(void *), void *arg) {
  if (rc != -1 || !cprof__ns_refused(errno) || cprof__guarded())
    return rc;
  int (*hook)(long (*)(void *), void *, long *) =
      __atomic_load_n(&cprof__alone_hook, __ATOMIC_ACQUIRE);
  long again;
  int saved = errno;
  if (hook && hook(call, arg, &again))
    return again; /* errno as the second attempt left it */
  errno = saved;
  return rc;
}

#ifndef CPROF_NO_INTERPOSE

typedef int (*unshare_fn)(int);
typedef int (*setns_fn)(int, int);

static unshare_fn real_unshare(void) {
  static void *real;
  return (unshare_fn)cprof__next(&real, "unshare");
}

static setns_fn real_setns(void) {
  static void *real;
  return (setns_fn)cprof__next(&real, "setns");
}

static long unshare_again(void *arg) { return real_unshare()(*(int *)arg); }

CPROF_EXTERN int unshare(int flags) {
  int rc = real_unshare()(flags);
  if (rc != 0 && cprof__unshare_needs_alone((unsigned)flags))
    rc = (int)cprof__ns_again(rc, unshare_again, &flags);
  return rc;
}

typedef struct setns_args {
  int fd, nstype;
} setns_args_t;

static long setns_again(void *arg) {
  setns_args_t *a = arg;
  return real_setns()(a->fd, a->nstype);
}

/* Which namespace fd names is not known when nstype is 0, nor which of a
 * pidfd's several are refused: any EINVAL or EUSERS is tried again alone.
 * A setns that fails changes nothing (kernel/nsproxy.c installs every
 * namespace, or none), so the second attempt starts where the first did. */
CPROF_EXTERN int setns(int fd, int nstype) {
  int rc = real_setns()(fd, nstype);
  if (rc != 0) {
    setns_args_t a = {fd, nstype};
    rc = (int)cprof__ns_again(rc, setns_again, &a);
  }
  return rc;
}

#endif

/* unshare and setns (namespaces.c), which the kernel refuses to a process
 * with other threads, and cprof's threads. */
#ifndef CPROF_INTERPOSE_NAMESPACES_H
#define CPROF_INTERPOSE_NAMESPACES_H

/* Set by start.c: if the calling thread is the program's only one, stops
 * cprof's threads, waits until the process has no other, runs call(arg)
 * into *rc (with the errno it leaves), starts cprof's threads again from
 * the caller and returns 1. Returns 0 without calling when the program
 * has other threads, or cprof none. (A hook, so that linking this file
 * does not pull in all of cprof.) */
extern int (*cprof__alone_hook)(long (*call)(void *), void *arg, long *rc);

/* A call that failed (rc, errno) because the process has other threads,
 * maybe only cprof's: made again by cprof__alone_hook, whose result it
 * returns; else rc with errno as the first attempt left it. Used by the
 * unshare and setns wrappers and by syscall()'s (raw_syscall.c). */
long cprof__ns_again(long rc, long (*call)(void *), void *arg);

/* Whether err is how the kernel refuses a namespace change to a process
 * with other threads: EINVAL, or EUSERS for a time namespace. */
int cprof__ns_refused(int err);

/* The unshare(2) flags the kernel grants only to a single-threaded
 * process: CLONE_NEWUSER implies CLONE_THREAD, which needs an empty thread
 * group, as CLONE_VM and CLONE_SIGHAND do (kernel/fork.c,
 * check_unshare_flags). */
int cprof__unshare_needs_alone(unsigned long flags);

#endif

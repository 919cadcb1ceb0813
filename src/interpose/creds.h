/* Credentials Linux keeps per thread, and cprof's threads (creds.c). */
#ifndef CPROF_INTERPOSE_CREDS_H
#define CPROF_INTERPOSE_CREDS_H

/* Set by start.c: ends cprof's threads and starts them again from the
 * calling thread, so that they carry its credentials. (A hook, so that
 * linking creds.c, which defines prctl, does not pull in all of cprof.) */
extern void (*cprof__follow_credentials_hook)(void);

/* Set by start.c: called before the program changes its user or groups
 * (a process of a tree that has not joined it joins now: tree/tree.h). */
extern void (*cprof__before_credentials_hook)(void);

/* Before a program's thread changes its user or groups (by libc or by
 * syscall()): the hook, unless the caller is cprof's. Keeps errno. */
void cprof__creds_before(void);

/* After a program's thread changed its credentials: cprof's threads made
 * again from it (nothing when the caller is cprof's). Keeps errno. */
void cprof__creds_follow(void);

/* After prctl(option, arg2, ...) returned 0 on the calling thread, by libc
 * or by syscall(): a thread that turned its TSC off is marked (its clock
 * reads go to the kernel, core/clock.h), and one that changed its
 * credentials (capabilities, securebits, no_new_privs) is followed. */
void cprof__prctl_done(int option, unsigned long arg2);

#endif

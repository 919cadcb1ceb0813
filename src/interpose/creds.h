/* Credentials Linux keeps per thread, and cprof's threads (creds.c). */
#ifndef CPROF_INTERPOSE_CREDS_H
#define CPROF_INTERPOSE_CREDS_H

/* Set by start.c: ends cprof's threads and starts them again from the
 * calling thread, so that they carry its credentials. (A hook, so that
 * linking creds.c, which defines prctl, does not pull in all of cprof.) */
extern void (*cprof__follow_credentials_hook)(void);

#endif

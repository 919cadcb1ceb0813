/* Per-thread labels (cprof_label_set, cprof_do): readable by the thread's
 * own SIGPROF handler, by the threads profile's capture for any thread, and
 * copied into the threads a labelled thread creates. */
#ifndef CPROF_SAMPLE_LABELS_H
#define CPROF_SAMPLE_LABELS_H

#include <sys/types.h>

#include "cprof.h"

typedef struct cprof__labels {
  int n;
  char key[CPROF_MAX_LABELS][CPROF_MAX_LABEL_KEY + 1];
  char value[CPROF_MAX_LABELS][CPROF_MAX_LABEL_VALUE + 1];
} cprof__labels_t;

/* Copies the calling thread's labels into out (out->n = 0 when it has
 * none, or when the signal came in the middle of changing them). For the
 * signal handler: no locks, no allocation. */
void cprof__labels_copy_sigsafe(cprof__labels_t *out);

/* Makes l the calling thread's whole label set, replacing what it had: for
 * a new thread, with its creator's labels, before its start routine runs.
 * Returns 0, or -ENOMEM (the thread then has none). */
int cprof__labels_install(const cprof__labels_t *l);

/* Calls fn(tid, labels, ctx) for every thread that has labels now, with a
 * consistent copy of them; a thread in the middle of changing its labels
 * is left out. fn runs under the list's lock: it must not change labels,
 * create or end threads, or take locks. Not for signal handlers. */
void cprof__labels_each(void (*fn)(pid_t tid, const cprof__labels_t *l, void *ctx), void *ctx);

#endif

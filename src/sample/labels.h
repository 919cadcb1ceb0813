/* Per-thread labels for CPU samples (cprof_label_set), readable from the
 * SIGPROF handler. */
#ifndef CPROF_SAMPLE_LABELS_H
#define CPROF_SAMPLE_LABELS_H

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

#endif

/* Whether a captured thread's stack (sample/threads.h) has a frame of the
 * function fn, symbolized as the profiles would name it; 0 for a NULL
 * thread. For the capture tests. */
#ifndef CPROF_TESTS_STACK_HAS_H
#define CPROF_TESTS_STACK_HAS_H

#include <string.h>

#include "sample/threads.h"
#include "symbol/symbolize.h"

static int stack_has(const cprof__thread_stack_t *t, const char *fn) {
  cprof__symbolizer_t *s = cprof__symbolizer_acquire();
  int found = 0;
  for (int i = 0; t && i < t->depth && !found; i++) {
    const char *name = cprof__symbolize_name(s, t->pcs[i] - (i > 0));
    found = name && strcmp(name, fn) == 0;
  }
  cprof__symbolizer_release(s);
  return found;
}

#endif

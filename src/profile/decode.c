#include "profile/model.h"

#include <errno.h>
#include <stdio.h>

/* A stand-in until the decoder lands. */
int cprof__pf_decode(const void *data, size_t n, cprof__pf_t **out, char *err, size_t errlen) {
  (void)data, (void)n;
  *out = NULL;
  snprintf(err, errlen, "not implemented");
  return -ENOSYS;
}

void cprof__pf_free(cprof__pf_t *p) {
  if (p)
    cprof__arena_free(p->arena);
}

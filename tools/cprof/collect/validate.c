/* A scraped profile checked as Parca checks it (collect/validate.h). */
#include "collect/validate.h"

#include <errno.h>
#include <stdio.h>

int collect_validate(const cprof__pf_t *p, char *err, size_t errlen) {
  if (p->time_nanos == 0) {
    snprintf(err, errlen, "time_nanos is zero: the profile says nothing of when it was taken");
    return -EINVAL;
  }
  if (!p->ids_sequential) {
    snprintf(err, errlen, "mapping, location or function IDs are not 1, 2, 3... in order");
    return -EINVAL;
  }
  if (p->n_sample_types == 0 && p->n_samples > 0) {
    snprintf(err, errlen, "%zu samples but no sample types", p->n_samples);
    return -EINVAL;
  }
  for (size_t i = 0; i < p->n_samples; i++) {
    const cprof__pf_sample_t *s = &p->samples[i];
    if (s->n_locations == 0) {
      snprintf(err, errlen, "sample %zu has no locations", i);
      return -EINVAL;
    }
    for (size_t k = 0; k < s->n_labels; k++)
      if (!s->labels[k].key || !s->labels[k].key[0]) {
        snprintf(err, errlen, "sample %zu label %zu has no key", i, k);
        return -EINVAL;
      }
  }
  return 0;
}

int collect_decode_valid(const void *data, size_t n, cprof__pf_t **out, char *err, size_t errlen) {
  *out = NULL;
  if (n == 0) {
    snprintf(err, errlen, "empty answer: no profile");
    return -EINVAL;
  }
  cprof__pf_t *p = NULL;
  int rc = cprof__pf_decode(data, n, &p, err, errlen);
  if (rc == 0 && (rc = collect_validate(p, err, errlen)) != 0) {
    cprof__pf_free(p);
    p = NULL;
  }
  *out = p;
  return rc;
}

int64_t collect_total(const cprof__pf_t *p) {
  cprof__pf_graph_options_t o = {.sample_index = cprof__pf_default_index(p)};
  return p->n_sample_types ? cprof__pf_total(p, &o) : 0;
}

/* The profile decoder (src/profile/decode.c) on any bytes: it must return,
 * with a one-line error or with a model whose every pointer holds (each
 * is followed here, so that AddressSanitizer sees a bad one). The corpus
 * holds cprof's own profiles, gzip and not, of every kind. */
#include "fuzz.h"

#include "profile/model.h"

static size_t touch(const char *s) { return strlen(s); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
  cprof__pf_t *p;
  char err[256];
  if (cprof__pf_decode(data, n, &p, err, sizeof err) != 0) {
    if (err[0] == '\0' || strchr(err, '\n'))
      abort(); /* an error must say what, on one line */
    return 0;
  }
  size_t sum = 0;
  for (size_t i = 0; i < p->n_sample_types; i++)
    sum += touch(p->sample_types[i].type) + touch(p->sample_types[i].unit);
  for (size_t i = 0; i < p->n_samples; i++) {
    const cprof__pf_sample_t *s = &p->samples[i];
    for (size_t k = 0; k < s->n_locations; k++)
      sum += s->locations[k]->n_lines;
    for (size_t k = 0; k < p->n_sample_types; k++)
      sum += (size_t)s->values[k];
    for (size_t k = 0; k < s->n_labels; k++)
      sum += touch(s->labels[k].key) + (s->labels[k].str ? touch(s->labels[k].str) : 0);
  }
  for (size_t i = 0; i < p->n_locations; i++) {
    const cprof__pf_location_t *l = &p->locations[i];
    if (l->mapping)
      sum += touch(l->mapping->file);
    for (size_t k = 0; k < l->n_lines; k++)
      if (l->lines[k].function)
        sum += touch(l->lines[k].function->name) + touch(l->lines[k].function->filename);
  }
  for (size_t i = 0; i < p->n_comments; i++)
    sum += touch(p->comments[i]);
  cprof__pf_free(p);
  volatile size_t sink = sum; /* so that nothing above is optimized away */
  (void)sink;
  return 0;
}

/* pprof's -tagroot and -tagleaf (src/model/tagroot.c) on profiles built
 * by hand, with the frames pprof's addLabelNodes adds: one per key, named
 * by the sample's values joined by ",", "" without one; the first root key
 * outermost, the last leaf key innermost. tests/cli/top.sh compares the
 * same against go tool pprof itself. */
#include <errno.h>

#include "check.h"
#include "profile/pf_fixture.h"

static fx_t labelled(void) {
  fx_t f = fx_new("samples/count", 32);
  cprof__pf_sample_t *s = fx_sample(&f, "main;work", (int64_t[]){1});
  fx_label(&f, s, "thread", "a");
  fx_num_label(&f, s, "bytes", 2048, "bytes");
  s = fx_sample(&f, "main;other", (int64_t[]){2});
  fx_label(&f, s, "thread", "b");
  fx_label(&f, s, "thread", "c"); /* two values: one frame "b,c" */
  fx_num_label(&f, s, "n", 7, NULL);
  fx_sample(&f, "main;work", (int64_t[]){4}); /* no labels: "" frames */
  return f;
}

/* Every sample's locations are p's own, and IDs rise. */
static int consistent(const cprof__pf_t *p) {
  for (size_t i = 0; i < p->n_samples; i++)
    for (size_t k = 0; k < p->samples[i].n_locations; k++) {
      const cprof__pf_location_t *l = p->samples[i].locations[k];
      if (l < p->locations || l >= p->locations + p->n_locations)
        return 0;
      for (size_t j = 0; j < l->n_lines; j++)
        if (l->lines[j].function < p->functions ||
            l->lines[j].function >= p->functions + p->n_functions)
          return 0;
    }
  for (size_t i = 1; i < p->n_locations; i++)
    if (p->locations[i].id <= p->locations[i - 1].id)
      return 0;
  for (size_t i = 1; i < p->n_functions; i++)
    if (p->functions[i].id <= p->functions[i - 1].id)
      return 0;
  return 1;
}

static void check_tags(int line, const char *roots, const char *leaves, int want_root,
                       int want_leaf, const char *want) {
  fx_t f = labelled();
  int rm = -1, lm = -1;
  CHECK_EQ_INT(cprof__pf_tagroot(f.p, roots, leaves, "minimum", &rm, &lm), 0);
  char *dump = fx_dump(f.p);
  if (strcmp(dump, want) != 0)
    fprintf(stderr, "test_tagroot.c:%d: tagroot \"%s\" tagleaf \"%s\"\n", line, roots ? roots : "",
            leaves ? leaves : "");
  CHECK_EQ_STR(dump, want);
  free(dump);
  CHECK_EQ_INT(rm, want_root);
  CHECK_EQ_INT(lm, want_leaf);
  CHECK(consistent(f.p));
  cprof__pf_free(f.p);
}

int main(void) {
  check_tags(__LINE__, NULL, "", 0, 0,
             "main;other 2 n=7 thread=b thread=c\n"
             "main;work 1 bytes=2048 bytes thread=a\n"
             "main;work 4");
  check_tags(__LINE__, "thread", NULL, 1, 0,
             ";main;work 4\n"
             "a;main;work 1 bytes=2048 bytes thread=a\n"
             "b,c;main;other 2 n=7 thread=b thread=c");
  /* Numeric values scaled as pprof's ScaledLabel; without a unit, bare. */
  check_tags(__LINE__, "bytes,n", NULL, 1, 0,
             "2kB;;main;work 1 bytes=2048 bytes thread=a\n"
             ";7;main;other 2 n=7 thread=b thread=c\n"
             ";;main;work 4");
  /* Leaves: the last key innermost. Commas and empty keys are dropped. */
  check_tags(__LINE__, ",thread,", "bytes,,thread", 1, 1,
             ";main;work;; 4\n"
             "a;main;work;2kB;a 1 bytes=2048 bytes thread=a\n"
             "b,c;main;other;;b,c 2 n=7 thread=b thread=c");
  check_tags(__LINE__, "nosuch", "", 0, 0,
             ";main;other 2 n=7 thread=b thread=c\n"
             ";main;work 1 bytes=2048 bytes thread=a\n"
             ";main;work 4");

  /* Equal frames are one location, whose file is the key. */
  fx_t f = labelled();
  size_t nl = f.p->n_locations, nf = f.p->n_functions;
  int rm, lm;
  CHECK_EQ_INT(cprof__pf_tagroot(f.p, "thread", NULL, "minimum", &rm, &lm), 0);
  CHECK_EQ_INT(f.p->n_locations, nl + 3); /* "a", "b,c", "" */
  CHECK_EQ_INT(f.p->n_functions, nf + 3);
  CHECK_EQ_STR(f.p->functions[nf].filename, "thread");
  CHECK(f.p->samples[1].locations[f.p->samples[1].n_locations - 1] == &f.p->locations[nl + 1]);
  cprof__pf_free(f.p);

  /* More than 32 keys: -EINVAL, the profile as it was. */
  f = labelled();
  char many[200] = "";
  for (int i = 0; i < 33; i++)
    strcat(many, "k,");
  CHECK_EQ_INT(cprof__pf_tagroot(f.p, many, NULL, "minimum", &rm, &lm), -EINVAL);
  CHECK_EQ_INT(f.p->n_locations, nl);
  cprof__pf_free(f.p);
  return check_result("test_tagroot");
}

/* A stack an unwinder had to cut short ends in CPROF_PC_STACK_CUT
 * (src/unwind/pc.h): the profile shows a frame "[stack cut]" there, with
 * no mapping and no address, as it shows lost samples; the frames before
 * it are symbolized as usual, and two stacks cut at the same place share
 * the location. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "profile/builder_internal.h"
#include "unwind/pc.h"

__attribute__((noinline)) static int in_a_known_function(int x) { return x * 3 + 1; }

static const char *name_of(const cprof__builder_t *b, const cprof__resolved_t *r,
                           const cprof__res_location_t *l) {
  if (l->nlines < 1)
    return NULL;
  const cprof__res_function_t *f = &r->functions[r->lines[l->first_line].function];
  return (size_t)f->name < b->strings.n ? b->strings.v[f->name] : NULL;
}

int main(void) {
  cprof__profile_desc_t desc = {.sample_types = {{"samples", "count"}}, .n_sample_types = 1};
  cprof__builder_t *b = cprof__builder_new(&desc);
  CHECK(b != NULL);
  if (!b)
    return check_result("test_stack_cut");
  uintptr_t here = (uintptr_t)in_a_known_function;
  const uintptr_t cut_short[] = {here + 1, here + 2, CPROF_PC_STACK_CUT};
  const uintptr_t also_cut[] = {here + 3, CPROF_PC_STACK_CUT};
  const uintptr_t whole[] = {here + 1, here + 2};
  int64_t one = 1;
  CHECK_EQ_INT(cprof__builder_add(b, cut_short, 3, &one, NULL, 0), 0);
  CHECK_EQ_INT(cprof__builder_add(b, also_cut, 2, &one, NULL, 0), 0);
  CHECK_EQ_INT(cprof__builder_add(b, whole, 2, &one, NULL, 0), 0);

  cprof__resolved_t r;
  CHECK_EQ_INT(cprof__builder_resolve(b, &r), 0);
  CHECK_EQ_INT(b->nsamples, 3);
  int64_t cut_loc[2] = {-1, -2};
  for (size_t i = 0; i < b->nsamples; i++) {
    const cprof__sample_rec_t *s = &b->samples[i];
    for (int j = 0; j < s->depth; j++) {
      const cprof__res_location_t *l = &r.locations[r.stack_locs[r.stack_start[i] + (size_t)j]];
      const char *name = name_of(b, &r, l);
      if (s->pcs[j] == CPROF_PC_STACK_CUT) {
        CHECK_EQ_STR(name, "[stack cut]");
        CHECK(l->address == 0 && l->mapping == -1 && l->nlines == 1);
        CHECK_EQ_INT(j, s->depth - 1);
        cut_loc[s->depth == 3 ? 0 : 1] = r.stack_locs[r.stack_start[i] + (size_t)j];
      } else {
        /* The real frames keep their addresses (and names, with symbols). */
        CHECK(l->address == (j == 0 ? s->pcs[0] : s->pcs[j] - 1));
        CHECK(name == NULL || strcmp(name, "[stack cut]") != 0);
      }
    }
  }
  CHECK(cut_loc[0] >= 0 && cut_loc[0] == cut_loc[1]); /* one location for every cut */
  cprof__resolved_free(&r);
  cprof__builder_free(b);
  return check_result("test_stack_cut");
}

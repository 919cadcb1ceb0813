/* Registers the built-in profiles, once, at the registry's first use. */
#include "registry/builtin.h"

#include "sample/stack_table.h"

void cprof__builtin_register(void) {
  static const cprof__profile_t *const all[] = {
      &cprof__allocs_profile, &cprof__block_profile, &cprof__goroutine_profile,
      &cprof__heap_profile,   &cprof__mutex_profile, &cprof__threadcreate_profile,
      &cprof__wall_profile,
  };
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    cprof__registry_add_builtin(all[i]);
}

int cprof__builtin_add_record(cprof__builder_t *b, const uintptr_t *pcs, int depth,
                              const int64_t *values, const cprof__label_t *labels, int nlabels) {
  return depth ? cprof__builder_add(b, pcs, depth, values, labels, nlabels)
               : cprof__builder_add_pseudo(b, CPROF_STACKS_OVER_LIMIT, values, labels, nlabels);
}

/* Registers the built-in profiles, once, at the registry's first use. */
#include "registry/builtin.h"

void cprof__builtin_register(void) {
  static const cprof__profile_t *const all[] = {
      &cprof__allocs_profile, &cprof__block_profile, &cprof__goroutine_profile,
      &cprof__heap_profile,   &cprof__mutex_profile, &cprof__threadcreate_profile,
      &cprof__wall_profile,
  };
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    cprof__registry_add_builtin(all[i]);
}

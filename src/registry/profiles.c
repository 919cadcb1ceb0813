/* cprof_profiles: the registry's list, as Go's pprof.Profiles(), for a
 * program to see what cprof_profile_write can write. The list is one
 * block, the array of pointers, then the entries, then their strings, so
 * that the caller releases it with one call and nothing in it points
 * into the registry. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/guard.h"
#include "cprof.h"
#include "registry/registry.h"

cprof_profile_info_t **cprof_profiles(void) {
  const cprof__profile_t *p[CPROF_MAX_PROFILES_REGISTERED];
  int saved = errno;
  /* The counts read the samplers' tables, and the block is cprof's: the
   * program's heap profile shows neither. */
  cprof__guard_enter();
  int n = cprof__registry_list(p, CPROF_MAX_PROFILES_REGISTERED);
  size_t size =
      (size_t)(n + 1) * sizeof(cprof_profile_info_t *) + (size_t)n * sizeof(cprof_profile_info_t);
  for (int i = 0; i < n; i++)
    size += strlen(p[i]->name) + 1 + (p[i]->desc ? strlen(p[i]->desc) : 0) + 1;
  cprof_profile_info_t **list = malloc(size);
  if (list) {
    cprof_profile_info_t *info = (cprof_profile_info_t *)(list + n + 1);
    char *text = (char *)(info + n);
    for (int i = 0; i < n; i++) {
      const char *desc = p[i]->desc ? p[i]->desc : "";
      size_t name_len = strlen(p[i]->name) + 1, desc_len = strlen(desc) + 1;
      info[i].name = memcpy(text, p[i]->name, name_len);
      info[i].description = memcpy(text + name_len, desc, desc_len);
      info[i].count = p[i]->ops->count(p[i]);
      text += name_len + desc_len;
      list[i] = &info[i];
    }
    list[n] = NULL;
  }
  cprof__guard_leave();
  errno = list ? saved : ENOMEM;
  return list;
}

void cprof_profiles_free(cprof_profile_info_t **list) {
  cprof__guard_enter();
  free(list);
  cprof__guard_leave();
}

/* The symbolizer's caches on a pointer into libdw's data (die_names.c's
 * names and DIE children, dwarf_scopes.c's units): open-addressing tables,
 * arrays of entries whose first member is that pointer (NULL: an empty
 * slot), at most half full. */
#ifndef CPROF_SYMBOL_PTR_TABLE_H
#define CPROF_SYMBOL_PTR_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline size_t cprof__ptr_table_home(const void *key, size_t cap) {
  return ((uintptr_t)key >> 3) & (cap - 1);
}

static inline const void *cprof__ptr_table_key(const void *v, size_t esize, size_t k) {
  return *(const void *const *)((const char *)v + k * esize);
}

/* The entry for key, or NULL. */
static inline void *cprof__ptr_table_find(void *v, size_t cap, size_t esize, const void *key) {
  if (!cap)
    return NULL;
  for (size_t k = cprof__ptr_table_home(key, cap); cprof__ptr_table_key(v, esize, k);
       k = (k + 1) & (cap - 1))
    if (cprof__ptr_table_key(v, esize, k) == key)
      return (char *)v + k * esize;
  return NULL;
}

/* The empty slot key goes in, the table grown first if one more entry
 * would fill it past half; NULL without memory. The caller fills the
 * slot, key first, and counts it in its length (len here). */
static inline void *cprof__ptr_table_slot(void **v, size_t *cap, size_t len, size_t esize,
                                          const void *key) {
  if ((len + 1) * 2 > *cap) {
    size_t ncap = *cap ? *cap * 2 : 64;
    char *nv = calloc(ncap, esize);
    if (!nv)
      return NULL;
    for (size_t i = 0; i < *cap; i++) {
      const void *ik = cprof__ptr_table_key(*v, esize, i);
      if (!ik)
        continue;
      size_t k = cprof__ptr_table_home(ik, ncap);
      while (cprof__ptr_table_key(nv, esize, k))
        k = (k + 1) & (ncap - 1);
      memcpy(nv + k * esize, (char *)*v + i * esize, esize);
    }
    free(*v);
    *v = nv;
    *cap = ncap;
  }
  size_t k = cprof__ptr_table_home(key, *cap);
  while (cprof__ptr_table_key(*v, esize, k))
    k = (k + 1) & (*cap - 1);
  return (char *)*v + k * esize;
}

#endif

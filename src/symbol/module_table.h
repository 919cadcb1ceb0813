/* The tables the symbolizer builds for a module on its first use and
 * keeps (elf_funcs.c's symbols, dwarf_scopes.c's units): an array of
 * entries, each beginning with its module. */
#ifndef CPROF_SYMBOL_MODULE_TABLE_H
#define CPROF_SYMBOL_MODULE_TABLE_H

#include <elfutils/libdwfl.h>
#include <stddef.h>
#include <stdlib.h>

/* The entry of mod among the *n entries of size bytes at *v (room for
 * *cap, malloc'd or NULL), each beginning with its Dwfl_Module *. On the
 * module's first use, build(mod, entry) makes its entry at the end, the
 * array grown first (doubling, from 16) when full. NULL without memory or
 * when build fails (non-zero), which leaves no entry. */
static inline void *cprof__module_entry(void **v, int *n, int *cap, size_t size, Dwfl_Module *mod,
                                        int (*build)(Dwfl_Module *mod, void *entry)) {
  for (int i = 0; i < *n; i++) {
    char *e = (char *)*v + (size_t)i * size;
    if (*(Dwfl_Module **)(void *)e == mod)
      return e;
  }
  if (*n == *cap) {
    int grown = *cap ? *cap * 2 : 16;
    void *nv = realloc(*v, (size_t)grown * size);
    if (!nv)
      return NULL;
    *v = nv;
    *cap = grown;
  }
  char *e = (char *)*v + (size_t)*n * size;
  if (build(mod, e) != 0)
    return NULL;
  (*n)++;
  return e;
}

#endif

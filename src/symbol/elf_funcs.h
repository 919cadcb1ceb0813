/* Function symbols from modules' ELF symbol tables, indexed by address.
 *
 * libdw's dwfl_module_addrinfo scans the whole symbol table on every call:
 * 100 us per address for libc's 10,000 symbols, and in proportion more for
 * big C++ programs with hundreds of thousands. This keeps each module's
 * function symbols sorted, built on the first lookup in the module, so a
 * lookup is a binary search. */
#ifndef CPROF_SYMBOL_ELF_FUNCS_H
#define CPROF_SYMBOL_ELF_FUNCS_H

#include <elfutils/libdwfl.h>
#include <stdint.h>

typedef struct cprof__elf_func {
  uintptr_t start, size; /* in this process; size 0: the symbol does not say */
  const char *name;      /* libdw's string, raw (mangled, maybe versioned) */
} cprof__elf_func_t;

/* All modules looked up so far; zero-initialised is empty. */
typedef struct cprof__elf_funcs {
  struct cprof__module_funcs *v;
  int n, cap;
} cprof__elf_funcs_t;

/* The function symbol of mod containing addr, as dwfl_module_addrinfo would
 * find it, or NULL. Where several symbols share an address the one shown is
 * the one with a size, then global over weak over local, then with fewer
 * leading underscores, then the shorter: libc's entry point is "malloc",
 * not "__libc_malloc". A symbol without a size (hand-written assembly often
 * leaves it out) counts when it is the nearest below addr and at or above
 * `floor`, the start of the mapping holding addr; otherwise the last symbol
 * of a library would claim everything above it. */
const cprof__elf_func_t *cprof__elf_funcs_find(cprof__elf_funcs_t *t, Dwfl_Module *mod,
                                               uintptr_t addr, uintptr_t floor);
void cprof__elf_funcs_free(cprof__elf_funcs_t *t);

#endif

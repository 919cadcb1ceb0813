/* The name a function's DWARF entry is shown by: the full name `nm -C`
 * gives its symbol wherever one can be had, so that overloads, template
 * instances and lambdas stay apart. */
#ifndef CPROF_SYMBOL_DIE_NAMES_H
#define CPROF_SYMBOL_DIE_NAMES_H

#include "symbol/dwarf_scopes.h"
#include "symbol/elf_funcs.h"
#include "symbol/names.h"

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stddef.h>

/* Names worked out beyond a linkage name, by DIE; zero-initialised is
 * empty. Its strings live until cprof__die_names_free. */
typedef struct cprof__die_names {
  struct cprof__die_name *v; /* open addressing on the DIE's address */
  size_t cap, len;
  struct cprof__die_kids *kids; /* scopes' children, the same way */
  size_t kcap, klen;
} cprof__die_names_t;

/* What naming a DIE of one unit needs: the caches the symbolizer keeps,
 * the module and bias of the unit (a DWARF address plus bias is an
 * address in this process), and the unit. */
typedef struct cprof__die_name_ctx {
  cprof__names_t *names;
  cprof__elf_funcs_t *funcs;
  cprof__dwarf_scopes_t *scopes;
  Dwfl_Module *mod;
  Dwarf_Addr bias;
  Dwarf_Die *cudie;
} cprof__die_name_ctx_t;

/* The name of die, a DW_TAG_subprogram or DW_TAG_inlined_subroutine of
 * c->cudie, or NULL when DWARF names it not at all. *system is set to the
 * mangled name it was demangled from, or NULL when there is none (a C
 * function, a name made from DWARF parents). */
const char *cprof__die_name(cprof__die_names_t *t, const cprof__die_name_ctx_t *c, Dwarf_Die *die,
                            const char **system);
void cprof__die_names_free(cprof__die_names_t *t);

#endif

/* The DWARF scopes that contain a pc: the blocks and inlined calls nested in
 * the function whose code it is.
 *
 * dwarf_getscopes finds them by walking the compilation unit's whole DIE
 * tree on each call: 100 us per address in libc's larger units, and in
 * proportion more in big C++ ones. This keeps, per unit, its functions'
 * address ranges sorted (built on the first lookup in the unit), so a lookup
 * is a binary search and a walk down one function's own scopes. */
#ifndef CPROF_SYMBOL_DWARF_SCOPES_H
#define CPROF_SYMBOL_DWARF_SCOPES_H

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stddef.h>

/* The units and modules indexed so far; zero-initialised is empty. Their
 * DIEs belong to the Dwfl they came from, so free this before it ends. */
typedef struct cprof__dwarf_scopes {
  struct cprof__cu_index *v; /* open addressing on the unit */
  size_t cap, len;
  struct cprof__module_units *mods; /* modules whose units we had to find ourselves */
  int nmods, capmods;
} cprof__dwarf_scopes_t;

/* The compilation unit whose code holds addr (an address in this process)
 * and, in *bias, what to subtract from addr to get the unit's DWARF
 * addresses; NULL when no unit has it. First dwfl_module_addrdie; when that
 * finds nothing, the units' own address ranges: libdw 0.188 finds units only
 * through .debug_aranges, which clang does not emit by default, so without
 * this a clang-built program would have no DWARF names or lines. */
Dwarf_Die *cprof__dwarf_unit_at(cprof__dwarf_scopes_t *t, Dwfl_Module *mod, Dwarf_Addr addr,
                                Dwarf_Addr *bias);

/* The DIEs containing pc (a DWARF address of cudie's module, i.e. without
 * the module's bias), innermost first, through the subprogram holding them
 * (possibly followed by its outer scopes). Returns the count, 0 when no
 * function contains pc, and sets *out to a malloc'd array (or NULL). */
int cprof__dwarf_scopes_at(cprof__dwarf_scopes_t *t, Dwarf_Die *cudie, Dwarf_Addr pc,
                           Dwarf_Die **out);
/* Where an out-of-line copy of a function starts, for a frame inlined from
 * it: origin is the inlined call's DW_AT_abstract_origin, and a copy is a
 * subprogram with code in cudie's unit pointing to the same abstract
 * instance (the lowest, if GCC made several clones). Sets *entry (a DWARF
 * address) and returns 0, or -1 when the unit has no such copy. */
int cprof__dwarf_copy_entry(cprof__dwarf_scopes_t *t, Dwarf_Die *cudie, Dwarf_Die *origin,
                            Dwarf_Addr *entry);
/* Where a function DIE's code starts (a DWARF address): its entry pc, low
 * pc, or the start of its first range. Returns 0, or -1 if it has none. */
int cprof__dwarf_entry(Dwarf_Die *die, Dwarf_Addr *entry);
void cprof__dwarf_scopes_free(cprof__dwarf_scopes_t *t);

#endif

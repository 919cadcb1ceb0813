/* From an address to frames: the function that holds it, its file and
 * line, and the calls inlined there, innermost first, with libdw (DWARF)
 * or the symbol table where a module has no DWARF. Runs with the
 * instance's mutex held (symbolize.c). */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbol/debuginfod.h"
#include "symbol/symbolizer.h"

static int is_function(Dwarf_Die *die) {
  int tag = dwarf_tag(die);
  return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine || tag == DW_TAG_entry_point;
}

/* The first function scope at or after chain[i], or -1. Lexical blocks and
 * the like may sit between an inlined call and its caller. */
static int next_function(Dwarf_Die *chain, int n, int i) {
  for (; i < n; i++)
    if (is_function(&chain[i]))
      return i;
  return -1;
}

/* Where an inlined call was made: DW_AT_call_file and DW_AT_call_line of the
 * DW_TAG_inlined_subroutine, the file an index into its unit's file table. */
static void call_site(Dwarf_Die *inl, const char **file, int *line) {
  Dwarf_Attribute attr;
  Dwarf_Word v;
  Dwarf_Die cu;
  Dwarf_Files *files;
  *file = NULL;
  *line = 0;
  if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_file, &attr), &v) == 0 &&
      dwarf_diecu(inl, &cu, NULL, NULL) && dwarf_getsrcfiles(&cu, &files, NULL) == 0)
    *file = dwarf_filesrc(files, v, NULL, NULL);
  if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_line, &attr), &v) == 0 && v <= INT_MAX)
    *line = (int)v;
}

static void put(cprof__frame_t *frames, int max, int *n, int keep_outer, const char *fn,
                const char *system, const char *file, int line) {
  if (*n == max) {
    if (!keep_outer)
      return;
    --*n;
  }
  frames[(*n)++] =
      (cprof__frame_t){.function = fn, .system_name = system, .file = file, .line = line};
}

/* An address fell in a module without debug information: debuginfod may
 * have it (debuginfod.c; nothing happens without DEBUGINFOD_URLS). Once per
 * module and instance, and not in quick mode, where the program exits. */
static void ask_debuginfod(cprof__symbolizer_t *s, int i) {
  const cprof__mapping_t *mp = &s->mappings[i];
  if (s->asked[i] || cprof__symbolizer_quick_now || mp->has_dwarf || mp->path[0] != '/' ||
      !mp->build_id[0])
    return;
  s->asked[i] = 1;
  cprof__debuginfod_want(mp->build_id);
}

/* The frames of one address, innermost first, as eu-addr2line -i -f prints
 * them. With keep_outer, a full array has its last slot overwritten so that
 * the outermost function always ends up last. */
static int resolve(cprof__symbolizer_t *s, int mi, uintptr_t addr, cprof__frame_t *frames, int max,
                   uintptr_t *offset, int keep_outer) {
  if (offset)
    *offset = 0;
  /* Code is only in the mappings we list; and dwfl_addrmodule answers the
   * last module for any address above it, so its answer is checked too. */
  Dwfl *dwfl = mi >= 0 && mi < s->nmappings && max > 0 ? cprof__symbolizer_dwfl_for(s, mi) : NULL;
  if (!dwfl)
    return 0;
  ask_debuginfod(s, mi);
  Dwfl_Module *mod = dwfl_addrmodule(dwfl, addr);
  Dwarf_Addr mod_start, mod_end;
  if (!mod || !dwfl_module_info(mod, NULL, &mod_start, &mod_end, NULL, NULL, NULL, NULL) ||
      addr < mod_start || addr >= mod_end)
    return 0;

  const cprof__elf_func_t *ef = cprof__elf_funcs_find(&s->funcs, mod, addr, s->mappings[mi].start);
  if (ef && offset)
    *offset = addr - ef->start;
  const char *elf_fn = ef ? cprof__names_show(&s->names, ef->name) : NULL;
  const char *elf_sys = elf_fn && elf_fn != ef->name ? ef->name : NULL;

  /* The unit holding addr; its line table gives the innermost position,
   * and its DIEs the nest of scopes from the innermost outwards. */
  Dwarf_Addr bias = 0;
  Dwarf_Die *cudie = cprof__symbolizer_uses_dwarf(s, mi)
                         ? cprof__dwarf_unit_at(&s->scopes, mod, addr, &bias)
                         : NULL;
  const char *file = NULL;
  int line = 0;
  Dwarf_Line *dl = cudie ? dwarf_getsrc_die(cudie, addr - bias) : NULL;
  if (dl && (file = dwarf_linesrc(dl, NULL, NULL)) != NULL && dwarf_lineno(dl, &line) != 0)
    line = 0;
  Dwarf_Die *chain = NULL;
  int nchain = cudie ? cprof__dwarf_scopes_at(&s->scopes, cudie, addr - bias, &chain) : 0;

  cprof__die_name_ctx_t names = {.names = &s->names,
                                 .funcs = &s->funcs,
                                 .scopes = &s->scopes,
                                 .mod = mod,
                                 .bias = bias,
                                 .cudie = cudie};
  int n = 0;
  int i = next_function(chain, nchain, 0);
  if (i < 0) {
    /* No function DIE for this address: the ELF symbol, with the line
     * table's position if it happens to have one. */
    if (elf_fn)
      put(frames, max, &n, keep_outer, elf_fn, elf_sys, file, line);
    free(chain);
    return n;
  }
  for (;;) {
    Dwarf_Die *die = &chain[i];
    int inlined = dwarf_tag(die) == DW_TAG_inlined_subroutine;
    const char *sys;
    const char *fn = cprof__die_name(&s->die_names, &names, die, &sys);
    if (!fn && !inlined) {
      fn = elf_fn;
      sys = elf_sys;
    }
    put(frames, max, &n, keep_outer, fn, sys, file, line);
    if (!inlined || (n == max && !keep_outer))
      break;
    call_site(die, &file, &line);
    i = next_function(chain, nchain, i + 1);
    if (i < 0) {
      /* An inlined call with no enclosing function DIE: malformed DWARF, but
       * the call site and the symbol still say where we are. */
      put(frames, max, &n, keep_outer, elf_fn, elf_sys, file, line);
      break;
    }
  }
  free(chain);
  return n;
}

int cprof__symbolize(cprof__symbolizer_t *s, uintptr_t addr, cprof__frame_t *frames, int max,
                     uintptr_t *offset) {
  return resolve(s, cprof__symbolizer_mapping_of(s, addr), addr, frames, max, offset, 0);
}

int cprof__symbolize_in(cprof__symbolizer_t *s, int m, uintptr_t addr, cprof__frame_t *frames,
                        int max, uintptr_t *offset) {
  return resolve(s, m, addr, frames, max, offset, 0);
}

const char *cprof__symbolize_name(cprof__symbolizer_t *s, uintptr_t addr) {
  cprof__frame_t f;
  return resolve(s, cprof__symbolizer_mapping_of(s, addr), addr, &f, 1, NULL, 1) ? f.function
                                                                                 : NULL;
}

/* What the symbolizer's files share: the instance (symbolize.c builds,
 * keeps and hands it out; resolve.c turns addresses into frames with it).
 * Not for other parts of cprof: they use symbol/symbolize.h. */
#ifndef CPROF_SYMBOL_SYMBOLIZER_H
#define CPROF_SYMBOL_SYMBOLIZER_H

#include <elfutils/libdwfl.h>

#include "symbol/die_names.h"
#include "symbol/dwarf_scopes.h"
#include "symbol/elf_funcs.h"
#include "symbol/names.h"
#include "symbol/symbolize.h"
#include "unwind/maps.h"
#include "unwind/modules.h"
#include "unwind/outside.h"

/* A retired module's own Dwfl, made the first time one of its addresses
 * is symbolized: it may share its addresses with a module mapped now, or
 * with another retired one, and a Dwfl holds one module per address. */
typedef struct retired_dwfl {
  const cprof__retired_t *r;
  Dwfl *dwfl; /* NULL: not made yet, or the file is gone or is another build */
  int tried;
} retired_dwfl_t;

struct cprof__symbolizer {
  cprof__maps_t maps;         /* the snapshot the mappings were made from; paths point here */
  cprof__mapping_t *mappings; /* nlive mapped now, then the retired */
  int nmappings, nlive;
  retired_dwfl_t *retired; /* nmappings - nlive of them */
  int *by_addr;            /* mapping indices in address order, for mapping_of */
  /* Per mapping: debuginfod was told it has no debug information (see
   * ask_debuginfod). */
  unsigned char *asked;
  unsigned fetched; /* cprof__debuginfod_generation when this was built */
  Dwfl *dwfl;       /* NULL when libdw could not be set up: mappings only */
  cprof__names_t names;
  cprof__elf_funcs_t funcs;
  cprof__dwarf_scopes_t scopes;
  cprof__die_names_t die_names;
  cprof__blocked_ctx_t blocked; /* libdw's thread callbacks' state */
  Elf **refs;                   /* our references to debug files' Elfs, see below */
  int nrefs, caprefs;
  int held;       /* descriptors libdw keeps that we could not take back */
  unsigned table; /* the table they are in (core/fds.h), when held */
  int tainted;    /* libdw may close a number that is no longer its own */
  int once;       /* built for one use: ended at release */
  int bare;       /* mappings only, without build IDs, names or libdw (cprof__symbolizer_bare) */
};

/* Nonzero while this thread writes a profile someone is waiting for: see
 * cprof__symbolizer_quick. Per thread, so that an HTTP request served at the
 * same time still gets every file and line. */
extern __thread int cprof__symbolizer_quick_now;

/* Handed out when even the first instance cannot be allocated, so that
 * acquire never returns NULL: no mappings and no names. */
extern cprof__symbolizer_t cprof__symbolizer_empty;

/* ---- building and destroying (symbolizer_build.c) ---- */

/* An instance over `maps`, which it takes over (also on failure); NULL
 * when it could not be made (symbolizer_build.c says more). */
cprof__symbolizer_t *cprof__symbolizer_build(cprof__maps_t *maps);
/* The same, bare: the mappings alone, without build IDs and without libdw
 * (no Dwfl, no file opened): names nothing. */
cprof__symbolizer_t *cprof__symbolizer_build_bare(cprof__maps_t *maps);
void cprof__symbolizer_destroy(cprof__symbolizer_t *s);
/* Whether two snapshots have the same code mappings: an instance built
 * over one serves the other. */
int cprof__symbolizer_same_code(const cprof__maps_t *a, const cprof__maps_t *b);

/* The Dwfl that symbolizes mapping mi: the process's for a live one. */
Dwfl *cprof__symbolizer_dwfl_for(cprof__symbolizer_t *s, int mi);

#endif

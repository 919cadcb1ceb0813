/* Resolving a builder's samples at write time: every distinct address
 * becomes a Location, every distinct (name, file) a Function and every
 * executable mapping a Mapping, as Go's runtime/pprof profileBuilder does,
 * in the symbolized view (builder_internal.h) that the protobuf encoding
 * (builder.c) and the text formats (text.c) are written from. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "profile/builder_internal.h"
#include "profile/marks.h"
#include "symbol/symbolize.h"
#include "unwind/pc.h"

/* The most source frames one address can expand to (inlining depth). */
#define MAX_INLINE 32

/* A location is an address in one mapping: after a dlclose the same
 * address may be in two (unwind/modules.h). */
typedef struct loc_key {
  uint64_t address;
  int64_t pseudo;
  int mapping;
} loc_key_t;

static int loc_eq(const void *ctx, uint32_t value, const void *key) {
  const cprof__res_location_t *l = &((const cprof__resolved_t *)ctx)->locations[value];
  const loc_key_t *k = key;
  return l->address == k->address && l->pseudo == k->pseudo && l->mapping == k->mapping;
}

static int func_eq(const void *ctx, uint32_t value, const void *key) {
  const cprof__res_function_t *f = &((const cprof__resolved_t *)ctx)->functions[value];
  const cprof__res_function_t *k = key;
  return f->name == k->name && f->file == k->file;
}

/* The index of the Function (name, file), added if new with system_name;
 * or -ENOMEM. */
static int64_t function_for(cprof__resolved_t *r, int64_t name, int64_t file, int64_t system_name) {
  cprof__res_function_t k = {.name = name, .file = file, .system_name = system_name};
  uint64_t h = cprof__hash_u64(cprof__hash_u64(CPROF_HASH_SEED, (uint64_t)name), (uint64_t)file);
  int64_t i = cprof__table_find(&r->function_index, h, func_eq, r, &k);
  if (i >= 0)
    return i;
  if (cprof__builder_grow((void **)&r->functions, &r->capfunctions, r->nfunctions + 1,
                          sizeof *r->functions) != 0 ||
      cprof__table_insert(&r->function_index, h, (uint32_t)r->nfunctions) != 0)
    return -ENOMEM;
  r->functions[r->nfunctions] = k;
  return (int64_t)r->nfunctions++;
}

static int add_line(cprof__resolved_t *r, int64_t function, int64_t line) {
  if (cprof__builder_grow((void **)&r->lines, &r->caplines, r->nlines + 1, sizeof *r->lines) != 0)
    return -ENOMEM;
  r->lines[r->nlines].function = (uint32_t)function;
  r->lines[r->nlines].line = line;
  r->nlines++;
  return 0;
}

/* Per-mapping tallies for has_functions: how many of our locations fall in
 * the mapping and how many of those did not get a function name. */
typedef struct tally {
  size_t located, unnamed;
} tally_t;

/* The index of the Location for `address` (or for pseudo frame `pseudo`),
 * symbolized and added if new; or -ENOMEM. */
static int64_t location_new(cprof__builder_t *b, cprof__resolved_t *r, cprof__symbolizer_t *sym,
                            tally_t *tallies, uint64_t address, int64_t pseudo, uint32_t modules) {
  int m = pseudo ? -1 : cprof__symbolizer_mapping_then(sym, (uintptr_t)address, modules);
  if (m >= 0 && (size_t)m >= r->nmappings)
    m = -1;
  loc_key_t k = {.address = address, .pseudo = pseudo, .mapping = m};
  uint64_t h = cprof__hash_u64(cprof__hash_u64(CPROF_HASH_SEED, address), (uint64_t)pseudo);
  h = cprof__hash_u64(h, (uint64_t)(int64_t)m);
  int64_t i = cprof__table_find(&r->location_index, h, loc_eq, r, &k);
  if (i >= 0)
    return i;
  if (cprof__builder_grow((void **)&r->locations, &r->caplocations, r->nlocations + 1,
                          sizeof *r->locations) != 0)
    return -ENOMEM;
  cprof__res_location_t loc = {
      .address = address, .pseudo = pseudo, .mapping = m, .first_line = (uint32_t)r->nlines};
  if (pseudo) {
    /* Go attributes lost samples to a function of their own
     * (runtime/pprof's lostProfileEvent); ours has no mapping and no
     * address, just one Line naming it. */
    int64_t f = function_for(r, pseudo, 0, pseudo);
    if (f < 0 || add_line(r, f, 0) != 0)
      return -ENOMEM;
  } else {
    cprof__frame_t frames[MAX_INLINE];
    uintptr_t offset = 0;
    int nf = cprof__symbolize_in(sym, m, (uintptr_t)address, frames, MAX_INLINE, &offset);
    if (nf < 0)
      nf = 0;
    if (nf > MAX_INLINE)
      nf = MAX_INLINE;
    int named = nf > 0;
    /* profile.proto: Location.line is innermost first, the last Line being
     * the caller into which the others were inlined: the symbolizer's
     * order. A frame without a name cannot be a Line (a Line needs a
     * Function), and its location then counts as unnamed. */
    for (int j = 0; j < nf; j++) {
      if (!frames[j].function) {
        named = 0;
        continue;
      }
      int64_t name = cprof__strtab_intern(&b->strings, frames[j].function);
      int64_t file = name < 0 ? name : cprof__strtab_intern(&b->strings, frames[j].file);
      int64_t sys = file < 0 || !frames[j].system_name
                        ? file
                        : cprof__strtab_intern(&b->strings, frames[j].system_name);
      int64_t f = sys < 0 ? sys : function_for(r, name, file, frames[j].system_name ? sys : name);
      if (f < 0 || add_line(r, f, frames[j].line > 0 ? frames[j].line : 0) != 0)
        return -ENOMEM;
    }
    loc.sym_offset = named ? offset : 0;
    if (loc.mapping >= 0) {
      tallies[loc.mapping].located++;
      tallies[loc.mapping].unnamed += !named;
    }
  }
  loc.nlines = (uint32_t)(r->nlines - loc.first_line);
  if (cprof__table_insert(&r->location_index, h, (uint32_t)r->nlocations) != 0)
    return -ENOMEM;
  r->locations[r->nlocations] = loc;
  return (int64_t)r->nlocations++;
}

/* A direct-mapped cache of address -> location in front of the location
 * table. Every pc of every sample is looked up, and the same few hundred
 * addresses recur: a large heap profile makes millions of lookups for a
 * few thousand locations, and a hit here costs a multiply and a compare
 * instead of two hash rounds, a probe and a call through the table. */
#define RECENT_BITS 12

struct cprof__recent_loc {
  uint64_t address;
  uint32_t modules;
  uint32_t loc_plus_1; /* 0: empty */
};

/* location_new, through the cache. */
static int64_t location_for(cprof__builder_t *b, cprof__resolved_t *r, cprof__symbolizer_t *sym,
                            tally_t *tallies, uint64_t address, int64_t pseudo, uint32_t modules) {
  struct cprof__recent_loc *slot = NULL;
  if (!pseudo && r->recent) {
    slot = &r->recent[((address ^ modules) * UINT64_C(0x9e3779b97f4a7c15)) >> (64 - RECENT_BITS)];
    if (slot->loc_plus_1 && slot->address == address && slot->modules == modules)
      return slot->loc_plus_1 - 1;
  }
  int64_t i = location_new(b, r, sym, tallies, address, pseudo, modules);
  if (slot && i >= 0)
    *slot = (struct cprof__recent_loc){
        .address = address, .modules = modules, .loc_plus_1 = (uint32_t)i + 1};
  return i;
}

void cprof__resolved_free(cprof__resolved_t *r) {
  free(r->recent);
  free(r->mappings);
  free(r->locations);
  cprof__table_free(&r->location_index);
  free(r->lines);
  free(r->functions);
  cprof__table_free(&r->function_index);
  free(r->stack_locs);
  free(r->stack_start);
  memset(r, 0, sizeof *r);
}

/* Modules unloaded since are Mappings only where a location is theirs: a
 * program that reloads plugins would otherwise list every one it ever had
 * in every profile. Mapped ones are listed all, as always. */
static void drop_unused_retired(cprof__resolved_t *r, const cprof__mapping_t *maps,
                                const tally_t *tallies) {
  size_t kept = 0;
  int *moved = malloc((r->nmappings ? r->nmappings : 1) * sizeof *moved);
  if (!moved)
    return; /* all kept: true, only longer */
  for (size_t m = 0; m < r->nmappings; m++) {
    moved[m] = -1;
    if (!maps[m].retired || tallies[m].located > 0) {
      moved[m] = (int)kept;
      r->mappings[kept++] = r->mappings[m];
    }
  }
  for (size_t i = 0; i < r->nlocations; i++)
    if (r->locations[i].mapping >= 0)
      r->locations[i].mapping = moved[r->locations[i].mapping];
  r->nmappings = kept;
  free(moved);
}

/* The arrays of the samples' location indexes, and the cache of recent
 * lookups where the profile is large enough to pay for it. */
static int alloc_stacks(const cprof__builder_t *b, cprof__resolved_t *r) {
  size_t nlocs = 0;
  for (size_t i = 0; i < b->nsamples; i++)
    nlocs += (size_t)cprof__sample_nlocs(&b->samples[i]);
  r->stack_locs = malloc((nlocs ? nlocs : 1) * sizeof *r->stack_locs);
  r->stack_start = malloc((b->nsamples ? b->nsamples : 1) * sizeof *r->stack_start);
  /* The cache pays for its 64 KiB only on profiles of some size. */
  if (nlocs > 4096)
    r->recent = calloc((size_t)1 << RECENT_BITS, sizeof *r->recent);
  if (!r->stack_locs || !r->stack_start)
    return -ENOMEM;
  return 0;
}

/* Every mapping the symbolizer knows becomes a Mapping, in its order: the
 * main program first, which is what pprof names in its "File:" line. */
static int add_mappings(cprof__builder_t *b, cprof__resolved_t *r, const cprof__mapping_t *maps,
                        int nmaps, tally_t **tallies) {
  if (nmaps > 0 && (!(r->mappings = calloc((size_t)nmaps, sizeof *r->mappings)) ||
                    !(*tallies = calloc((size_t)nmaps, sizeof **tallies))))
    return -ENOMEM;
  r->nmappings = (size_t)nmaps;
  for (int m = 0; m < nmaps; m++) {
    cprof__res_mapping_t *rm = &r->mappings[m];
    rm->start = maps[m].start;
    rm->limit = maps[m].limit;
    rm->offset = maps[m].offset;
    if ((rm->file = cprof__strtab_intern(&b->strings, maps[m].path)) < 0 ||
        (rm->build_id = cprof__strtab_intern(&b->strings, maps[m].build_id)) < 0)
      return -ENOMEM;
  }
  return 0;
}

/* The location of every frame of every sample, in stack_locs. */
static int resolve_stacks(cprof__builder_t *b, cprof__resolved_t *r, cprof__symbolizer_t *sym,
                          tally_t *tallies) {
  size_t pos = 0;
  for (size_t i = 0; i < b->nsamples; i++) {
    const cprof__sample_rec_t *s = &b->samples[i];
    r->stack_start[i] = pos;
    if (s->pseudo) {
      int64_t l = location_for(b, r, sym, tallies, 0, s->pseudo, 0);
      if (l < 0)
        return -ENOMEM;
      r->stack_locs[pos++] = (uint32_t)l;
      continue;
    }
    for (int j = 0; j < s->depth; j++) {
      /* pcs[0] is the exact pc; the others are return addresses, which
       * point after the call: one byte back lands inside the call
       * instruction, so file:line and inlining are the call site's. */
      uint64_t address = j == 0 ? s->pcs[0] : s->pcs[j] - 1;
      int64_t cut = 0;
      /* Where the unwinder had to stop short, or why the time went
       * unsampled (unwind/pc.h): a frame that says so, as Go's
       * lost-samples frame does, not a bare address. */
      char text[128];
      const char *mark = cprof__mark_name(s->pcs[j], text, sizeof text);
      if (mark && (cut = cprof__strtab_intern(&b->strings, mark)) < 0)
        return -ENOMEM;
      int64_t l = cut ? location_for(b, r, sym, tallies, 0, cut, 0)
                      : location_for(b, r, sym, tallies, address, 0, s->modules);
      if (l < 0)
        return -ENOMEM;
      r->stack_locs[pos++] = (uint32_t)l;
    }
  }
  return 0;
}

/* What each Mapping claims (has_functions and the rest), and a comment for
 * each module that left addresses without names. */
static int describe_mappings(cprof__builder_t *b, cprof__resolved_t *r, cprof__symbolizer_t *sym,
                             const cprof__mapping_t *maps, int nmaps, const tally_t *tallies) {
  /* Truthful flags: `go tool pprof` asks the server's /debug/pprof/symbol
   * about every mapping without has_functions, and trusts the others.
   * A mapping whose DWARF the symbolizer's quick mode left out (a profile
   * written at exit) has names but no files or lines, so it claims none of
   * the four, and pprof tries to symbolize it again from the file when it
   * can open it (internal/symbolizer: newMapping skips only mappings with
   * has_functions, has_filenames or has_line_numbers). Upstream pprof,
   * through addr2line or llvm-symbolizer, then finds the separate debug
   * file and its files, lines and inlined frames; `go tool pprof`, whose
   * own ELF reader does not look for separate debug files, and any pprof
   * on another machine keep our names. */
  for (int m = 0; m < nmaps; m++) {
    cprof__res_mapping_t *rm = &r->mappings[m];
    int deferred = maps[m].has_dwarf && !cprof__symbolizer_uses_dwarf(sym, m);
    rm->has_functions = maps[m].has_symbols && tallies[m].unnamed == 0 && !deferred;
    rm->has_filenames = rm->has_line_numbers = rm->has_inline_frames =
        maps[m].has_dwarf && !deferred;
  }
  /* A module that left addresses without names for want of debug
   * information says so, and what would give them, in a comment: pprof
   * prints comments in its report's header (-top, graphs) and with
   * -comments. */
  for (int m = 0; m < nmaps; m++) {
    char why[1024];
    if (tallies[m].unnamed && cprof__symbolizer_no_symbols(sym, m, why, sizeof why) &&
        (r->mappings[m].no_symbols = cprof__strtab_intern(&b->strings, why)) < 0)
      return -ENOMEM;
  }
  return 0;
}

int cprof__builder_resolve(cprof__builder_t *b, cprof__resolved_t *r) {
  memset(r, 0, sizeof *r);
  cprof__table_init(&r->location_index);
  cprof__table_init(&r->function_index);
  if (alloc_stacks(b, r) != 0)
    return -ENOMEM;

  int rc = -ENOMEM;
  tally_t *tallies = NULL;
  cprof__symbolizer_t *sym = cprof__symbolizer_acquire();
  const cprof__mapping_t *maps = NULL;
  int nmaps = cprof__symbolizer_mappings(sym, &maps);
  if (nmaps < 0 || !maps)
    nmaps = 0;
  if (add_mappings(b, r, maps, nmaps, &tallies) != 0 || resolve_stacks(b, r, sym, tallies) != 0 ||
      describe_mappings(b, r, sym, maps, nmaps, tallies) != 0)
    goto out;
  drop_unused_retired(r, maps, tallies);
  rc = 0;
out:
  cprof__symbolizer_release(sym);
  free(tallies);
  return rc;
}

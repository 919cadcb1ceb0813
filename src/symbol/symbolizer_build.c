/* Building the symbolizer's instance (symbolize.c keeps it): a Dwfl
 * over the code mappings of a snapshot of the address space, one module a
 * file, each described (build id, whether it has DWARF) without loading
 * its symbols; the modules unloaded since a sample was taken as Dwfls of
 * their own, made on first use; and destroying it all. */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/procfs.h"

#include "core/hex.h"
#include "symbol/debuginfod.h"
#include "symbol/dwfl_files.h"
#include "symbol/symbolizer.h"

/* Compressed DWARF above this many bytes on disk is left to the reader in
 * quick mode. libdw inflates every compressed .debug_* section of a file
 * when it opens its DWARF, at about 60 MB/s of compressed input here (libc's
 * 3.7 MB: 60 ms; ld.so's 0.5 MB: 8 ms), so this is about 4 ms. */
#define QUICK_MAX_PACKED_DWARF (256u * 1024)

static const char deleted_suffix[] = " (deleted)";

/* The mappings that can hold code we symbolize: executable, and backed by a
 * file or the vDSO. Anonymous executable memory (JIT code) and [vsyscall]
 * have no file for a Mapping to name. */
static int is_code(const cprof__map_entry_t *e) {
  return e->perms[2] == 'x' && (e->path[0] == '/' || strcmp(e->path, "[vdso]") == 0);
}

/* Whether two snapshots have the same code mappings. We compare only those,
 * not the whole text: the heap, thread stacks and every large malloc change
 * the text all the time, and rebuilding the Dwfl for that would make each
 * request pay the full start-up cost. */
int cprof__symbolizer_same_code(const cprof__maps_t *a, const cprof__maps_t *b) {
  int i = 0, j = 0;
  for (;;) {
    while (i < a->n && !is_code(&a->v[i]))
      i++;
    while (j < b->n && !is_code(&b->v[j]))
      j++;
    if (i == a->n || j == b->n)
      return i == a->n && j == b->n;
    const cprof__map_entry_t *x = &a->v[i++], *y = &b->v[j++];
    if (x->start != y->start || x->end != y->end || x->offset != y->offset ||
        strcmp(x->perms, y->perms) != 0 || strcmp(x->path, y->path) != 0)
      return 0;
  }
}

void cprof__symbolizer_destroy(cprof__symbolizer_t *s) {
  if (!s || s == &cprof__symbolizer_empty)
    return;
  /* dwfl_end would close a number that may be the program's now: better
   * to leak the instance (see "Descriptors"). */
  if (s->tainted)
    return;
  /* The caches point into the Dwfl's data: they go first. */
  cprof__die_names_free(&s->die_names);
  cprof__dwarf_scopes_free(&s->scopes);
  cprof__elf_funcs_free(&s->funcs);
  cprof__names_free(&s->names);
  for (int i = 0; i < s->nlive; i++)
    if (s->mappings[i].build_id[0])
      free((char *)s->mappings[i].build_id);
  free(s->mappings);
  free(s->by_addr);
  free(s->asked);
  if (s->dwfl)
    dwfl_end(s->dwfl);
  for (int i = 0; i < s->nmappings - s->nlive; i++)
    if (s->retired[i].dwfl)
      dwfl_end(s->retired[i].dwfl);
  free(s->retired);
  for (int i = 0; i < s->nrefs; i++)
    elf_end(s->refs[i]); /* the last reference now: unmapped, nothing closed */
  free(s->refs);
  cprof__maps_free(&s->maps);
  free(s);
}

/* Reports every module of the snapshot maps to a new Dwfl. Returns NULL
 * when libdw cannot do it; the caller carries on without names. The
 * modules come from our snapshot, not libdw's dwfl_linux_proc_report,
 * which reads files a process that is not dumpable cannot (dwfl_files.c). */
static Dwfl *build_dwfl(const cprof__maps_t *maps) {
  /* Our debuginfo callback opens ELF files with libelf itself. */
  if (elf_version(EV_CURRENT) == EV_NONE)
    return NULL;
  Dwfl *dwfl = dwfl_begin(&cprof__dwfl_callbacks_tracked);
  if (!dwfl)
    return NULL;
  dwfl_report_begin(dwfl);
  /* A module libdw refused leaves the others worth keeping, so only
   * report_end decides. */
  (void)cprof__dwfl_report_maps(dwfl, maps);
  if (dwfl_report_end(dwfl, NULL, NULL) != 0) {
    dwfl_end(dwfl);
    return NULL;
  }
  return dwfl;
}

/* Whether elf has the DWARF that libdw's dwarf_begin_elf accepts (a
 * .debug_info, .debug_line or .debug_frame with data, compressed with zlib
 * or not: libdw/dwarf_begin_elf.c), read from the section headers alone.
 * Adds the on-disk size of its compressed .debug_* sections to *packed:
 * what opening the DWARF would have to inflate. */
static int elf_has_dwarf(Elf *elf, uint64_t *packed) {
  size_t shstrndx;
  if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0)
    return 0;
  int found = 0;
  for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn)) != NULL;) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || sh.sh_size == 0)
      continue;
    const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
    if (!name)
      continue;
    int gnu_z = strncmp(name, ".zdebug_", 8) == 0; /* the older GNU format */
    if (!gnu_z && strncmp(name, ".debug_", 7) != 0)
      continue;
    if (sh.sh_flags & SHF_COMPRESSED) {
      /* libdw 0.188 inflates zlib only; a zstd section fails its open. */
      GElf_Chdr ch;
      if (!gelf_getchdr(scn, &ch) || ch.ch_type != ELFCOMPRESS_ZLIB)
        continue;
    }
    if (gnu_z || (sh.sh_flags & SHF_COMPRESSED))
      *packed += sh.sh_size;
    const char *what = name + (gnu_z ? 8 : 7);
    found |= strcmp(what, "info") == 0 || strcmp(what, "line") == 0 || strcmp(what, "frame") == 0;
  }
  return found;
}

/* Whether dwfl_module_getdwarf would find DWARF for mod, and how much of it
 * is compressed, without loading it: the main file's sections, or else
 * those of the separate debug file that our find_debuginfo callback gives
 * libdw (libdwfl/dwfl_module_getdwarf.c: find_dw tries them in that order). */
static int probe_dwarf(Dwfl_Module *mod, Elf *main_elf, uint64_t *packed) {
  *packed = 0;
  if (elf_has_dwarf(main_elf, packed))
    return 1;
  *packed = 0;
  void **userdata;
  Dwarf_Addr low;
  const char *file = NULL;
  const char *name = dwfl_module_info(mod, &userdata, &low, NULL, NULL, NULL, &file, NULL);
  GElf_Word crc = 0;
  const char *debuglink = dwelf_elf_gnu_debuglink(main_elf, &crc);
  char *debug_name = NULL;
  int fd = cprof__dwfl_find_debuginfo(mod, userdata, name, low, file, debuglink, crc, &debug_name);
  free(debug_name);
  if (fd < 0)
    return 0;
  Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
  int found = elf_has_dwarf(elf, packed);
  if (elf)
    elf_end(elf);
  close(fd);
  return found;
}

/* Fills the build ID and what the module offers. Opening the ELF file first
 * is needed: libdwfl reads the build ID note only once it has the file. The
 * DWARF is only probed, not loaded: see the top of this file. */
static int describe_module(Dwfl *dwfl, cprof__mapping_t *mp) {
  mp->build_id = "";
  if (!dwfl)
    return 0;
  Dwfl_Module *mod = dwfl_addrmodule(dwfl, mp->start);
  if (!mod)
    return 0;
  GElf_Addr bias;
  Elf *elf = dwfl_module_getelf(mod, &bias);
  if (!elf)
    return 0;
  const unsigned char *bits;
  GElf_Addr vaddr;
  int len = dwfl_module_build_id(mod, &bits, &vaddr);
  if (len > 0) {
    char *hex = malloc((size_t)len * 2 + 1);
    if (!hex)
      return -ENOMEM;
    cprof__hex_encode(bits, (size_t)len, hex);
    mp->build_id = hex;
  }
  mp->has_symbols = dwfl_module_getsymtab(mod) > 0;
  uint64_t packed;
  mp->has_dwarf = probe_dwarf(mod, elf, &packed);
  mp->heavy_dwarf = mp->has_dwarf && packed > QUICK_MAX_PACKED_DWARF;
  return 0;
}

/* The path of the main program as /proc/self/maps spells it. */
static void exe_path(char *buf, size_t size) {
  char link[64];
  snprintf(link, sizeof link, "%s/exe", cprof__procfs_self());
  ssize_t n = readlink(link, buf, size - 1);
  if (n < 0)
    n = 0;
  buf[n] = '\0';
  size_t sl = sizeof deleted_suffix - 1;
  if ((size_t)n > sl && strcmp(buf + n - sl, deleted_suffix) == 0)
    buf[n - sl] = '\0';
}

/* The retired modules become mappings after the live ones, their names
 * found only when first needed (dwfl_for). */
static void add_retired(cprof__symbolizer_t *s, cprof__retired_t *const *gone, int ngone) {
  for (int k = 0; k < ngone; k++) {
    const cprof__retired_t *r = gone[k];
    s->retired[k].r = r;
    s->mappings[s->nmappings++] = (cprof__mapping_t){.start = r->start,
                                                     .limit = r->end,
                                                     .offset = r->offset,
                                                     .path = r->path,
                                                     .build_id = r->build_id,
                                                     .retired = 1};
  }
}

/* A Dwfl of the retired module alone, where it was loaded: the file is
 * opened by name as for a module mapped now (dwfl_files.c), and must still
 * be the build that was loaded, or its names would be another's. */
static Dwfl *report_retired(const cprof__retired_t *r, cprof__mapping_t *mp) {
  Dwfl *dwfl = dwfl_begin(&cprof__dwfl_callbacks_tracked);
  if (!dwfl)
    return NULL;
  dwfl_report_begin(dwfl);
  Dwfl_Module *mod = dwfl_report_module(dwfl, r->path, r->low, r->high);
  if (!mod || dwfl_report_end(dwfl, NULL, NULL) != 0) {
    dwfl_end(dwfl);
    return NULL;
  }
  GElf_Addr bias;
  Elf *elf = dwfl_module_getelf(mod, &bias);
  const unsigned char *bits;
  GElf_Addr vaddr;
  int len = elf ? dwfl_module_build_id(mod, &bits, &vaddr) : -1;
  char hex[sizeof r->build_id] = "";
  if (len > 0 && (size_t)len * 2 < sizeof hex)
    cprof__hex_encode(bits, (size_t)len, hex);
  if (!elf || bias != r->bias || strcmp(hex, r->build_id) != 0) {
    dwfl_end(dwfl);
    return NULL;
  }
  mp->has_symbols = dwfl_module_getsymtab(mod) > 0;
  uint64_t packed;
  mp->has_dwarf = probe_dwarf(mod, elf, &packed);
  mp->heavy_dwarf = mp->has_dwarf && packed > QUICK_MAX_PACKED_DWARF;
  return dwfl;
}

/* The Dwfl that symbolizes mapping mi: the process's for a live one. */
Dwfl *cprof__symbolizer_dwfl_for(cprof__symbolizer_t *s, int mi) {
  if (mi < s->nlive || s->bare)
    return mi < s->nlive ? s->dwfl : NULL;
  retired_dwfl_t *rd = &s->retired[mi - s->nlive];
  if (!rd->tried) {
    rd->tried = 1;
    rd->dwfl = report_retired(rd->r, &s->mappings[mi]);
  }
  return rd->dwfl;
}

/* Builds an instance over `maps`, which it takes over (also on failure). */
static cprof__symbolizer_t *build(cprof__maps_t *maps, int bare) {
  cprof__symbolizer_t *s = calloc(1, sizeof *s);
  if (!s) {
    cprof__maps_free(maps);
    return NULL;
  }
  s->maps = *maps;
  memset(maps, 0, sizeof *maps);

  int n = 0;
  for (int i = 0; i < s->maps.n; i++)
    n += is_code(&s->maps.v[i]);
  cprof__retired_t *const *gone;
  int ngone = cprof__modules_retired(&gone);
  /* One spare element so that a process with no code mappings (impossible in
   * practice) does not depend on malloc(0). */
  s->mappings = calloc((size_t)(n + ngone) + 1, sizeof *s->mappings);
  s->by_addr = calloc((size_t)n + 1, sizeof *s->by_addr);
  s->retired = calloc((size_t)ngone + 1, sizeof *s->retired);
  s->asked = calloc((size_t)(n + ngone) + 1, 1);
  if (!s->mappings || !s->by_addr || !s->retired || !s->asked)
    goto fail;
  /* Read before the files are looked for: a file fetched meanwhile makes
   * the next acquire build again. */
  s->fetched = cprof__debuginfod_generation();

  /* The main program first, as pprof expects mapping 1 to be the binary;
   * then the rest. Both passes walk the maps in address order, so each group
   * stays sorted by address. */
  char exe[PATH_MAX];
  exe_path(exe, sizeof exe);
  for (int pass = 0; pass < 2; pass++) {
    for (int i = 0; i < s->maps.n; i++) {
      const cprof__map_entry_t *e = &s->maps.v[i];
      if (!is_code(e) || (strcmp(e->path, exe) == 0) != (pass == 0))
        continue;
      cprof__mapping_t *mp = &s->mappings[s->nmappings++];
      mp->start = e->start;
      mp->limit = e->end;
      mp->offset = e->offset;
      mp->path = e->path;
      mp->build_id = "";
    }
  }
  /* by_addr: the mapping indices in address order. Code entries appear in
   * the maps in address order, and each went to the next free slot of its
   * group, so walking the maps again recovers the index of each. */
  int nexe = 0;
  for (int i = 0; i < s->nmappings; i++)
    nexe += strcmp(s->mappings[i].path, exe) == 0;
  for (int i = 0, k = 0, next_exe = 0, next_other = nexe; i < s->maps.n; i++) {
    const cprof__map_entry_t *e = &s->maps.v[i];
    if (is_code(e))
      s->by_addr[k++] = strcmp(e->path, exe) == 0 ? next_exe++ : next_other++;
  }

  s->bare = bare;
  s->dwfl = bare ? NULL : build_dwfl(&s->maps);
  for (int i = 0; i < s->nmappings; i++)
    if (describe_module(s->dwfl, &s->mappings[i]) != 0)
      goto fail;
  s->nlive = s->nmappings;
  add_retired(s, gone, ngone);

  cprof__names_init(&s->names);
  return s;

fail:
  cprof__symbolizer_destroy(s);
  return NULL;
}

cprof__symbolizer_t *cprof__symbolizer_build(cprof__maps_t *maps) { return build(maps, 0); }
cprof__symbolizer_t *cprof__symbolizer_build_bare(cprof__maps_t *maps) { return build(maps, 1); }

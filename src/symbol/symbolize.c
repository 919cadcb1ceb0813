/* Addresses to function names, files and lines, with libdw's Dwfl.
 *
 * One instance serves the whole process. Building it means opening every
 * loaded ELF file and its debug information, which for a large program takes
 * long enough that we keep it between requests and rebuild only when the set
 * of code mappings changes (a dlopen or a dlclose). Everything here runs with
 * the instance's mutex held, because neither Dwfl nor our caches are safe to
 * use from two threads at once. Nothing here may run in a signal handler. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_DEFAULT, RTLD_NOLOAD */
#endif
#include "symbol/symbolize.h"

#include "symbol/maps.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <libelf.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* libstdc++'s demangler, looked up at run time: a process that has C++ names
 * to demangle has libstdc++ loaded, and cprof itself must not depend on it. */
typedef char *(*demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);

/* One cached display name. `raw` points into libdw's data (a symbol or
 * string table), which lives as long as the Dwfl; `shown` is ours, or NULL
 * when the raw name is already the one to show. */
typedef struct shown_name {
  const char *raw;
  char *shown;
  unsigned hash;
} shown_name_t;

/* One function symbol of a module, at its address in this process. */
typedef struct elf_func {
  uintptr_t start, size; /* size 0: the symbol does not say */
  const char *name;      /* libdw's string */
} elf_func_t;

/* A module's function symbols sorted by address, one per address. libdw's
 * dwfl_module_addrinfo scans the whole symbol table on every call, which is
 * 100 us for libc's 10,000 symbols and tens of milliseconds for a large C++
 * program; this is a binary search. Built on the first lookup in a module. */
typedef struct module_funcs {
  Dwfl_Module *mod;
  elf_func_t *v;
  int n;
} module_funcs_t;

/* One address range of a subprogram (a function's concrete code). */
typedef struct sub_range {
  Dwarf_Addr low, high; /* [low, high), in the module's DWARF addresses */
  Dwarf_Die die;
} sub_range_t;

/* The subprograms of one compilation unit sorted by address. Finding the
 * scopes at a pc with dwarf_getscopes walks the unit's whole DIE tree each
 * time, 100 us per address in libc's larger units and far more in big C++
 * ones; with this index a lookup is a binary search plus a walk down one
 * function's own scopes. Built on the first lookup in the unit. */
typedef struct cu_index {
  const void *key; /* the unit DIE's address in libdw's data: unique per unit */
  sub_range_t *v;
  int n;
} cu_index_t;

struct cprof__symbolizer {
  cprof__maps_t maps; /* the snapshot the mappings were made from; paths point here */
  cprof__mapping_t *mappings;
  int nmappings;
  int *by_addr; /* mapping indices in address order, for mapping_of */
  Dwfl *dwfl;   /* NULL when libdw could not be set up: mappings only */
  demangle_fn demangle;
  void *libstdcxx; /* our reference to libstdc++ when found via RTLD_NOLOAD */
  cu_index_t *cus; /* open addressing on key */
  size_t cus_cap, cus_len;
  module_funcs_t *funcs; /* one per module looked up so far */
  int nfuncs, capfuncs;
  shown_name_t *cache; /* open addressing on the raw name's text */
  size_t cache_cap, cache_len; /* cap is 0 or a power of two */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static cprof__symbolizer_t *current;
/* Handed out when even the first instance cannot be allocated, so that
 * acquire never returns NULL: no mappings and no names. */
static cprof__symbolizer_t empty;

static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
                          Dwarf_Addr base, const char *file_name, const char *debuglink,
                          GElf_Word crc, char **debuginfo_file_name);

static int find_elf(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base,
                    char **file_name, Elf **elfp);

static const Dwfl_Callbacks callbacks = {
    .find_elf = find_elf,
    .find_debuginfo = find_debuginfo,
};

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
static int same_code(const cprof__maps_t *a, const cprof__maps_t *b) {
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

/* ---- names as people read them ------------------------------------------ */

static unsigned hash_str(const char *s) {
  unsigned h = 2166136261u; /* FNV-1a */
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 16777619u;
  return h;
}

static int cache_grow(cprof__symbolizer_t *s) {
  size_t cap = s->cache_cap ? s->cache_cap * 2 : 256;
  shown_name_t *t = calloc(cap, sizeof *t);
  if (!t)
    return -ENOMEM;
  for (size_t i = 0; i < s->cache_cap; i++) {
    shown_name_t *d = &s->cache[i];
    if (!d->raw)
      continue;
    size_t k = d->hash & (cap - 1);
    while (t[k].raw)
      k = (k + 1) & (cap - 1);
    t[k] = *d;
  }
  free(s->cache);
  s->cache = t;
  s->cache_cap = cap;
  return 0;
}

/* The name to show for a symbol or linkage name. Two things change one:
 * a symbol version that the static linker left in a .symtab name
 * ("fopen@@GLIBC_2.2.5") is cut off, since the version is not part of the
 * function's name; and a C++ (Itanium ABI) name is demangled when libstdc++
 * is there to do it. Results are cached, so a name seen again costs a hash
 * lookup and no allocation, and they live until the instance is destroyed. */
static const char *display_name(cprof__symbolizer_t *s, const char *raw) {
  if (!raw)
    return NULL;
  const char *at = strchr(raw, '@');
  int mangled = raw[0] == '_' && raw[1] == 'Z' && s->demangle;
  if (!mangled && (!at || at == raw))
    return raw;
  unsigned h = hash_str(raw);
  if (s->cache_cap) {
    size_t mask = s->cache_cap - 1;
    for (size_t k = h & mask; s->cache[k].raw; k = (k + 1) & mask) {
      shown_name_t *d = &s->cache[k];
      if (d->hash == h && strcmp(d->raw, raw) == 0)
        return d->shown ? d->shown : d->raw;
    }
  }
  /* Keep the table at most half full so probes stay short. Without room to
   * remember a result we show the raw name rather than leak a new string. */
  if ((s->cache_len + 1) * 2 > s->cache_cap && cache_grow(s) != 0)
    return raw;

  char *cut = NULL;
  const char *name = raw;
  if (at && at != raw) {
    cut = strndup(raw, (size_t)(at - raw));
    if (!cut)
      return raw;
    name = cut;
  }
  char *shown = NULL;
  if (mangled) {
    int status = -1;
    shown = s->demangle(name, NULL, NULL, &status);
    if (status != 0) {
      free(shown);
      shown = NULL;
    }
  }
  if (shown)
    free(cut);
  else
    shown = cut;

  size_t mask = s->cache_cap - 1, k = h & mask;
  while (s->cache[k].raw)
    k = (k + 1) & mask;
  s->cache[k] = (shown_name_t){.raw = raw, .shown = shown, .hash = h};
  s->cache_len++;
  return shown ? shown : raw;
}

/* ---- opening files -------------------------------------------------------
 *
 * libdw's own callbacks would do, but two of their habits do not suit a
 * library living inside someone else's program. They open files without
 * O_CLOEXEC, and libdw keeps one descriptor per module for the Dwfl's
 * lifetime, so every program the host later executes would inherit them.
 * And dwfl_standard_find_debuginfo ends, when its local search finds
 * nothing, by asking debuginfod: it dlopens libdebuginfod, which brings some
 * thirty libraries (libcurl, GnuTLS, Kerberos, LDAP) into the host, and,
 * when DEBUGINFOD_URLS is set (several distributions set it for every
 * login), downloads debug files over the network while the symbolizer is
 * held. So we open files ourselves, close-on-exec, and search only local
 * places, and leave to libdw only the cases that need its internals. */

static int ends_deleted(const char *path) {
  size_t len = strlen(path), sl = sizeof deleted_suffix - 1;
  return len > sl && strcmp(path + len - sl, deleted_suffix) == 0;
}

/* The main program after its file was deleted or replaced, as happens when
 * a new version is deployed under a running server: /proc/self/exe still
 * opens the file we run, with its symbol table and DWARF. */
static int open_deleted_exe(const char *name, char **file_name) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0)
    return -1;
  exe[n] = '\0';
  if (strcmp(exe, name) != 0)
    return -1;
  int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  /* The name without the marker, so that the debuglink search looks in the
   * directory the program came from. */
  *file_name = strndup(name, strlen(name) - (sizeof deleted_suffix - 1));
  if (!*file_name) {
    close(fd);
    return -1;
  }
  return fd;
}

static int find_elf(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base,
                    char **file_name, Elf **elfp) {
  if (name[0] == '/' && ends_deleted(name)) {
    int fd = open_deleted_exe(name, file_name);
    if (fd >= 0)
      return fd;
  }
  /* The vDSO and other deleted files are read from memory (their loaded
   * parts only), which libdw's callback knows how to do. */
  if (name[0] != '/' || ends_deleted(name))
    return dwfl_linux_proc_find_elf(mod, userdata, name, base, file_name, elfp);
  /* Only regular files: opening a device that happens to be mapped could
   * block or have side effects, as libdw's callback also guards against. */
  struct stat st;
  if (stat(name, &st) != 0 || !S_ISREG(st.st_mode))
    return -1;
  int fd = open(name, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  *file_name = strdup(name); /* libdw owns and frees it */
  if (!*file_name) {
    close(fd);
    return -1;
  }
  return fd;
}

/* Opens path as the module's debug file if it carries the module's build
 * ID. libdw checks this in its own search; without it a stale debug file
 * would give wrong lines. */
static int open_debug_file(const char *path, const unsigned char *id, int idlen,
                           char **debuginfo_file_name) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
  const void *have = NULL;
  ssize_t n = elf ? dwelf_elf_gnu_build_id(elf, &have) : -1;
  int same = n > 0 && n == idlen && memcmp(have, id, (size_t)idlen) == 0;
  if (elf)
    elf_end(elf);
  if (same && (*debuginfo_file_name = strdup(path)) != NULL)
    return fd;
  close(fd);
  return -1;
}

static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
                          Dwarf_Addr base, const char *file_name, const char *debuglink,
                          GElf_Word crc, char **debuginfo_file_name) {
  /* libdw calls this also for a dwz alternate file (.gnu_debugaltlink), with
   * that file's path as the debuglink and a zero CRC. Its build ID is only in
   * libdw's hands, so libdw's build-ID lookup, which stays local, does it. */
  if (debuglink && (strchr(debuglink, '/') || crc == 0))
    return dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name, debuglink, crc,
                                        debuginfo_file_name);

  /* Without a build ID there is nothing to check a candidate against, so we
   * do not guess. */
  const unsigned char *id;
  GElf_Addr vaddr;
  int idlen = dwfl_module_build_id(mod, &id, &vaddr);
  if (idlen < 2)
    return -1;

  /* The build-ID tree: /usr/lib/debug/.build-id/ab/cdef….debug */
  char path[PATH_MAX];
  size_t n = (size_t)snprintf(path, sizeof path, "/usr/lib/debug/.build-id/%02x/", id[0]);
  for (int i = 1; i < idlen && n + 3 < sizeof path; i++)
    n += (size_t)snprintf(path + n, sizeof path - n, "%02x", id[i]);
  if (n + sizeof ".debug" <= sizeof path) {
    memcpy(path + n, ".debug", sizeof ".debug");
    int fd = open_debug_file(path, id, idlen, debuginfo_file_name);
    if (fd >= 0)
      return fd;
  }

  /* The .gnu_debuglink name (or, without one, "<file>.debug", as libdw
   * assumes) next to the file, in its .debug/, and under /usr/lib/debug:
   * the directories GDB and libdw search by default. */
  if (!file_name || file_name[0] != '/')
    return -1;
  const char *slash = strrchr(file_name, '/');
  int dirlen = (int)(slash - file_name);
  char invented[NAME_MAX + 1];
  if (!debuglink || !debuglink[0]) {
    int k = snprintf(invented, sizeof invented, "%s.debug", slash + 1);
    if (k < 0 || (size_t)k >= sizeof invented)
      return -1;
    debuglink = invented;
  }
  for (int i = 0; i < 3; i++) {
    int k;
    if (i == 0)
      k = snprintf(path, sizeof path, "%.*s/%s", dirlen, file_name, debuglink);
    else if (i == 1)
      k = snprintf(path, sizeof path, "%.*s/.debug/%s", dirlen, file_name, debuglink);
    else
      k = snprintf(path, sizeof path, "/usr/lib/debug%.*s/%s", dirlen, file_name, debuglink);
    /* The main file under another name is no debug file. */
    if (k < 0 || (size_t)k >= sizeof path || strcmp(path, file_name) == 0)
      continue;
    int fd = open_debug_file(path, id, idlen, debuginfo_file_name);
    if (fd >= 0)
      return fd;
  }
  return -1;
}

/* ---- building and destroying --------------------------------------------- */

static void destroy(cprof__symbolizer_t *s) {
  if (!s || s == &empty)
    return;
  for (size_t i = 0; i < s->cache_cap; i++)
    free(s->cache[i].shown);
  free(s->cache);
  for (size_t i = 0; i < s->cus_cap; i++)
    free(s->cus[i].v);
  free(s->cus);
  for (int i = 0; i < s->nfuncs; i++)
    free(s->funcs[i].v);
  free(s->funcs);
  for (int i = 0; i < s->nmappings; i++)
    if (s->mappings[i].build_id[0])
      free((char *)s->mappings[i].build_id);
  free(s->mappings);
  free(s->by_addr);
  if (s->dwfl)
    dwfl_end(s->dwfl);
  if (s->libstdcxx)
    dlclose(s->libstdcxx);
  cprof__maps_free(&s->maps);
  free(s);
}

/* Reports every module of this process to a new Dwfl. Returns NULL when
 * libdw cannot do it; the caller carries on without names. */
static Dwfl *build_dwfl(void) {
  /* Our debuginfo callback opens ELF files with libelf itself. */
  if (elf_version(EV_CURRENT) == EV_NONE)
    return NULL;
  Dwfl *dwfl = dwfl_begin(&callbacks);
  if (!dwfl)
    return NULL;
  dwfl_report_begin(dwfl);
  /* A nonzero result means the report stopped part way; what was reported
   * before that is still worth keeping, so only report_end decides. */
  (void)dwfl_linux_proc_report(dwfl, getpid());
  if (dwfl_report_end(dwfl, NULL, NULL) != 0) {
    dwfl_end(dwfl);
    return NULL;
  }
  return dwfl;
}

/* Fills the build ID and what the module offers. Opening the ELF file first
 * is needed: libdwfl reads the build ID note only once it has the file. */
static int describe_module(Dwfl *dwfl, cprof__mapping_t *mp) {
  mp->build_id = "";
  if (!dwfl)
    return 0;
  Dwfl_Module *mod = dwfl_addrmodule(dwfl, mp->start);
  if (!mod)
    return 0;
  GElf_Addr bias;
  if (!dwfl_module_getelf(mod, &bias))
    return 0;
  const unsigned char *bits;
  GElf_Addr vaddr;
  int len = dwfl_module_build_id(mod, &bits, &vaddr);
  if (len > 0) {
    char *hex = malloc((size_t)len * 2 + 1);
    if (!hex)
      return -ENOMEM;
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < len; i++) {
      hex[2 * i] = digits[bits[i] >> 4];
      hex[2 * i + 1] = digits[bits[i] & 15];
    }
    hex[2 * len] = '\0';
    mp->build_id = hex;
  }
  mp->has_symbols = dwfl_module_getsymtab(mod) > 0;
  Dwarf_Addr dwbias;
  mp->has_dwarf = dwfl_module_getdwarf(mod, &dwbias) != NULL;
  return 0;
}

/* The path of the main program as /proc/self/maps spells it. */
static void exe_path(char *buf, size_t size) {
  ssize_t n = readlink("/proc/self/exe", buf, size - 1);
  if (n < 0)
    n = 0;
  buf[n] = '\0';
  if (ends_deleted(buf))
    buf[n - (sizeof deleted_suffix - 1)] = '\0';
}

/* Builds an instance over `maps`, which it takes over (also on failure). */
static cprof__symbolizer_t *build(cprof__maps_t *maps) {
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
  /* One spare element so that a process with no code mappings (impossible in
   * practice) does not depend on malloc(0). */
  s->mappings = calloc((size_t)n + 1, sizeof *s->mappings);
  s->by_addr = calloc((size_t)n + 1, sizeof *s->by_addr);
  if (!s->mappings || !s->by_addr)
    goto fail;

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

  s->dwfl = build_dwfl();
  for (int i = 0; i < s->nmappings; i++)
    if (describe_module(s->dwfl, &s->mappings[i]) != 0)
      goto fail;

  s->demangle = (demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
  if (!s->demangle) {
    /* libstdc++ may be loaded only privately, as the dependency of a library
     * opened with RTLD_LOCAL; its demangler is just as good. */
    s->libstdcxx = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_NOLOAD);
    if (s->libstdcxx)
      s->demangle = (demangle_fn)dlsym(s->libstdcxx, "__cxa_demangle");
  }
  return s;

fail:
  destroy(s);
  return NULL;
}

/* ---- the process-wide instance ------------------------------------------- */

cprof__symbolizer_t *cprof__symbolizer_acquire(void) {
  pthread_mutex_lock(&lock);
  cprof__maps_t maps;
  if (cprof__maps_read(&maps) != 0) {
    /* Without a fresh view, an older one is the best we have. */
    if (current)
      return current;
    memset(&maps, 0, sizeof maps);
  }
  if (current && same_code(&current->maps, &maps)) {
    cprof__maps_free(&maps);
    return current;
  }
  cprof__symbolizer_t *s = build(&maps);
  if (!s)
    return current ? current : &empty;
  destroy(current);
  current = s;
  return s;
}

void cprof__symbolizer_release(cprof__symbolizer_t *s) {
  (void)s;
  pthread_mutex_unlock(&lock);
}

void cprof__symbolizer_atfork_child(void) {
  /* Another thread of the parent may have been using the instance when the
   * fork happened, so its state cannot be trusted; leaking it is the only
   * safe way to let go. The lock may be held by a thread that does not exist
   * in the child, so it gets a fresh one. */
  static const pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  current = NULL;
  lock = fresh;
}

int cprof__symbolizer_mappings(cprof__symbolizer_t *s, const cprof__mapping_t **out) {
  *out = s->mappings;
  return s->nmappings;
}

int cprof__symbolizer_mapping_of(cprof__symbolizer_t *s, uintptr_t addr) {
  int lo = 0, hi = s->nmappings;
  while (lo < hi) { /* the last mapping (in address order) with start <= addr */
    int mid = lo + (hi - lo) / 2;
    if (s->mappings[s->by_addr[mid]].start <= addr)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == 0)
    return -1;
  int i = s->by_addr[lo - 1];
  return addr < s->mappings[i].limit ? i : -1;
}

/* ---- ELF symbols ---------------------------------------------------------- */

/* How much we would rather show a symbol than another at the same address:
 * one with a size, then global over weak over local, then the name with
 * fewer leading underscores, then the shorter. So libc's entry point shows
 * as "malloc" and not "__libc_malloc" or "__GI___libc_malloc". */
static int func_rank_cmp(const elf_func_t *a, int abind, const elf_func_t *b, int bbind) {
  if ((a->size != 0) != (b->size != 0))
    return a->size ? -1 : 1;
  static const int bind_rank[] = {[STB_LOCAL] = 2, [STB_GLOBAL] = 0, [STB_WEAK] = 1};
  int ra = abind <= STB_WEAK ? bind_rank[abind] : 3, rb = bbind <= STB_WEAK ? bind_rank[bbind] : 3;
  if (ra != rb)
    return ra - rb;
  size_t ua = strspn(a->name, "_"), ub = strspn(b->name, "_");
  if (ua != ub)
    return ua < ub ? -1 : 1;
  size_t la = strlen(a->name), lb = strlen(b->name);
  if (la != lb)
    return la < lb ? -1 : 1;
  return strcmp(a->name, b->name);
}

/* Sorting needs the binding, which the kept entries do not carry. */
typedef struct func_sort {
  elf_func_t f;
  int bind;
} func_sort_t;

static int func_sort_cmp(const void *pa, const void *pb) {
  const func_sort_t *a = pa, *b = pb;
  if (a->f.start != b->f.start)
    return a->f.start < b->f.start ? -1 : 1;
  return func_rank_cmp(&a->f, a->bind, &b->f, b->bind);
}

/* Collects the module's code symbols. Returns 0 or -ENOMEM; a module
 * without symbols gets an empty list. */
static int collect_funcs(Dwfl_Module *mod, module_funcs_t *mf) {
  mf->mod = mod;
  mf->v = NULL;
  mf->n = 0;
  int total = dwfl_module_getsymtab(mod);
  if (total <= 1)
    return 0;
  func_sort_t *t = malloc((size_t)total * sizeof *t);
  if (!t)
    return -ENOMEM;
  int n = 0;
  for (int i = 1; i < total; i++) {
    GElf_Sym sym;
    GElf_Addr addr;
    GElf_Word shndx;
    const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr, &shndx, NULL, NULL);
    int type = GELF_ST_TYPE(sym.st_info);
    /* Code only: functions, and the untyped labels hand-written assembly
     * uses for them, but not ARM's "$x"/"$d" mapping symbols, undefined
     * references or absolute values. */
    if (!name || !name[0] || name[0] == '$' || addr == 0 || shndx == SHN_UNDEF ||
        shndx == SHN_ABS || shndx == (GElf_Word)-1)
      continue;
    if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE)
      continue;
    t[n].f = (elf_func_t){.start = (uintptr_t)addr, .size = (uintptr_t)sym.st_size, .name = name};
    t[n].bind = GELF_ST_BIND(sym.st_info);
    n++;
  }
  qsort(t, (size_t)n, sizeof *t, func_sort_cmp);
  /* Keep the preferred symbol at each address. */
  elf_func_t *v = malloc((size_t)(n ? n : 1) * sizeof *v);
  if (!v) {
    free(t);
    return -ENOMEM;
  }
  int k = 0;
  for (int i = 0; i < n; i++)
    if (k == 0 || v[k - 1].start != t[i].f.start)
      v[k++] = t[i].f;
  free(t);
  mf->v = v;
  mf->n = k;
  return 0;
}

static const module_funcs_t *module_funcs(cprof__symbolizer_t *s, Dwfl_Module *mod) {
  for (int i = 0; i < s->nfuncs; i++)
    if (s->funcs[i].mod == mod)
      return &s->funcs[i];
  if (s->nfuncs == s->capfuncs) {
    int cap = s->capfuncs ? s->capfuncs * 2 : 16;
    module_funcs_t *f = realloc(s->funcs, (size_t)cap * sizeof *f);
    if (!f)
      return NULL;
    s->funcs = f;
    s->capfuncs = cap;
  }
  if (collect_funcs(mod, &s->funcs[s->nfuncs]) != 0)
    return NULL;
  return &s->funcs[s->nfuncs++];
}

/* The function symbol containing addr, as dwfl_module_addrinfo would find
 * it: the nearest symbol at or below addr whose size covers it, or, failing
 * that, the nearest below when it has no size (hand-written assembly often
 * leaves sizes out). */
static const elf_func_t *elf_func_at(cprof__symbolizer_t *s, Dwfl_Module *mod, uintptr_t addr) {
  const module_funcs_t *mf = module_funcs(s, mod);
  if (!mf || mf->n == 0)
    return NULL;
  int lo = 0, hi = mf->n;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (mf->v[mid].start <= addr)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == 0)
    return NULL;
  /* A symbol may nest inside a larger one (assembly again); look back a
   * little for one that covers addr. */
  for (int i = lo - 1; i >= 0 && i >= lo - 8; i--) {
    const elf_func_t *f = &mf->v[i];
    if (f->size && addr - f->start < f->size)
      return f;
  }
  /* A sizeless symbol is trusted only within its own mapping, or the last
   * symbol of a library would claim everything above it. */
  const elf_func_t *f = &mf->v[lo - 1];
  if (f->size == 0 &&
      cprof__symbolizer_mapping_of(s, f->start) == cprof__symbolizer_mapping_of(s, addr))
    return f;
  return NULL;
}

/* ---- symbolizing --------------------------------------------------------- */

static int is_function(Dwarf_Die *die) {
  int tag = dwarf_tag(die);
  return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
         tag == DW_TAG_entry_point;
}

/* The first function scope at or after chain[i], or -1. Lexical blocks and
 * the like may sit between an inlined call and its caller. */
static int next_function(Dwarf_Die *chain, int n, int i) {
  for (; i < n; i++)
    if (is_function(&chain[i]))
      return i;
  return -1;
}

/* ---- scopes at a pc ----------------------------------------------------- */

typedef struct sub_list {
  sub_range_t *v;
  int n, cap, failed;
} sub_list_t;

static void sub_push(sub_list_t *l, Dwarf_Addr low, Dwarf_Addr high, Dwarf_Die *die) {
  if (l->failed || low >= high)
    return;
  if (l->n == l->cap) {
    int cap = l->cap ? l->cap * 2 : 64;
    sub_range_t *v = realloc(l->v, (size_t)cap * sizeof *v);
    if (!v) {
      l->failed = 1;
      return;
    }
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = (sub_range_t){.low = low, .high = high, .die = *die};
}

/* Collects the subprograms with code under parent. Concrete functions sit at
 * the top of a unit, inside C++ namespaces, or (GNU C nested functions)
 * inside other functions; class bodies hold only declarations, and types and
 * variables hold no code, so those subtrees are skipped. */
static void index_scope(Dwarf_Die *parent, sub_list_t *l, int depth) {
  Dwarf_Die child;
  if (depth > 64 || dwarf_child(parent, &child) != 0)
    return;
  do {
    int tag = dwarf_tag(&child);
    if (tag == DW_TAG_subprogram) {
      Dwarf_Addr base, low, high;
      ptrdiff_t off = 0;
      while ((off = dwarf_ranges(&child, off, &base, &low, &high)) > 0)
        sub_push(l, low, high, &child);
      index_scope(&child, l, depth + 1);
    } else if (tag == DW_TAG_namespace || tag == DW_TAG_module || tag == DW_TAG_lexical_block) {
      index_scope(&child, l, depth + 1);
    } else if (tag == DW_TAG_imported_unit) {
      /* dwz moves DIEs shared between units into partial units that each
       * unit imports; their contents count as the unit's own. */
      Dwarf_Attribute attr;
      Dwarf_Die unit;
      if (dwarf_formref_die(dwarf_attr(&child, DW_AT_import, &attr), &unit))
        index_scope(&unit, l, depth + 1);
    }
  } while (dwarf_siblingof(&child, &child) == 0);
}

/* By start; at the same start (assembly gives one code range several
 * subprogram DIEs, as aliases) the first DIE goes last, where the lookup
 * looks first, so that we choose the DIE libdw would. */
static int sub_cmp(const void *pa, const void *pb) {
  const sub_range_t *a = pa, *b = pb;
  if (a->low != b->low)
    return a->low < b->low ? -1 : 1;
  Dwarf_Off oa = dwarf_dieoffset((Dwarf_Die *)&a->die), ob = dwarf_dieoffset((Dwarf_Die *)&b->die);
  return oa > ob ? -1 : oa < ob;
}

static int cus_grow(cprof__symbolizer_t *s) {
  size_t cap = s->cus_cap ? s->cus_cap * 2 : 64;
  cu_index_t *t = calloc(cap, sizeof *t);
  if (!t)
    return -ENOMEM;
  for (size_t i = 0; i < s->cus_cap; i++) {
    if (!s->cus[i].key)
      continue;
    size_t k = ((uintptr_t)s->cus[i].key >> 4) & (cap - 1);
    while (t[k].key)
      k = (k + 1) & (cap - 1);
    t[k] = s->cus[i];
  }
  free(s->cus);
  s->cus = t;
  s->cus_cap = cap;
  return 0;
}

static const cu_index_t *cu_index(cprof__symbolizer_t *s, Dwarf_Die *cudie) {
  const void *key = cudie->addr;
  if (s->cus_cap) {
    size_t mask = s->cus_cap - 1;
    for (size_t k = ((uintptr_t)key >> 4) & mask; s->cus[k].key; k = (k + 1) & mask)
      if (s->cus[k].key == key)
        return &s->cus[k];
  }
  if ((s->cus_len + 1) * 2 > s->cus_cap && cus_grow(s) != 0)
    return NULL;
  sub_list_t l = {0};
  index_scope(cudie, &l, 0);
  if (l.failed) {
    free(l.v);
    return NULL;
  }
  if (l.n > 1)
    qsort(l.v, (size_t)l.n, sizeof *l.v, sub_cmp);
  size_t mask = s->cus_cap - 1, k = ((uintptr_t)key >> 4) & mask;
  while (s->cus[k].key)
    k = (k + 1) & mask;
  s->cus[k] = (cu_index_t){.key = key, .v = l.v, .n = l.n};
  s->cus_len++;
  return &s->cus[k];
}

/* The scopes containing pc, innermost first, ending with the subprogram:
 * from the unit's index, the innermost subprogram range holding pc, then
 * down through its inlined calls and blocks that hold pc. Returns the count
 * (0: no function here, -1: the index could not be used) and a malloc'd
 * array in *out. */
static int scopes_by_index(cprof__symbolizer_t *s, Dwarf_Die *cudie, Dwarf_Addr pc,
                           Dwarf_Die **out) {
  *out = NULL;
  /* A unit without any function DIE we understand is left to libdw, which
   * knows more unit layouts than we do; such units are small. */
  const cu_index_t *ci = cu_index(s, cudie);
  if (!ci || ci->n == 0)
    return -1;
  int lo = 0, hi = ci->n;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (ci->v[mid].low <= pc)
      lo = mid + 1;
    else
      hi = mid;
  }
  /* Nested functions lie inside their parent's range: the latest start
   * that still covers pc is the innermost. */
  const sub_range_t *sub = NULL;
  for (int i = lo - 1; i >= 0 && i >= lo - 16 && !sub; i--)
    if (pc < ci->v[i].high)
      sub = &ci->v[i];
  if (!sub)
    return 0;

  int n = 1, cap = 16;
  Dwarf_Die *path = malloc((size_t)cap * sizeof *path); /* outermost first */
  if (!path)
    return -1;
  path[0] = sub->die;
  for (;;) {
    Dwarf_Die child;
    int found = 0;
    if (dwarf_child(&path[n - 1], &child) == 0) {
      do {
        int tag = dwarf_tag(&child);
        if ((tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block ||
             tag == DW_TAG_try_block || tag == DW_TAG_catch_block) &&
            dwarf_haspc(&child, pc) > 0) {
          found = 1;
          break;
        }
      } while (dwarf_siblingof(&child, &child) == 0);
    }
    if (!found)
      break;
    if (n == cap) {
      Dwarf_Die *p = realloc(path, (size_t)cap * 2 * sizeof *p);
      if (!p) {
        free(path);
        return -1;
      }
      path = p;
      cap *= 2;
    }
    path[n++] = child;
  }
  for (int i = 0, j = n - 1; i < j; i++, j--) { /* innermost first */
    Dwarf_Die t = path[i];
    path[i] = path[j];
    path[j] = t;
  }
  *out = path;
  return n;
}

/* The same through libdw alone, for units the index cannot serve (an error
 * while indexing, or nothing indexed). dwarf_getscopes continues past an inlined instance into
 * the abstract definition's scopes, so we take only its innermost DIE and
 * ask for that DIE's physical parents, as eu-addr2line does. */
static int scopes_by_libdw(Dwarf_Die *cudie, Dwarf_Addr pc, Dwarf_Die **out) {
  Dwarf_Die *scopes = NULL;
  int n = 0;
  *out = NULL;
  if (dwarf_getscopes(cudie, pc, &scopes) > 0) {
    Dwarf_Die inner = scopes[0];
    n = dwarf_getscopes_die(&inner, out);
    if (n < 0)
      n = 0;
  }
  free(scopes);
  return n;
}

/* A function DIE's name. For C++ that is the linkage name, demangled: it
 * carries the namespaces, classes and parameter types that DW_AT_name lacks.
 * Other linkage names are not mangled names but assembler labels (glibc
 * calls __libc_malloc "__GI___libc_malloc" that way), so for them the
 * source name is the better one. dwarf_attr_integrate follows
 * DW_AT_abstract_origin and DW_AT_specification, where inlined and
 * out-of-line copies keep their names. */
static const char *die_name(cprof__symbolizer_t *s, Dwarf_Die *die) {
  Dwarf_Attribute attr;
  const char *name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
  if (!name)
    name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
  if (name && name[0] == '_' && name[1] == 'Z')
    return display_name(s, name);
  const char *plain = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
  return plain ? plain : display_name(s, name);
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
                const char *file, int line) {
  if (*n == max) {
    if (!keep_outer)
      return;
    --*n;
  }
  frames[(*n)++] = (cprof__frame_t){.function = fn, .file = file, .line = line};
}

/* The frames of one address, innermost first, as eu-addr2line -i -f prints
 * them. With keep_outer, a full array has its last slot overwritten so that
 * the outermost function always ends up last. */
static int resolve(cprof__symbolizer_t *s, uintptr_t addr, cprof__frame_t *frames, int max,
                   uintptr_t *offset, int keep_outer) {
  if (offset)
    *offset = 0;
  /* Code is only in the mappings we list; and dwfl_addrmodule answers the
   * last module for any address above it, so its answer is checked too. */
  if (!s->dwfl || max <= 0 || cprof__symbolizer_mapping_of(s, addr) < 0)
    return 0;
  Dwfl_Module *mod = dwfl_addrmodule(s->dwfl, addr);
  Dwarf_Addr mod_start, mod_end;
  if (!mod || !dwfl_module_info(mod, NULL, &mod_start, &mod_end, NULL, NULL, NULL, NULL) ||
      addr < mod_start || addr >= mod_end)
    return 0;

  const elf_func_t *ef = elf_func_at(s, mod, addr);
  if (ef && offset)
    *offset = addr - ef->start;
  const char *elf_fn = ef ? display_name(s, ef->name) : NULL;

  /* The innermost position comes from the line table. */
  const char *file = NULL;
  int line = 0;
  Dwfl_Line *dl = dwfl_module_getsrc(mod, addr);
  if (dl) {
    Dwarf_Addr la;
    int col;
    file = dwfl_lineinfo(dl, &la, &line, &col, NULL, NULL);
    if (!file)
      line = 0;
  }

  /* The nest of scopes from the innermost DIE containing addr outwards. */
  Dwarf_Addr bias;
  Dwarf_Die *cudie = dwfl_module_addrdie(mod, addr, &bias);
  Dwarf_Die *chain = NULL;
  int nchain = 0;
  if (cudie) {
    nchain = scopes_by_index(s, cudie, addr - bias, &chain);
    if (nchain < 0)
      nchain = scopes_by_libdw(cudie, addr - bias, &chain);
  }

  int n = 0;
  int i = next_function(chain, nchain, 0);
  if (i < 0) {
    /* No DWARF for this address: the ELF symbol, with the line table's
     * position if it happens to have one. */
    if (elf_fn)
      put(frames, max, &n, keep_outer, elf_fn, file, line);
    free(chain);
    return n;
  }
  for (;;) {
    Dwarf_Die *die = &chain[i];
    int inlined = dwarf_tag(die) == DW_TAG_inlined_subroutine;
    const char *fn = die_name(s, die);
    if (!fn && !inlined)
      fn = elf_fn;
    put(frames, max, &n, keep_outer, fn, file, line);
    if (!inlined || (n == max && !keep_outer))
      break;
    call_site(die, &file, &line);
    i = next_function(chain, nchain, i + 1);
    if (i < 0) {
      /* An inlined call with no enclosing function DIE: malformed DWARF, but
       * the call site and the symbol still say where we are. */
      put(frames, max, &n, keep_outer, elf_fn, file, line);
      break;
    }
  }
  free(chain);
  return n;
}

int cprof__symbolize(cprof__symbolizer_t *s, uintptr_t addr, cprof__frame_t *frames, int max,
                     uintptr_t *offset) {
  return resolve(s, addr, frames, max, offset, 0);
}

const char *cprof__symbolize_name(cprof__symbolizer_t *s, uintptr_t addr) {
  cprof__frame_t f;
  return resolve(s, addr, &f, 1, NULL, 1) ? f.function : NULL;
}

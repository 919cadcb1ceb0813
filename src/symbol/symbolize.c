/* Addresses to function names, files and lines, with libdw's Dwfl.
 *
 * One instance serves the whole process. Building it opens every loaded ELF
 * file and reads its section headers (cheap); a module's symbol table and
 * DWARF are loaded on the first address that falls in it, because loading
 * them is what costs: libc's separate debug file (Debian's libc6-dbg) keeps
 * its DWARF zlib-compressed, and libdw inflates all 10 MB of it when it opens
 * it, 60 ms here. The instance is kept between requests and rebuilt only when
 * the set of code mappings changes (a dlopen or a dlclose). Everything here
 * runs with the instance's mutex held, because neither Dwfl nor our caches
 * are safe to use from two threads at once. Nothing here may run in a signal
 * handler.
 *
 * Between uses the instance holds no descriptor. A program may close or
 * reuse any number at any time (a daemon closing every descriptor, a
 * program near RLIMIT_NOFILE), and libdw would close its numbers again in
 * dwfl_end, whatever they had become. ELF files are handed to libdw already
 * mapped (dwfl_files.c); separate debug files, which libdw opens from a
 * descriptor and keeps, are let go of at each release (see "Descriptors"
 * below). The few libdw keeps whatever we do (a dwz alternate file) make the
 * instance one to end at release, unless the thread runs in cprof's own
 * descriptor table (core/fds.c: the server's), where the program cannot
 * reach them. The server's keeper thread ends the instance when it has been
 * idle a while (cprof__symbolizer_trim), to give back its memory.
 *
 * The parts: resolve.c turns an address into frames with the instance
 * (symbolizer.h), dwfl_files.c finds the files, names.c makes names readable,
 * die_names.c gives each DWARF function the full name nm -C would,
 * elf_funcs.c and dwarf_scopes.c make lookups by address fast. */
#include "symbol/symbolizer.h"

#include "core/fds.h"
#include "core/hex.h"
#include "core/search.h"
#include "symbol/debuginfod.h"
#include "symbol/die_names.h"
#include "symbol/dwarf_scopes.h"
#include "symbol/dwfl_files.h"
#include "symbol/elf_funcs.h"
#include "symbol/names.h"
#include "unwind/maps.h"
#include "unwind/modules.h"
#include "unwind/outside.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* The kept instance. If it holds descriptors (held), they are in cprof's
 * own table, and only threads there use it. */
static cprof__symbolizer_t *current;
static struct timespec last_used; /* CLOCK_MONOTONIC, at its last release */
static void (*used_hook)(void);
__thread int cprof__symbolizer_quick_now; /* symbolizer.h */
/* Nonzero on a thread that symbolizes now and then (cprof__symbolizer_passing). */
static __thread int passing;
/* Nonzero in a process that keeps nothing (cprof__symbolizer_frugal). */
static int frugal;
/* On a thread that writes a profile.proto in a frugal process: bare
 * instances (cprof__symbolizer_bare). */
static __thread int bare_now;
/* The quick mode frugal set on this thread for one use: cleared at release. */
enum { QUICK_FRUGAL = 2 };

cprof__symbolizer_t cprof__symbolizer_empty; /* symbolizer.h */

/* ---- descriptors ---------------------------------------------------------
 * libdw opens a module's separate debug file from the descriptor our
 * callback returns, keeps that descriptor for the Dwfl's life, and closes
 * the number in dwfl_end, only when its elf_end drops the Elf's last
 * reference (libdwfl/dwfl_module.c: free_file). So at each release, for
 * every debug file handed to libdw during the use, we find the Elf libdw
 * made of it, take a reference to it (elf_begin with it as ref), tell libelf
 * its descriptor is gone (ELF_C_FDREAD: it is mapped whole, nothing more is
 * read through it), and close the descriptor. libdw's dwfl_end then leaves
 * the number alone, and destroy() drops our references after it.
 *
 * The Elf is the symbol table's file (libc's symbols come from its debug
 * file: no DWARF need be loaded to find it), else the DWARF's, when loading
 * DWARF is allowed (not in quick mode). A dwz alternate file libdw closes
 * whatever the references say: it stays held. So does a file whose Elf we
 * cannot tell. */

static int same_build_id(Elf *elf, Dwfl_Module *mod) {
  const void *a;
  const unsigned char *b;
  GElf_Addr vaddr;
  ssize_t n = dwelf_elf_gnu_build_id(elf, &a);
  int m = dwfl_module_build_id(mod, &b, &vaddr);
  return n > 0 && n == m && memcmp(a, b, (size_t)n) == 0;
}

/* The Elf libdw made of mod's separate debug file, or NULL. */
static Elf *debug_elf(Dwfl_Module *mod) {
  GElf_Addr bias;
  Elf *main_elf = dwfl_module_getelf(mod, &bias);
  if (dwfl_module_getsymtab(mod) > 1) {
    GElf_Sym sym;
    GElf_Addr addr;
    GElf_Word shndx;
    Elf *elf = NULL;
    Dwarf_Addr b;
    /* The build ID tells the debug file from a MiniDebugInfo table. */
    if (dwfl_module_getsym_info(mod, 1, &sym, &addr, &shndx, &elf, &b) && elf &&
        elf != main_elf && same_build_id(elf, mod))
      return elf;
  }
  if (cprof__symbolizer_quick_now)
    return NULL;
  Dwarf_Addr dbias;
  Dwarf *dw = dwfl_module_getdwarf(mod, &dbias);
  Elf *elf = dw ? dwarf_getelf(dw) : NULL;
  return elf != main_elf ? elf : NULL;
}

static int add_ref(cprof__symbolizer_t *s, Elf *elf) {
  if (s->nrefs == s->caprefs) {
    int cap = s->caprefs ? 2 * s->caprefs : 8;
    Elf **r = realloc(s->refs, (size_t)cap * sizeof *r);
    if (!r)
      return -ENOMEM;
    s->refs = r;
    s->caprefs = cap;
  }
  if (elf_begin(-1, ELF_C_READ_MMAP_PRIVATE, elf) != elf)
    return -EINVAL;
  s->refs[s->nrefs++] = elf;
  return 0;
}

/* Takes back every descriptor handed to libdw during this use. */
static void take_back_descriptors(cprof__symbolizer_t *s) {
  cprof__dwfl_handed_t h[64];
  int lost, n;
  while ((n = cprof__dwfl_handed_take(h, 64, &lost)) > 0 || lost > 0) {
    s->held += lost;
    for (int i = 0; i < n; i++) {
      struct stat st;
      int same = fstat(h[i].fd, &st) == 0 && st.st_dev == h[i].dev && st.st_ino == h[i].ino;
      Elf *elf = h[i].alt ? NULL : debug_elf(h[i].mod);
      if (!elf || add_ref(s, elf) != 0) {
        /* libdw keeps it; or libdw closed it (a failed open) or the
         * program did and reused the number, which we cannot tell apart. */
        if (same)
          s->held++;
        else
          s->tainted = 1;
        continue;
      }
      elf_cntl(elf, ELF_C_FDREAD);
      /* Not the file we handed libdw: libdw closed it (a compressed file
       * it inflated) or the program closed it. Not ours to close. */
      if (same)
        close(h[i].fd);
    }
  }
}

/* Descriptors handed to libdw for an instance that is gone: dwfl_end has
 * closed them. */
static void forget_handed(void) {
  cprof__dwfl_handed_t h[64];
  int lost;
  while (cprof__dwfl_handed_take(h, 64, &lost) > 0 || lost > 0) {
  }
}

/* ---- the process-wide instance ------------------------------------------- */

/* Whether the calling thread may use s, and so end it: any thread when it
 * holds no descriptor, else only threads in the table they are in. */
static int usable_here(const cprof__symbolizer_t *s) {
  return s->held == 0 || (s->table && s->table == cprof__fds_table());
}

/* An instance for one use, when the kept one holds descriptors in another
 * table. */
static cprof__symbolizer_t *build_once(void) {
  cprof__maps_t maps;
  if (cprof__maps_read(&maps) != 0)
    memset(&maps, 0, sizeof maps);
  cprof__symbolizer_t *s = cprof__symbolizer_build(&maps);
  if (!s) {
    forget_handed();
    return &cprof__symbolizer_empty;
  }
  s->once = 1;
  return s;
}

cprof__symbolizer_t *cprof__symbolizer_acquire(void) {
  pthread_mutex_lock(&lock);
  if (frugal && !cprof__symbolizer_quick_now)
    cprof__symbolizer_quick_now = QUICK_FRUGAL;
  if (frugal && bare_now) {
    cprof__maps_t maps;
    if (cprof__maps_read(&maps) != 0)
      memset(&maps, 0, sizeof maps);
    cprof__symbolizer_t *s = cprof__symbolizer_build_bare(&maps);
    if (!s)
      return &cprof__symbolizer_empty;
    s->once = 1;
    return s;
  }
  if (current && !usable_here(current))
    return build_once();
  cprof__maps_t maps;
  if (cprof__maps_read(&maps) != 0) {
    /* Without a fresh view, an older one is the best we have. */
    if (current)
      return current;
    memset(&maps, 0, sizeof maps);
  }
  /* The same code, no module retired, and no debug file fetched since
   * (debuginfod.c): libdw looks for a module's debug file once, so a file
   * that arrived later takes a new Dwfl. */
  cprof__retired_t *const *gone;
  if (current && cprof__symbolizer_same_code(&current->maps, &maps) &&
      current->nmappings - current->nlive == cprof__modules_retired(&gone) &&
      current->fetched == cprof__debuginfod_generation()) {
    cprof__maps_free(&maps);
    return current;
  }
  cprof__symbolizer_t *s = cprof__symbolizer_build(&maps);
  if (!s) {
    forget_handed();
    return current ? current : &cprof__symbolizer_empty;
  }
  cprof__symbolizer_destroy(current);
  current = s;
  return s;
}

int cprof__symbolizer_unwind_blocked(cprof__symbolizer_t *s, pid_t tid, uintptr_t sp, uintptr_t pc,
                                     uintptr_t *pcs, int max) {
  if (max <= 0)
    return 0;
  /* Read before the walk, as the walkers in signal handlers do. */
  uint32_t g = max > 1 ? cprof__modules_generation_sigsafe() : 0;
  int n;
  if (s == &cprof__symbolizer_empty) {
    pcs[0] = pc;
    n = 1;
  } else if (s->bare) {
    n = cprof__cfa_unwind_blocked(&s->blocked, tid, sp, pc, pcs, g ? max - 1 : max);
  } else {
    n = cprof__dwfl_unwind_blocked(s->dwfl, &s->blocked, tid, sp, pc, pcs, g ? max - 1 : max);
  }
  return cprof__modules_mark_sigsafe(pcs, n, g);
}

void cprof__symbolizer_release(cprof__symbolizer_t *s) {
  if (s != &cprof__symbolizer_empty)
    take_back_descriptors(s);
  /* What libdw still holds is in this thread's table: outside ours, the
   * program's, or on a thread that symbolizes only now and then (the
   * push's), it goes now, from here. */
  if (s != &cprof__symbolizer_empty)
    s->table = cprof__fds_table();
  if (s->once || frugal || (s->held && (!s->table || passing))) {
    if (s == current)
      current = NULL;
    if (s != &cprof__symbolizer_empty)
      cprof__symbolizer_destroy(s);
    pthread_mutex_unlock(&lock);
    if (frugal) {
#ifdef __GLIBC__
      /* The few MB libdw freed stay in the arena otherwise. */
      malloc_trim(0);
#endif
      if (cprof__symbolizer_quick_now == QUICK_FRUGAL)
        cprof__symbolizer_quick_now = 0;
      return;
    }
    if (!cprof__symbolizer_quick_now)
      cprof__debuginfod_kick();
    return;
  }
  clock_gettime(CLOCK_MONOTONIC, &last_used);
  void (*hook)(void) = s == current ? used_hook : NULL;
  pthread_mutex_unlock(&lock);
  if (hook)
    hook();
  /* Fetches asked for during this use start now, with our lock free; not
   * in quick mode, where the program is exiting. */
  if (!cprof__symbolizer_quick_now)
    cprof__debuginfod_kick();
}

void cprof__symbolizer_set_used_hook(void (*hook)(void)) {
  pthread_mutex_lock(&lock);
  used_hook = hook;
  pthread_mutex_unlock(&lock);
}

long cprof__symbolizer_trim(long idle_ms) {
  pthread_mutex_lock(&lock);
  long left = -1;
  if (current && usable_here(current)) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long idle = (long)(now.tv_sec - last_used.tv_sec) * 1000 +
                (now.tv_nsec - last_used.tv_nsec) / 1000000;
    if (idle >= idle_ms) {
      cprof__symbolizer_destroy(current);
      current = NULL;
    } else {
      left = idle_ms - idle;
    }
  }
  pthread_mutex_unlock(&lock);
  return left;
}

/* The lock is held across fork (start.c's handlers): the child finds it
 * its own, and releases it. */
void cprof__symbolizer_atfork_prepare(void) { pthread_mutex_lock(&lock); }
void cprof__symbolizer_atfork_parent(void) { pthread_mutex_unlock(&lock); }

void cprof__symbolizer_atfork_child(void) {
  /* Another thread of the parent may have been using the instance when the
   * fork happened (it uses it outside the lock), so its state cannot be
   * trusted; leaking it is the only safe way to let go. Any descriptors it
   * holds were in cprof's own table, which the child does not have: ending
   * it would close the child's numbers. */
  current = NULL;
  used_hook = NULL;
  cprof__dwfl_handed_atfork_child();
  pthread_mutex_unlock(&lock);
}

void cprof__symbolizer_quick(int on) { cprof__symbolizer_quick_now = on; }

void cprof__symbolizer_passing(int on) { passing = on; }

void cprof__symbolizer_bare(int on) { bare_now = on; }

void cprof__symbolizer_frugal(int on) {
  pthread_mutex_lock(&lock);
  frugal = on;
  pthread_mutex_unlock(&lock);
}

int cprof__symbolizer_uses_dwarf(cprof__symbolizer_t *s, int i) {
  if (i < 0 || i >= s->nmappings)
    return 0;
  return s->mappings[i].has_dwarf && !(cprof__symbolizer_quick_now && s->mappings[i].heavy_dwarf);
}

int cprof__symbolizer_no_symbols(cprof__symbolizer_t *s, int i, char *buf, size_t len) {
  if (i < 0 || i >= s->nmappings || s->bare)
    return 0;
  const cprof__mapping_t *mp = &s->mappings[i];
  if (mp->has_dwarf || mp->path[0] != '/')
    return 0;
  if (!mp->build_id[0]) {
    snprintf(buf, len, "no debug symbols for %s: it has no build ID to find them by", mp->path);
    return 1;
  }
  /* Asked again for each profile: a failed fetch is retried after a while. */
  if (!cprof__symbolizer_quick_now)
    cprof__debuginfod_want(mp->build_id);
  int n = snprintf(buf, len, "no debug symbols for %s (build ID %s): ", mp->path, mp->build_id);
  if (n > 0 && (size_t)n < len)
    cprof__debuginfod_advice(mp->build_id, buf + n, len - (size_t)n);
  return 1;
}

int cprof__symbolizer_mappings(cprof__symbolizer_t *s, const cprof__mapping_t **out) {
  *out = s->mappings;
  return s->nmappings;
}

int cprof__symbolizer_mapping_of(cprof__symbolizer_t *s, uintptr_t addr) {
  /* The answer, if any, is the last mapping (in address order) with start <= addr. */
  int lo = (int)CPROF__PARTITION_POINT(s->nlive, mid, s->mappings[s->by_addr[mid]].start <= addr);
  if (lo == 0)
    return -1;
  int i = s->by_addr[lo - 1];
  return addr < s->mappings[i].limit ? i : -1;
}

int cprof__symbolizer_mapping_then(cprof__symbolizer_t *s, uintptr_t addr, uint32_t gen) {
  /* Of the retired modules that held addr and went after generation gen,
   * the first to go held it then (modules.h). A few entries: a scan. */
  int best = -1;
  uint32_t best_gone = 0;
  for (int i = s->nlive; i < s->nmappings; i++) {
    if (addr < s->mappings[i].start || addr >= s->mappings[i].limit)
      continue;
    uint32_t gone = cprof__retired_gone(s->retired[i - s->nlive].r);
    if (gone > gen && (best < 0 || gone < best_gone)) {
      best = i;
      best_gone = gone;
    }
  }
  return best >= 0 ? best : cprof__symbolizer_mapping_of(s, addr);
}

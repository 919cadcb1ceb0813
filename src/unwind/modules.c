/* The module generation and the retired modules: see modules.h. */
#include "unwind/modules.h"

#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/hex.h"
#include "core/pages.h"
#include "core/search.h"

uint32_t cprof__modules_generation;

/* ---- the modules loaded before a dlclose ----------------------------------
 * Everything retiring a module needs is copied before the dlclose that may
 * unmap it: afterwards its program headers, notes and name are gone. */

#define MAX_EXEC 4 /* executable segments kept per module; one in practice */

typedef struct exec_seg {
  uintptr_t start, end;
  uint64_t offset;
} exec_seg_t;

typedef struct loaded {
  const void *phdr;     /* dlpi_phdr, with bias: tells one load from another */
  uintptr_t bias, low, high;
  exec_seg_t exec[MAX_EXEC];
  int nexec;
  int gone;
  char build_id[65];
  size_t name; /* offset into the names */
} loaded_t;

/* Pages of our own that grow: the listing runs inside the program's
 * dlclose, which may be inside its allocator's lock. */
typedef struct scratch {
  unsigned char *p;
  size_t size, used;
} scratch_t;

static int scratch_reserve(scratch_t *s, size_t more) {
  if (s->used + more <= s->size)
    return 0;
  size_t size = s->size ? s->size : 64 * 1024;
  while (size < s->used + more)
    size *= 2;
  unsigned char *p = cprof__pages_map(size);
  if (!p)
    return -ENOMEM;
  if (s->used)
    memcpy(p, s->p, s->used);
  cprof__pages_unmap(s->p, s->size);
  s->p = p;
  s->size = size;
  return 0;
}

static scratch_t before, names;
static int nbefore;
static unsigned long subs_before; /* dlpi_subs: unloads so far, by the loader's count */
static int listed;                /* the listing is whole */

/* One dlclose at a time records, from its begin to its end: a spin lock,
 * as unload.c's, so that a forked child can simply clear it. A dlclose
 * inside another's destructors, on the same thread, is the outer one's. */
static int recording;
static __thread int nested;

static uintptr_t page_down(uintptr_t a) { return a & ~(uintptr_t)(CPROF_PAGE - 1); }
static uintptr_t page_up(uintptr_t a) { return page_down(a + CPROF_PAGE - 1); }

/* The GNU build ID from a loaded module's notes, in hex. */
static void build_id_of(const struct dl_phdr_info *info, char *hex) {
  hex[0] = '\0';
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_NOTE)
      continue;
    const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
    const unsigned char *end = p + ph->p_filesz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
      const unsigned char *name = p + sizeof *nh;
      const unsigned char *desc = name + ((nh->n_namesz + 3) & ~3u);
      const unsigned char *next = desc + ((nh->n_descsz + 3) & ~3u);
      if (next > end || next <= p)
        break;
      if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0 &&
          nh->n_descsz > 0 && nh->n_descsz <= 32) {
        cprof__hex_encode(desc, nh->n_descsz, hex);
        return;
      }
      p = next;
    }
  }
}

static int list_one(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  (void)arg;
  subs_before = info->dlpi_subs;
  /* The main program (no name) and the vDSO (no file) never go. */
  if (!info->dlpi_name || info->dlpi_name[0] == '\0' || info->dlpi_phnum == 0)
    return 0;
  size_t len = strlen(info->dlpi_name) + 1;
  if (scratch_reserve(&before, sizeof(loaded_t)) != 0 || scratch_reserve(&names, len) != 0)
    return 1;
  loaded_t *m = (loaded_t *)before.p + nbefore;
  memset(m, 0, sizeof *m);
  m->phdr = info->dlpi_phdr;
  m->bias = info->dlpi_addr;
  m->name = names.used;
  memcpy(names.p + names.used, info->dlpi_name, len);
  names.used += len;
  int first = 1;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD)
      continue;
    uintptr_t vaddr = info->dlpi_addr + ph->p_vaddr;
    if (first) {
      /* Where libdw puts a reported module's first segment (libdwfl:
       * the first PT_LOAD's p_vaddr rounded down to its alignment). */
      uintptr_t align = ph->p_align ? ph->p_align : 1;
      m->low = info->dlpi_addr + (ph->p_vaddr & ~(align - 1));
      first = 0;
    }
    if (page_up(vaddr + ph->p_memsz) > m->high)
      m->high = page_up(vaddr + ph->p_memsz);
    if ((ph->p_flags & PF_X) && m->nexec < MAX_EXEC)
      m->exec[m->nexec++] = (exec_seg_t){.start = page_down(vaddr),
                                         .end = page_up(vaddr + ph->p_memsz),
                                         .offset = ph->p_offset - (vaddr - page_down(vaddr))};
  }
  build_id_of(info, m->build_id);
  before.used += sizeof *m;
  nbefore++;
  return 0;
}

static int still_there(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  (void)arg;
  loaded_t *v = (loaded_t *)before.p;
  for (int i = 0; i < nbefore; i++)
    if (v[i].phdr == info->dlpi_phdr && v[i].bias == info->dlpi_addr)
      v[i].gone = 0;
  return 0;
}

static unsigned long subs_now;
static int count_subs(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  (void)arg;
  subs_now = info->dlpi_subs;
  return 1;
}

/* ---- the retired modules -------------------------------------------------- */

static cprof__retired_t **retired; /* CPROF_RETIRED_MAX pointers, mapped at the first */
static int nretired;
static scratch_t arena; /* the entries; never moved: a new chunk when full */

static size_t entry_size(size_t pathlen) {
  return (sizeof(cprof__retired_t) + pathlen + 1 + 15) & ~(size_t)15;
}

/* Room for `size` more bytes of entries: a new chunk when the last is
 * full (the old one stays: entries live there). */
static int arena_room(size_t size) {
  if (arena.used + size <= arena.size)
    return 0;
  size_t chunk = cprof__pages_round(size > 64 * 1024 ? size : 64 * 1024);
  unsigned char *p = cprof__pages_map(chunk);
  if (!p)
    return -ENOMEM;
  arena = (scratch_t){.p = p, .size = chunk};
  return 0;
}

static cprof__retired_t *new_entry(size_t pathlen) {
  size_t size = entry_size(pathlen);
  if (arena_room(size) != 0)
    return NULL;
  cprof__retired_t *r = (cprof__retired_t *)(arena.p + arena.used);
  arena.used += size;
  return r;
}

/* Maps, before the dlclose, all that retiring every module listed could
 * need: mapped after it, our pages would take the hole the module leaves,
 * and the program's next dlopen would land elsewhere than without cprof. */
static void reserve_for_listed(void) {
  if (!retired && !(retired = cprof__pages_map(CPROF_RETIRED_MAX * sizeof *retired)))
    return;
  const loaded_t *v = (const loaded_t *)before.p;
  size_t need = 0;
  for (int i = 0; i < nbefore; i++) {
    const char *name = (const char *)names.p + v[i].name;
    need += (size_t)v[i].nexec * entry_size(name[0] == '/' ? strlen(name) : PATH_MAX);
  }
  (void)arena_room(need);
}

/* The latest retired entry overlapping [start, end), or NULL. */
static cprof__retired_t *latest_over(uintptr_t start, uintptr_t end) {
  for (int i = nretired - 1; i >= 0; i--)
    if (retired[i]->start < end && start < retired[i]->end)
      return retired[i];
  return NULL;
}

static void retire(const loaded_t *m, const exec_seg_t *seg, const char *path, uint32_t gone) {
  /* The same file at the same place as the last module that held it: a
   * program that reloads a plugin. Its samples, of any generation before
   * this one, resolve the same either way. */
  cprof__retired_t *last = latest_over(seg->start, seg->end);
  if (last && last->start == seg->start && last->end == seg->end && last->offset == seg->offset &&
      last->bias == m->bias && strcmp(last->build_id, m->build_id) == 0 &&
      strcmp(last->path, path) == 0) {
    __atomic_store_n(&last->gone, gone, __ATOMIC_RELEASE);
    return;
  }
  if (nretired == CPROF_RETIRED_MAX || !retired)
    return;
  size_t len = strlen(path);
  cprof__retired_t *r = new_entry(len);
  if (!r)
    return;
  r->gone = gone;
  r->start = seg->start;
  r->end = seg->end;
  r->offset = seg->offset;
  r->low = m->low;
  r->high = m->high;
  r->bias = m->bias;
  memcpy(r->build_id, m->build_id, sizeof r->build_id);
  memcpy(r->path, path, len + 1);
  retired[nretired] = r;
  __atomic_store_n(&nretired, nretired + 1, __ATOMIC_RELEASE);
}

/* ---- where retired modules were, for the walkers ---------------------------
 * A few sorted, disjoint ranges covering every retired segment (more than
 * one segment to a range once there are many: a wider cover only marks more
 * stacks than needed). Two copies: the dlclose that changes it writes the
 * one not in use and then switches, after waiting for the walks in flight
 * (unload.c), so a walk reads one whole copy. */

#define COVER_MAX 32

typedef struct cover {
  int n;
  struct {
    uintptr_t start, end;
  } v[COVER_MAX + 1];
} cover_t;

static cover_t covers[2];
static int cover_now; /* the copy walkers read */

/* Adds [start, end) to c, merging what overlaps or touches, then the two
 * closest neighbours while there are too many. */
static void cover_add(cover_t *c, uintptr_t start, uintptr_t end) {
  int i = 0;
  while (i < c->n && c->v[i].end < start)
    i++;
  int j = i;
  while (j < c->n && c->v[j].start <= end) {
    if (c->v[j].start < start)
      start = c->v[j].start;
    if (c->v[j].end > end)
      end = c->v[j].end;
    j++;
  }
  memmove(&c->v[i + 1], &c->v[j], (size_t)(c->n - j) * sizeof c->v[0]);
  c->n += 1 - (j - i);
  c->v[i].start = start;
  c->v[i].end = end;
  if (c->n <= COVER_MAX)
    return;
  int best = 0;
  for (int k = 1; k + 1 < c->n; k++)
    if (c->v[k + 1].start - c->v[k].end < c->v[best + 1].start - c->v[best].end)
      best = k;
  c->v[best].end = c->v[best + 1].end;
  memmove(&c->v[best + 1], &c->v[best + 2], (size_t)(c->n - best - 2) * sizeof c->v[0]);
  c->n--;
}

static void cover_update(void) {
  int next = !cover_now;
  cover_t *c = &covers[next];
  c->n = 0;
  for (int i = 0; i < nretired; i++)
    cover_add(c, retired[i]->start, retired[i]->end);
  __atomic_store_n(&cover_now, next, __ATOMIC_RELEASE);
}

static int covered_sigsafe(const cover_t *c, uintptr_t pc) {
  int lo = (int)CPROF__PARTITION_POINT(c->n, mid, c->v[mid].end <= pc);
  return lo < c->n && c->v[lo].start <= pc;
}

int cprof__modules_mark_sigsafe(uintptr_t *pcs, int n, uint32_t g) {
  if (g == 0)
    return n;
  const cover_t *c = &covers[__atomic_load_n(&cover_now, __ATOMIC_ACQUIRE)];
  for (int i = 0; i < n; i++) {
    /* Return addresses are looked up one byte back, inside the call. */
    uintptr_t pc = i == 0 ? pcs[i] : pcs[i] - 1;
    if (covered_sigsafe(c, pc)) {
      pcs[n++] = CPROF_PC_MODULES(g);
      return n;
    }
  }
  return n;
}

int cprof__modules_retired(cprof__retired_t *const **out) {
  int n = __atomic_load_n(&nretired, __ATOMIC_ACQUIRE);
  *out = retired;
  return n;
}

/* ---- around dlclose -------------------------------------------------------- */

static void pause_briefly(void) {
  struct timespec ts = {0, 20 * 1000};
  nanosleep(&ts, NULL);
}

void cprof__modules_unload_begin(void) {
  if (nested++ > 0)
    return;
  while (__atomic_exchange_n(&recording, 1, __ATOMIC_ACQUIRE))
    pause_briefly();
  nbefore = 0;
  before.used = names.used = 0;
  listed = dl_iterate_phdr(list_one, NULL) == 0;
  if (listed)
    reserve_for_listed();
}

void cprof__modules_unload_end(void) {
  if (--nested > 0)
    return;
  int saved = errno;
  subs_now = subs_before;
  dl_iterate_phdr(count_subs, NULL);
  /* The loader counts its unloads: none, and nothing went. */
  if (listed && subs_now != subs_before) {
    loaded_t *v = (loaded_t *)before.p;
    for (int i = 0; i < nbefore; i++)
      v[i].gone = 1;
    dl_iterate_phdr(still_there, NULL);
    uint32_t gone = cprof__modules_generation + 1;
    int any = 0;
    for (int i = 0; i < nbefore; i++) {
      if (!v[i].gone)
        continue;
      const char *name = (const char *)names.p + v[i].name;
      char abs[PATH_MAX];
      /* The loader keeps the name it was given: relative when the program
       * passed a path with a slash. The directory is most likely the same. */
      if (name[0] != '/' && realpath(name, abs))
        name = abs;
      for (int j = 0; j < v[i].nexec; j++)
        retire(&v[i], &v[i].exec[j], name, gone);
      any = 1;
    }
    if (any) {
      cover_update();
      __atomic_store_n(&cprof__modules_generation, gone, __ATOMIC_RELEASE);
    }
  }
  __atomic_store_n(&recording, 0, __ATOMIC_RELEASE);
  errno = saved;
}

void cprof__modules_atfork_child(void) {
  if (nested == 0)
    __atomic_store_n(&recording, 0, __ATOMIC_SEQ_CST);
}

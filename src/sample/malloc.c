/* The malloc family, interposed: each call goes to the allocator that comes
 * after libcprof in the lookup order (glibc's, or a jemalloc or tcmalloc
 * linked or preloaded after us), and the allocating ones count their bytes
 * down towards the next heap sample (heap.h).
 *
 * libcprof exports these names, so it comes first both under LD_PRELOAD
 * and when a program links -lcprof; the real functions are the next ones,
 * found with dlsym(RTLD_NEXT). dlsym may allocate before it can answer: a
 * thread resolving the names serves its own allocations from a static
 * bootstrap arena, whose blocks are never freed and which free recognises by
 * address. C++'s operator new and delete call malloc and free, so they are
 * covered too.
 *
 * Sanitizer builds keep their own allocator (ASan and TSan interpose malloc
 * themselves), so there these wrappers are left out and the sampler is
 * tested through heap.h directly. */
#include "sample/malloc.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cprof.h"
#include "sample/heap.h"

#ifndef CPROF_NO_INTERPOSE

#include <malloc.h>
#include <stdlib.h>
#include <unistd.h>

static struct {
  void *(*malloc)(size_t);
  void *(*calloc)(size_t, size_t);
  void *(*realloc)(void *, size_t);
  void (*free)(void *);
  int (*posix_memalign)(void **, size_t, size_t);
  void *(*aligned_alloc)(size_t, size_t);
  void *(*memalign)(size_t, size_t);
  void *(*valloc)(size_t);
  void *(*pvalloc)(size_t);
  size_t (*malloc_usable_size)(void *);
} real;
static int resolved; /* atomic: every pointer in `real` is set */
static __thread int resolving __attribute__((tls_model("initial-exec")));

/* ---- the bootstrap arena ---- */

static char boot[256 << 10] __attribute__((aligned(64)));
static size_t boot_used;

static int in_boot(const void *p) { return (uintptr_t)p - (uintptr_t)boot < sizeof boot; }

/* A block of the arena with its size in the 16 bytes before it. Zeroed,
 * since the arena is static and never reused. */
static void *boot_alloc(size_t size, size_t align) {
  if (align < 16)
    align = 16;
  size_t used = __atomic_load_n(&boot_used, __ATOMIC_RELAXED), start, end;
  do {
    start = (used + 16 + align - 1) & ~(align - 1);
    end = start + size;
    if (size > sizeof boot || end > sizeof boot)
      return NULL;
  } while (!__atomic_compare_exchange_n(&boot_used, &used, end, 1, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED));
  memcpy(boot + start - sizeof size, &size, sizeof size);
  return boot + start;
}

static size_t boot_size(const void *p) {
  size_t size;
  memcpy(&size, (const char *)p - sizeof size, sizeof size);
  return size;
}

static void die(const char *what) {
  char line[160];
  int n = snprintf(line, sizeof line, "cprof: cannot find the real %s; aborting\n", what);
  if (n > 0 && write(2, line, (size_t)n) < 0) {
  }
  abort();
}

#define RESOLVE(name)                                                                             \
  do {                                                                                            \
    if (!(real.name = (__typeof__(real.name))dlsym(RTLD_NEXT, #name)))                           \
      die(#name);                                                                                 \
  } while (0)

static void resolve(void) {
  resolving = 1;
  RESOLVE(malloc);
  RESOLVE(calloc);
  RESOLVE(realloc);
  RESOLVE(free);
  RESOLVE(posix_memalign);
  RESOLVE(aligned_alloc);
  RESOLVE(memalign);
  RESOLVE(valloc);
  RESOLVE(pvalloc);
  RESOLVE(malloc_usable_size);
  resolving = 0;
  __atomic_store_n(&resolved, 1, __ATOMIC_RELEASE);
}

/* Resolves early, before the program's threads start: the library's first
 * constructor. */
__attribute__((constructor(101))) static void resolve_early(void) {
  if (!__atomic_load_n(&resolved, __ATOMIC_ACQUIRE))
    resolve();
}

/* Nonzero when this thread is inside dlsym: the caller must use the arena. */
static inline int bootstrapping(void) {
  if (__builtin_expect(__atomic_load_n(&resolved, __ATOMIC_ACQUIRE), 1))
    return 0;
  if (resolving)
    return 1;
  resolve();
  return 0;
}

/* ---- the fast path ---- */

#define RET ((uintptr_t)__builtin_return_address(0))

/* Counts an allocation of `size` bytes down; the one that crosses zero
 * goes to the sampler. */
static inline __attribute__((always_inline)) void *counted(void *p, size_t size, uintptr_t ret) {
  cprof__heap_tls_t *s = &cprof__heap_tls;
  if (__builtin_expect((s->countdown -= (int64_t)size) < 0, 0))
    cprof__heap_sample(p, size, ret);
  return p;
}

/* Before a block goes back to the allocator. */
static inline __attribute__((always_inline)) void releasing(void *p) {
  if (__builtin_expect(cprof__heap_maybe_sampled(p), 0))
    cprof__heap_freed(p);
}

CPROF_EXTERN void *malloc(size_t size) {
  if (bootstrapping())
    return boot_alloc(size, 16);
  return counted(real.malloc(size), size, RET);
}

CPROF_EXTERN void *calloc(size_t n, size_t size) {
  if (bootstrapping())
    return n && size > SIZE_MAX / n ? NULL : boot_alloc(n * size, 16);
  return counted(real.calloc(n, size), n * size, RET);
}

CPROF_EXTERN void free(void *p) {
  if (!p || in_boot(p))
    return;
  if (bootstrapping())
    return; /* a block from before the real free was known: cannot be */
  releasing(p);
  real.free(p);
}

static void *realloc_at(void *p, size_t size, uintptr_t ret) {
  int boot = bootstrapping();
  if (boot || in_boot(p)) {
    void *q = boot ? boot_alloc(size, 16) : counted(real.malloc(size), size, ret);
    if (q && p) {
      size_t old = boot_size(p);
      memcpy(q, p, old < size ? old : size);
    }
    return q;
  }
  /* A sampled block is counted freed before realloc can free it, so that
   * its address cannot come back sampled from another thread first. If
   * realloc then fails, the old block lives on unseen: a rare undercount. */
  if (p)
    releasing(p);
  void *q = real.realloc(p, size);
  return counted(q, q ? size : 0, ret);
}

CPROF_EXTERN void *realloc(void *p, size_t size) { return realloc_at(p, size, RET); }

CPROF_EXTERN void *reallocarray(void *p, size_t n, size_t size) {
  if (n && size > SIZE_MAX / n) {
    errno = ENOMEM;
    return NULL;
  }
  return realloc_at(p, n * size, RET);
}

CPROF_EXTERN int posix_memalign(void **out, size_t align, size_t size) {
  if (bootstrapping()) {
    void *p = boot_alloc(size, align);
    if (!p)
      return ENOMEM;
    *out = p;
    return 0;
  }
  int rc = real.posix_memalign(out, align, size);
  if (rc == 0)
    counted(*out, size, RET);
  return rc;
}

CPROF_EXTERN void *aligned_alloc(size_t align, size_t size) {
  if (bootstrapping())
    return boot_alloc(size, align);
  return counted(real.aligned_alloc(align, size), size, RET);
}

CPROF_EXTERN void *memalign(size_t align, size_t size) {
  if (bootstrapping())
    return boot_alloc(size, align);
  return counted(real.memalign(align, size), size, RET);
}

CPROF_EXTERN void *valloc(size_t size) {
  if (bootstrapping())
    return boot_alloc(size, 4096);
  return counted(real.valloc(size), size, RET);
}

CPROF_EXTERN void *pvalloc(size_t size) {
  if (bootstrapping())
    return boot_alloc((size + 4095) & ~(size_t)4095, 4096);
  return counted(real.pvalloc(size), size, RET);
}

CPROF_EXTERN size_t malloc_usable_size(void *p) {
  if (!p)
    return 0;
  if (in_boot(p))
    return boot_size(p);
  if (bootstrapping())
    return 0;
  return real.malloc_usable_size(p);
}

/* Our malloc by a name nobody can interpose: inside libcprof, `malloc`
 * itself means whichever malloc comes first, perhaps another library's. */
extern void *cprof__own_malloc(size_t)
    __attribute__((alias("malloc"), copy(malloc), visibility("hidden")));

int cprof__malloc_check(char *why, size_t len) {
  void *first = dlsym(RTLD_DEFAULT, "malloc");
  if (first == (void *)cprof__own_malloc)
    return 0;
  Dl_info info;
  const char *who = first && dladdr(first, &info) && info.dli_fname ? info.dli_fname : "another library";
  snprintf(why, len,
           "malloc comes from %s, ahead of libcprof in the lookup order; put libcprof first "
           "(LD_PRELOAD=libcprof.so:%s) to profile that allocator",
           who, who);
  return -ENOTSUP;
}

#else /* CPROF_NO_INTERPOSE */

int cprof__malloc_check(char *why, size_t len) {
  snprintf(why, len, "this libcprof was built with sanitizers, which keep their own allocator");
  return -ENOTSUP;
}

#endif

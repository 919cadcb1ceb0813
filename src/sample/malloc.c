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

/* ---- sampled blocks ----
 *
 * Whether an allocation is sampled is decided before it is made (the
 * countdown needs only its size). A sampled block is allocated `offset`
 * bytes larger, offset = max(16, alignment), and handed out at
 * base + offset with a 16-byte header just before it: a tag, a hash of its
 * own address, and the offset. free reads the 16 bytes before any pointer
 * whose page offset is at least 16: the same cache line the allocator's
 * free is about to read for its own chunk header, so the question costs
 * next to nothing, and never touches another page. A tag that matches by
 * chance is caught by the table (cprof__heap_release finds nothing). For a
 * page-aligned pointer, whose header would lie on another page, the
 * sampler's bit filter answers instead. */

typedef struct header {
  uint64_t tag;
  uint64_t offset;
} header_t;

static inline uint64_t tag_of(const void *p) {
  return (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull ^ 0x6370726f66686561ull;
}

/* Set at the first sampled block: until then (and for good when heap
 * profiling is off) free asks nothing at all. */
static int any_sampled;

static inline int sampled_block(const void *p) {
  if (!__builtin_expect(__atomic_load_n(&any_sampled, __ATOMIC_RELAXED), 1))
    return 0;
  if (((uintptr_t)p & 4095) >= sizeof(header_t))
    return __builtin_expect(((const header_t *)p)[-1].tag == tag_of(p), 0);
  return cprof__heap_maybe_sampled(p);
}

enum kind { PLAIN, ZEROED, ALIGNED };

/* The allocation the program asked for, unsampled. */
static void *allocate(enum kind kind, size_t align, size_t size) {
  if (kind == PLAIN)
    return real.malloc(size);
  if (kind == ZEROED)
    return real.calloc(1, size);
  void *p;
  return real.posix_memalign(&p, align, size) == 0 ? p : NULL;
}

/* The slow path of an allocation whose size crossed the countdown. */
__attribute__((noinline)) static void *sample_alloc(enum kind kind, size_t align, size_t size,
                                                    uintptr_t ret) {
  if (!cprof__heap_should_sample(size))
    return allocate(kind, align, size);
  size_t offset = align > sizeof(header_t) ? align : sizeof(header_t);
  if (size > SIZE_MAX - offset || offset > UINT32_MAX)
    return allocate(kind, align, size); /* it will fail as it would have */
  char *base = allocate(kind, offset, size + offset);
  if (!base)
    return NULL;
  char *p = base + offset;
  ((header_t *)p)[-1] = (header_t){tag_of(p), offset};
  __atomic_store_n(&any_sampled, 1, __ATOMIC_RELAXED); /* before p is returned */
  cprof__heap_record(p, size, (uint32_t)offset, ret);
  return p;
}

/* The slow path of a free whose pointer looks sampled. */
__attribute__((noinline)) static void free_sampled(void *p) {
  uint32_t offset;
  if (cprof__heap_release(p, &offset)) {
    ((header_t *)p)[-1].tag = 0; /* no stale tag for the next block here */
    p = (char *)p - offset;
  }
  real.free(p);
}

/* The usable size of a block; `sampled` is sampled_block(p). */
static size_t usable(void *p, int sampled) {
  if (sampled) {
    const header_t *h = &((const header_t *)p)[-1];
    return real.malloc_usable_size((char *)p - h->offset) - h->offset;
  }
  return real.malloc_usable_size(p);
}

/* ---- the family ---- */

#define RET ((uintptr_t)__builtin_return_address(0))

CPROF_EXTERN void *malloc(size_t size) {
  if (bootstrapping())
    return boot_alloc(size, 16);
  if (cprof__heap_crossing(size))
    return sample_alloc(PLAIN, 16, size, RET);
  return real.malloc(size);
}

CPROF_EXTERN void *calloc(size_t n, size_t size) {
  if (n && size > SIZE_MAX / n) {
    errno = ENOMEM;
    return NULL;
  }
  if (bootstrapping())
    return boot_alloc(n * size, 16);
  if (cprof__heap_crossing(n * size))
    return sample_alloc(ZEROED, 16, n * size, RET);
  return real.calloc(n, size);
}

CPROF_EXTERN void free(void *p) {
  if (!p || in_boot(p))
    return;
  if (bootstrapping())
    return; /* not from the arena, before the real free is known: cannot be */
  if (sampled_block(p))
    free_sampled(p);
  else
    real.free(p);
}

/* A block moves: the old one is freed (and, if sampled, counted freed) and
 * the new one counts as an allocation of its full size, as Go counts a
 * grown slice. */
static void *realloc_at(void *p, size_t size, uintptr_t ret) {
  int boot = bootstrapping();
  if (boot || in_boot(p)) {
    void *q = boot ? boot_alloc(size, 16) : malloc(size);
    if (q && p) {
      size_t old = boot_size(p);
      memcpy(q, p, old < size ? old : size);
    }
    return q;
  }
  if (!p) {
    if (cprof__heap_crossing(size))
      return sample_alloc(PLAIN, 16, size, ret);
    return real.realloc(NULL, size);
  }
  int was_sampled = sampled_block(p);
  if (size == 0 && was_sampled) { /* realloc(p, 0) frees, as glibc's does */
    free_sampled(p);
    return NULL;
  }
  int crossed = cprof__heap_crossing(size);
  if (!was_sampled && !crossed)
    return real.realloc(p, size);
  /* Either end is sampled: move the bytes ourselves. */
  size_t old = usable(p, was_sampled);
  void *q = crossed ? sample_alloc(PLAIN, 16, size, ret) : real.malloc(size);
  if (!q)
    return NULL; /* p is untouched, as realloc promises */
  memcpy(q, p, old < size ? old : size);
  if (was_sampled)
    free_sampled(p);
  else
    real.free(p);
  return q;
}

CPROF_EXTERN void *realloc(void *p, size_t size) { return realloc_at(p, size, RET); }

CPROF_EXTERN void *reallocarray(void *p, size_t n, size_t size) {
  if (n && size > SIZE_MAX / n) {
    errno = ENOMEM;
    return NULL;
  }
  return realloc_at(p, n * size, RET);
}

/* The aligned ones: alignment as the caller asked (at least 16, a power of
 * two, is what posix_memalign needs underneath). */
static void *aligned_at(size_t align, size_t size, uintptr_t ret) {
  if (bootstrapping())
    return boot_alloc(size, align);
  if (align < 16)
    align = 16;
  if (cprof__heap_crossing(size))
    return sample_alloc(ALIGNED, align, size, ret);
  return allocate(ALIGNED, align, size);
}

CPROF_EXTERN int posix_memalign(void **out, size_t align, size_t size) {
  if (align < sizeof(void *) || (align & (align - 1)))
    return EINVAL;
  void *p = aligned_at(align, size, RET);
  if (!p)
    return ENOMEM;
  *out = p;
  return 0;
}

CPROF_EXTERN void *aligned_alloc(size_t align, size_t size) {
  if (align == 0 || (align & (align - 1))) {
    errno = EINVAL;
    return NULL;
  }
  return aligned_at(align, size, RET);
}

CPROF_EXTERN void *memalign(size_t align, size_t size) {
  if (align & (align - 1)) { /* glibc rounds up to a power of two */
    size_t a = 1;
    while (a < align)
      a <<= 1;
    align = a;
  }
  return aligned_at(align, size, RET);
}

CPROF_EXTERN void *valloc(size_t size) { return aligned_at(4096, size, RET); }

CPROF_EXTERN void *pvalloc(size_t size) {
  return aligned_at(4096, (size + 4095) & ~(size_t)4095, RET);
}

CPROF_EXTERN size_t malloc_usable_size(void *p) {
  if (!p)
    return 0;
  if (in_boot(p))
    return boot_size(p);
  if (bootstrapping())
    return 0;
  return usable(p, sampled_block(p));
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

/* The real malloc family: the functions of the allocator that comes after
 * libcprof in the lookup order, found with dlsym(RTLD_NEXT) before the
 * program's threads start. dlsym may allocate before it can answer: a
 * thread resolving the names serves its own allocations from a static
 * bootstrap arena, whose blocks are never freed and which free recognises
 * by the tag they carry, as sampled blocks do (malloc.c). */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "interpose/malloc_internal.h"

#ifndef CPROF_NO_INTERPOSE

/* The bootstrap arena: a thread inside dlsym, before the real functions are
 * known, allocates here. Its blocks are never reused. */
char cprof__malloc_boot[256 << 10] __attribute__((aligned(4096)));
static size_t boot_used;

/* A block of the arena, zeroed (the arena is static and never reused),
 * tagged, and never at a page's start, where free would not look for the
 * tag. */
static void *boot_alloc(size_t size, size_t align) {
  if (align < 16)
    align = 16;
  size_t used = __atomic_load_n(&boot_used, __ATOMIC_RELAXED), start, end;
  do {
    start = (used + 16 + align - 1) & ~(align - 1);
    if ((start & 4095) < sizeof(header_t))
      start += align < 4096 ? align : 0;
    end = start + size;
    if (size > sizeof cprof__malloc_boot || end > sizeof cprof__malloc_boot)
      return NULL;
  } while (
      !__atomic_compare_exchange_n(&boot_used, &used, end, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  put_header(cprof__malloc_boot + start, size);
  return cprof__malloc_boot + start;
}
static void *first_malloc(size_t size);
static void *first_calloc(size_t n, size_t size);
static void *first_realloc(void *p, size_t size);
static void first_free(void *p);
static int first_posix_memalign(void **out, size_t align, size_t size);
static size_t first_usable_size(void *p);
static void *first_memalign(size_t align, size_t size);
static void *first_aligned_alloc(size_t align, size_t size);
static void *first_valloc(size_t size);
static void *first_pvalloc(size_t size);

functions_t cprof__malloc_real = {first_malloc,
                                  first_calloc,
                                  first_realloc,
                                  first_free,
                                  first_posix_memalign,
                                  first_usable_size,
                                  first_memalign,
                                  first_aligned_alloc,
                                  first_valloc,
                                  first_pvalloc,
                                  NULL,
                                  NULL,
                                  0};
static __thread int resolving __attribute__((tls_model("initial-exec")));

static void die(const char *what) {
  char line[160];
  int n = snprintf(line, sizeof line, "cprof: cannot find the real %s; aborting\n", what);
  if (n > 0 && write(2, line, (size_t)n) < 0) {
  }
  abort();
}

#define RESOLVE(name)                                                                              \
  do {                                                                                             \
    if (!(found.name = (__typeof__(found.name))dlsym(RTLD_NEXT, #name)))                           \
      die(#name);                                                                                  \
  } while (0)

/* The object that defines f, or NULL. */
static void *object_of(void *f) {
  Dl_info info;
  return f && dladdr(f, &info) ? info.dli_fbase : NULL;
}

/* The allocator's answers about sizes, found only in the object whose
 * malloc is the real one: another library's nallocx would answer for an
 * allocator the program does not use. */
static void find_sizes(functions_t *found) {
  void *home = object_of((void *)found->malloc);
  void *f;
  if ((f = dlsym(RTLD_NEXT, "nallocx")) && object_of(f) == home)
    found->nallocx = (size_t(*)(size_t, int))f;
  if ((f = dlsym(RTLD_NEXT, "mallocx")) && object_of(f) == home)
    found->mallocx = (void *(*)(size_t, int))f;
  Dl_info info;
  const char *slash;
  found->glibc = home && dladdr((void *)found->malloc, &info) && info.dli_fname &&
                 (slash = strrchr(info.dli_fname, '/'),
                  strncmp(slash ? slash + 1 : info.dli_fname, "libc.so", 7) == 0);
}

/* All are found before any is used: while this thread is in dlsym, its
 * calls must all go to the arena. Threads that race here find the same.
 * The aligned ones are the allocator's own, not posix_memalign dressed up:
 * each has its own rules for odd alignments and sizes (glibc 2.36's
 * aligned_alloc rounds an alignment of 3 up, 2.38's refuses it), and the
 * program must get the rules it would get without us. */
static void resolve(void) {
  functions_t found = {0};
  cprof__block_draw_secret();
  resolving = 1;
  RESOLVE(malloc);
  RESOLVE(calloc);
  RESOLVE(realloc);
  RESOLVE(free);
  RESOLVE(posix_memalign);
  RESOLVE(malloc_usable_size);
  RESOLVE(memalign);
  RESOLVE(aligned_alloc);
  RESOLVE(valloc);
  RESOLVE(pvalloc);
  find_sizes(&found);
  resolving = 0;
  __atomic_store_n(&cprof__malloc_real.nallocx, found.nallocx, __ATOMIC_RELAXED);
  __atomic_store_n(&cprof__malloc_real.mallocx, found.mallocx, __ATOMIC_RELAXED);
  __atomic_store_n(&cprof__malloc_real.glibc, found.glibc, __ATOMIC_RELAXED);
  __atomic_store_n(&cprof__malloc_real.malloc, found.malloc, __ATOMIC_RELAXED);
  __atomic_store_n(&cprof__malloc_real.calloc, found.calloc, __ATOMIC_RELAXED);
  __atomic_store_n(&cprof__malloc_real.realloc, found.realloc, __ATOMIC_RELAXED);
  __atomic_store_n(&cprof__malloc_real.free, found.free, __ATOMIC_RELAXED);
  __atomic_store_n(&cprof__malloc_real.posix_memalign, found.posix_memalign, __ATOMIC_RELAXED);
  __atomic_store_n(&cprof__malloc_real.malloc_usable_size, found.malloc_usable_size,
                   __ATOMIC_RELAXED);
  __atomic_store_n(&cprof__malloc_real.memalign, found.memalign, __ATOMIC_RELAXED);
  __atomic_store_n(&cprof__malloc_real.aligned_alloc, found.aligned_alloc, __ATOMIC_RELAXED);
  __atomic_store_n(&cprof__malloc_real.valloc, found.valloc, __ATOMIC_RELAXED);
  __atomic_store_n(&cprof__malloc_real.pvalloc, found.pvalloc, __ATOMIC_RELAXED);
}

/* Resolves early, before the program's threads start: the library's first
 * constructor. */
__attribute__((constructor(101))) static void resolve_early(void) {
  if (REAL(malloc) == first_malloc)
    resolve();
}

static void *first_malloc(size_t size) {
  if (resolving)
    return boot_alloc(size, 16);
  resolve();
  return REAL(malloc)(size);
}

static void *first_calloc(size_t n, size_t size) {
  if (resolving) {
    size_t total;
    return __builtin_mul_overflow(n, size, &total) ? NULL : boot_alloc(total, 16);
  }
  resolve();
  return REAL(calloc)(n, size);
}

static void *first_realloc(void *p, size_t size) {
  if (resolving) { /* p is NULL: the wrapper moves the arena's blocks itself */
    return boot_alloc(size, 16);
  }
  resolve();
  return REAL(realloc)(p, size);
}

static void first_free(void *p) {
  if (resolving)
    return; /* not the arena's (the wrapper saw to those): nobody else's yet */
  resolve();
  REAL(free)(p);
}

static int first_posix_memalign(void **out, size_t align, size_t size) {
  if (resolving) {
    void *p = boot_alloc(size, align);
    return p ? (*out = p, 0) : ENOMEM;
  }
  resolve();
  return REAL(posix_memalign)(out, align, size);
}

static size_t first_usable_size(void *p) {
  if (resolving)
    return 0;
  resolve();
  return REAL(malloc_usable_size)(p);
}

/* dlsym asks for none of these; were one called from inside it, the arena
 * serves what it can align. */
static void *boot_aligned(size_t align, size_t size) {
  return power_of_two(align) && align <= 4096 ? boot_alloc(size, align) : NULL;
}

static void *first_memalign(size_t align, size_t size) {
  if (resolving)
    return boot_aligned(align, size);
  resolve();
  return REAL(memalign)(align, size);
}

static void *first_aligned_alloc(size_t align, size_t size) {
  if (resolving)
    return boot_aligned(align, size);
  resolve();
  return REAL(aligned_alloc)(align, size);
}

static void *first_valloc(size_t size) {
  if (resolving)
    return boot_aligned(4096, size);
  resolve();
  return REAL(valloc)(size);
}

static void *first_pvalloc(size_t size) {
  if (resolving)
    return boot_aligned(4096, size);
  resolve();
  return REAL(pvalloc)(size);
}

/* Whether f is defined in the allocator under us (malloc_block.h). */
int cprof__block_in_allocator(void *f) {
  if (REAL(malloc) == first_malloc && !resolving)
    resolve();
  void *home = object_of((void *)REAL(malloc));
  return home && object_of(f) == home;
}

#endif /* CPROF_NO_INTERPOSE */

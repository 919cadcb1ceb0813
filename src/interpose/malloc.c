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
 * the tag they carry, as sampled blocks do. C++'s operators and the
 * allocators' other entry points that can see our blocks are interposed in
 * new_delete.c and allocator_ext.c, through malloc_block.h.
 *
 * The fast paths are what every call of the program pays: malloc is a
 * thread-local subtract, a branch and an indirect jump to the real malloc;
 * free checks the 16 bytes before the pointer against its seal and jumps.
 *
 * Each function answers as the allocator under us does, errno included:
 * an unsampled call is the real function with the program's arguments,
 * and a call we cannot or need not sample (an alignment that is not a
 * power of two, a size whose header would overflow, a larger block the
 * allocator refuses) becomes that same real call. Only a block we could
 * get is ever handed out as sampled, so the edge cases (sizes past
 * PTRDIFF_MAX, odd or huge alignments, pvalloc's rounding) are the
 * allocator's to judge, never ours.
 *
 * This file holds the wrappers and the free side of a sampled block; a
 * sampled block is made in malloc_sample.c, the real functions and the
 * bootstrap arena are found in malloc_real.c, and malloc_origin.c tells
 * where the program's malloc comes from (malloc_internal.h is what they
 * share).
 *
 * Sanitizer builds keep their own allocator (ASan and TSan interpose malloc
 * themselves), so there these wrappers are left out and the sampler is
 * tested through heap.h directly. */
#include <errno.h>
#include <string.h>

#include "cprof.h"
#include "interpose/malloc_internal.h"
#include "sample/heap.h"

#ifndef CPROF_NO_INTERPOSE

#include <malloc.h>
#include <unistd.h>

/* Nonzero when p may be sampled or from the arena, for a closer look
 * (malloc_block.h): at a page's start, the filter answers. */
int cprof__block_tagged_at_page_start(const void *p) {
  return p && (in_boot(p) || cprof__heap_maybe_sampled(p));
}

/* Whether p is sampled or the arena's, for certain: tagged, and at a
 * page's start the filter's "maybe" checked in the table. */
static int ours(const void *p) {
  return cprof__block_tagged(p) &&
         (!cprof__heap_at_page_start(p) || in_boot(p) || cprof__heap_known(p));
}

static void *sample_alloc(kind_t kind, size_t align, size_t size, uintptr_t ret) {
  return cprof__block_sample(kind, align, size, 0, ret);
}

/* The slow path of a free whose pointer is tagged. */
__attribute__((noinline)) static void free_tagged(void *p) {
  if (in_boot(p))
    return;
  size_t offset = 0;
  if (cprof__heap_at_page_start(p)) {
    uint32_t off;
    if (cprof__heap_release(p, &off)) /* else the filter's false alarm */
      offset = off;
  } else {
    sampled_header_t *h = sampled_header_of(p);
    uint64_t info = h->h.info;
    cprof__heap_sample_t s = {(void *)(uintptr_t)(info & INFO_BUCKET), h->size, h->weight};
    cprof__heap_release_sample(&s);
    h->h.tag = 0; /* no stale tag for the next block here */
    offset = (size_t)1 << (info >> 56);
  }
  REAL(free)((char *)p - offset);
}

/* The usable size of a block that is ours(): the arena's, its size; a
 * sampled block's, what the program's own request would have got. */
static size_t usable_tagged(void *p) {
  return in_boot(p) ? header_of(p)->info : sampled_header_of(p)->usable;
}

/* ---- the family ---- */

#define RET ((uintptr_t)__builtin_return_address(0))

__thread int cprof__block_passing __attribute__((tls_model("initial-exec")));

/* Each aligned wrapper: if the size crosses the countdown and the block
 * can be sampled, p is the sampled block; otherwise the real call follows,
 * with the program's own arguments. A call an allocator's aligned operator
 * new makes on our behalf was counted there (new_delete.c). */
#define SAMPLED(p, kind, align, size)                                                              \
  (!cprof__block_passing && cprof__heap_crossing(size) &&                                          \
   ((p) = sample_alloc(kind, align, size, RET)))

/* malloc and calloc, the hot ones, keep their fallback out of line, so
 * that their fast path needs no frame: a subtract, a branch, a jump. */
__attribute__((noinline)) static void *malloc_crossed(size_t size, uintptr_t ret) {
  void *p = sample_alloc(PLAIN, 16, size, ret);
  return p ? p : REAL(malloc)(size);
}

CPROF_EXTERN void *malloc(size_t size) {
  if (cprof__heap_crossing(size))
    return malloc_crossed(size, RET);
  return REAL(malloc)(size);
}

__attribute__((noinline)) static void *calloc_crossed(size_t n, size_t size, uintptr_t ret) {
  void *p = sample_alloc(ZEROED, 16, n * size, ret);
  return p ? p : REAL(calloc)(n, size);
}

/* A product that overflows is the allocator's to refuse. */
CPROF_EXTERN void *calloc(size_t n, size_t size) {
  size_t total;
  if (!__builtin_mul_overflow(n, size, &total) && cprof__heap_crossing(total))
    return calloc_crossed(n, size, RET);
  return REAL(calloc)(n, size);
}

CPROF_EXTERN void free(void *p) {
  if (cprof__block_tagged(p))
    free_tagged(p);
  else if (p)
    REAL(free)(p);
}

/* The allocator's realloc of a block of its own, when malloc cannot
 * serve: so that realloc of one of our blocks fails, and sets errno, as
 * the allocator's realloc would (jemalloc's leaves errno alone where its
 * malloc sets ENOMEM). */
static void *realloc_probe(size_t size) {
  void *t = REAL(malloc)(1), *r;
  if (!t)
    return NULL;
  if (!(r = REAL(realloc)(t, size))) {
    int e = errno;
    REAL(free)(t);
    errno = e;
  }
  return r;
}

/* An unsampled block of size bytes for realloc to move one of ours into. */
static void *unsampled_for_realloc(size_t size) {
  int saved = errno;
  void *q = REAL(malloc)(size);
  if (!q) {
    errno = saved;
    q = realloc_probe(size);
  }
  return q;
}

/* A block moves: the old one is freed (and, if sampled, counted freed) and
 * the new one counts as an allocation of its full size, as Go counts a
 * grown slice. */
static void *realloc_at(void *p, size_t size, uintptr_t ret) {
  void *q;
  if (!p) {
    if (cprof__heap_crossing(size) && (q = sample_alloc(PLAIN, 16, size, ret)))
      return q;
    return REAL(realloc)(NULL, size);
  }
  int was_tagged = ours(p);
  if (size == 0) { /* realloc(p, 0) frees and returns NULL in glibc */
    if (!was_tagged)
      return REAL(realloc)(p, 0);
    free_tagged(p);
    return NULL;
  }
  q = cprof__heap_crossing(size) ? sample_alloc(PLAIN, 16, size, ret) : NULL;
  if (!q && !was_tagged)
    return REAL(realloc)(p, size);
  /* Either end is sampled, or p is the arena's: move the bytes ourselves. */
  if (!q && !(q = unsampled_for_realloc(size)))
    return NULL; /* p is untouched, as realloc promises */
  size_t old = was_tagged ? usable_tagged(p) : REAL(malloc_usable_size)(p);
  memcpy(q, p, old < size ? old : size);
  if (was_tagged)
    free_tagged(p);
  else
    REAL(free)(p);
  return q;
}

CPROF_EXTERN void *realloc(void *p, size_t size) { return realloc_at(p, size, RET); }

void *cprof__block_realloc(void *p, size_t size, uintptr_t ret) { return realloc_at(p, size, ret); }

/* glibc's reallocarray is realloc behind this same check (ENOMEM, and p
 * untouched), and an allocator that lacks one gets glibc's. */
CPROF_EXTERN void *reallocarray(void *p, size_t n, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(n, size, &total)) {
    errno = ENOMEM;
    return NULL;
  }
  return realloc_at(p, total, RET);
}

/* The aligned ones sample power-of-two alignments, which every allocator
 * accepts; posix_memalign also wants a multiple of sizeof(void *). Other
 * alignments go to the allocator, which rounds them up or refuses them by
 * its own rules. */
CPROF_EXTERN int posix_memalign(void **out, size_t align, size_t size) {
  void *p;
  if (align >= sizeof(void *) && SAMPLED(p, ALIGNED, align, size)) {
    *out = p;
    return 0;
  }
  return REAL(posix_memalign)(out, align, size);
}

CPROF_EXTERN void *aligned_alloc(size_t align, size_t size) {
  void *p;
  if (SAMPLED(p, ALIGNED, align, size))
    return p;
  return REAL(aligned_alloc)(align, size);
}

CPROF_EXTERN void *memalign(size_t align, size_t size) {
  void *p;
  if (SAMPLED(p, ALIGNED, align, size))
    return p;
  return REAL(memalign)(align, size);
}

static size_t page_size(void) { return (size_t)sysconf(_SC_PAGESIZE); }

CPROF_EXTERN void *valloc(size_t size) {
  void *p;
  if (SAMPLED(p, ALIGNED, page_size(), size))
    return p;
  return REAL(valloc)(size);
}

/* pvalloc hands out whole pages: a sampled block has the rounded size; a
 * size that cannot be rounded is the allocator's to refuse. */
CPROF_EXTERN void *pvalloc(size_t size) {
  size_t page = page_size(), rounded;
  void *p;
  if (!__builtin_add_overflow(size, page - 1, &rounded) &&
      SAMPLED(p, ALIGNED, page, rounded & ~(page - 1)))
    return p;
  return REAL(pvalloc)(size);
}

CPROF_EXTERN size_t malloc_usable_size(void *p) {
  if (!p)
    return 0;
  return ours(p) ? usable_tagged(p) : REAL(malloc_usable_size)(p);
}

/* ---- for the other entry points (malloc_block.h) ---- */

int cprof__block_ours(const void *p) { return ours(p); }
void cprof__block_free(void *p) { free_tagged(p); }
size_t cprof__block_usable(const void *p) { return usable_tagged((void *)p); }
size_t cprof__block_real_usable(void *p) { return REAL(malloc_usable_size)(p); }
void *(*cprof__block_real_mallocx(void))(size_t, int) { return REAL(mallocx); }
void *(*cprof__block_real_malloc(void))(size_t) { return REAL(malloc); }
void (*cprof__block_real_free(void))(void *) { return REAL(free); }

/* Our malloc by a name nobody can interpose: inside libcprof, `malloc`
 * itself means whichever malloc comes first, perhaps another library's. */
extern void *cprof__own_malloc(size_t)
    __attribute__((alias("malloc"), copy(malloc), visibility("hidden")));

#endif /* CPROF_NO_INTERPOSE */

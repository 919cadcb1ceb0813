/* What the interposers of an allocator's other entry points (new_delete.c,
 * allocator_ext.c) share with malloc.c: telling a block handed out as
 * sampled from the allocator's own, freeing one, asking its size, taking
 * a sample, and finding the functions the program would call without us.
 *
 * A sampled block (malloc.c) lies `offset` bytes into a larger block of
 * the allocator's, behind a header sealed to its address. Any entry point
 * that takes a pointer the program got from us must look for the seal
 * first: the allocator's own function, given the interior pointer, would
 * free or measure memory it never handed out. */
#ifndef CPROF_INTERPOSE_MALLOC_BLOCK_H
#define CPROF_INTERPOSE_MALLOC_BLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "sample/heap.h"

#ifndef CPROF_NO_INTERPOSE

/* The 16 bytes before a sampled block (and a block of the bootstrap
 * arena): a tag that seals `info` to the block's address. */
typedef struct cprof__block_header {
  uint64_t tag;  /* seal(p) ^ info */
  uint64_t info; /* sampled: the slot (low 56 bits), log2 of the offset
                    (high 8); the arena's: the block's size */
} cprof__block_header_t;

/* The per-process secret the seal is keyed by (malloc.c draws it). */
extern uint64_t cprof__block_secret __attribute__((visibility("hidden")));

static inline uint64_t cprof__block_seal(const void *p) {
  return (uintptr_t)p ^ __atomic_load_n(&cprof__block_secret, __ATOMIC_RELAXED);
}

int cprof__block_tagged_at_page_start(const void *p) __attribute__((visibility("hidden")));

/* Nonzero when p may be sampled or the arena's, for a closer look: the
 * check every free-like entry point makes first, one load of the cache
 * line the allocator reads anyway. */
static inline int cprof__block_tagged(const void *p) {
  if (__builtin_expect(!cprof__heap_at_page_start(p), 1)) {
    const cprof__block_header_t *h = &((const cprof__block_header_t *)p)[-1];
    return __builtin_expect((h->tag ^ h->info) == cprof__block_seal(p), 0);
  }
  return cprof__block_tagged_at_page_start(p);
}

/* The first look of a fast path that makes no call: nonzero when p's seal
 * matches, or p lies at a page's start, where only a call can tell. */
static inline int cprof__block_maybe_tagged(const void *p) {
  if (__builtin_expect(cprof__heap_at_page_start(p), 0))
    return 1;
  const cprof__block_header_t *h = &((const cprof__block_header_t *)p)[-1];
  return __builtin_expect((h->tag ^ h->info) == cprof__block_seal(p), 0);
}

/* Whether p is sampled or the arena's, for certain. */
int cprof__block_ours(const void *p) __attribute__((visibility("hidden")));
/* Frees a tagged block (counting a sampled one freed). */
void cprof__block_free(void *p) __attribute__((visibility("hidden")));
/* The usable size of a block that is ours: what the program's own request
 * would have got without us. */
size_t cprof__block_usable(const void *p) __attribute__((visibility("hidden")));

/* How a sampled block is allocated: as malloc, calloc, an aligned call, or
 * jemalloc's mallocx with the program's flags. */
enum cprof__block_kind {
  CPROF_BLOCK_PLAIN,
  CPROF_BLOCK_ZEROED,
  CPROF_BLOCK_ALIGNED,
  CPROF_BLOCK_MALLOCX
};

/* The slow path of an allocation whose size crossed the heap sampler's
 * countdown: a sampled block of `size` bytes aligned to `align`, or NULL,
 * and then the caller makes the real call the program made (see
 * malloc.c). `flags` are mallocx's, for CPROF_BLOCK_MALLOCX. errno is
 * left as it was. */
void *cprof__block_sample(enum cprof__block_kind kind, size_t align, size_t size, int flags,
                          uintptr_t ret) __attribute__((visibility("hidden")));

/* realloc of any block, ours or not, counted as malloc.c's realloc counts
 * it. */
void *cprof__block_realloc(void *p, size_t size, uintptr_t ret)
    __attribute__((visibility("hidden")));

/* The allocator's own malloc_usable_size of a block that is not ours. */
size_t cprof__block_real_usable(void *p) __attribute__((visibility("hidden")));
/* The allocator's malloc and free themselves, for blocks that are not ours
 * (stand-ins that resolve them until cprof__block_in_allocator or a first
 * allocation has). */
void *(*cprof__block_real_malloc(void))(size_t) __attribute__((visibility("hidden")));
void (*cprof__block_real_free(void))(void *) __attribute__((visibility("hidden")));

/* jemalloc's mallocx, where the allocator under us has it (resolved with
 * malloc, from the allocator's own object); NULL otherwise. */
void *(*cprof__block_real_mallocx(void))(size_t, int)__attribute__((visibility("hidden")));

/* The definition of `name` the program would reach without us: the next
 * one in the lookup order, or, for a library loaded only in a local scope
 * (a C++ plugin dlopen()ed by a C program), the first loaded object that
 * defines it. NULL if none does. */
void *cprof__block_next(const char *name) __attribute__((visibility("hidden")));

/* Whether f is defined in the allocator under us (the object whose malloc
 * is the real one). */
int cprof__block_in_allocator(void *f) __attribute__((visibility("hidden")));

/* Set on a thread while an allocator's own entry point that may call back
 * into malloc.c's aligned ones (jemalloc's aligned operator new calls
 * aligned_alloc) runs on our behalf: the call it makes was counted
 * already, so the aligned wrappers pass it straight through. */
extern __thread int cprof__block_passing
    __attribute__((tls_model("initial-exec"), visibility("hidden")));

#endif /* CPROF_NO_INTERPOSE */

#endif

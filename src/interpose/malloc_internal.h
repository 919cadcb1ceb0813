/* What the four files of the malloc family share (malloc.c, the wrappers;
 * malloc_sample.c, making a sampled block; malloc_real.c, the real
 * functions and the bootstrap arena; malloc_origin.c, where malloc comes
 * from): the table of the real functions, the blocks' headers and the
 * arena's bounds. Everything here is inline or data, so that a wrapper's
 * fast path reads the table as it did when it was one file: one load and an
 * indirect jump. */
#ifndef CPROF_INTERPOSE_MALLOC_INTERNAL_H
#define CPROF_INTERPOSE_MALLOC_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "interpose/malloc_block.h"

#ifndef CPROF_NO_INTERPOSE

/* ---- sampled blocks and the arena's blocks: tagged ----
 *
 * Whether an allocation is sampled is decided before it is made (the
 * countdown needs only its size). A sampled block is allocated `offset`
 * bytes larger, offset = max(64, alignment), and handed out at
 * base + offset with a 40-byte header just before it: the usable size the
 * program is told, its size and weight and where it was counted, for its
 * free, its offset, and a tag that seals the last two to the block's
 * address. The bootstrap
 * arena's blocks (malloc_real.c) carry the same tag, with their size. free reads
 * the 16 bytes before any pointer whose page offset is at least 16: the
 * cache line the allocator's free is about to read for its own chunk
 * header, so the question costs next to nothing and never touches another
 * page; a sampled block's free is then counted in its bucket without a
 * lock. For a pointer at a page's start, whose header would lie on another
 * page, the sampler's bit filter and table answer instead.
 *
 * The seal is keyed by a secret drawn once per process, so program data
 * that happens to precede a block cannot pass for a header, by chance
 * (one in 2^64) or by design. */

typedef cprof__block_header_t header_t; /* malloc_block.h */

/* A sampled block's header: the usable size the program is told, and the
 * rest of what its free hands back to the sampler, read only once the tag
 * says the block is sampled. */
typedef struct sampled_header {
  uint64_t usable;
  uint64_t size, weight;
  header_t h;
} sampled_header_t;

/* A sampled block's offset: the header, rounded up to a power of two (the
 * tag's word keeps log2 of the offset), or the alignment if larger. */
#define MIN_OFFSET 64
_Static_assert(sizeof(sampled_header_t) <= MIN_OFFSET, "the header fits in the offset");

#define INFO_BUCKET ((UINT64_C(1) << 56) - 1)

static inline header_t *header_of(const void *p) { return &((header_t *)p)[-1]; }

static inline sampled_header_t *sampled_header_of(const void *p) {
  return &((sampled_header_t *)p)[-1];
}

static inline void put_header(void *p, uint64_t info) {
  *header_of(p) = (header_t){cprof__block_seal(p) ^ info, info};
}

/* Draws the secret (malloc_sample.c): the first thing the first resolve
 * does, so before any block is tagged. */
void cprof__block_draw_secret(void) __attribute__((visibility("hidden")));

/* The bootstrap arena (malloc_real.c): a thread inside dlsym, before the
 * real functions are known, allocates here. Its blocks are never reused. */
extern char cprof__malloc_boot[256 << 10] __attribute__((visibility("hidden")));

static inline int in_boot(const void *p) {
  return (uintptr_t)p - (uintptr_t)cprof__malloc_boot < sizeof cprof__malloc_boot;
}

static inline int power_of_two(size_t a) { return a && !(a & (a - 1)); }

/* ---- the real functions (malloc_real.c) ----
 *
 * Until they are resolved, each pointer holds a stand-in that resolves them
 * all, or, on the thread that is resolving them (inside dlsym), serves the
 * call from the arena. So once resolved, a call costs one indirect jump. */

typedef struct functions {
  void *(*malloc)(size_t);
  void *(*calloc)(size_t, size_t);
  void *(*realloc)(void *, size_t);
  void (*free)(void *);
  int (*posix_memalign)(void **, size_t, size_t);
  size_t (*malloc_usable_size)(void *);
  void *(*memalign)(size_t, size_t);
  void *(*aligned_alloc)(size_t, size_t);
  void *(*valloc)(size_t);
  void *(*pvalloc)(size_t);
  /* The allocator's own answers about sizes, where it has them (jemalloc,
   * tcmalloc); NULL otherwise. Resolved with the others, never called
   * before. */
  size_t (*nallocx)(size_t, int);
  void *(*mallocx)(size_t, int); /* jemalloc's, for the sampled blocks rallocx moves into */
  int glibc;                     /* the allocator is glibc's (its chunk layout is known) */
} functions_t;

extern functions_t cprof__malloc_real __attribute__((visibility("hidden")));
#define REAL(name) __atomic_load_n(&cprof__malloc_real.name, __ATOMIC_RELAXED)

typedef enum cprof__block_kind kind_t;
#define PLAIN CPROF_BLOCK_PLAIN
#define ZEROED CPROF_BLOCK_ZEROED
#define ALIGNED CPROF_BLOCK_ALIGNED
#define MALLOCX CPROF_BLOCK_MALLOCX

/* Our malloc by a name nobody can interpose (malloc.c): inside libcprof,
 * `malloc` itself means whichever malloc comes first, perhaps another
 * library's. */
extern void *cprof__own_malloc(size_t) __attribute__((visibility("hidden")));

#endif /* CPROF_NO_INTERPOSE */

#endif

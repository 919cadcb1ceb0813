/* Sampled blocks, made: the slow path of an allocation whose size crossed
 * the heap sampler's countdown. A sampled block is allocated larger, with
 * a header sealed to its address before the pointer the program gets
 * (malloc_internal.h), and the program is told the usable size its own
 * request would have got. The secret the seals are keyed by is drawn here
 * too. */
#include <errno.h>
#include <stdint.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "interpose/malloc_internal.h"
#include "sample/heap.h"

#ifndef CPROF_NO_INTERPOSE

uint64_t cprof__block_secret; /* atomic; set once, before the first tag */

/* Draws the secret: the first thing the first resolve does, so before any
 * block is tagged. Threads that race keep whichever came first. */
void cprof__block_draw_secret(void) {
  uint64_t s = 0, none = 0;
  if (__atomic_load_n(&cprof__block_secret, __ATOMIC_RELAXED))
    return;
  if (getrandom(&s, sizeof s, GRND_NONBLOCK) != (ssize_t)sizeof s) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    s = ((uint64_t)ts.tv_nsec << 32 ^ (uint64_t)ts.tv_sec ^ (uintptr_t)&s) * 0xbf58476d1ce4e5b9ull;
  }
  __atomic_compare_exchange_n(&cprof__block_secret, &none, s | 1, 0, __ATOMIC_RELAXED,
                              __ATOMIC_RELAXED);
}

/* mallocx's flags (jemalloc's <jemalloc/jemalloc.h>): log2 of the
 * alignment in the low 6 bits, then zeroing, the thread cache's (8-19) and
 * the arena's (20 on). */
#define MALLOCX_ALIGN_BITS 0x3f
#define MALLOCX_TCACHE_BITS 0xfff00

/* A sampled block's allocation, with room for its header: `align` is a
 * power of two of at least MIN_OFFSET. mallocx's keeps the program's
 * arena and zeroing, and takes the thread's own cache: the block is freed
 * with free, which knows no other. */
static void *allocate(kind_t kind, size_t align, size_t size, int flags) {
  if (kind == PLAIN)
    return REAL(malloc)(size);
  if (kind == ZEROED)
    return REAL(calloc)(1, size);
  if (kind == MALLOCX)
    return REAL(mallocx)(size, (flags & ~(MALLOCX_ALIGN_BITS | MALLOCX_TCACHE_BITS)) |
                                   __builtin_ctzll(align));
  void *p;
  return REAL(posix_memalign)(&p, align, size) == 0 ? p : NULL;
}

/* glibc's chunk of a request of r bytes (malloc.c's request2size): r plus
 * its size word, in 16-byte steps, at least 32. */
static size_t glibc_chunk(size_t r) { return r + 23 < 32 ? 32 : (r + 23) & ~(size_t)15; }

/* The usable size a plain request of `size` bytes gets from a chunk of
 * glibc's heaps (malloc.c's request2size and memsize): its chunk less the
 * size word. 0 if that overflows. */
static size_t glibc_usable(size_t size) {
  size_t chunk = glibc_chunk(size);
  return chunk < size ? 0 : chunk - 8;
}

/* Under an allocator without nallocx: the usable size the program's own
 * request of `size` bytes gets, for the sampled block at *base, which was
 * allocated with room for `room` bytes after the offset (and which this
 * may replace). Under glibc the room is glibc_usable(size), so a plain
 * block from a heap has exactly that. glibc maps a large chunk by itself,
 * in whole pages, and then the offset can cross a page boundary the
 * program's request would not, or the request's page can leave more room
 * than the block has: the program is told what its own chunk would have
 * held (a page's rounding of it, glibc's sysmalloc_mmap and musable), in a
 * block that has it. An aligned block's room depends on where the
 * allocator found the alignment, with or without us (glibc's aligned_alloc(32, 1)
 * is 24, 40 or 72 bytes), so it is the block's own; as is any block of
 * an allocator we know nothing of. */
static size_t usable_without_nallocx(kind_t kind, size_t size, size_t offset, char **base) {
  size_t have = REAL(malloc_usable_size)(*base) - offset;
  if (!REAL(glibc) || kind == ALIGNED)
    return have;
  size_t want = glibc_usable(size);
  if (!(((size_t *)*base)[-1] & 2)) /* glibc's IS_MMAPPED */
    return have < want ? have : want;
  size_t page = (size_t)sysconf(_SC_PAGESIZE), chunk = glibc_chunk(size) + 8;
  if (chunk < size || chunk > SIZE_MAX - page)
    return have;
  want = ((chunk + page - 1) & ~(page - 1)) - 16;
  if (have < want) { /* the rare block a page short: one that has it */
    char *more = want <= SIZE_MAX - offset ? allocate(kind, offset, want + offset, 0) : NULL;
    if (!more)
      return have;
    REAL(free)(*base);
    *base = more;
    have = REAL(malloc_usable_size)(more) - offset;
  }
  return have < want ? have : want;
}

/* A block of size bytes, aligned to align (a power of two), counted as
 * sampled and sealed with its header; NULL if it cannot be had.
 *
 * The program is told the usable size (malloc_usable_size, sallocx) that
 * the same request gets without us, so that it treats a sampled block as
 * it treats the others. Programs size their buffers by it: redis's
 * strings shrink when they see more than a tenth spare, and a block with
 * the header's bytes added lands in a larger size class. Where the
 * allocator answers nallocx (jemalloc, tcmalloc), its answer is that
 * size, and the block is allocated with room for it after the header. */
static void *sample_block(kind_t kind, size_t align, size_t size, int flags, uintptr_t ret) {
  size_t offset = align > MIN_OFFSET ? align : MIN_OFFSET, usable = 0;
  size_t (*nallocx)(size_t, int) = REAL(nallocx);
  /* jemalloc's and tcmalloc's flags: log2 of the alignment; a plain
   * request has none, mallocx's its own, and malloc(0) is served as
   * malloc(1). */
  int lg = kind == ALIGNED   ? __builtin_ctzll(align)
           : kind == MALLOCX ? flags & MALLOCX_ALIGN_BITS
                             : 0;
  if (kind == MALLOCX && !(nallocx && REAL(mallocx)))
    return NULL;
  if (nallocx && !(usable = nallocx(size ? size : 1, lg)))
    return NULL; /* beyond the allocator's largest size: its own call refuses it */
  /* glibc's smallest chunk holds 24 bytes, more than a small request and
   * the offset leave in a larger one. */
  size_t room = nallocx ? usable : REAL(glibc) ? glibc_usable(size) : size;
  if (room < size)
    room = size;
  if (offset > UINT32_MAX || room > SIZE_MAX - offset)
    return NULL;
  char *base = allocate(kind, offset, room + offset, flags);
  if (!base)
    return NULL;
  if (!nallocx)
    usable = usable_without_nallocx(kind, size, offset, &base);
  char *p = base + offset;
  cprof__heap_sample_t s;
  cprof__heap_record(p, size, (uint32_t)offset, ret, &s);
  if (!s.slot && cprof__heap_at_page_start(p)) { /* free could not tell it */
    REAL(free)(base);
    return NULL;
  }
  sampled_header_t *h = sampled_header_of(p);
  h->usable = usable;
  h->size = s.size;
  h->weight = s.weight;
  put_header(p, (uint64_t)(uintptr_t)s.slot | (uint64_t)__builtin_ctzll(offset) << 56);
  return p;
}

/* The slow path of an allocation whose size crossed the countdown
 * (malloc_block.h): a sampled block of `size` bytes aligned to `align`, or
 * NULL, and then the caller makes the real call the program made. NULL when the allocation is
 * not sampled, when the alignment is not a power of two (the allocator
 * decides whether it rounds it up or refuses it), when size, header and
 * alignment do not fit in a size_t, and when the allocator refuses the
 * larger block: the real call then fails, or succeeds, as it would have,
 * and sets errno as it would have. errno is left as the program left it,
 * since a successful allocation does not touch it. */
__attribute__((noinline)) void *cprof__block_sample(kind_t kind, size_t align, size_t size,
                                                    int flags, uintptr_t ret) {
  int saved = errno;
  void *p = NULL;
  if (cprof__heap_should_sample(size) && power_of_two(align))
    p = sample_block(kind, align, size, flags, ret);
  errno = saved;
  return p;
}

#endif /* CPROF_NO_INTERPOSE */

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
 * Sanitizer builds keep their own allocator (ASan and TSan interpose malloc
 * themselves), so there these wrappers are left out and the sampler is
 * tested through heap.h directly. */
#include "interpose/malloc.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "cprof.h"
#include "interpose/malloc_block.h"
#include "core/guard.h"
#include "sample/heap.h"

#ifndef CPROF_NO_INTERPOSE

#include <malloc.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* ---- sampled blocks and the arena's blocks: tagged ----
 *
 * Whether an allocation is sampled is decided before it is made (the
 * countdown needs only its size). A sampled block is allocated `offset`
 * bytes larger, offset = max(64, alignment), and handed out at
 * base + offset with a 40-byte header just before it: the usable size the
 * program is told, its size and weight and where it was counted, for its
 * free, its offset, and a tag that seals the last two to the block's
 * address. The bootstrap
 * arena's blocks (below) carry the same tag, with their size. free reads
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

uint64_t cprof__block_secret; /* atomic; set once, before the first tag */

static inline header_t *header_of(const void *p) { return &((header_t *)p)[-1]; }

static inline sampled_header_t *sampled_header_of(const void *p) {
  return &((sampled_header_t *)p)[-1];
}

static void put_header(void *p, uint64_t info) {
  *header_of(p) = (header_t){cprof__block_seal(p) ^ info, info};
}

/* Draws the secret: the first thing the first resolve does, so before any
 * block is tagged. Threads that race keep whichever came first. */
static void draw_secret(void) {
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

/* The bootstrap arena: a thread inside dlsym, before the real functions are
 * known, allocates here. Its blocks are never reused. */
static char boot[256 << 10] __attribute__((aligned(4096)));
static size_t boot_used;

static int in_boot(const void *p) { return (uintptr_t)p - (uintptr_t)boot < sizeof boot; }

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
    if (size > sizeof boot || end > sizeof boot)
      return NULL;
  } while (!__atomic_compare_exchange_n(&boot_used, &used, end, 1, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED));
  put_header(boot + start, size);
  return boot + start;
}

/* ---- the real functions ----
 *
 * Until they are resolved, each pointer holds a stand-in that resolves them
 * all, or, on the thread that is resolving them (inside dlsym), serves the
 * call from the arena. So once resolved, a call costs one indirect jump. */

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
  int glibc; /* the allocator is glibc's (its chunk layout is known) */
} functions_t;

static functions_t real = {first_malloc,      first_calloc,         first_realloc,
                           first_free,        first_posix_memalign, first_usable_size,
                           first_memalign,    first_aligned_alloc,  first_valloc,
                           first_pvalloc,     NULL,                 NULL,
                           0};
static __thread int resolving __attribute__((tls_model("initial-exec")));
#define REAL(name) __atomic_load_n(&real.name, __ATOMIC_RELAXED)

static void die(const char *what) {
  char line[160];
  int n = snprintf(line, sizeof line, "cprof: cannot find the real %s; aborting\n", what);
  if (n > 0 && write(2, line, (size_t)n) < 0) {
  }
  abort();
}

#define RESOLVE(name)                                                                             \
  do {                                                                                            \
    if (!(found.name = (__typeof__(found.name))dlsym(RTLD_NEXT, #name)))                         \
      die(#name);                                                                                 \
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
                 (slash = strrchr(info.dli_fname, '/'), strncmp(slash ? slash + 1 : info.dli_fname,
                                                                "libc.so", 7) == 0);
}

/* All are found before any is used: while this thread is in dlsym, its
 * calls must all go to the arena. Threads that race here find the same.
 * The aligned ones are the allocator's own, not posix_memalign dressed up:
 * each has its own rules for odd alignments and sizes (glibc 2.36's
 * aligned_alloc rounds an alignment of 3 up, 2.38's refuses it), and the
 * program must get the rules it would get without us. */
static void resolve(void) {
  functions_t found = {0};
  draw_secret();
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
  __atomic_store_n(&real.nallocx, found.nallocx, __ATOMIC_RELAXED);
  __atomic_store_n(&real.mallocx, found.mallocx, __ATOMIC_RELAXED);
  __atomic_store_n(&real.glibc, found.glibc, __ATOMIC_RELAXED);
  __atomic_store_n(&real.malloc, found.malloc, __ATOMIC_RELAXED);
  __atomic_store_n(&real.calloc, found.calloc, __ATOMIC_RELAXED);
  __atomic_store_n(&real.realloc, found.realloc, __ATOMIC_RELAXED);
  __atomic_store_n(&real.free, found.free, __ATOMIC_RELAXED);
  __atomic_store_n(&real.posix_memalign, found.posix_memalign, __ATOMIC_RELAXED);
  __atomic_store_n(&real.malloc_usable_size, found.malloc_usable_size, __ATOMIC_RELAXED);
  __atomic_store_n(&real.memalign, found.memalign, __ATOMIC_RELAXED);
  __atomic_store_n(&real.aligned_alloc, found.aligned_alloc, __ATOMIC_RELAXED);
  __atomic_store_n(&real.valloc, found.valloc, __ATOMIC_RELAXED);
  __atomic_store_n(&real.pvalloc, found.pvalloc, __ATOMIC_RELAXED);
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

static int power_of_two(size_t a) { return a && !(a & (a - 1)); }

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

typedef enum cprof__block_kind kind_t;
#define PLAIN CPROF_BLOCK_PLAIN
#define ZEROED CPROF_BLOCK_ZEROED
#define ALIGNED CPROF_BLOCK_ALIGNED
#define MALLOCX CPROF_BLOCK_MALLOCX

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

int cprof__block_in_allocator(void *f) {
  if (REAL(malloc) == first_malloc && !resolving)
    resolve();
  void *home = object_of((void *)REAL(malloc));
  return home && object_of(f) == home;
}

/* Our malloc by a name nobody can interpose: inside libcprof, `malloc`
 * itself means whichever malloc comes first, perhaps another library's. */
extern void *cprof__own_malloc(size_t)
    __attribute__((alias("malloc"), copy(malloc), visibility("hidden")));

/* The sanitizer in the process whose runtime owns malloc, if any: each
 * exports its runtime's entry point, from a shared runtime (gcc's default,
 * libasan.so) or linked into the executable (clang's default, and gcc's
 * -static-libasan). */
static const char *sanitizer(const char **flag) {
  static const struct {
    const char *symbol, *name, *flag;
  } known[] = {
      {"__asan_init", "AddressSanitizer", "address"},
      {"__hwasan_init", "HWAddressSanitizer", "hwaddress"},
      {"__tsan_init", "ThreadSanitizer", "thread"},
      {"__msan_init", "MemorySanitizer", "memory"},
      {"__lsan_do_leak_check", "LeakSanitizer", "leak"}, /* after ASan, which has it too */
  };
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
    if (dlsym(RTLD_DEFAULT, known[i].symbol)) {
      *flag = known[i].flag;
      return known[i].name;
    }
  }
  return NULL;
}

/* Whether addr lies in the program's executable: the loader's first link
 * map, the only one with an empty name (dlinfo(3), <link.h>). */
static int in_executable(void *addr) {
  Dl_info info;
  struct link_map *map = NULL;
  return dladdr1(addr, &info, (void **)&map, RTLD_DL_LINKMAP) && map && map->l_name &&
         map->l_name[0] == '\0';
}

/* Whether addr is a PLT stub that stands for malloc in a non-PIE executable
 * which takes malloc's address (Debian's /usr/bin/python3.11): the loader
 * gives such a symbol its stub as the one address every object sees, so
 * dlsym returns the stub, but the symbol is undefined there (SHN_UNDEF) and
 * the program's calls go on to the first library that defines malloc. */
static int is_plt_stub(void *addr) {
  Dl_info info;
  const ElfW(Sym) *sym = NULL;
  return dladdr1(addr, &info, (void **)&sym, RTLD_DL_SYMENT) && sym &&
         sym->st_shndx == SHN_UNDEF;
}

/* The first library after the executable, in the loader's order (that of
 * the global lookup for the libraries loaded at start, then those loaded
 * later, whatever their scope), that defines `name` itself, libcprof
 * included or not: dlsym on its handle also searches its dependencies, so
 * the answer counts only when it lies in the library. */
static void *first_library_defining(const char *name, int but_us) {
  struct link_map *map = NULL, *ours = NULL;
  Dl_info info;
  if (!dladdr1((void *)cprof__own_malloc, &info, (void **)&ours, RTLD_DL_LINKMAP) || !ours)
    return NULL;
  for (map = ours; map->l_prev;)
    map = map->l_prev;
  for (map = map->l_next; map; map = map->l_next) {
    if (but_us && map == ours)
      continue;
    void *h = dlopen(map->l_name, RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
      continue;
    void *f = dlsym(h, name);
    struct link_map *owner = NULL;
    int here = f && dladdr1(f, &info, (void **)&owner, RTLD_DL_LINKMAP) && owner == map;
    dlclose(h);
    if (here)
      return f;
  }
  return NULL;
}

/* What the loader allocates meanwhile (dlsym's error message for a name
 * not found) is cprof's work, not the program's. */
void *cprof__block_next(const char *name) {
  cprof__guard_enter();
  void *f = dlsym(RTLD_NEXT, name);
  if (!f)
    f = first_library_defining(name, 1);
  cprof__guard_leave();
  return f;
}

/* Where malloc comes from when it is not libcprof's, and what can be done:
 * the advice "put libcprof first" holds only for another library. */
int cprof__malloc_check(char *why, size_t len) {
  void *first = dlsym(RTLD_DEFAULT, "malloc");
  if (first && in_executable(first) && is_plt_stub(first))
    first = first_library_defining("malloc", 0);
  if (first == (void *)cprof__own_malloc)
    return 0;
  Dl_info info;
  const char *who = first && dladdr(first, &info) && info.dli_fname && info.dli_fname[0]
                        ? info.dli_fname
                        : "another library";
  const char *flag, *san = sanitizer(&flag);
  if (san)
    snprintf(why, len,
             "malloc belongs to %s (%s), which must keep the allocator it checks; profile the "
             "heap in a build without -fsanitize=%s",
             san, who, flag);
  else if (first && in_executable(first))
    snprintf(why, len,
             "malloc is defined in the program itself (%s), which comes before every library in "
             "the lookup order, so no library can interpose it; to profile that allocator, build "
             "it as a shared library and load libcprof before it "
             "(LD_PRELOAD=libcprof.so:liballocator.so)",
             who);
  else
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

/* The allocators' own entry points beyond the C library's, interposed:
 * every one that takes a block the program may have got from us as
 * sampled.
 *
 * A sampled block lies inside a larger block of the allocator's
 * (malloc_block.h), so an entry point that frees or measures a block and
 * bypasses us would be handed an interior pointer: jemalloc's sdallocx of
 * a malloc()ed block crashed. These are
 *   jemalloc's  rallocx xallocx sallocx dallocx sdallocx;
 *   C23's       free_sized free_aligned_sized;
 *   tcmalloc's  malloc_size, cfree and the tc_ names that free, resize or
 *               measure a block (tc_free, tc_delete..., tc_realloc,
 *               tc_malloc_size).
 * Each looks for the sampled block's seal and otherwise calls the next
 * definition, the allocator's, with the program's arguments. Under an
 * allocator that lacks one (these names are libcprof's whatever the
 * allocator), a program that finds it anyway (a weak reference, dlsym)
 * gets what the C library's functions give: free for the frees,
 * malloc_usable_size for the sizes, and a rallocx made of malloc, calloc
 * and posix_memalign.
 *
 * The entry points that allocate and take no block (jemalloc's mallocx,
 * tcmalloc's tc_malloc, tc_new...) are not interposed: the blocks a
 * program gets from them directly are not in the profile. Exporting them
 * would tell a program that looks for jemalloc by its mallocx that it runs
 * on jemalloc, under any allocator. A rallocx that moves a block counts
 * the new size, as realloc does. */
#include "interpose/malloc_block.h"

#include <stdlib.h>
#include <string.h>

#include "cprof.h"

#ifndef CPROF_NO_INTERPOSE

#define RET ((uintptr_t)__builtin_return_address(0))
#define OURS(p) (cprof__block_tagged(p) && cprof__block_ours(p))

/* The next definition of a name, looked up at its first call (the slot
 * starts as UNSEEN); NULL if nobody after us defines it. */
#define UNSEEN ((void *)1)
static void *next_of(void **slot, const char *name) {
  void *f = __atomic_load_n(slot, __ATOMIC_RELAXED);
  if (__builtin_expect(f == UNSEEN, 0)) {
    f = cprof__block_next(name);
    __atomic_store_n(slot, f, __ATOMIC_RELAXED);
  }
  return f;
}
#define NEXT(type, name)                                                                           \
  ({                                                                                               \
    static void *slot_ = UNSEEN;                                                                   \
    (type) next_of(&slot_, #name);                                                                 \
  })

/* ---- jemalloc ---- */

#define MALLOCX_LG_ALIGN_MASK 0x3f
#define MALLOCX_ZERO 0x40

static size_t mallocx_align(int flags) {
  int lg = flags & MALLOCX_LG_ALIGN_MASK;
  return lg ? (size_t)1 << lg : 16;
}

/* mallocx's block under an allocator without it: the C library's calls,
 * counted by our wrappers of them. */
static void *mallocx_made(size_t size, int flags) {
  void *p = NULL;
  if (flags & MALLOCX_LG_ALIGN_MASK) {
    size_t align = mallocx_align(flags);
    if (posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size))
      return NULL;
    if (flags & MALLOCX_ZERO)
      memset(p, 0, size);
    return p;
  }
  return flags & MALLOCX_ZERO ? calloc(1, size) : malloc(size);
}

/* A block moves when it or its new size is sampled, as malloc.c's realloc
 * moves it: the new one counts as an allocation of its full size. */
CPROF_EXTERN void *rallocx(void *p, size_t size, int flags) {
  void *(*next)(void *, size_t, int) = NEXT(void *(*)(void *, size_t, int), rallocx);
  int ours = OURS(p);
  void *q = NULL;
  if (!next || !cprof__block_real_mallocx()) {
    if (!(q = mallocx_made(size, flags)))
      return NULL;
  } else {
    if (size && cprof__heap_crossing(size))
      q = cprof__block_sample(CPROF_BLOCK_MALLOCX, mallocx_align(flags), size, flags, RET);
    if (!q && !ours)
      return next(p, size, flags);
    if (!q && !(q = cprof__block_real_mallocx()(size, flags)))
      return NULL; /* p is untouched, as rallocx promises */
  }
  size_t old = ours ? cprof__block_usable(p) : cprof__block_real_usable(p);
  memcpy(q, p, old < size ? old : size);
  if (ours)
    cprof__block_free(p);
  else
    cprof__block_real_free()(p);
  return q;
}

/* A sampled block is never resized in place: its size stays what the
 * program was told, which xallocx answers when it cannot resize. */
CPROF_EXTERN size_t xallocx(void *p, size_t size, size_t extra, int flags) {
  if (OURS(p))
    return cprof__block_usable(p);
  size_t (*next)(void *, size_t, size_t, int) =
      NEXT(size_t(*)(void *, size_t, size_t, int), xallocx);
  return next ? next(p, size, extra, flags) : cprof__block_real_usable(p);
}

/* jemalloc's usable size, answered for a sampled block as
 * malloc_usable_size answers (malloc.c). */
CPROF_EXTERN size_t sallocx(const void *p, int flags) {
  if (OURS(p))
    return cprof__block_usable(p);
  size_t (*next)(const void *, int) = NEXT(size_t(*)(const void *, int), sallocx);
  return next ? next(p, flags) : cprof__block_real_usable((void *)p);
}

/* The frees: a sampled block is freed as free frees it; any other goes to
 * the next definition, or to the allocator's free. */
#define FREE_LIKE(name, params, type, ...)                                                         \
  CPROF_EXTERN void name params {                                                                  \
    if (OURS(p)) {                                                                                 \
      cprof__block_free(p);                                                                        \
      return;                                                                                      \
    }                                                                                              \
    void(*next) type = NEXT(void(*) type, name);                                                   \
    if (next)                                                                                      \
      next(__VA_ARGS__);                                                                           \
    else                                                                                           \
      cprof__block_real_free()(p);                                                                 \
  }

FREE_LIKE(dallocx, (void *p, int flags), (void *, int), p, flags)
FREE_LIKE(sdallocx, (void *p, size_t size, int flags), (void *, size_t, int), p, size, flags)

/* ---- C23 ---- */

FREE_LIKE(free_sized, (void *p, size_t size), (void *, size_t), p, size)
FREE_LIKE(free_aligned_sized, (void *p, size_t align, size_t size), (void *, size_t, size_t), p,
          align, size)

/* ---- tcmalloc ---- */

FREE_LIKE(cfree, (void *p), (void *), p)
FREE_LIKE(tc_free, (void *p), (void *), p)
FREE_LIKE(tc_cfree, (void *p), (void *), p)
FREE_LIKE(tc_free_sized, (void *p, size_t size), (void *, size_t), p, size)
FREE_LIKE(tc_delete, (void *p), (void *), p)
FREE_LIKE(tc_deletearray, (void *p), (void *), p)
FREE_LIKE(tc_delete_nothrow, (void *p, const void *nt), (void *, const void *), p, nt)
FREE_LIKE(tc_deletearray_nothrow, (void *p, const void *nt), (void *, const void *), p, nt)
FREE_LIKE(tc_delete_sized, (void *p, size_t size), (void *, size_t), p, size)
FREE_LIKE(tc_deletearray_sized, (void *p, size_t size), (void *, size_t), p, size)
FREE_LIKE(tc_delete_aligned, (void *p, size_t align), (void *, size_t), p, align)
FREE_LIKE(tc_deletearray_aligned, (void *p, size_t align), (void *, size_t), p, align)
FREE_LIKE(tc_delete_sized_aligned, (void *p, size_t size, size_t align), (void *, size_t, size_t),
          p, size, align)
FREE_LIKE(tc_deletearray_sized_aligned, (void *p, size_t size, size_t align),
          (void *, size_t, size_t), p, size, align)
FREE_LIKE(tc_delete_aligned_nothrow, (void *p, size_t align, const void *nt),
          (void *, size_t, const void *), p, align, nt)
FREE_LIKE(tc_deletearray_aligned_nothrow, (void *p, size_t align, const void *nt),
          (void *, size_t, const void *), p, align, nt)

/* A sampled block resized by tc_realloc moves as realloc moves it. */
CPROF_EXTERN void *tc_realloc(void *p, size_t size) {
  if (OURS(p))
    return cprof__block_realloc(p, size, RET);
  void *(*next)(void *, size_t) = NEXT(void *(*)(void *, size_t), tc_realloc);
  return next ? next(p, size) : cprof__block_realloc(p, size, RET);
}

#define SIZE_LIKE(name)                                                                            \
  CPROF_EXTERN size_t name(void *p) {                                                              \
    if (OURS(p))                                                                                   \
      return cprof__block_usable(p);                                                               \
    size_t (*next)(void *) = NEXT(size_t(*)(void *), name);                                        \
    return next ? next(p) : p ? cprof__block_real_usable(p) : 0;                                   \
  }

SIZE_LIKE(malloc_size)
SIZE_LIKE(tc_malloc_size)

#endif /* CPROF_NO_INTERPOSE */

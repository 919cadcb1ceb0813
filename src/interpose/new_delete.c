/* C++'s operator new and delete, interposed.
 *
 * libstdc++'s operators call malloc and free, so under glibc malloc.c would
 * see every C++ allocation without these. jemalloc and tcmalloc export
 * operators of their own, which bind ahead of libstdc++'s and never
 * call our malloc: without these, a C++ program's heap under them read
 * nothing, and the blocks their operators did get from us crashed them
 * (jemalloc's aligned new calls aligned_alloc, which may hand out a
 * sampled block, and its sized delete then freed the interior pointer).
 *
 * So when the next operator new in the lookup order is the allocator's own
 * (defined in the object whose malloc is the real one), these do as
 * malloc.c does: new counts its size towards the next sample and, when
 * sampled, hands out a sampled block of the allocator's malloc; every
 * delete looks for the sampled block's seal first. Anything else is the
 * allocator's operator with the program's arguments, so that its new
 * handler, std::bad_alloc and nothrow rules are the program's.
 *
 * When the next operators are libstdc++'s or libc++'s and malloc is ours,
 * these do the same, and call the allocator's malloc and free themselves,
 * as the runtime's operators would through ours: a hop shorter than
 * passing on (std::list's nodes cost 0.97-0.98x glibc's, against
 * 1.06-1.07x without these: bench/README.md). Only a malloc that fails goes to the
 * runtime's operator, for the new handler and std::bad_alloc. Under
 * operators of any other library, every one is a jump to the next.
 *
 * The next operators are found at the first call, not at start: libstdc++
 * may come later, with a plugin dlopen()ed by a C program, and then only
 * in that plugin's scope (cprof__block_next looks there too). The
 * exceptions the next operator new throws pass through these frames,
 * which this file's unwind tables describe (-fexceptions, CMakeLists). */
#include "interpose/malloc_block.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cprof.h"
#include "interpose/malloc.h"

#ifndef CPROF_NO_INTERPOSE

/* The operators, by their Itanium C++ ABI names: `m` is size_t,
 * `St11align_val_t` std::align_val_t (a size_t), `RKSt9nothrow_t` a
 * reference to std::nothrow_t. */
#define OPERATORS(X)                                                                               \
  X(NEW, "_Znwm", PLAIN_NEW)                                                                       \
  X(NEW_ARRAY, "_Znam", PLAIN_NEW)                                                                 \
  X(NEW_NOTHROW, "_ZnwmRKSt9nothrow_t", NOTHROW_NEW)                                               \
  X(NEW_ARRAY_NOTHROW, "_ZnamRKSt9nothrow_t", NOTHROW_NEW)                                         \
  X(NEW_ALIGNED, "_ZnwmSt11align_val_t", ALIGNED_NEW)                                              \
  X(NEW_ARRAY_ALIGNED, "_ZnamSt11align_val_t", ALIGNED_NEW)                                        \
  X(NEW_ALIGNED_NOTHROW, "_ZnwmSt11align_val_tRKSt9nothrow_t", ALIGNED_NOTHROW_NEW)                \
  X(NEW_ARRAY_ALIGNED_NOTHROW, "_ZnamSt11align_val_tRKSt9nothrow_t", ALIGNED_NOTHROW_NEW)          \
  X(DELETE, "_ZdlPv", DELETE_P)                                                                    \
  X(DELETE_ARRAY, "_ZdaPv", DELETE_P)                                                              \
  X(DELETE_NOTHROW, "_ZdlPvRKSt9nothrow_t", DELETE_NT)                                             \
  X(DELETE_ARRAY_NOTHROW, "_ZdaPvRKSt9nothrow_t", DELETE_NT)                                       \
  X(DELETE_SIZED, "_ZdlPvm", DELETE_SIZE)                                                          \
  X(DELETE_ARRAY_SIZED, "_ZdaPvm", DELETE_SIZE)                                                    \
  X(DELETE_ALIGNED, "_ZdlPvSt11align_val_t", DELETE_ALIGN)                                         \
  X(DELETE_ARRAY_ALIGNED, "_ZdaPvSt11align_val_t", DELETE_ALIGN)                                   \
  X(DELETE_ALIGNED_NOTHROW, "_ZdlPvSt11align_val_tRKSt9nothrow_t", DELETE_ALIGN_NT)                \
  X(DELETE_ARRAY_ALIGNED_NOTHROW, "_ZdaPvSt11align_val_tRKSt9nothrow_t", DELETE_ALIGN_NT)          \
  X(DELETE_SIZED_ALIGNED, "_ZdlPvmSt11align_val_t", DELETE_SIZE_ALIGN)                             \
  X(DELETE_ARRAY_SIZED_ALIGNED, "_ZdaPvmSt11align_val_t", DELETE_SIZE_ALIGN)

#define AS_ENUM(op, symbol, kind) op,
#define AS_NAME(op, symbol, kind) symbol,
enum op { OPERATORS(AS_ENUM) OPS };
static const char *const names[OPS] = {OPERATORS(AS_NAME)};

static void *next[OPS];

/* Whose the next operators are. */
enum mode {
  UNKNOWN,     /* not looked up yet */
  PASS,        /* a library's we know nothing of: passed straight on */
  ALLOCATOR,   /* the allocator's (jemalloc's, tcmalloc's): ours count and sample */
  CXX_RUNTIME, /* libstdc++'s or libc++'s, whose new is malloc and whose
                  delete is free, and malloc is ours: ours count and sample,
                  and call the allocator's malloc and free themselves, a hop
                  shorter than through libstdc++ and our malloc */
};
static int mode;
static void *(*plain_malloc)(size_t);
static void (*plain_free)(void *);

/* Whether f lies in libstdc++ or libc++, whose operators are malloc and
 * free behind the new handler's loop. */
static int in_cxx_runtime(void *f) {
  Dl_info info;
  if (!dladdr(f, &info) || !info.dli_fname)
    return 0;
  const char *slash = strrchr(info.dli_fname, '/'), *name = slash ? slash + 1 : info.dli_fname;
  return strncmp(name, "libstdc++.so", 12) == 0 || strncmp(name, "libc++.so", 9) == 0;
}

/* Looks the next operators up. Threads that race find the same. */
__attribute__((noinline)) static int look_up(void) {
  char why[256];
  for (int i = 0; i < OPS; i++)
    __atomic_store_n(&next[i], cprof__block_next(names[i]), __ATOMIC_RELAXED);
  int m = PASS;
  if (next[NEW] && cprof__block_in_allocator(next[NEW])) {
    m = ALLOCATOR;
  } else if (next[NEW] && in_cxx_runtime(next[NEW]) && cprof__malloc_check(why, sizeof why) == 0) {
    __atomic_store_n(&plain_malloc, cprof__block_real_malloc(), __ATOMIC_RELAXED);
    __atomic_store_n(&plain_free, cprof__block_real_free(), __ATOMIC_RELAXED);
    m = CXX_RUNTIME;
  }
  __atomic_store_n(&mode, m, __ATOMIC_RELEASE);
  return m;
}

static inline int current_mode(void) {
  int m = __atomic_load_n(&mode, __ATOMIC_ACQUIRE);
  return __builtin_expect(m != 0, 1) ? m : look_up();
}

/* A next operator that does not exist cannot have been called by a
 * program that links, but a broken lookup must not jump to 0. Out of line,
 * so that the operators' fast paths need no stack of their own. */
__attribute__((noreturn, noinline, cold)) static void missing(enum op op) {
  char line[160];
  int n = snprintf(line, sizeof line, "cprof: cannot find the real %s; aborting\n", names[op]);
  if (n > 0 && write(2, line, (size_t)n) < 0) {
  }
  abort();
}

static inline void *next_op(enum op op) {
  void *f = __atomic_load_n(&next[op], __ATOMIC_RELAXED);
  if (__builtin_expect(!f, 0))
    missing(op);
  return f;
}

#define RET ((uintptr_t)__builtin_return_address(0))

/* Under our count (the allocator's operators, the C++ runtime's), a
 * size that crosses the countdown may be sampled; a block that is not is
 * the C++ runtime's malloc, or the allocator's new. */
#define COUNTED(m) ((m) == ALLOCATOR || (m) == CXX_RUNTIME)

/* The plain and nothrow ones, the hot ones, keep the sampling and the
 * first call's lookup out of line, as malloc does. The C++ runtime's new
 * is malloc(size ? size : 1) until it fails; then its own new follows, for
 * the new handler, std::bad_alloc or nothrow's NULL. `crossed`: the size
 * was counted already. */
#define HOT_NEW(op, symbol, params, type, ...)                                                     \
  __attribute__((noinline)) static void *op##_slow(uintptr_t ret, int crossed, PARAMS params) {    \
    void *p;                                                                                       \
    int m = current_mode();                                                                        \
    if (!crossed && COUNTED(m))                                                                    \
      crossed = cprof__heap_crossing(size);                                                        \
    if (crossed && (p = cprof__block_sample(CPROF_BLOCK_PLAIN, 16, size, 0, ret)))                 \
      return p;                                                                                    \
    if (m == CXX_RUNTIME && (p = plain_malloc(size ? size : 1)))                                   \
      return p;                                                                                    \
    return ((void *(*)type)next_op(op))(__VA_ARGS__);                                              \
  }                                                                                                \
  CPROF_EXTERN void *op##_ params __asm__(symbol);                                                 \
  CPROF_EXTERN void *op##_ params {                                                                \
    int m = __atomic_load_n(&mode, __ATOMIC_ACQUIRE);                                              \
    if (m != PASS) {                                                                               \
      if (m == UNKNOWN || cprof__heap_crossing(size))                                              \
        return op##_slow(RET, m != UNKNOWN, __VA_ARGS__);                                          \
      void *p;                                                                                     \
      if (m == CXX_RUNTIME && __builtin_expect(!!(p = plain_malloc(size ? size : 1)), 1))          \
        return p;                                                                                  \
    }                                                                                              \
    return ((void *(*)type)next_op(op))(__VA_ARGS__);                                              \
  }
#define PARAMS(...) __VA_ARGS__

#define PLAIN_NEW(op, symbol) HOT_NEW(op, symbol, (size_t size), (size_t), size)
#define NOTHROW_NEW(op, symbol)                                                                    \
  HOT_NEW(op, symbol, (size_t size, const void *nt), (size_t, const void *), size, nt)

/* The aligned ones count and sample under the allocator's operators only:
 * the C++ runtime's call aligned_alloc, which counts. jemalloc's aligned
 * new calls our aligned_alloc too: the size was counted here, so that call
 * passes straight through (cprof__block_passing), until this frame is
 * left, by a return or by the std::bad_alloc the next operator throws (a
 * cleanup runs as the exception unwinds it). */
static void passed(int *unused) { cprof__block_passing--; }
#define PASSING()                                                                                  \
  cprof__block_passing++;                                                                          \
  int passing_ __attribute__((cleanup(passed), unused)) = 0

#define ALIGNED_NEW_OP(op, symbol, params, type, ...)                                              \
  CPROF_EXTERN void *op##_ params __asm__(symbol);                                                 \
  CPROF_EXTERN void *op##_ params {                                                                \
    void *p;                                                                                       \
    if (current_mode() != ALLOCATOR)                                                               \
      return ((void *(*)type)next_op(op))(__VA_ARGS__);                                            \
    if (cprof__heap_crossing(size) &&                                                              \
        (p = cprof__block_sample(CPROF_BLOCK_ALIGNED, align, size, 0, RET)))                       \
      return p;                                                                                    \
    PASSING();                                                                                     \
    return ((void *(*)type)next_op(op))(__VA_ARGS__);                                              \
  }
#define ALIGNED_NEW(op, symbol)                                                                    \
  ALIGNED_NEW_OP(op, symbol, (size_t size, size_t align), (size_t, size_t), size, align)
#define ALIGNED_NOTHROW_NEW(op, symbol)                                                            \
  ALIGNED_NEW_OP(op, symbol, (size_t size, size_t align, const void *nt),                          \
                 (size_t, size_t, const void *), size, align, nt)

/* A sampled block, whatever delete the program calls for it, is freed as
 * malloc.c frees it; any other, the C++ runtime's free or the next
 * delete. (Under operators we pass on, the seal is not looked for: they
 * call free, which looks.) The fast path makes no call but its jump; a
 * pointer whose seal matches, and the first call, go out of line. */
#define DELETE_OP(op, symbol, params, type, ...)                                                   \
  __attribute__((noinline)) static void op##_slow params {                                         \
    int m = current_mode();                                                                        \
    if (COUNTED(m) && cprof__block_tagged(p) && cprof__block_ours(p))                              \
      cprof__block_free(p);                                                                        \
    else if (m == CXX_RUNTIME)                                                                     \
      plain_free(p);                                                                               \
    else                                                                                           \
      ((void(*) type)next_op(op))(__VA_ARGS__);                                                    \
  }                                                                                                \
  CPROF_EXTERN void op##_ params __asm__(symbol);                                                  \
  CPROF_EXTERN void op##_ params {                                                                 \
    int m = __atomic_load_n(&mode, __ATOMIC_ACQUIRE);                                              \
    if (m != PASS) {                                                                               \
      if (m == UNKNOWN || cprof__block_maybe_tagged(p)) {                                          \
        op##_slow(__VA_ARGS__);                                                                    \
        return;                                                                                    \
      }                                                                                            \
      if (m == CXX_RUNTIME) {                                                                      \
        plain_free(p);                                                                             \
        return;                                                                                    \
      }                                                                                            \
    }                                                                                              \
    ((void(*) type)next_op(op))(__VA_ARGS__);                                                      \
  }
#define DELETE_P(op, symbol) DELETE_OP(op, symbol, (void *p), (void *), p)
#define DELETE_NT(op, symbol)                                                                      \
  DELETE_OP(op, symbol, (void *p, const void *nt), (void *, const void *), p, nt)
#define DELETE_SIZE(op, symbol)                                                                    \
  DELETE_OP(op, symbol, (void *p, size_t size), (void *, size_t), p, size)
#define DELETE_ALIGN(op, symbol)                                                                   \
  DELETE_OP(op, symbol, (void *p, size_t align), (void *, size_t), p, align)
#define DELETE_ALIGN_NT(op, symbol)                                                                \
  DELETE_OP(op, symbol, (void *p, size_t align, const void *nt), (void *, size_t, const void *),   \
            p, align, nt)
#define DELETE_SIZE_ALIGN(op, symbol)                                                              \
  DELETE_OP(op, symbol, (void *p, size_t size, size_t align), (void *, size_t, size_t), p, size,   \
            align)

#define DEFINE(op, symbol, kind) kind(op, symbol)
OPERATORS(DEFINE)

#endif /* CPROF_NO_INTERPOSE */

/* Counting wrappers around the malloc family, for tests that prove a
 * signal handler allocates nothing: each call counts on the calling
 * thread (`allocations`), and a thread that only spins checks that its
 * count does not move while handlers run on it. glibc's own functions are
 * reached under their __libc names. Sanitizers bring their own malloc, so
 * under them nothing is counted (COUNTING is 0). Include in one file of a
 * test program only: it defines the functions. */
#ifndef CPROF_TESTS_COUNT_ALLOC_H
#define CPROF_TESTS_COUNT_ALLOC_H

#include <errno.h>
#include <stddef.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define COUNTING 0
static __thread volatile long allocations;
#else
#define COUNTING 1
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);
static __thread volatile long allocations; /* volatile: GCC assumes malloc touches no globals */

void *malloc(size_t n) { allocations++; return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { allocations++; return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { allocations++; return __libc_realloc(p, n); }
void free(void *p) { allocations++; __libc_free(p); }
void *memalign(size_t a, size_t n) { allocations++; return __libc_memalign(a, n); }
void *aligned_alloc(size_t a, size_t n) { allocations++; return __libc_memalign(a, n); }
int posix_memalign(void **p, size_t a, size_t n) {
  allocations++;
  *p = __libc_memalign(a, n);
  return *p ? 0 : ENOMEM;
}
#endif

#endif

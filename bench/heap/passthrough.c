/* libpassthrough.so: the least an LD_PRELOAD malloc interposer can cost.
 *
 * malloc and free, forwarded to the next definition in the lookup order
 * (glibc's, found with dlsym(RTLD_NEXT)) through a function pointer, as
 * cprof's wrappers do, and nothing else: no counting, no sampling. The
 * overhead benchmark's "passthrough" variant runs churn under it, so the
 * cost of interposing at all is told apart from the cost of profiling.
 * Until dlsym has answered, calls go to glibc's __libc_malloc/__libc_free. */
#include <dlfcn.h>
#include <stddef.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);

static void *(*next_malloc)(size_t);
static void (*next_free)(void *);

__attribute__((constructor)) static void resolve(void) {
  next_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
  next_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
}

void *malloc(size_t n) {
  void *(*f)(size_t) = next_malloc;
  return f ? f(n) : __libc_malloc(n);
}

void free(void *p) {
  void (*f)(void *) = next_free;
  if (f)
    f(p);
  else
    __libc_free(p);
}

// cprof-host: -fno-builtin -Wno-deprecated-declarations
/* The usable size of every block the malloc family hands out, over the
 * sizes 0 to 70,000: one line per size with what malloc_usable_size says
 * of a block from malloc, calloc, posix_memalign (16, 64 and 4096),
 * aligned_alloc (32), memalign (256), valloc and realloc (of a block of
 * half the size, grown). Where the allocator has jemalloc's nallocx
 * (jemalloc, tcmalloc), the line also has nallocx of the request, and
 * under jemalloc what sallocx says of the malloc'd block. usable_sizes.sh
 * runs it without cprof and at CPROF_HEAP_RATE=1, where every block is
 * sampled, under each allocator, and compares the outputs: a program must
 * be told the same of a sampled block as of any other, since it sizes its
 * buffers by it (redis's strings shrink when they see more than a tenth
 * spare).
 *
 * It also writes the last bytes the usable size promises, so a block
 * smaller than it says corrupts the heap where the allocator notices. */
#include <dlfcn.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t (*nallocx_f)(size_t, int);
static size_t (*sallocx_f)(const void *, int);

/* The usable size of p, after writing the last (up to) 64 bytes of it. */
static size_t usable(void *p) {
  if (!p)
    return 0;
  size_t u = malloc_usable_size(p);
  size_t n = u < 64 ? u : 64;
  memset((char *)p + u - n, 0x5a, n);
  return u;
}

static void put(const char *name, void *p) {
  printf(" %s=%zu", name, usable(p));
  free(p);
}

static void *aligned(size_t align, size_t size) {
  void *p;
  return posix_memalign(&p, align, size) == 0 ? p : NULL;
}

int main(void) {
  /* sallocx is jemalloc's (cprof exports the name, answering as
   * malloc_usable_size under other allocators): asked where mallocx is. */
  nallocx_f = (size_t(*)(size_t, int))dlsym(RTLD_DEFAULT, "nallocx");
  if (dlsym(RTLD_DEFAULT, "mallocx"))
    sallocx_f = (size_t(*)(const void *, int))dlsym(RTLD_DEFAULT, "sallocx");
  for (size_t size = 0; size <= 70000; size++) {
    printf("%zu", size);
    void *p = malloc(size);
    if (nallocx_f)
      printf(" nallocx=%zu", nallocx_f(size ? size : 1, 0));
    if (sallocx_f && p)
      printf(" sallocx=%zu", sallocx_f(p, 0));
    put("malloc", p);
    put("calloc", calloc(1, size));
    put("pm16", aligned(16, size));
    put("pm64", aligned(64, size));
    if (size % 7 == 0) /* the page-aligned ones cost a page each */
      put("pm4096", aligned(4096, size));
    put("aa32", aligned_alloc(32, (size + 31) & ~(size_t)31));
    put("ma256", memalign(256, size));
    if (size % 7 == 3)
      put("valloc", valloc(size));
    void *r = malloc(size / 2);
    if (r)
      usable(r);
    put("realloc", realloc(r, size));
    printf("\n");
  }
  return 0;
}

/* Memory of cprof's own, straight from the kernel.
 *
 * The samplers' tables grow while the program runs, inside its malloc and
 * its lock calls. Taking their memory from the program's allocator would
 * put cprof's long-lived objects among the program's blocks: on a churn of
 * widely mixed sizes that fragmentation alone made glibc's malloc 1.3-1.9x
 * slower (bench/README.md). So the tables map pages of their own, which
 * never come back through the malloc wrappers and never share a free list
 * with the program. */
#ifndef CPROF_CORE_PAGES_H
#define CPROF_CORE_PAGES_H

#include <stddef.h>
#include <sys/mman.h>

#define CPROF_PAGE 4096

static inline size_t cprof__pages_round(size_t bytes) {
  return (bytes + CPROF_PAGE - 1) & ~(size_t)(CPROF_PAGE - 1);
}

/* Zeroed pages, or NULL. Touched pages only count towards the resident
 * size. */
static inline void *cprof__pages_map(size_t bytes) {
  void *p = mmap(NULL, cprof__pages_round(bytes), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

static inline void cprof__pages_unmap(void *p, size_t bytes) {
  if (p)
    munmap(p, cprof__pages_round(bytes));
}

#endif

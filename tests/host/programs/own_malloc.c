/* A program with an allocator of its own, linked into the executable: its
 * malloc family (here a thin layer over glibc's __libc_malloc and friends,
 * which glibc exports for such wrappers) comes before every library's in
 * the lookup order, so no LD_PRELOAD can interpose it. Allocates, prints
 * what it stored, frees. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static size_t calls;

void *malloc(size_t n) {
  calls++;
  return __libc_malloc(n);
}
void *calloc(size_t n, size_t size) {
  calls++;
  return __libc_calloc(n, size);
}
void *realloc(void *p, size_t n) {
  calls++;
  return __libc_realloc(p, n);
}
void free(void *p) { __libc_free(p); }

int main(void) {
  char *p = malloc(64);
  if (!p)
    return 1;
  strcpy(p, "allocated by the program's own malloc");
  puts(p);
  free(p);
  printf("own malloc called: %s\n", calls > 0 ? "yes" : "no");
  return 0;
}

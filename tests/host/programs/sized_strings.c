/* Strings sized by their usable size, as redis's (sds) are: each is
 * malloc'd, and shrunk with realloc when malloc_usable_size shows more than
 * a tenth spare; one in four is then grown to twice its length with
 * realloc. The strings stay live; the program prints what it holds, in
 * bytes asked for ("truth N"), how many it shrank and grew, then "ready",
 * and sleeps until it is killed (or, with --exit, exits).
 * sized_strings.sh compares the heap profile's in-use bytes with the truth
 * at the default sampling rate.
 *
 * Usage: host_sized_strings COUNT LENGTH [--exit] */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* sds's header and terminator around a string of len bytes. */
#define OVERHEAD 5

static size_t shrunk, grown;

__attribute__((noinline)) static char *make_string(size_t len) {
  char *p = malloc(len + OVERHEAD);
  if (!p)
    return NULL;
  if (malloc_usable_size(p) - (len + OVERHEAD) > len / 10) {
    char *q = realloc(p, len + OVERHEAD);
    if (!q)
      return p;
    p = q;
    shrunk++;
  }
  memset(p, 'x', len + OVERHEAD);
  return p;
}

__attribute__((noinline)) static char *grow_string(char *p, size_t len) {
  char *q = realloc(p, 2 * len + OVERHEAD);
  if (!q)
    return p;
  memset(q, 'y', 2 * len + OVERHEAD);
  grown++;
  return q;
}

int main(int argc, char **argv) {
  if (argc < 3)
    return 2;
  size_t n = strtoul(argv[1], NULL, 10), len = strtoul(argv[2], NULL, 10), truth = 0;
  /* The table of strings is the program's own mapping, not its heap, so
   * the heap holds the strings alone. */
  char **v = mmap(NULL, n * sizeof *v, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (v == MAP_FAILED)
    return 1;
  for (size_t i = 0; i < n; i++) {
    if (!(v[i] = make_string(len)))
      return 1;
    truth += len + OVERHEAD;
  }
  for (size_t i = 0; i < n; i += 4) {
    v[i] = grow_string(v[i], len);
    truth += len;
  }
  printf("truth %zu shrunk %zu grown %zu\nready\n", truth, shrunk, grown);
  fflush(stdout);
  if (argc > 3 && strcmp(argv[3], "--exit") == 0)
    return 0;
  for (;;)
    pause();
}

// cprof-host: -fno-builtin -Wno-deprecated-declarations -Wno-alloc-size-larger-than -Wno-use-after-free
/* Every function of the malloc family on a table of edge cases: sizes 0, 1
 * and huge, calloc and reallocarray products that overflow, alignments 0,
 * 1, 3, a power of two, not a power of two, and huge. For each call it
 * prints whether the result was NULL, errno (set to a sentinel before the
 * call), whether the block has the alignment the function promises, and
 * whether malloc_usable_size covers the request. alloc_edges.sh runs it
 * without cprof and under LD_PRELOAD at several sampling rates and
 * compares the outputs byte for byte: whatever glibc answers, cprof must
 * answer the same.
 *
 * -fno-builtin, and sizes read through a volatile, keep the compiler from
 * answering any of these calls itself. */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SENTINEL 4242

static volatile size_t opaque;
/* x, as the compiler cannot know it. */
static size_t v(size_t x) {
  opaque = x;
  return opaque;
}

static size_t page;
static int no_pvalloc; /* jemalloc has none: glibc's would hand it a block it cannot free */

/* The smallest power of two at least a, capped at 2^63 (then 0: no
 * promise to check). */
static size_t pow2_at_least(size_t a) {
  size_t p = 1;
  while (p < a && p <= SIZE_MAX / 2)
    p <<= 1;
  return p < a ? 0 : p;
}

/* Prints one case's line and frees the block. `align` is the alignment
 * the function promises (0: none to check). */
static void report_with(const char *call, const char *note, void *p, int err, size_t size,
                        size_t align) {
  printf("%-44s %s", call, note);
  if (!p) {
    printf("NULL errno=%d\n", err);
    return;
  }
  int aligned = !align || (uintptr_t)p % align == 0;
  int usable = malloc_usable_size(p) >= size;
  if (usable) /* the block is writable (a block too small would crash here) */
    memset(p, 0x5a, size < 1 << 20 ? size : 1 << 20);
  printf("block errno=%d aligned=%s usable=%s\n", err, aligned ? "yes" : "no",
         usable ? "yes" : "no");
  free(p);
}

static void report(const char *call, void *p, int err, size_t size, size_t align) {
  report_with(call, "", p, err, size, align);
}

/* The promise of memalign and aligned_alloc in glibc: at least malloc's
 * alignment, and the requested one rounded up to a power of two. */
static size_t promised(size_t align) {
  size_t a = pow2_at_least(align);
  return a && a < 16 ? 16 : a;
}

static const struct {
  const char *name;
  size_t value;
} sizes[] = {
    {"0", 0},
    {"1", 1},
    {"100", 100},
    {"5000", 5000},
    {"PTRDIFF_MAX-4096", PTRDIFF_MAX - 4096},
    {"PTRDIFF_MAX", PTRDIFF_MAX},
    {"PTRDIFF_MAX+1", (size_t)PTRDIFF_MAX + 1},
    {"SIZE_MAX-10", SIZE_MAX - 10},
    {"SIZE_MAX", SIZE_MAX},
};

static const struct {
  const char *name;
  size_t value;
} aligns[] = {
    {"0", 0},
    {"1", 1},
    {"3", 3},
    {"4", 4},
    {"8", 8},
    {"16", 16},
    {"24", 24},
    {"64", 64},
    {"100", 100},
    {"4096", 4096},
    {"65536", 65536},
    {"1<<62", (size_t)1 << 62},
    {"1<<63", (size_t)1 << 63},
    {"(1<<63)+1", ((size_t)1 << 63) + 1},
    {"SIZE_MAX", SIZE_MAX},
};

#define N(a) (sizeof(a) / sizeof(a)[0])

static void plain_family(void) {
  char call[96];
  for (size_t i = 0; i < N(sizes); i++) {
    size_t s = v(sizes[i].value);
    snprintf(call, sizeof call, "malloc(%s)", sizes[i].name);
    errno = SENTINEL;
    void *p = malloc(s);
    report(call, p, errno, s, 16);

    snprintf(call, sizeof call, "calloc(1, %s)", sizes[i].name);
    errno = SENTINEL;
    p = calloc(v(1), s);
    report(call, p, errno, s, 16);

    snprintf(call, sizeof call, "valloc(%s)", sizes[i].name);
    errno = SENTINEL;
    p = valloc(s);
    report(call, p, errno, s, page);

    if (!no_pvalloc) {
      snprintf(call, sizeof call, "pvalloc(%s)", sizes[i].name);
      errno = SENTINEL;
      p = pvalloc(s);
      report(call, p, errno, s, page);
    }

    snprintf(call, sizeof call, "realloc(NULL, %s)", sizes[i].name);
    errno = SENTINEL;
    p = realloc(NULL, s);
    report(call, p, errno, s, 16);
  }
  /* calloc and reallocarray products: fine, exactly SIZE_MAX, overflowing. */
  static const size_t pairs[][2] = {
      {0, SIZE_MAX}, {SIZE_MAX, 0}, {3, 7}, {2, SIZE_MAX / 2}, {2, SIZE_MAX / 2 + 1},
      {SIZE_MAX, SIZE_MAX}, {1 << 10, 1 << 10}, {(size_t)1 << 32, (size_t)1 << 32},
  };
  for (size_t i = 0; i < N(pairs); i++) {
    size_t n = v(pairs[i][0]), s = v(pairs[i][1]);
    size_t total = n * s;
    snprintf(call, sizeof call, "calloc(%zu, %zu)", n, s);
    errno = SENTINEL;
    void *p = calloc(n, s);
    if (p && total <= 1 << 20) { /* zeroed, as calloc promises */
      for (size_t k = 0; k < total; k++)
        if (((unsigned char *)p)[k])
          printf("%s: byte %zu not zero\n", call, k);
    }
    report(call, p, errno, total, 16);

    snprintf(call, sizeof call, "reallocarray(NULL, %zu, %zu)", n, s);
    errno = SENTINEL;
    p = reallocarray(NULL, n, s);
    report(call, p, errno, total, 16);
  }
}

static void aligned_family(void) {
  char call[96];
  static const size_t asizes[] = {0, 1, 10, 100, 4097, PTRDIFF_MAX, SIZE_MAX - 10, SIZE_MAX};
  for (size_t i = 0; i < N(aligns); i++) {
    for (size_t j = 0; j < N(asizes); j++) {
      size_t a = v(aligns[i].value), s = v(asizes[j]);
      snprintf(call, sizeof call, "memalign(%s, %zu)", aligns[i].name, s);
      errno = SENTINEL;
      void *p = memalign(a, s);
      report(call, p, errno, s, promised(a));

      snprintf(call, sizeof call, "aligned_alloc(%s, %zu)", aligns[i].name, s);
      errno = SENTINEL;
      p = aligned_alloc(a, s);
      report(call, p, errno, s, promised(a));

      snprintf(call, sizeof call, "posix_memalign(%s, %zu)", aligns[i].name, s);
      errno = SENTINEL;
      void *out = &out; /* must stay untouched on failure */
      int rc = posix_memalign(&out, a, s);
      int err = errno;
      if (rc) {
        printf("%-44s rc=%d errno=%d out %s\n", call, rc, err,
               out == &out ? "untouched" : "CHANGED");
      } else {
        report_with(call, "rc=0 ", out, err, s, pow2_at_least(a));
      }
    }
  }
}

/* realloc and reallocarray of a live block: grow, shrink, to 0, to a huge
 * size (fails, the block untouched and still usable). */
static void realloc_family(void) {
  static const size_t to[] = {0, 1, 24, 100, 5000, 1 << 20, PTRDIFF_MAX, SIZE_MAX - 10, SIZE_MAX};
  char call[96];
  for (size_t i = 0; i < N(to); i++) {
    for (int how = 0; how < 2; how++) {
      size_t s = v(to[i]);
      char *p = malloc(v(100));
      if (!p) {
        printf("malloc(100) failed\n");
        continue;
      }
      memset(p, 'x', 100);
      errno = SENTINEL;
      char *q = how ? reallocarray(p, v(1), s) : realloc(p, s);
      int err = errno;
      snprintf(call, sizeof call, "%s(p100, %zu)", how ? "reallocarray" : "realloc", s);
      if (!q && s) { /* failed: p must be as it was */
        int kept = 1;
        for (int k = 0; k < 100; k++)
          kept &= p[k] == 'x';
        printf("%-44s NULL errno=%d old block %s\n", call, err, kept ? "kept" : "CHANGED");
        free(p);
        continue;
      }
      int kept = 1;
      for (size_t k = 0; q && k < (s < 100 ? s : 100); k++)
        kept &= q[k] == 'x';
      report_with(call, kept ? "" : "contents LOST ", q, err, s, 16);
    }
  }
  /* reallocarray's own overflow: the old block untouched. */
  char *p = malloc(v(100));
  memset(p, 'y', 100);
  errno = SENTINEL;
  char *q = reallocarray(p, v(SIZE_MAX / 2), v(3));
  printf("reallocarray(p100, SIZE_MAX/2, 3) %s errno=%d old block %s\n", q ? "block" : "NULL",
         errno, p[99] == 'y' ? "kept" : "CHANGED");
  free(q ? q : p);
}

static void misc(void) {
  errno = SENTINEL;
  free(NULL);
  printf("free(NULL) errno=%d\n", errno);
  errno = SENTINEL;
  size_t n = malloc_usable_size(NULL);
  printf("malloc_usable_size(NULL) = %zu errno=%d\n", n, errno);
  /* Many small blocks, kept and then freed: each still readable, and the
   * errno of successful calls left alone. */
  enum { COUNT = 2000 };
  static void *blocks[COUNT];
  errno = SENTINEL;
  for (int i = 0; i < COUNT; i++) {
    size_t s = v((size_t)(i * 37 % 3000));
    switch (i % 5) {
    case 0: blocks[i] = malloc(s); break;
    case 1: blocks[i] = calloc(1, s); break;
    case 2: blocks[i] = memalign(64, s); break;
    case 3: blocks[i] = realloc(NULL, s); break;
    default: blocks[i] = valloc(s); break;
    }
    if (!blocks[i] || malloc_usable_size(blocks[i]) < s)
      printf("block %d of %zu bytes: bad\n", i, s);
    else
      memset(blocks[i], i & 0xff, s);
  }
  for (int i = 0; i < COUNT; i++)
    free(blocks[i]);
  printf("2000 blocks: errno=%d\n", errno);
}

int main(int argc, char **argv) {
  page = (size_t)sysconf(_SC_PAGESIZE);
  no_pvalloc = argc > 1 && strcmp(argv[1], "--no-pvalloc") == 0;
  setvbuf(stdout, NULL, _IOLBF, 0); /* every line out, even if a call crashes */
  plain_family();
  aligned_family();
  realloc_family();
  misc();
  return 0;
}

/* A program whose heap is known, for the heap test's mixed sizes and
 * memory limit (tests/integration/heap.sh):
 *
 *   mixed_site  2000 blocks of 2000 distinct sizes, 16 B to 64 KiB, kept
 *               (the exact total is printed: "mixed_bytes N")
 *   leaf_alloc  4096 blocks of 4 KiB, kept, each from a stack of its own:
 *               a path through 12 levels of tree_left/tree_right calls
 *
 * Then it prints "ready" and waits. Functions are noinline, and their calls
 * are not tail calls, so each is a frame of its own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define FRAME_STAYS() __asm__ volatile("" ::: "memory")

static void *kept[8192];
static int nkept;

static void keep(void *p) {
  if (!p)
    abort();
  memset(p, 1, 1);
  kept[nkept++] = p;
}

NOINLINE static size_t mixed_site(void) {
  size_t total = 0;
  for (int i = 0; i < 2000; i++) {
    size_t n = 16 + (size_t)i * 32; /* 16 .. 63984: every one different */
    keep(malloc(n));
    total += n;
  }
  FRAME_STAYS();
  return total;
}

NOINLINE static void leaf_alloc(void) {
  keep(malloc(4096));
  FRAME_STAYS();
}
static void tree(unsigned path, int depth);
NOINLINE static void tree_left(unsigned path, int depth) {
  tree(path, depth);
  FRAME_STAYS();
}
NOINLINE static void tree_right(unsigned path, int depth) {
  tree(path, depth);
  FRAME_STAYS();
}
NOINLINE static void tree(unsigned path, int depth) {
  if (depth == 0)
    leaf_alloc();
  else if (path & 1)
    tree_left(path >> 1, depth - 1);
  else
    tree_right(path >> 1, depth - 1);
  FRAME_STAYS();
}

int main(void) {
  printf("mixed_bytes %zu\n", mixed_site());
  for (unsigned i = 0; i < 4096; i++)
    tree(i, 12);
  puts("ready");
  fflush(stdout);
  for (;;)
    pause();
}

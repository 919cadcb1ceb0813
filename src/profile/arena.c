#include "profile/arena.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Blocks grow from 64 KiB; a request larger than a quarter of a block gets
 * a block of its own, so little is wasted at a block's end. */
#define FIRST_BLOCK ((size_t)64 << 10)
#define MAX_BLOCK ((size_t)8 << 20)
#define ALIGN 16

typedef struct block {
  struct block *next;
  size_t used, size;
  _Alignas(ALIGN) unsigned char data[];
} block_t;

struct cprof__arena {
  block_t *head; /* the block being carved; others behind it */
  size_t budget, given, next_size;
  int over;
};

cprof__arena_t *cprof__arena_new(size_t budget) {
  cprof__arena_t *a = calloc(1, sizeof *a);
  if (a) {
    a->budget = budget;
    a->next_size = FIRST_BLOCK;
  }
  return a;
}

void cprof__arena_free(cprof__arena_t *a) {
  if (!a)
    return;
  for (block_t *b = a->head, *next; b; b = next) {
    next = b->next;
    free(b);
  }
  free(a);
}

static block_t *new_block(size_t size) {
  block_t *b = malloc(sizeof *b + size);
  if (b) {
    b->used = 0;
    b->size = size;
  }
  return b;
}

void *cprof__arena_alloc(cprof__arena_t *a, size_t n) {
  size_t rounded = (n + ALIGN - 1) & ~(size_t)(ALIGN - 1);
  if (rounded < n || (a->budget && (rounded > a->budget || a->given > a->budget - rounded))) {
    a->over = 1;
    return NULL;
  }
  block_t *b = a->head;
  if (!b || b->size - b->used < rounded) {
    if (rounded > a->next_size / 4) { /* a block of its own, behind the current one */
      block_t *own = new_block(rounded);
      if (!own)
        return NULL;
      own->used = rounded;
      if (b) {
        own->next = b->next;
        b->next = own;
      } else {
        own->next = NULL;
        a->head = own;
      }
      a->given += rounded;
      memset(own->data, 0, rounded);
      return own->data;
    }
    if (!(b = new_block(a->next_size)))
      return NULL;
    b->next = a->head;
    a->head = b;
    if (a->next_size < MAX_BLOCK)
      a->next_size *= 2;
  }
  void *p = b->data + b->used;
  b->used += rounded;
  a->given += rounded;
  memset(p, 0, rounded);
  return p;
}

void *cprof__arena_array(cprof__arena_t *a, size_t count, size_t size) {
  if (size && count > SIZE_MAX / size) {
    a->over = 1;
    return NULL;
  }
  size_t n = count * size;
  return cprof__arena_alloc(a, n ? n : 1);
}

char *cprof__arena_strndup(cprof__arena_t *a, const char *s, size_t n) {
  if (n == SIZE_MAX)
    return NULL;
  char *d = cprof__arena_alloc(a, n + 1);
  if (d) {
    memcpy(d, s, n);
    d[n] = '\0';
  }
  return d;
}

char *cprof__arena_strdup(cprof__arena_t *a, const char *s) {
  return cprof__arena_strndup(a, s, strlen(s));
}

int cprof__arena_over(const cprof__arena_t *a) { return a->over; }
size_t cprof__arena_used(const cprof__arena_t *a) { return a->given; }

int cprof__grow(void **buf, size_t *cap, size_t want, size_t size) {
  if (want <= *cap)
    return 0;
  size_t cap2 = *cap ? *cap : 16;
  while (cap2 < want) {
    if (cap2 > SIZE_MAX / 2 / size)
      return -ENOMEM;
    cap2 *= 2;
  }
  void *b = realloc(*buf, cap2 * size);
  if (!b)
    return -ENOMEM;
  *buf = b;
  *cap = cap2;
  return 0;
}

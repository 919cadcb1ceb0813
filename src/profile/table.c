#include "profile/table.h"

#include <errno.h>
#include <stdlib.h>

void cprof__table_init(cprof__table_t *t) {
  t->slots = NULL;
  t->cap = 0;
  t->n = 0;
}

void cprof__table_free(cprof__table_t *t) {
  free(t->slots);
  cprof__table_init(t);
}

int64_t cprof__table_find(const cprof__table_t *t, uint64_t hash, cprof__table_eq_fn eq,
                          const void *ctx, const void *key) {
  if (t->cap == 0)
    return -1;
  size_t mask = t->cap - 1;
  /* Linear probing: the load factor stays at or below one half, so runs are
   * short and an empty slot always ends the search. */
  for (size_t i = (size_t)hash & mask;; i = (i + 1) & mask) {
    const cprof__table_slot_t *s = &t->slots[i];
    if (s->value_plus_1 == 0)
      return -1;
    if (s->hash == hash && eq(ctx, s->value_plus_1 - 1, key))
      return (int64_t)(s->value_plus_1 - 1);
  }
}

static void place(cprof__table_slot_t *slots, size_t cap, uint64_t hash, uint32_t value_plus_1) {
  size_t mask = cap - 1;
  size_t i = (size_t)hash & mask;
  while (slots[i].value_plus_1 != 0)
    i = (i + 1) & mask;
  slots[i].hash = hash;
  slots[i].value_plus_1 = value_plus_1;
}

int cprof__table_insert(cprof__table_t *t, uint64_t hash, uint32_t value) {
  if (value >= UINT32_MAX)
    return -EOVERFLOW;
  if (2 * (t->n + 1) > t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 16;
    cprof__table_slot_t *slots = calloc(cap, sizeof *slots);
    if (!slots)
      return -ENOMEM;
    for (size_t i = 0; i < t->cap; i++)
      if (t->slots[i].value_plus_1 != 0)
        place(slots, cap, t->slots[i].hash, t->slots[i].value_plus_1);
    free(t->slots);
    t->slots = slots;
    t->cap = cap;
  }
  place(t->slots, t->cap, hash, value + 1);
  t->n++;
  return 0;
}

/* FNV-1a over bytes: simple, and good enough for short strings. */
uint64_t cprof__hash_bytes(uint64_t h, const void *p, size_t n) {
  const unsigned char *c = p;
  for (size_t i = 0; i < n; i++) {
    h ^= c[i];
    h *= UINT64_C(0x100000001b3);
  }
  return h;
}

/* One small open-addressing hash table for every index the profile builder
 * keeps (string -> string index, address -> Location, (name, file) ->
 * Function, stack + labels -> sample).
 *
 * The table stores only (hash, value) pairs, where a value is an index into
 * an array the caller owns; the caller's array holds the keys. A lookup
 * therefore takes an equality callback that compares a stored value's key
 * with the key sought, and growing never needs one (the hashes are kept).
 * Serve-time only: it allocates. */
#ifndef CPROF_PROFILE_TABLE_H
#define CPROF_PROFILE_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "core/hash.h"

typedef struct cprof__table_slot {
  uint64_t hash;
  uint32_t value_plus_1; /* 0: an empty slot */
} cprof__table_slot_t;

typedef struct cprof__table {
  cprof__table_slot_t *slots;
  size_t cap; /* a power of two, or 0 before the first insert */
  size_t n;
} cprof__table_t;

/* Whether the key of stored `value` equals `key`; `ctx` is the caller's. */
typedef int (*cprof__table_eq_fn)(const void *ctx, uint32_t value, const void *key);

void cprof__table_init(cprof__table_t *t);
void cprof__table_free(cprof__table_t *t);

/* The value stored for key (whose hash is `hash`), or -1. */
int64_t cprof__table_find(const cprof__table_t *t, uint64_t hash, cprof__table_eq_fn eq,
                          const void *ctx, const void *key);
/* Stores value under hash; the caller has checked with cprof__table_find
 * that its key is absent. value must be below UINT32_MAX. 0 or -ENOMEM (the
 * table is unchanged then). */
int cprof__table_insert(cprof__table_t *t, uint64_t hash, uint32_t value);

/* Hashing helpers: start from CPROF_HASH_SEED and fold in bytes or words. */
#define CPROF_HASH_SEED UINT64_C(0xcbf29ce484222325)
uint64_t cprof__hash_bytes(uint64_t h, const void *p, size_t n);

/* A word at a time for addresses and indices, with a final avalanche
 * (the murmur3 finalizer) so that nearby pcs spread over the low bits the
 * table indexes with. Inline, because the builder calls it for every
 * location lookup, millions of times for a large heap profile. */
static inline uint64_t cprof__hash_u64(uint64_t h, uint64_t x) {
  return cprof__hash_avalanche(h ^ (x + UINT64_C(0x9e3779b97f4a7c15) + (h << 6) + (h >> 2)));
}

#endif

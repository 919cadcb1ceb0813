/* A stack's pcs folded into one word, for the hash tables keyed by stacks:
 * the samplers' stack table and the profile builder's samples.
 *
 * Deep stacks make hashing most of a lookup's work, so each pc costs one
 * multiply and one rotate (a bijection of the state, so no pc is lost from
 * it); the caller avalanches the result once, which is what a table's low
 * bits need. */
#ifndef CPROF_CORE_HASH_H
#define CPROF_CORE_HASH_H

#include <stdint.h>

static inline uint64_t cprof__hash_pcs(const uintptr_t *pcs, int depth) {
  uint64_t x = 0;
  for (int i = 0; i < depth; i++) {
    x = (x ^ pcs[i]) * UINT64_C(0x9e3779b97f4a7c15);
    x = x << 29 | x >> 35;
  }
  return x;
}

/* The murmur3 finalizer: every input bit moves every output bit. */
static inline uint64_t cprof__hash_avalanche(uint64_t h) {
  h ^= h >> 33;
  h *= UINT64_C(0xff51afd7ed558ccd);
  h ^= h >> 33;
  h *= UINT64_C(0xc4ceb9fe1a85ec53);
  h ^= h >> 33;
  return h;
}

#endif

/* The builder's one hash table: growth, collisions, absent keys. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "profile/table.h"

#define N 5000

static uint64_t keys[N];

static int eq(const void *ctx, uint32_t value, const void *key) {
  (void)ctx;
  return keys[value] == *(const uint64_t *)key;
}

/* A deliberately poor hash (eight buckets' worth of values) so that most
 * lookups walk past slots whose hash matches but whose key does not. */
static uint64_t bad_hash(uint64_t k) { return k % 8; }

int main(void) {
  cprof__table_t t;
  cprof__table_init(&t);
  CHECK_EQ_INT(cprof__table_find(&t, 1, eq, NULL, &keys[0]), -1);

  for (uint32_t i = 0; i < N; i++) {
    keys[i] = (uint64_t)i * 7919 + 13;
    uint64_t h = i % 3 ? cprof__hash_u64(CPROF_HASH_SEED, keys[i]) : bad_hash(keys[i]);
    CHECK_EQ_INT(cprof__table_find(&t, h, eq, NULL, &keys[i]), -1);
    CHECK_EQ_INT(cprof__table_insert(&t, h, i), 0);
  }
  CHECK_EQ_INT(t.n, N);
  CHECK(t.cap >= 2 * N);
  int found = 0;
  for (uint32_t i = 0; i < N; i++) {
    uint64_t h = i % 3 ? cprof__hash_u64(CPROF_HASH_SEED, keys[i]) : bad_hash(keys[i]);
    found += cprof__table_find(&t, h, eq, NULL, &keys[i]) == (int64_t)i;
  }
  CHECK_EQ_INT(found, N);
  uint64_t absent = 12;
  CHECK_EQ_INT(cprof__table_find(&t, bad_hash(absent), eq, NULL, &absent), -1);
  CHECK_EQ_INT(cprof__table_insert(&t, 1, UINT32_MAX), -EOVERFLOW);

  /* Hashes of different strings and words differ. */
  CHECK(cprof__hash_bytes(CPROF_HASH_SEED, "a", 1) != cprof__hash_bytes(CPROF_HASH_SEED, "b", 1));
  CHECK(cprof__hash_u64(CPROF_HASH_SEED, 0x401000) != cprof__hash_u64(CPROF_HASH_SEED, 0x401001));
  /* A string hashes by its bytes, not by where they are: the builder
   * finds a function name again from a copy of it. */
  char one[] = "main.c:42", two[sizeof one];
  memcpy(two, one, sizeof one);
  CHECK_EQ_INT(cprof__hash_bytes(CPROF_HASH_SEED, one, sizeof one),
               cprof__hash_bytes(CPROF_HASH_SEED, two, sizeof two));
  /* The seed and the order of chained words count: (name, file) is not
   * (file, name). */
  CHECK(cprof__hash_u64(1, 2) != cprof__hash_u64(3, 2));
  CHECK(cprof__hash_u64(cprof__hash_u64(CPROF_HASH_SEED, 1), 2) !=
        cprof__hash_u64(cprof__hash_u64(CPROF_HASH_SEED, 2), 1));
  /* The low bits, the table's index, spread consecutive keys (addresses a
   * few bytes apart) over the slots: 4096 keys fill most of 4096 slots, as
   * a random function would (1 - 1/e, 63 %). */
  static unsigned char used[4096];
  int slots = 0;
  for (uint64_t k = 0; k < 4096; k++) {
    size_t i = cprof__hash_u64(CPROF_HASH_SEED, 0x401000 + 4 * k) & 4095;
    slots += !used[i];
    used[i] = 1;
  }
  CHECK(slots > 4096 / 2);

  cprof__table_free(&t);
  CHECK_EQ_INT(t.cap, 0);
  return check_result("profile/test_table");
}

/* The stack table (see stack_table.h). */
#include "sample/stack_table.h"

#include <string.h>

#include "core/config.h"
#include "core/hash.h"
#include "core/pages.h"
#include "unwind/pc.h"

#define CHUNK ((size_t)256 << 10)

static size_t limit = CPROF_DEFAULT_MAX_MEMORY; /* atomic */
static size_t used;                             /* atomic: mapped by every table */

void cprof__stack_memory_set_limit(size_t bytes) {
  __atomic_store_n(&limit, bytes, __ATOMIC_RELAXED);
}
size_t cprof__stack_memory_limit(void) { return __atomic_load_n(&limit, __ATOMIC_RELAXED); }
size_t cprof__stack_memory_used(void) { return __atomic_load_n(&used, __ATOMIC_RELAXED); }

/* Pages for table t, if the limit leaves room for them. */
static void *map(cprof__stack_table_t *t, size_t bytes) {
  bytes = cprof__pages_round(bytes);
  size_t u = __atomic_load_n(&used, __ATOMIC_RELAXED);
  do {
    if (u + bytes > __atomic_load_n(&limit, __ATOMIC_RELAXED))
      return NULL;
  } while (!__atomic_compare_exchange_n(&used, &u, u + bytes, 1, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED));
  void *p = cprof__pages_map(bytes);
  if (!p) {
    __atomic_sub_fetch(&used, bytes, __ATOMIC_RELAXED);
    return NULL;
  }
  t->mapped += bytes;
  return p;
}

static void unmap(cprof__stack_table_t *t, void *p, size_t bytes) {
  if (!p)
    return;
  bytes = cprof__pages_round(bytes);
  cprof__pages_unmap(p, bytes);
  __atomic_sub_fetch(&used, bytes, __ATOMIC_RELAXED);
  t->mapped -= bytes;
}

/* What the table keeps of a frame: the frame itself, but one marker for
 * every number of frames elided (unwind/frames.h). A recursion that
 * allocates at many depths has the same innermost and outermost frames at
 * each, and would otherwise make one entry per depth, where the profiles
 * show one frame for all (profile/builder_resolve.c). */
static inline uintptr_t kept(uintptr_t pc) {
  return cprof__pc_is_elided(pc) ? CPROF_PC_ELIDED(0) : pc;
}

/* cprof__hash_pcs, of the frames as kept. */
static uint64_t hash_stack(const uintptr_t *pcs, int depth) {
  uint64_t x = 0;
  for (int i = 0; i < depth; i++) {
    x = (x ^ kept(pcs[i])) * UINT64_C(0x9e3779b97f4a7c15);
    x = x << 29 | x >> 35;
  }
  return cprof__hash_avalanche(x ^ (uint64_t)depth);
}

/* Whether the entry s holds pcs as kept. */
static int same_stack(const cprof__stack_t *s, const uintptr_t *pcs, int depth) {
  if (s->depth != (uint32_t)depth)
    return 0;
  for (int i = 0; i < depth; i++)
    if (s->pcs[i] != kept(pcs[i]))
      return 0;
  return 1;
}

static void index_put(cprof__stack_index_slot_t *index, size_t cap, uint64_t hash, size_t id) {
  size_t i = hash & (cap - 1);
  while (index[i].id1)
    i = (i + 1) & (cap - 1);
  index[i] = (cprof__stack_index_slot_t){hash, (uint32_t)id + 1};
}

/* Room for one more stack in the index (kept at most half full) and in
 * the list by id; both double when full, as the table grows, never on
 * every sample. */
static int make_room(cprof__stack_table_t *t) {
  if ((t->n + 1) * 2 > t->capindex) {
    size_t cap = t->capindex ? t->capindex * 2 : 512;
    cprof__stack_index_slot_t *index = map(t, cap * sizeof *index);
    if (!index)
      return -1;
    for (size_t id = 0; id < t->n; id++)
      index_put(index, cap, t->by_id[id]->hash, id);
    unmap(t, t->index, t->capindex * sizeof *t->index);
    t->index = index;
    t->capindex = cap;
  }
  if (t->n == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 512;
    cprof__stack_t **v = map(t, cap * sizeof *v);
    if (!v)
      return -1;
    if (t->n)
      memcpy(v, t->by_id, t->n * sizeof *v);
    unmap(t, t->by_id, t->cap * sizeof *v);
    t->by_id = v;
    t->cap = cap;
  }
  return 0;
}

void *cprof__stack_table_alloc(cprof__stack_table_t *t, size_t bytes) {
  bytes = (bytes + 15) & ~(size_t)15;
  if (t->chunk_used + bytes > t->chunk_size) {
    /* What is left of the last chunk stays unused: at most one entry's size. */
    size_t size = bytes > CHUNK ? bytes : CHUNK;
    unsigned char *c = map(t, size);
    if (!c)
      return NULL;
    t->chunk = c;
    t->chunk_used = 0;
    t->chunk_size = cprof__pages_round(size);
  }
  void *p = t->chunk + t->chunk_used;
  t->chunk_used += bytes;
  return p; /* fresh pages: already zero */
}

cprof__stack_t *cprof__stack_table_get(cprof__stack_table_t *t, const uintptr_t *pcs, int depth) {
  uint64_t h = hash_stack(pcs, depth);
  if (t->capindex) {
    for (size_t i = h & (t->capindex - 1); t->index[i].id1; i = (i + 1) & (t->capindex - 1)) {
      if (t->index[i].hash != h)
        continue;
      cprof__stack_t *s = t->by_id[t->index[i].id1 - 1];
      if (same_stack(s, pcs, depth))
        return s;
    }
  }
  size_t payload = (t->payload + 15) & ~(size_t)15;
  if (make_room(t) != 0)
    return NULL;
  cprof__stack_t *s = cprof__stack_table_alloc(t, sizeof *s + payload + (size_t)depth * sizeof *pcs);
  if (!s)
    return NULL;
  uintptr_t *copy = (uintptr_t *)(s->payload + payload);
  for (int i = 0; i < depth; i++)
    copy[i] = kept(pcs[i]);
  s->hash = h;
  s->id = (uint32_t)t->n;
  s->depth = (uint32_t)depth;
  s->pcs = copy;
  index_put(t->index, t->capindex, h, t->n);
  t->by_id[t->n++] = s;
  return s;
}

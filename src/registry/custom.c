/* Custom profiles: cprof_profile_new, cprof_profile_add and
 * cprof_profile_remove (cprof.h), the C counterpart of Go's
 * pprof.NewProfile, Profile.Add and Profile.Remove.
 *
 * A profile is a cprof__profile_t in the registry whose table maps each key
 * to the stack of the call that added it. Keys live in an open-addressing
 * table (linear probing, deletion by backward shift, so no tombstones pile
 * up under a churn of adds and removes); their stacks are interned, with a
 * count of the keys that hold each, since a program's connections or open
 * files are added from a handful of places. The snapshot is then the
 * distinct stacks with their counts, which is all Go's printCountProfile
 * makes of its per-key list: identical stacks merged with their count.
 *
 * The table is cprof's, not the program's: the key table is pages of its
 * own (core/pages.h), and the stacks, their buckets and snapshots come
 * from malloc with the heap sampler's guard raised, so that none of it is
 * sampled as the program's heap, and the table's mutex is not recorded as
 * the program's contention. A profile holds at most CPROF_CUSTOM_MAX_KEYS keys; an add
 * beyond that is -ENOMEM, as an add the memory could not be found for. */
#include "registry/custom.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/config.h"
#include "core/pages.h"
#include "profile/builder.h"
#include "core/guard.h"
#include "unwind/caller.h"

/* The frame of a stack that `skip` walked past the end of: Go records
 * runtime/pprof.lostProfileEvent there, rather than an empty stack. */
#define SKIPPED_ALL "[cprof_profile_add: skip passed the end of the stack]"

typedef struct held {
  struct held *next; /* in its bucket */
  uint64_t hash;
  long keys; /* how many keys hold it */
  int depth; /* 0: skip passed the end of the stack */
  uintptr_t pcs[];
} held_t;

typedef struct entry {
  const void *key; /* NULL: empty slot */
  held_t *stack;
} entry_t;

struct cprof_profile {
  cprof__profile_t base; /* first: the registry's pointer is the profile's */
  pthread_mutex_t lock;
  entry_t *keys; /* cap_keys slots, a power of two, at most half full */
  size_t nkeys, cap_keys;
  held_t **buckets; /* cap_buckets chains, a power of two */
  size_t nstacks, cap_buckets;
  char name[65];
  char failure[96];
  char desc[];
};

/* ---- hashing ---- */

static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

static uint64_t hash_stack(const uintptr_t *pcs, int depth) {
  uint64_t h = (uint64_t)depth * 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < depth; i++)
    h = mix(h ^ pcs[i]);
  return h;
}

/* ---- the key table (lock held) ---- */

static size_t slot_of(const struct cprof_profile *p, const void *key) {
  size_t mask = p->cap_keys - 1, i = mix((uintptr_t)key) & mask;
  while (p->keys[i].key && p->keys[i].key != key)
    i = (i + 1) & mask;
  return i;
}

static int grow_keys(struct cprof_profile *p) {
  size_t cap = p->cap_keys ? p->cap_keys * 2 : 64;
  entry_t *old = p->keys, *v = cprof__pages_map(cap * sizeof *v);
  if (!v)
    return -ENOMEM;
  size_t old_cap = p->cap_keys;
  p->keys = v;
  p->cap_keys = cap;
  for (size_t i = 0; i < old_cap; i++)
    if (old[i].key)
      p->keys[slot_of(p, old[i].key)] = old[i];
  cprof__pages_unmap(old, old_cap * sizeof *old);
  return 0;
}

/* Empties slot i and moves back the entries after it that probed past it,
 * so that every entry stays reachable from its home slot. */
static void delete_slot(struct cprof_profile *p, size_t i) {
  size_t mask = p->cap_keys - 1, j = i;
  for (;;) {
    j = (j + 1) & mask;
    if (!p->keys[j].key)
      break;
    size_t home = mix((uintptr_t)p->keys[j].key) & mask;
    /* j's entry may fill the hole at i unless its home lies in (i, j]. */
    if (i <= j ? (home > i && home <= j) : (home > i || home <= j))
      continue;
    p->keys[i] = p->keys[j];
    i = j;
  }
  p->keys[i] = (entry_t){NULL, NULL};
}

/* ---- the interned stacks (lock held) ---- */

static int grow_buckets(struct cprof_profile *p) {
  size_t cap = p->cap_buckets ? p->cap_buckets * 2 : 64;
  /* malloc'd (the guard is up), not pages: the stacks are reachable from
   * here, where a leak checker looks. */
  held_t **v = calloc(cap, sizeof *v);
  if (!v)
    return -ENOMEM;
  for (size_t i = 0; i < p->cap_buckets; i++) {
    for (held_t *s = p->buckets[i], *next; s; s = next) {
      next = s->next;
      s->next = v[s->hash & (cap - 1)];
      v[s->hash & (cap - 1)] = s;
    }
  }
  free(p->buckets);
  p->buckets = v;
  p->cap_buckets = cap;
  return 0;
}

/* The stack, interned, with one more key holding it; NULL without memory. */
static held_t *stack_hold(struct cprof_profile *p, const uintptr_t *pcs, int depth) {
  uint64_t h = hash_stack(pcs, depth);
  if (p->cap_buckets) {
    for (held_t *s = p->buckets[h & (p->cap_buckets - 1)]; s; s = s->next) {
      if (s->hash == h && s->depth == depth &&
          memcmp(s->pcs, pcs, (size_t)depth * sizeof *pcs) == 0) {
        s->keys++;
        return s;
      }
    }
  }
  if (p->nstacks >= p->cap_buckets && grow_buckets(p) != 0)
    return NULL;
  held_t *s = malloc(sizeof *s + (size_t)depth * sizeof *pcs);
  if (!s)
    return NULL;
  *s = (held_t){.hash = h, .keys = 1, .depth = depth};
  memcpy(s->pcs, pcs, (size_t)depth * sizeof *pcs);
  held_t **b = &p->buckets[h & (p->cap_buckets - 1)];
  s->next = *b;
  *b = s;
  p->nstacks++;
  return s;
}

static void stack_drop(struct cprof_profile *p, held_t *s) {
  if (--s->keys > 0)
    return;
  for (held_t **at = &p->buckets[s->hash & (p->cap_buckets - 1)]; *at; at = &(*at)->next) {
    if (*at == s) {
      *at = s->next;
      break;
    }
  }
  p->nstacks--;
  free(s);
}

/* ---- the public functions ---- */

cprof_profile_t *cprof_profile_new(const char *name, const char *description) {
  if (!cprof__registry_name_ok(name)) {
    errno = EINVAL;
    return NULL;
  }
  char fallback[160];
  if (!description) {
    snprintf(fallback, sizeof fallback,
             "Custom profile (cprof_profile_new): the stacks that added the %s keys not yet "
             "removed",
             name);
    description = fallback;
  }
  size_t dlen = strlen(description);
  cprof__guard_enter();
  struct cprof_profile *p = calloc(1, sizeof *p + dlen + 1);
  cprof__guard_leave();
  if (!p) {
    errno = ENOMEM;
    return NULL;
  }
  pthread_mutex_init(&p->lock, NULL);
  strcpy(p->name, name);
  snprintf(p->failure, sizeof p->failure, "could not write the %s profile", name);
  /* The index shows the description on one line. */
  for (size_t i = 0; i < dlen; i++)
    p->desc[i] = (unsigned char)description[i] < 0x20 ? ' ' : description[i];
  p->base = (cprof__profile_t){
      .name = p->name,
      .desc = p->desc,
      .failure = p->failure,
      .ops = &cprof__custom_ops,
      .arg = p,
  };
  int err = cprof__registry_add(&p->base);
  if (err) {
    pthread_mutex_destroy(&p->lock);
    cprof__guard_enter();
    free(p);
    cprof__guard_leave();
    errno = -err;
    return NULL;
  }
  return p;
}

/* The stack of the call whose return address is ret, without the `skip`
 * innermost frames: a walk of CPROF_MAX_DEPTH frames, so a skip leaves
 * that many fewer. Returns the depth into pcs (0: none left). */
static int walk(uintptr_t *pcs, int max, uintptr_t ret, int skip) {
  int n = cprof__unwind_caller(cprof__config_unwind(), pcs, max, ret);
  if (skip == 0)
    return n;
  /* Only frames are skipped, never the marks after them (a cut, the
   * module generation): a stack with no frame left is empty. */
  int frames = 0;
  while (frames < n && !cprof__pc_is_mark(pcs[frames]))
    frames++;
  if (skip >= frames)
    return 0;
  /* The new innermost frame is a return address: its pc is the call. */
  memmove(pcs, pcs + skip, (size_t)(n - skip) * sizeof *pcs);
  pcs[0] -= 1;
  return n - skip;
}

/* noinline: its return address must be its caller's call, and its frame
 * one of its own for the walk to start above. */
__attribute__((noinline)) int cprof_profile_add(cprof_profile_t *p, const void *key, int skip) {
  uintptr_t ret = (uintptr_t)__builtin_return_address(0);
  if (!p || !key || skip < 0)
    return -EINVAL;
  int err = 0;
  cprof__guard_enter();
  uintptr_t small[CPROF_DEFAULT_DEPTH];
  cprof__caller_pcs_t a;
  cprof__caller_pcs_take(&a, small);
  int depth = walk(a.pcs, a.max, ret, skip);
  pthread_mutex_lock(&p->lock);
  if (p->cap_keys && p->keys[slot_of(p, key)].key == key) {
    err = -EEXIST;
  } else if (p->nkeys >= CPROF_CUSTOM_MAX_KEYS ||
             ((p->nkeys + 1) * 2 > p->cap_keys && grow_keys(p) != 0)) {
    err = -ENOMEM;
  } else {
    held_t *s = stack_hold(p, a.pcs, depth);
    if (!s) {
      err = -ENOMEM;
    } else {
      p->keys[slot_of(p, key)] = (entry_t){key, s};
      __atomic_store_n(&p->nkeys, p->nkeys + 1, __ATOMIC_RELAXED);
    }
  }
  pthread_mutex_unlock(&p->lock);
  cprof__caller_pcs_give(&a);
  cprof__guard_leave();
  return err;
}

int cprof_profile_remove(cprof_profile_t *p, const void *key) {
  if (!p)
    return -EINVAL;
  if (!key)
    return -ENOENT; /* never added: add refuses NULL */
  int err = -ENOENT;
  cprof__guard_enter();
  pthread_mutex_lock(&p->lock);
  if (p->cap_keys) {
    size_t i = slot_of(p, key);
    if (p->keys[i].key == key) {
      stack_drop(p, p->keys[i].stack);
      delete_slot(p, i);
      __atomic_store_n(&p->nkeys, p->nkeys - 1, __ATOMIC_RELAXED);
      err = 0;
    }
  }
  pthread_mutex_unlock(&p->lock);
  cprof__guard_leave();
  return err;
}

/* ---- the registry's operations ---- */

typedef struct record {
  const uintptr_t *pcs;
  int depth;
  long count;
} record_t;

typedef struct snap {
  size_t n;
  record_t *v; /* sorted by stack, as Go sorts its stacks */
} snap_t;

static struct cprof_profile *of(const cprof__profile_t *p) {
  return (struct cprof_profile *)p->arg;
}

static long count(const cprof__profile_t *p) {
  return (long)__atomic_load_n(&of(p)->nkeys, __ATOMIC_RELAXED);
}

/* Stacks compared as Go's slices.Compare: by pc, the shorter first. */
static int compare_stacks(const record_t *a, const record_t *b) {
  for (int i = 0; i < a->depth && i < b->depth; i++)
    if (a->pcs[i] != b->pcs[i])
      return a->pcs[i] < b->pcs[i] ? -1 : 1;
  return (a->depth > b->depth) - (a->depth < b->depth);
}

static int compare_records(const void *a, const void *b) { return compare_stacks(a, b); }

/* One block: the snap, its records, then their pcs. */
static int snapshot(const cprof__profile_t *base, void **out) {
  struct cprof_profile *p = of(base);
  int err = 0;
  cprof__guard_enter();
  pthread_mutex_lock(&p->lock);
  size_t words = 0;
  for (size_t i = 0; i < p->cap_buckets; i++)
    for (held_t *s = p->buckets[i]; s; s = s->next)
      words += (size_t)s->depth;
  snap_t *snap = malloc(sizeof *snap + p->nstacks * sizeof(record_t) + words * sizeof(uintptr_t));
  if (snap) {
    snap->n = 0;
    snap->v = (record_t *)(snap + 1);
    uintptr_t *pool = (uintptr_t *)(snap->v + p->nstacks);
    for (size_t i = 0; i < p->cap_buckets; i++) {
      for (held_t *s = p->buckets[i]; s; s = s->next) {
        memcpy(pool, s->pcs, (size_t)s->depth * sizeof *pool);
        snap->v[snap->n++] = (record_t){pool, s->depth, s->keys};
        pool += s->depth;
      }
    }
  } else {
    err = -ENOMEM;
  }
  pthread_mutex_unlock(&p->lock);
  if (snap)
    qsort(snap->v, snap->n, sizeof *snap->v, compare_records);
  cprof__guard_leave();
  *out = snap;
  return err;
}

static void release(const cprof__profile_t *p, void *snap) {
  (void)p;
  cprof__guard_enter();
  free(snap);
  cprof__guard_leave();
}

static int add_record(cprof__builder_t *b, const record_t *r, long count) {
  int64_t v = count;
  return r->depth ? cprof__builder_add(b, r->pcs, r->depth, &v, NULL, 0)
                  : cprof__builder_add_pseudo(b, SKIPPED_ALL, &v, NULL, 0);
}

/* Now's stacks with their counts, less base's where base is given: both
 * sorted, walked side by side; a stack whose count did not change is left
 * out, as pprof's merge of a delta leaves out a sample of zero. */
static int add_all(cprof__builder_t *b, const snap_t *now, const snap_t *base) {
  size_t i = 0, j = 0, nb = base ? base->n : 0;
  int err = 0;
  while (!err && (i < now->n || j < nb)) {
    int c = i == now->n ? 1 : j == nb ? -1 : compare_stacks(&now->v[i], &base->v[j]);
    if (c < 0) {
      err = add_record(b, &now->v[i], now->v[i].count);
      i++;
    } else if (c > 0) {
      err = add_record(b, &base->v[j], -base->v[j].count);
      j++;
    } else {
      long d = now->v[i].count - base->v[j].count;
      if (d)
        err = add_record(b, &now->v[i], d);
      i++, j++;
    }
  }
  return err;
}

static int write(const cprof__profile_t *p, void *now, void *base, int debug, int64_t duration_ns,
                 cprof__buf_t *out) {
  /* Go's printCountProfile: sample type and period type NAME/count. */
  cprof__profile_desc_t desc = {
      .sample_types = {{p->name, "count"}},
      .n_sample_types = 1,
      .period_type = {p->name, "count"},
      .period = 1,
      .time_nanos = cprof__now_ns(CLOCK_REALTIME),
      .duration_nanos = duration_ns,
  };
  cprof__guard_enter();
  cprof__builder_t *b = cprof__builder_new(&desc);
  int err = b ? add_all(b, now, base) : -ENOMEM;
  if (!err)
    err = debug ? cprof__builder_write_count_text(b, p->name, out)
                : cprof__builder_write_proto(b, out);
  cprof__builder_free(b);
  cprof__guard_leave();
  return err;
}

const cprof__profile_ops_t cprof__custom_ops = {count, snapshot, release, write, NULL};

/* The capture's dump: its entries and their stacks in one block, each
 * thread's entry from how its stack was got, and its labels. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/search.h"
#include "sample/threads_internal.h"

/* One thread's entry in the dump, from how its stack was got. */
void cprof__threads_dump_entry(int mode, const cprof__threads_slot_t *slot,
                               const cprof__thread_stack_t *got, cprof__thread_stack_t *t) {
  t->status = CPROF_THREAD_OK;
  switch (mode) {
  case CPROF__HOW_ASK:
    t->depth = slot->depth;
    memcpy(t->pcs, slot->pcs, (size_t)t->depth * sizeof t->pcs[0]);
    return;
  case CPROF__HOW_OUTSIDE:
  case CPROF__HOW_SELF:
    if (t != got) {
      t->depth = got->depth;
      memcpy(t->pcs, got->pcs, (size_t)t->depth * sizeof t->pcs[0]);
    }
    return;
  case CPROF__HOW_UNKNOWN:
    t->status = CPROF_THREAD_UNKNOWN;
    t->unreadable = got->unreadable;
    t->err = got->err;
    break;
  case CPROF__HOW_BLOCKED:
    t->status = CPROF_THREAD_BLOCKED;
    break;
  case CPROF__HOW_NO_SIGNAL:
    t->status = CPROF_THREAD_NO_SIGNAL;
    break;
  case CPROF__HOW_NO_STACK:
    t->status = CPROF_THREAD_NO_STACK;
    break;
  case CPROF__HOW_UNSENT:
    t->status = CPROF_THREAD_UNSENT;
    t->unreadable = got->unreadable;
    t->err = got->err;
    break;
  case CPROF__HOW_KERNEL:
    t->status = CPROF_THREAD_KERNEL;
    break;
  case CPROF__HOW_DEFERRED:
    t->status = CPROF_THREAD_DEFERRED;
    break;
  default: /* LATE */
    t->status = CPROF_THREAD_TIMEOUT;
  }
  t->depth = 0;
}

/* The dump's entries and their stacks of `depth` frames, in one block
 * (freed with the entries); with room for the answers of earlier asks
 * when `answers`. */
cprof__thread_stack_t *cprof__threads_new_dump(int n, int depth, int answers) {
  size_t head = (size_t)n * sizeof(cprof__thread_stack_t);
  size_t per = (size_t)depth * (answers ? 3 : 1);
  cprof__thread_stack_t *v = calloc(1, head + (size_t)n * per * sizeof(uintptr_t));
  if (!v)
    return NULL;
  uintptr_t *pcs = (uintptr_t *)(void *)((char *)v + head);
  for (int i = 0; i < n; i++) {
    v[i].pcs = pcs + (size_t)i * per;
    v[i].answer_pcs = answers ? v[i].pcs + depth : NULL;
    v[i].sleep_pcs = answers ? v[i].pcs + 2 * depth : NULL;
    v[i].syscall_nr = -1;
    v[i].sleep_nr = -1;
    v[i].cpu_ns = -1;
  }
  return v;
}

int cprof__threads_find_tid(const void *v, int n, size_t size, pid_t tid) {
  const char *base = v;
  int lo = (int)CPROF__PARTITION_POINT(
      n, mid, *(const pid_t *)(const void *)(base + (size_t)mid * size) < tid);
  return lo < n && *(const pid_t *)(const void *)(base + (size_t)lo * size) == tid ? lo : -1;
}

_Static_assert(offsetof(cprof__thread_stack_t, tid) == 0, "an entry begins with its tid");

cprof__thread_stack_t *cprof__threads_dump_find(const cprof__thread_dump_t *d, pid_t tid) {
  int i = cprof__threads_find_tid(d->v, d->n, sizeof *d->v, tid);
  return i < 0 ? NULL : &d->v[i];
}

/* Fills the labels of dump entries by thread id, looked up once per
 * labelled thread. */
static void fill_one(pid_t tid, const cprof__labels_t *l, void *ctx) {
  cprof__thread_stack_t *t = cprof__threads_dump_find(ctx, tid);
  if (t)
    t->labels = *l;
}

void cprof__threads_dump_labels(cprof__thread_dump_t *d) { cprof__labels_each(fill_one, d); }

void cprof__threads_dump_free(cprof__thread_dump_t *d) {
  free(d->v);
  d->v = NULL;
  d->n = 0;
}

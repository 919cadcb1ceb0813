/* The caches captures keep between them (threads.h): each thread's name,
 * its syscall file kept open, the stack it slept with; and, for a cache
 * that defers, the asks it leaves out from one capture to the next. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "sample/signals.h"
#include "sample/threads_internal.h"

/* An ask still out after this long is given up: the thread has not been
 * on a CPU at a clock tick since (it went back to sleep). */
#define ASK_GIVE_UP_NS 1000000000LL

/* ---- Caches that defer (threads.h) ----
 *
 * A deferring cache asks a running thread and does not wait: the ask stays
 * out, in a slot of the cache's own table, from capture to capture, and
 * the answer is handed out with the thread's entry of the first capture
 * that finds it in. While asks are out the cache holds the capture
 * signal's use (signals.c), so that a program that takes the signal waits
 * for the next capture, which gives them all up first; and the maps the
 * answers unwind with stay published (cprof__threads_deferred_stacks). All under the
 * capture lock. */

/* Gives up an ask: its answer, if it comes, finds the slot abandoned. */
void cprof__threads_give_up(cprof__threads_slot_t *sl) {
  uint64_t st = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);
  while ((st & 3) == CPROF__SLOT_PENDING &&
         !__atomic_compare_exchange_n(&sl->state, &st, (st & ~(uint64_t)3) | CPROF__SLOT_ABANDONED,
                                      0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    ;
  while ((__atomic_load_n(&sl->state, __ATOMIC_ACQUIRE) & 3) ==
         CPROF__SLOT_WRITING) /* microseconds */
    ;
  cprof__threads_drop_timer(sl);
  sl->busy = 0;
}

void cprof__threads_give_up_all(cprof__threads_cache_t *c) {
  for (int i = 0; i < c->n; i++) {
    if (c->v[i].ask >= 0)
      cprof__threads_give_up(&cprof__threads_table_v[c->table][c->v[i].ask]);
    c->v[i].ask = -1;
  }
  c->out = 0;
  if (c->holding)
    cprof__signal_use_end(cprof__threads_signo);
  c->holding = 0;
}

/* A table for the cache with room for `want` asks of `depth` frames; one
 * made anew gives up the asks out. Returns 0, or -1 (no table free, or no
 * memory: the cache then waits for answers as other captures do). */
int cprof__threads_defer_table(cprof__threads_cache_t *c, int want, int depth) {
  if (!c->table) {
    for (int t = 1; t < CPROF__THREADS_TABLES && !c->table; t++)
      if (!cprof__threads_table_taken[t])
        c->table = t;
    if (!c->table)
      return -1;
    cprof__threads_table_taken[c->table] = 1;
  }
  cprof__threads_slot_t *old = cprof__threads_table_v[c->table];
  if (old && want <= cprof__threads_table_n[c->table] && old[0].max == depth)
    return 0;
  cprof__threads_give_up_all(c);
  int cap = 64;
  while (cap < 2 * want)
    cap *= 2;
  if (old && cap < cprof__threads_table_n[c->table] && old[0].max == depth)
    cap = cprof__threads_table_n[c->table];
  cprof__threads_slot_t *v = cprof__threads_new_slots(cap, depth);
  if (!v)
    return -1;
  /* The old table is left in place for any late handler still reading it. */
  __atomic_store_n(&cprof__threads_table_v[c->table], v, __ATOMIC_RELEASE);
  __atomic_store_n(&cprof__threads_table_n[c->table], cap, __ATOMIC_RELEASE);
  return 0;
}

/* A free slot of the cache's table, or -1. */
static int defer_slot(cprof__threads_cache_t *c) {
  for (int k = 0; k < cprof__threads_table_n[c->table]; k++)
    if (!cprof__threads_table_v[c->table][k].busy)
      return k;
  return -1;
}

/* The answer to thread i's ask still out (prev: its cache entry), if it
 * came, into t; asks[i] and askeds[i] say what is still out after. */
void cprof__threads_harvest(cprof__threads_cache_t *c, cprof__threads_cached_t *prev,
                            cprof__thread_stack_t *t, int *ask, int64_t *asked, int64_t now) {
  *ask = -1;
  if (!prev || prev->ask < 0)
    return;
  cprof__threads_slot_t *sl = &cprof__threads_table_v[c->table][prev->ask];
  uint64_t st = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);
  if ((st & 3) == CPROF__SLOT_DONE) {
    t->answered = 1;
    t->answer_depth = sl->depth < sl->max ? sl->depth : sl->max;
    memcpy(t->answer_pcs, sl->pcs, (size_t)t->answer_depth * sizeof *t->answer_pcs);
  } else if ((st & 3) != CPROF__SLOT_PENDING || now - prev->asked_ns < ASK_GIVE_UP_NS) {
    *ask = prev->ask; /* still out (or being written: in at the next capture) */
    *asked = prev->asked_ns;
    prev->ask = -1;
    return;
  } else {
    t->answered = -1;
  }
  cprof__threads_give_up(sl);
  prev->ask = -1;
  c->out--;
}

/* Asks thread tid, deferring: its slot into *ask. Returns 0, or -1 with
 * errno and *call as cprof__threads_send_request's. */
int cprof__threads_defer_ask(cprof__threads_cache_t *c, pid_t tid, uint32_t gen, int *ask,
                             int64_t *asked, const char **call) {
  int k = defer_slot(c);
  if (k < 0) {
    *call = "timer_create";
    errno = EAGAIN;
    return -1;
  }
  cprof__threads_slot_t *sl = &cprof__threads_table_v[c->table][k];
  sl->busy = 1;
  sl->tid = tid;
  sl->depth = 0;
  __atomic_store_n(&sl->state, CPROF__SLOT_STATE(gen, CPROF__SLOT_PENDING), __ATOMIC_RELEASE);
  if (cprof__threads_send_request(sl, ((uint32_t)c->table << 24) | (uint32_t)k, tid, call) != 0) {
    int err = errno;
    cprof__threads_give_up(sl);
    errno = err;
    return -1;
  }
  *ask = k;
  *asked = cprof__now_ns(CLOCK_MONOTONIC);
  c->out++;
  return 0;
}

/* The cache's entry for tid, or NULL. */
_Static_assert(offsetof(cprof__threads_cached_t, tid) == 0, "an entry begins with its tid");

cprof__threads_cached_t *cprof__threads_cache_find(const cprof__threads_cache_t *c, pid_t tid) {
  int i = c ? cprof__threads_find_tid(c->v, c->n, sizeof *c->v, tid) : -1;
  return i < 0 ? NULL : &c->v[i];
}

/* Makes c what this capture saw: every thread of d with its name, and,
 * when its stack is exact where it slept (places[i], aligned with d's
 * entries; nr -1 and sp 0 for none), that stack. */
void cprof__threads_cache_keep(cprof__threads_cache_t *c, const cprof__thread_dump_t *d,
                               const cprof__in_kernel_t *places, int *fds, const int64_t *oks,
                               const int *asks, const int64_t *askeds) {
  int depth = cprof__max_depth();
  int64_t now = cprof__now_ns(CLOCK_MONOTONIC);
  cprof__threads_cached_t *v = malloc((size_t)(d->n ? d->n : 1) * sizeof *v);
  uintptr_t *frames = malloc((size_t)(d->n ? d->n : 1) * 2 * (size_t)depth * sizeof *frames);
  if (!v || !frames) { /* the next capture unwinds everyone */
    free(v);
    free(frames);
    for (int i = 0; i < d->n; i++) {
      if (fds[i] >= 0)
        close(fds[i]);
      if (asks[i] >= 0) {
        cprof__threads_give_up(&cprof__threads_table_v[c->table][asks[i]]);
        c->out--;
      }
    }
    cprof__threads_give_up_all(c);
    for (int i = 0; i < c->n; i++)
      if (c->v[i].fd >= 0)
        close(c->v[i].fd);
    c->n = 0;
    return;
  }
  for (int i = 0; i < d->n; i++) {
    const cprof__thread_stack_t *t = &d->v[i];
    cprof__threads_cached_t *e = &v[i];
    e->tid = t->tid;
    e->pcs = frames + (size_t)i * 2 * (size_t)depth;
    e->wake_pcs = e->pcs + depth;
    memcpy(e->name, t->name, sizeof e->name);
    e->place = places[i];
    e->fd = fds[i];
    e->mask_ok = oks[i];
    e->ask = asks[i];
    e->asked_ns = askeds[i];
    e->depth = t->status == CPROF_THREAD_OK && (places[i].sp || places[i].pc) ? t->depth : 0;
    if (e->depth > depth)
      e->depth = depth;
    memcpy(e->pcs, t->pcs, (size_t)e->depth * sizeof *e->pcs);
    e->cpu_ns = t->cpu_ns;
    const cprof__threads_cached_t *o = cprof__threads_cache_find(c, t->tid);
    if (e->depth > 0) { /* asleep here, exactly: where it is, if found woken */
      e->wake_place = e->place;
      e->wake_ns = now;
      e->wake_depth = e->depth;
      memcpy(e->wake_pcs, e->pcs, (size_t)e->depth * sizeof *e->pcs);
    } else if (o && o->wake_depth > 0 && c->depth == depth) {
      e->wake_place = o->wake_place;
      e->wake_ns = o->wake_ns;
      e->wake_depth = o->wake_depth;
      memcpy(e->wake_pcs, o->wake_pcs, (size_t)o->wake_depth * sizeof *e->pcs);
    } else {
      e->wake_depth = 0;
    }
  }
  for (int i = 0; i < c->n; i++) { /* threads gone before this capture listed them */
    if (c->v[i].fd >= 0)
      close(c->v[i].fd);
    if (c->v[i].ask >= 0) {
      cprof__threads_give_up(&cprof__threads_table_v[c->table][c->v[i].ask]);
      c->out--;
    }
  }
  free(c->v);
  free(c->frames);
  c->v = v;
  c->frames = frames;
  c->n = d->n;
  c->depth = depth;
}

/* Whether every thread of tids (sorted) was seen by the capture before. */
int cprof__threads_cache_knows_all(const cprof__threads_cache_t *c, const pid_t *tids, int n) {
  for (int i = 0; i < n; i++)
    if (!cprof__threads_cache_find(c, tids[i]))
      return 0;
  return 1;
}

cprof__threads_cache_t *cprof__threads_cache_new(void) {
  return calloc(1, sizeof(cprof__threads_cache_t));
}

void cprof__threads_cache_defer(cprof__threads_cache_t *c) { c->defer = 1; }

void cprof__threads_cache_yield(cprof__threads_cache_t *c) {
  if (!c || !__atomic_load_n(&c->holding, __ATOMIC_RELAXED) ||
      cprof__signal_held(cprof__threads_signo))
    return;
  pthread_mutex_lock(&cprof__threads_capture_lock);
  if (c->holding && !cprof__signal_held(cprof__threads_signo))
    cprof__threads_give_up_all(c);
  pthread_mutex_unlock(&cprof__threads_capture_lock);
}

void cprof__threads_cache_free(cprof__threads_cache_t *c) {
  if (!c)
    return;
  pthread_mutex_lock(&cprof__threads_capture_lock);
  if (c->table) {
    cprof__threads_give_up_all(c);
    cprof__threads_table_taken[c->table] = 0;
  }
  if (c->maps && cprof__threads_deferred_stacks == c->maps) {
    cprof__threads_deferred_stacks = NULL;
    cprof__threads_publish_stacks(NULL);
  }
  pthread_mutex_unlock(&cprof__threads_capture_lock);
  if (c->maps) {
    cprof__maps_free(c->maps);
    free(c->maps);
  }
  if (c->task)
    closedir(c->task);
  for (int i = 0; i < c->n; i++)
    if (c->v[i].fd >= 0)
      close(c->v[i].fd);
  free(c->v);
  free(c->frames);
  free(c);
}

int cprof__threads_cache_settle(cprof__threads_cache_t *c, int timeout_ms,
                                cprof__thread_dump_t *out) {
  memset(out, 0, sizeof *out);
  int depth = cprof__max_depth();
  int64_t deadline = cprof__now_ms(CLOCK_MONOTONIC) + timeout_ms;
  pthread_mutex_lock(&cprof__threads_capture_lock);
  cprof__thread_stack_t *res = cprof__threads_new_dump(c->n ? c->n : 1, depth, 1);
  if (!res) {
    if (c->table)
      cprof__threads_give_up_all(c);
    pthread_mutex_unlock(&cprof__threads_capture_lock);
    return -ENOMEM;
  }
  for (int i = 0; i < c->n; i++) { /* their CPU time now, at the end */
    res[i].tid = c->v[i].tid;
    res[i].cpu_ns = cprof__thread_cpu(c->v[i].tid);
  }
  out->n = c->n;
  for (;;) {
    int waiting = 0;
    for (int i = 0; c->table && i < c->n; i++)
      if (c->v[i].ask >= 0 &&
          (__atomic_load_n(&cprof__threads_table_v[c->table][c->v[i].ask].state, __ATOMIC_ACQUIRE) &
           3) != CPROF__SLOT_DONE)
        waiting++;
    if (!waiting || cprof__now_ms(CLOCK_MONOTONIC) >= deadline)
      break;
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  for (int i = 0; c->table && i < c->n; i++) {
    cprof__threads_cached_t *e = &c->v[i];
    if (e->ask < 0)
      continue;
    int ask;
    int64_t asked;
    e->asked_ns = INT64_MIN / 2; /* given up now if not in */
    cprof__threads_harvest(c, e, &res[i], &ask, &asked, cprof__now_ns(CLOCK_MONOTONIC));
    if (ask >= 0) { /* being written this very moment: not waited for */
      cprof__threads_give_up(&cprof__threads_table_v[c->table][ask]);
      c->out--;
      res[i].answered = -1;
    }
  }
  out->v = res;
  cprof__threads_give_up_all(c);
  if (cprof__threads_deferred_stacks == c->maps) {
    cprof__threads_deferred_stacks = NULL;
    cprof__threads_publish_stacks(NULL);
  }
  pthread_mutex_unlock(&cprof__threads_capture_lock);
  return 0;
}

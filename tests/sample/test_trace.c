/* Regions, tasks and logs (cprof_region_begin and its kin) and the buffers
 * behind them: what a trace gets back, from which thread, in what order;
 * what the wall profile's reader sees; drops; the limits on strings. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "cprof.h"
#include "sample/trace.h"

#define MAX_EVENTS 4096
#define BUFFER (64 * 1024)

typedef struct event {
  pid_t tid;
  char thread[16];
  uint64_t thread_dropped;
  int64_t ts;
  int kind;
  uint64_t id, dur;
  char s1[CPROF_MAX_TRACE_NAME + 1], s2[CPROF_MAX_TRACE_MESSAGE + 1];
} event_t;

static event_t ev[MAX_EVENTS];
static int n_ev;

static void collect(const cprof__trace_rec_t *r, void *ctx) {
  (void)ctx;
  /* The interposed thread start and lock wrappers' events, from the test's
   * own threads, are tests/integration/trace.sh's concern. */
  if (n_ev == MAX_EVENTS || r->kind >= CPROF__TRACE_LOCK_WAIT)
    return;
  event_t *e = &ev[n_ev++];
  e->tid = r->tid;
  snprintf(e->thread, sizeof e->thread, "%s", r->thread);
  e->thread_dropped = r->thread_dropped;
  e->ts = r->ts;
  e->kind = r->kind;
  e->id = r->id;
  e->dur = r->dur;
  snprintf(e->s1, sizeof e->s1, "%s", r->s1);
  snprintf(e->s2, sizeof e->s2, "%s", r->s2);
}

static uint64_t end_trace(void) {
  uint64_t dropped = ~0ULL;
  n_ev = 0;
  cprof__trace_end(collect, NULL, &dropped);
  return dropped;
}

static pid_t gettid_(void) { return (pid_t)syscall(SYS_gettid); }

static int64_t now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The events of one thread, in the order handed out. */
static int of_thread(pid_t tid, event_t **out, int max) {
  int n = 0;
  for (int i = 0; i < n_ev && n < max; i++)
    if (ev[i].tid == tid)
      out[n++] = &ev[i];
  return n;
}

/* ---- Nothing listening ---- */

static void nothing_listening(void) {
  CHECK_EQ_INT(cprof_trace_enabled(), 0);
  cprof_region_begin("quiet");
  CHECK_EQ_INT(cprof_task_begin("task"), 0);
  cprof_task_end(0);
  cprof_trace_log("cat", "msg");
  cprof_region_end();
  cprof_region_end(); /* an end without a begin */
  CHECK_EQ_INT(cprof_trace_listening_ & CPROF__LISTEN_BITS, 0);

  /* The region opened before the trace is not known to it: its end is
   * ignored, and so is the end without a begin. */
  cprof_region_begin("before");
  CHECK_EQ_INT(cprof__trace_begin(BUFFER), 0);
  CHECK_EQ_INT(cprof_trace_enabled(), 1);
  cprof_region_end();
  cprof_region_end();
  CHECK_EQ_INT(end_trace(), 0);
  CHECK_EQ_INT(n_ev, 0);
  CHECK_EQ_INT(cprof_trace_enabled(), 0);

  /* Ending when nothing records does nothing. */
  CHECK_EQ_INT(end_trace(), 0);
  CHECK_EQ_INT(n_ev, 0);
}

/* ---- Sessions ---- */

static void one_at_a_time(void) {
  CHECK_EQ_INT(cprof__trace_begin(10), -EINVAL);
  CHECK_EQ_INT(cprof__trace_begin((size_t)1 << 40), -EINVAL);
  CHECK_EQ_INT(cprof__trace_begin(BUFFER), 0);
  CHECK_EQ_INT(cprof__trace_begin(BUFFER), -EBUSY);
  CHECK_EQ_INT(cprof_trace_enabled(), 1);
  end_trace();
  CHECK_EQ_INT(cprof__trace_begin(BUFFER), 0); /* free again */
  end_trace();
}

/* ---- Nested regions on several threads ---- */

#define THREADS 4

typedef struct worker {
  int i;
  pid_t tid;
} worker_t;

static void *nest(void *arg) {
  worker_t *w = arg;
  char outer[32], inner[32], msg[32];
  snprintf(outer, sizeof outer, "outer-%d", w->i);
  snprintf(inner, sizeof inner, "inner-%d", w->i);
  snprintf(msg, sizeof msg, "message %d", w->i);
  w->tid = gettid_();
  cprof_region_begin(outer);
  cprof_region_begin(inner);
  cprof_trace_log("worker", msg);
  cprof_region_end();
  cprof_region_end();
  return NULL;
}

static void nested_regions(void) {
  worker_t w[THREADS];
  pthread_t t[THREADS];
  int64_t t0 = now();
  CHECK_EQ_INT(cprof__trace_begin(BUFFER), 0);
  for (int i = 0; i < THREADS; i++) {
    w[i].i = i;
    pthread_create(&t[i], NULL, nest, &w[i]);
  }
  for (int i = 0; i < THREADS; i++)
    pthread_join(t[i], NULL);
  CHECK_EQ_INT(end_trace(), 0);
  int64_t t1 = now();
  CHECK_EQ_INT(n_ev, THREADS * 5);

  static const int kinds[5] = {CPROF__TRACE_REGION_BEGIN, CPROF__TRACE_REGION_BEGIN,
                               CPROF__TRACE_LOG, CPROF__TRACE_REGION_END, CPROF__TRACE_REGION_END};
  for (int i = 0; i < THREADS; i++) {
    event_t *e[8];
    char outer[32], inner[32], msg[32];
    snprintf(outer, sizeof outer, "outer-%d", i);
    snprintf(inner, sizeof inner, "inner-%d", i);
    snprintf(msg, sizeof msg, "message %d", i);
    const char *s1[5] = {outer, inner, "worker", inner, outer};
    const char *s2[5] = {"", "", msg, "", ""};
    int n = of_thread(w[i].tid, e, 8);
    CHECK_EQ_INT(n, 5);
    for (int k = 0; k < n && k < 5; k++) {
      CHECK_EQ_INT(e[k]->kind, kinds[k]);
      CHECK_EQ_STR(e[k]->s1, s1[k]);
      CHECK_EQ_STR(e[k]->s2, s2[k]);
      CHECK(e[k]->ts >= t0 && e[k]->ts <= t1);
      CHECK(k == 0 || e[k]->ts >= e[k - 1]->ts);
      CHECK_EQ_INT(e[k]->thread_dropped, 0);
    }
    /* Each thread's events come together, not interleaved. */
    for (int k = 1; k < n; k++)
      CHECK(e[k] == e[k - 1] + 1);
  }
}

/* ---- A task that passes between threads ---- */

static uint64_t task_id;
static pid_t ender_tid;

static void *end_task(void *arg) {
  (void)arg;
  ender_tid = gettid_();
  cprof_task_end(task_id);
  return NULL;
}

static void task_across_threads(void) {
  CHECK_EQ_INT(cprof__trace_begin(BUFFER), 0);
  task_id = cprof_task_begin("request");
  CHECK(task_id != 0);
  uint64_t second = cprof_task_begin(NULL);
  CHECK(second != 0 && second != task_id);
  cprof_task_end(second);
  cprof_task_end(0); /* nothing */
  pthread_t t;
  pthread_create(&t, NULL, end_task, NULL);
  pthread_join(t, NULL);
  CHECK_EQ_INT(end_trace(), 0);

  event_t *mine[8], *theirs[8];
  CHECK_EQ_INT(of_thread(gettid_(), mine, 8), 3);
  CHECK_EQ_INT(mine[0]->kind, CPROF__TRACE_TASK_BEGIN);
  CHECK_EQ_INT(mine[0]->id, task_id);
  CHECK_EQ_STR(mine[0]->s1, "request");
  CHECK_EQ_INT(mine[1]->kind, CPROF__TRACE_TASK_BEGIN);
  CHECK_EQ_INT(mine[1]->id, second);
  CHECK_EQ_STR(mine[1]->s1, "");
  CHECK_EQ_INT(mine[2]->kind, CPROF__TRACE_TASK_END);
  CHECK_EQ_INT(mine[2]->id, second);
  CHECK_EQ_INT(of_thread(ender_tid, theirs, 8), 1);
  CHECK_EQ_INT(theirs[0]->kind, CPROF__TRACE_TASK_END);
  CHECK_EQ_INT(theirs[0]->id, task_id);

  /* Ids keep growing across traces; none while nothing records. */
  CHECK_EQ_INT(cprof_task_begin("late"), 0);
  CHECK_EQ_INT(cprof__trace_begin(BUFFER), 0);
  uint64_t next = cprof_task_begin("next");
  CHECK(next > second && next > task_id);
  end_trace();
}

/* ---- A full buffer ---- */

#define FITS 10
#define PAIRS 25

static void *fill(void *arg) {
  (void)arg;
  for (int i = 0; i < PAIRS; i++) {
    cprof_region_begin("abcdefg");
    cprof_region_end();
  }
  return NULL;
}

static void full_buffer(void) {
  CHECK_EQ_INT(cprof__trace_begin(FITS * CPROF__TRACE_REC_BYTES(7, 0)), 0);
  /* On this thread: a new one's start and join would be events too. */
  fill(NULL);
  CHECK_EQ_INT(end_trace(), 2 * PAIRS - FITS);
  CHECK_EQ_INT(n_ev, FITS);
  for (int i = 0; i < n_ev; i++) {
    CHECK_EQ_INT(ev[i].kind, i % 2 ? CPROF__TRACE_REGION_END : CPROF__TRACE_REGION_BEGIN);
    CHECK_EQ_STR(ev[i].s1, "abcdefg");
    CHECK_EQ_INT(ev[i].thread_dropped, 2 * PAIRS - FITS);
  }
}

/* ---- A thread that exits during the trace, and names ---- */

static pid_t exiter_tid;

static void *exiter(void *arg) {
  (void)arg;
  exiter_tid = gettid_();
  cprof_region_begin("first name");
  cprof_region_end();
  pthread_setname_np(pthread_self(), "exiter");
  cprof_trace_log("bye", "now");
  return NULL;
}

static void exited_thread(void) {
  CHECK_EQ_INT(cprof__trace_begin(BUFFER), 0);
  pthread_t t;
  pthread_create(&t, NULL, exiter, NULL);
  pthread_join(t, NULL);
  /* A live thread is named as it is now, not as at its first event. */
  char old[16];
  pthread_getname_np(pthread_self(), old, sizeof old);
  cprof_trace_log("main", "x");
  pthread_setname_np(pthread_self(), "renamed");
  CHECK_EQ_INT(end_trace(), 0);
  pthread_setname_np(pthread_self(), old);

  event_t *e[8];
  CHECK_EQ_INT(of_thread(exiter_tid, e, 8), 3);
  CHECK_EQ_INT(e[0]->kind, CPROF__TRACE_REGION_BEGIN);
  CHECK_EQ_STR(e[0]->s1, "first name");
  CHECK_EQ_INT(e[2]->kind, CPROF__TRACE_LOG);
  CHECK_EQ_STR(e[2]->s1, "bye");
  CHECK_EQ_STR(e[2]->s2, "now");
  CHECK_EQ_STR(e[0]->thread, "exiter");
  CHECK_EQ_INT(of_thread(gettid_(), e, 8), 1);
  CHECK_EQ_STR(e[0]->thread, "renamed");
}

/* ---- Open regions, as the wall profile reads them ---- */

typedef struct seen {
  pid_t tid;
  char name[CPROF_MAX_TRACE_NAME + 1];
  int depth;
} seen_t;

static seen_t seen[64];
static int n_seen;

static void see(pid_t tid, const char *innermost, int depth, void *ctx) {
  (void)ctx;
  if (n_seen < 64) {
    seen[n_seen].tid = tid;
    snprintf(seen[n_seen].name, sizeof seen[n_seen].name, "%s", innermost);
    seen[n_seen].depth = depth;
    n_seen++;
  }
}

static const seen_t *seen_of(pid_t tid) {
  n_seen = 0;
  cprof__regions_each(see, NULL);
  for (int i = 0; i < n_seen; i++)
    if (seen[i].tid == tid)
      return &seen[i];
  return NULL;
}

static pthread_barrier_t opened, looked, closed;

typedef struct opener {
  int depth;
  pid_t tid;
} opener_t;

static void *open_regions(void *arg) {
  opener_t *o = arg;
  o->tid = gettid_();
  char name[32];
  for (int d = 1; d <= o->depth; d++) {
    snprintf(name, sizeof name, "level-%d", d);
    cprof_region_begin(name);
  }
  pthread_barrier_wait(&opened);
  pthread_barrier_wait(&looked);
  for (int d = 1; d <= o->depth; d++)
    cprof_region_end();
  pthread_barrier_wait(&closed);
  return NULL;
}

static void open_regions_seen(void) {
  const int depths[3] = {1, 3, CPROF_MAX_TRACE_DEPTH + 4};
  opener_t o[3];
  pthread_t t[3];
  pthread_barrier_init(&opened, NULL, 4);
  pthread_barrier_init(&looked, NULL, 4);
  pthread_barrier_init(&closed, NULL, 4);
  cprof__trace_listen(CPROF__LISTEN_WALL, 1);
  cprof__trace_listen(CPROF__LISTEN_WALL, 1); /* a second wall profile */
  CHECK_EQ_INT(cprof_trace_enabled(), 0);
  for (int i = 0; i < 3; i++) {
    o[i].depth = depths[i];
    pthread_create(&t[i], NULL, open_regions, &o[i]);
  }
  pthread_barrier_wait(&opened);
  for (int i = 0; i < 3; i++) {
    const seen_t *s = seen_of(o[i].tid);
    CHECK(s != NULL);
    if (!s)
      continue;
    char want[32];
    int named = depths[i] < CPROF_MAX_TRACE_DEPTH ? depths[i] : CPROF_MAX_TRACE_DEPTH;
    snprintf(want, sizeof want, "level-%d", named);
    CHECK_EQ_STR(s->name, want);
    CHECK_EQ_INT(s->depth, depths[i]);
  }
  CHECK(seen_of(gettid_()) == NULL);
  pthread_barrier_wait(&looked);
  pthread_barrier_wait(&closed);
  for (int i = 0; i < 3; i++)
    CHECK(seen_of(o[i].tid) == NULL);
  for (int i = 0; i < 3; i++)
    pthread_join(t[i], NULL);

  /* One wall profile left: regions are still tracked. */
  cprof__trace_listen(CPROF__LISTEN_WALL, 0);
  CHECK_EQ_INT(cprof_trace_listening_ & CPROF__LISTEN_BITS, CPROF__LISTEN_WALL);
  cprof_region_begin("stale");
  const seen_t *s = seen_of(gettid_());
  CHECK(s != NULL && strcmp(s->name, "stale") == 0 && s->depth == 1);
  /* None left, then a new one: the region open across the gap is stale,
   * and its end is ignored. */
  cprof__trace_listen(CPROF__LISTEN_WALL, 0);
  cprof__trace_listen(CPROF__LISTEN_WALL, 0); /* one clear too many: ignored */
  CHECK_EQ_INT(cprof_trace_listening_ & CPROF__LISTEN_BITS, 0);
  cprof__trace_listen(CPROF__LISTEN_WALL, 1);
  CHECK(seen_of(gettid_()) == NULL);
  cprof_region_end();
  cprof_region_begin("fresh");
  s = seen_of(gettid_());
  CHECK(s != NULL && strcmp(s->name, "fresh") == 0 && s->depth == 1);
  cprof_region_end();
  CHECK(seen_of(gettid_()) == NULL);
  cprof__trace_listen(CPROF__LISTEN_WALL, 0);
  CHECK_EQ_INT(cprof_trace_listening_ & CPROF__LISTEN_BITS, 0);
  pthread_barrier_destroy(&opened);
  pthread_barrier_destroy(&looked);
  pthread_barrier_destroy(&closed);
}

/* ---- NULL and over-long strings ---- */

static void strings(void) {
  char longname[100], longmsg[300], utf8[80];
  memset(longname, 'n', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  memset(longmsg, 'm', sizeof longmsg - 1);
  longmsg[sizeof longmsg - 1] = '\0';
  /* 62 bytes, then a two-byte character that would straddle the limit. */
  memset(utf8, 'u', 62);
  strcpy(utf8 + 62, "\xc3\xa9z");

  CHECK_EQ_INT(cprof__trace_begin(BUFFER), 0);
  cprof_region_begin(NULL);
  cprof_region_end();
  cprof_trace_log(NULL, NULL);
  cprof_region_begin(longname);
  cprof_region_end();
  cprof_trace_log(longname, longmsg);
  cprof_region_begin(utf8);
  cprof_region_end();
  CHECK_EQ_INT(end_trace(), 0);

  CHECK_EQ_INT(n_ev, 8);
  if (n_ev != 8)
    return;
  CHECK_EQ_STR(ev[0].s1, "");
  CHECK_EQ_STR(ev[1].s1, "");
  CHECK_EQ_STR(ev[2].s1, "");
  CHECK_EQ_STR(ev[2].s2, "");
  CHECK_EQ_INT(strlen(ev[3].s1), CPROF_MAX_TRACE_NAME);
  CHECK_EQ_INT(strncmp(ev[3].s1, longname, CPROF_MAX_TRACE_NAME), 0);
  CHECK_EQ_STR(ev[4].s1, ev[3].s1); /* the end names the region it closes */
  CHECK_EQ_INT(strlen(ev[5].s1), CPROF_MAX_TRACE_NAME);
  CHECK_EQ_INT(strlen(ev[5].s2), CPROF_MAX_TRACE_MESSAGE);
  CHECK_EQ_INT(strncmp(ev[5].s2, longmsg, CPROF_MAX_TRACE_MESSAGE), 0);
  CHECK_EQ_INT(strlen(ev[6].s1), 62);
  CHECK_EQ_INT(strspn(ev[6].s1, "u"), 62);
  CHECK_EQ_STR(ev[7].s1, ev[6].s1);
}

/* Regions deeper than the named depth: their begins carry the name, their
 * ends none, and the stack comes back to the named ones intact. */
static void deep_regions(void) {
  char name[32];
  CHECK_EQ_INT(cprof__trace_begin(BUFFER), 0);
  for (int d = 1; d <= CPROF_MAX_TRACE_DEPTH + 2; d++) {
    snprintf(name, sizeof name, "d%d", d);
    cprof_region_begin(name);
  }
  for (int d = 1; d <= CPROF_MAX_TRACE_DEPTH + 2; d++)
    cprof_region_end();
  CHECK_EQ_INT(end_trace(), 0);
  int n = 2 * (CPROF_MAX_TRACE_DEPTH + 2);
  CHECK_EQ_INT(n_ev, n);
  if (n_ev != n)
    return;
  CHECK_EQ_STR(ev[CPROF_MAX_TRACE_DEPTH + 1].s1, "d18");
  CHECK_EQ_STR(ev[CPROF_MAX_TRACE_DEPTH + 2].s1, ""); /* end of d18 */
  CHECK_EQ_STR(ev[CPROF_MAX_TRACE_DEPTH + 3].s1, ""); /* end of d17 */
  CHECK_EQ_STR(ev[CPROF_MAX_TRACE_DEPTH + 4].s1, "d16");
  CHECK_EQ_STR(ev[n - 1].s1, "d1");
}

/* ---- Threads that record while traces start and end ---- */

static int stop_racing;
static unsigned long laps; /* loops done by all racers */

static void *race(void *arg) {
  (void)arg;
  while (!__atomic_load_n(&stop_racing, __ATOMIC_RELAXED)) {
    cprof_region_begin("race-outer");
    cprof_region_begin("race-inner");
    cprof_trace_log("race", "inside");
    cprof_region_end();
    cprof_region_end();
    __atomic_add_fetch(&laps, 1, __ATOMIC_RELAXED);
  }
  return NULL;
}

static void check_race_seen(pid_t tid, const char *innermost, int depth, void *ctx) {
  (void)tid;
  int *bad = ctx;
  if (!((depth == 1 && strcmp(innermost, "race-outer") == 0) ||
        (depth == 2 && strcmp(innermost, "race-inner") == 0)))
    (*bad)++;
}

/* Every thread's events of one trace: each a well-formed piece of the loop
 * above (it may start and stop anywhere in it), in time order. */
static int race_events_bad(void) {
  int bad = 0;
  for (int i = 0; i < n_ev; i++) {
    const event_t *e = &ev[i], *p = i > 0 && ev[i - 1].tid == e->tid ? &ev[i - 1] : NULL;
    if (p && e->ts < p->ts)
      bad++;
    if (e->kind == CPROF__TRACE_LOG && strcmp(e->s2, "inside") != 0)
      bad++;
    if ((e->kind == CPROF__TRACE_REGION_BEGIN || e->kind == CPROF__TRACE_REGION_END) &&
        strcmp(e->s1, "race-outer") != 0 && strcmp(e->s1, "race-inner") != 0)
      bad++;
  }
  return bad;
}

static void racing(void) {
  pthread_t t[THREADS];
  cprof__trace_listen(CPROF__LISTEN_WALL, 1);
  for (int i = 0; i < THREADS; i++)
    pthread_create(&t[i], NULL, race, NULL);
  int bad_seen = 0, bad_events = 0, traces_with_events = 0;
  for (int round = 0; round < 50; round++) {
    CHECK_EQ_INT(cprof__trace_begin(4096), 0);
    /* Some laps inside each trace, however the threads are scheduled. */
    unsigned long from = __atomic_load_n(&laps, __ATOMIC_RELAXED);
    while (__atomic_load_n(&laps, __ATOMIC_RELAXED) < from + 2 * THREADS)
      cprof__regions_each(check_race_seen, &bad_seen);
    end_trace();
    traces_with_events += n_ev > 0;
    bad_events += race_events_bad();
  }
  __atomic_store_n(&stop_racing, 1, __ATOMIC_RELAXED);
  for (int i = 0; i < THREADS; i++)
    pthread_join(t[i], NULL);
  cprof__trace_listen(CPROF__LISTEN_WALL, 0);
  CHECK_EQ_INT(bad_seen, 0);
  CHECK_EQ_INT(bad_events, 0);
  CHECK(traces_with_events > 0);
}

/* ---- CPU samples ---- */

typedef struct cpu_seen {
  pid_t tid;
  int kind, depth;
  int64_t ts;
  uintptr_t first, last;
  char thread[16];
} cpu_seen_t;

static cpu_seen_t cs[64];
static int n_cs;

static void collect_all(const cprof__trace_rec_t *r, void *ctx) {
  (void)ctx;
  if (n_cs == 64 || (r->kind >= CPROF__TRACE_LOCK_WAIT && r->kind != CPROF__TRACE_CPU_SAMPLE))
    return;
  cpu_seen_t *c = &cs[n_cs++];
  *c = (cpu_seen_t){r->tid, r->kind, r->depth, r->ts, 0, 0, ""};
  if (r->pcs) {
    c->first = r->pcs[0];
    c->last = r->pcs[r->depth - 1];
  }
  snprintf(c->thread, sizeof c->thread, "%s", r->thread);
}

static void count_samples(const cprof__trace_rec_t *r, void *ctx) {
  *(long *)ctx += r->kind == CPROF__TRACE_CPU_SAMPLE && r->tid == 4000000;
}

/* Samples handed over by the CPU recording's drains come back among their
 * thread's events, in time order; a thread that only ran comes after, its
 * stack cut to CPROF__TRACE_CPU_FRAMES; nothing outside a trace is kept;
 * a full store counts what it dropped. */
static void cpu_samples(void) {
  uintptr_t pcs[100];
  for (int i = 0; i < 100; i++)
    pcs[i] = 0x1000 + (uintptr_t)i;
  pid_t me = gettid_(), other = 4000000;      /* above pid_max's limit: no such thread */
  cprof__trace_cpu_sample(me, now(), pcs, 3); /* no trace: not kept */
  CHECK_EQ_INT(cprof__trace_begin(BUFFER), 0);
  int64_t t0 = now();
  cprof_region_begin("a");
  int64_t t1 = now();
  cprof_region_end();
  int64_t t2 = now();
  cprof__trace_cpu_sample(me, t1, pcs + 1, 3); /* drained out of order */
  cprof__trace_cpu_sample(other, t1, pcs, 100);
  cprof__trace_cpu_sample(me, t0 - 1, pcs, 3);
  cprof__trace_cpu_sample(me, t2 + 1, pcs + 2, 3);
  cprof__trace_cpu_sample(me, t2 + 2, pcs, 0); /* no stack: not kept */
  uint64_t dropped = ~0ULL;
  n_cs = 0;
  cprof__trace_end(collect_all, NULL, &dropped);
  cprof__trace_cpu_sample(me, now(), pcs, 3); /* after: not kept */
  CHECK_EQ_INT((int)dropped, 0);
  int kinds[] = {CPROF__TRACE_CPU_SAMPLE, CPROF__TRACE_REGION_BEGIN, CPROF__TRACE_CPU_SAMPLE,
                 CPROF__TRACE_REGION_END, CPROF__TRACE_CPU_SAMPLE,   CPROF__TRACE_CPU_SAMPLE};
  uintptr_t firsts[] = {0x1000, 0, 0x1001, 0, 0x1002, 0x1000};
  CHECK_EQ_INT(n_cs, 6);
  for (int i = 0; i < n_cs && i < 6; i++) {
    CHECK_EQ_INT(cs[i].kind, kinds[i]);
    CHECK_EQ_INT(cs[i].tid, i < 5 ? me : other);
    CHECK(cs[i].first == firsts[i]);
    CHECK(i == 0 || cs[i].ts >= cs[i - 1].ts || i == 5);
  }
  if (n_cs == 6) {
    CHECK_EQ_INT(cs[5].depth, CPROF__TRACE_CPU_FRAMES);
    CHECK(cs[5].last == 0x1000 + CPROF__TRACE_CPU_FRAMES - 1);
    CHECK_EQ_STR(cs[5].thread, "");
    CHECK_EQ_INT(cs[2].depth, 3);
  }

  /* A full store: what does not fit is counted. */
  CHECK_EQ_INT(cprof__trace_begin(BUFFER), 0);
  int fed = 40000;
  for (int i = 0; i < fed; i++)
    cprof__trace_cpu_sample(other, t0 + i, pcs, 100);
  long handed = 0;
  cprof__trace_end(count_samples, &handed, &dropped);
  CHECK(handed > 0 && dropped > 0);
  CHECK_EQ_INT((int)dropped, fed - (int)handed);
}

/* Samples whose handler read the thread's count of events go where the
 * count says, whatever their time (the drain's estimate, off by up to the
 * time between drains), and their time is moved between the events around
 * them. */
static void cpu_samples_by_count(void) {
  uintptr_t pcs[3] = {0x2000, 0x2001, 0x2002};
  pid_t me = gettid_();
  CHECK_EQ_INT(cprof__trace_begin(BUFFER), 0);
  uint64_t s0 = cprof__trace_appended_sigsafe();
  cprof_region_begin("b"); /* the thread's first event: its buffer begins at s0 */
  uint64_t s1 = cprof__trace_appended_sigsafe();
  int64_t t1 = now();
  cprof_region_end();
  uint64_t s2 = cprof__trace_appended_sigsafe();
  CHECK(s1 == s0 + 1 && s2 == s1 + 1);
  /* Taken before the region, estimated inside it; taken inside it,
   * estimated after its end and before its beginning; taken after it,
   * estimated before it. */
  cprof__trace_cpu_sample_seq(me, t1, s0, pcs, 1);
  cprof__trace_cpu_sample_seq(me, t1 + 1000000000, s1, pcs + 1, 1);
  cprof__trace_cpu_sample_seq(me, 1, s1, pcs + 1, 1);
  cprof__trace_cpu_sample_seq(me, 2, s2, pcs + 2, 1);
  n_cs = 0;
  cprof__trace_end(collect_all, NULL, NULL);
  int kinds[] = {CPROF__TRACE_CPU_SAMPLE, CPROF__TRACE_REGION_BEGIN, CPROF__TRACE_CPU_SAMPLE,
                 CPROF__TRACE_CPU_SAMPLE, CPROF__TRACE_REGION_END,   CPROF__TRACE_CPU_SAMPLE};
  uintptr_t firsts[] = {0x2000, 0, 0x2001, 0x2001, 0, 0x2002};
  CHECK_EQ_INT(n_cs, 6);
  for (int i = 0; i < n_cs && i < 6; i++) {
    CHECK_EQ_INT(cs[i].kind, kinds[i]);
    CHECK(cs[i].first == firsts[i]);
    CHECK(i == 0 || cs[i].ts >= cs[i - 1].ts);
  }
  if (n_cs == 6) {
    CHECK(cs[0].ts <= cs[1].ts); /* moved back to the region's beginning */
    CHECK(cs[2].ts == cs[1].ts && cs[3].ts == cs[4].ts);
    CHECK(cs[5].ts == cs[4].ts);
  }
}

int main(void) {
  cpu_samples();
  cpu_samples_by_count();
  nothing_listening();
  one_at_a_time();
  nested_regions();
  task_across_threads();
  full_buffer();
  exited_thread();
  open_regions_seen();
  strings();
  deep_regions();
  racing();
  return check_result("test_trace");
}

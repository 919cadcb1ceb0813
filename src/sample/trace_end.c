/* The trace's end: each thread's events, in the order it recorded them,
 * with the CPU samples the trace took of it put in among them, handed to
 * the trace's reader; then every buffer and sample freed. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/search.h"
#include "sample/trace_internal.h"
#include "unwind/pc.h"

/* A live thread's name now, from /proc/self/task/TID/comm; 0 or -1. */
static int read_comm(pid_t tid, char name[16]) {
  char path[64], got[17];
  snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)tid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t n = read(fd, got, sizeof got - 1);
  close(fd);
  if (n <= 0)
    return -1;
  got[n] = '\0';
  size_t len = strcspn(got, "\n");
  len = len < 15 ? len : 15;
  memcpy(name, got, len);
  name[len] = '\0';
  return 0;
}

/* The trace's CPU samples of one thread, in time order: [at, end) of an
 * index sorted by thread and time. */
typedef struct samples {
  cprof__trace_cpu_rec_t **at, **end;
} samples_t;

static int by_thread_and_time(const void *a, const void *b) {
  const cprof__trace_cpu_rec_t *x = *(cprof__trace_cpu_rec_t *const *)a,
                               *y = *(cprof__trace_cpu_rec_t *const *)b;
  if (x->tid != y->tid)
    return x->tid < y->tid ? -1 : 1;
  /* The thread's count first, where both have one: it is exact. */
  if (x->seq != y->seq && x->seq != CPROF__TRACE_SEQ_UNKNOWN && y->seq != CPROF__TRACE_SEQ_UNKNOWN)
    return x->seq < y->seq ? -1 : 1;
  return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* An index of the store's records, sorted by thread and time, in *out
 * (malloc'd; NULL and 0 when there are none or no memory, which *lost
 * then counts). */
static size_t index_samples(unsigned char *store, size_t used, cprof__trace_cpu_rec_t ***out,
                            uint64_t *lost_n) {
  size_t n = 0;
  *out = NULL;
  for (size_t off = 0; off < used; n++)
    off += sizeof(cprof__trace_cpu_rec_t) +
           (size_t)((cprof__trace_cpu_rec_t *)(void *)(store + off))->depth * sizeof(uintptr_t);
  if (n == 0)
    return 0;
  cprof__trace_cpu_rec_t **idx = malloc(n * sizeof *idx);
  if (!idx) {
    *lost_n += n;
    return 0;
  }
  size_t i = 0;
  for (size_t off = 0; off < used; i++) {
    idx[i] = (cprof__trace_cpu_rec_t *)(void *)(store + off);
    off += sizeof(cprof__trace_cpu_rec_t) + (size_t)idx[i]->depth * sizeof(uintptr_t);
  }
  qsort(idx, n, sizeof *idx, by_thread_and_time);
  *out = idx;
  return n;
}

/* The samples of thread tid in the sorted index, not yet handed out. */
static samples_t samples_of(cprof__trace_cpu_rec_t **idx, size_t n, pid_t tid) {
  size_t lo = CPROF__PARTITION_POINT(n, mid, idx[mid]->tid < tid);
  size_t end = lo;
  while (end < n && idx[end]->tid == tid)
    end++;
  return (samples_t){idx + lo, idx + end};
}

/* Whether sample c comes before the event appended when its thread's count
 * was `seq`, at time `until`: by the count when the sample has one, else by
 * time. */
static int before(const cprof__trace_cpu_rec_t *c, uint64_t seq, int64_t until) {
  return c->seq != CPROF__TRACE_SEQ_UNKNOWN ? c->seq <= seq : c->ts <= until;
}

/* Hands out s's samples that came before the event at `until` whose count
 * was `seq` (see before), with their times within [since, until], marking
 * each handed (its depth set to 0: a stored one has at least 1). */
static void give_samples(samples_t *s, uint64_t seq, int64_t since, int64_t until,
                         cprof__trace_rec_t *r, void (*fn)(const cprof__trace_rec_t *r, void *ctx),
                         void *ctx) {
  for (; s->at < s->end && before(*s->at, seq, until); s->at++) {
    cprof__trace_cpu_rec_t *c = *s->at;
    if (!c->depth)
      continue; /* handed out with an earlier thread of the same tid */
    cprof__trace_rec_t e = *r;
    e.ts = c->ts;
    if (c->seq != CPROF__TRACE_SEQ_UNKNOWN) /* the count placed it: its time follows */
      e.ts = e.ts > until ? until : e.ts < since ? since : e.ts;
    e.kind = CPROF__TRACE_CPU_SAMPLE;
    e.id = e.dur = 0;
    e.s1 = e.s2 = "";
    e.pcs = c->pcs;
    e.depth = c->depth;
    fn(&e, ctx);
    c->depth = 0;
  }
}

/* Calls fn for each record of buf, in the order they were appended, and
 * for the thread's CPU samples among them. */
static void each_record(const cprof__trace_buf_t *buf, samples_t *cpu,
                        void (*fn)(const cprof__trace_rec_t *r, void *ctx), void *ctx) {
  char s1[CPROF_MAX_TRACE_NAME + 1], s2[CPROF_MAX_TRACE_MESSAGE + 1];
  const unsigned char *data = (const unsigned char *)buf->data;
  cprof__trace_rec_t r = {.tid = buf->tid, .thread = buf->name, .thread_dropped = buf->dropped};
  uint64_t seq = buf->first;
  int64_t since = INT64_MIN;
  for (size_t off = 0; off < buf->used; seq++) {
    cprof__trace_hdr_t h;
    memcpy(&h, data + off, sizeof h);
    size_t n1 = h.n1 < sizeof s1 ? h.n1 : sizeof s1 - 1;
    size_t n2 = h.n2 < sizeof s2 ? h.n2 : sizeof s2 - 1;
    memcpy(s1, data + off + sizeof h, n1);
    s1[n1] = '\0';
    memcpy(s2, data + off + sizeof h + h.n1, n2);
    s2[n2] = '\0';
    /* A lock wait is recorded at its end with its start: the samples up
     * to its start come first. */
    give_samples(cpu, seq, since, h.ts, &r, fn, ctx);
    if (h.ts > since)
      since = h.ts;
    cprof__trace_rec_t e = r;
    e.ts = h.ts;
    e.kind = h.kind;
    e.id = h.id;
    e.dur = h.dur;
    e.s1 = s1;
    e.s2 = s2;
    fn(&e, ctx);
    off += CPROF__TRACE_REC_BYTES(h.n1, h.n2);
  }
  give_samples(cpu, UINT64_MAX - 1, since, INT64_MAX, &r, fn, ctx);
}

void cprof__trace_end(void (*fn)(const cprof__trace_rec_t *r, void *ctx), void *ctx,
                      uint64_t *dropped) {
  if (dropped)
    *dropped = 0;
  int recording = CPROF__TRACING_RECORDING;
  if (!__atomic_compare_exchange_n(&cprof__trace_state, &recording, CPROF__TRACING_ENDING, 0,
                                   __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
    return;
  cprof__trace_listen(CPROF__LISTEN_TRACE, 0);
  cprof__trace_lock(&cprof__trace_blocks.lock);
  for (cprof__thread_node_t *n = cprof__trace_blocks.all; n; n = n->next) {
    cprof__trace_block_t *b = (cprof__trace_block_t *)n;
    while (__atomic_load_n(&b->appending, __ATOMIC_SEQ_CST))
      sched_yield();
    __atomic_store_n(&b->buf, NULL, __ATOMIC_RELAXED);
  }
  cprof__trace_buf_t *got = cprof__trace_bufs;
  cprof__trace_bufs = NULL;
  cprof__trace_buf_bytes = 0;
  cprof__trace_unlock(&cprof__trace_blocks.lock);
  cprof__trace_lock(&cprof__trace_cpu_lock);
  unsigned char *store = cprof__trace_cpu_store;
  size_t store_used = cprof__trace_cpu_used;
  uint64_t total =
      __atomic_exchange_n(&cprof__trace_lost, 0, __ATOMIC_RELAXED) + cprof__trace_cpu_dropped;
  cprof__trace_cpu_store = NULL;
  cprof__trace_unlock(&cprof__trace_cpu_lock);

  /* The list holds the newest buffer first; hand the threads out in the
   * order they first recorded. */
  cprof__trace_buf_t *ordered = NULL;
  while (got) {
    cprof__trace_buf_t *next = got->next;
    got->next = ordered;
    ordered = got;
    got = next;
  }
  cprof__trace_cpu_rec_t **idx = NULL;
  size_t nsamples = store ? index_samples(store, store_used, &idx, &total) : 0;
  for (cprof__trace_buf_t *buf = ordered; buf; buf = buf->next) {
    if (!buf->exited)
      read_comm(buf->tid, buf->name);
    total += buf->dropped;
    samples_t cpu = samples_of(idx, nsamples, buf->tid);
    if (fn)
      each_record(buf, &cpu, fn, ctx);
  }
  /* Then the threads that only ran: their CPU samples, named as they are
   * now (an exited one's name is not known: ""). */
  for (size_t i = 0; fn && i < nsamples;) {
    samples_t cpu = samples_of(idx, nsamples, idx[i]->tid);
    i = (size_t)(cpu.end - idx);
    if (!cpu.at[0]->depth)
      continue; /* handed out with the thread's events */
    pid_t tid = cpu.at[0]->tid;
    char name[16] = "";
    read_comm(tid, name);
    cprof__trace_rec_t r = {.tid = tid, .thread = name};
    give_samples(&cpu, UINT64_MAX - 1, INT64_MIN, INT64_MAX, &r, fn, ctx);
  }
  free(idx);
  cprof__trace_free(store);
  while (ordered) {
    cprof__trace_buf_t *next = ordered->next;
    cprof__trace_free(ordered);
    ordered = next;
  }
  if (dropped)
    *dropped = total;
  __atomic_store_n(&cprof__trace_state, CPROF__TRACING_IDLE, __ATOMIC_RELEASE);
}

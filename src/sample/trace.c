/* Regions, tasks and logs (cprof_region_begin and its kin), and the
 * per-thread buffers a trace records them in.
 *
 * Nobody listening. Each public call loads cprof_trace_listening_ once,
 * relaxed, finds no bit set and returns: that load is the whole cost, so
 * the calls may stay in a program's hot paths. Everything else lives in
 * functions of their own, out of the fast path's way.
 *
 * Where the state lives: as labels.c, for the same reasons (read its
 * comment). Each thread that begins a region while someone listens gets a
 * block, found through one initial-exec TLS pointer, mapped from the kernel
 * (alloc, below), on a process-wide list under a mutex with its thread id
 * (sample/thread_blocks.h, as labels.c's), freed by a thread-specific key's
 * destructor at thread exit. The block
 * holds the thread's stack of open region names (CPROF_MAX_TRACE_DEPTH
 * deep; deeper regions are counted, not named) and, while a trace records,
 * a pointer to the thread's event buffer.
 *
 * Open regions, for the wall-clock profile. The owner changes its stack
 * inside a sequence lock (`seq` odd meanwhile); cprof__regions_each copies
 * another thread's innermost name and depth, and retries a copy the owner
 * changed underneath it. The names are stored and copied as 64-bit words
 * with atomics, so that the copy is not a data race in C11's sense
 * (a torn one is thrown away all the same). Regions are tracked only while
 * some listener bit is set. A region begun with nobody listening is never
 * on the stack, and its end finds the stack empty and is ignored. The stack
 * a thread had when the last listener left would be stale by the time the
 * next one comes, so the listeners word carries a generation, bumped each
 * time the first listener arrives; a stack pushed in an older generation
 * counts as empty.
 *
 * Events. A thread's buffer is a byte array of variable-length records,
 * each a 32-byte header (timestamp, id, duration, kind, the two strings'
 * lengths) followed by the strings' bytes, padded to 8
 * (CPROF__TRACE_REC_BYTES). Only the owner appends, without a lock; an
 * event that does not fit is dropped and counted in the buffer, and the
 * buffer stays full (it does not wrap: the start of a trace is kept, as a
 * reader of a timeline expects). A thread's first event while a trace
 * records allocates its buffer (with the guard raised, under the list's
 * lock); a thread that cannot have one counts its event in `lost`. Every
 * buffer of the trace is also on the trace's own list, so that a thread
 * that exits during the trace leaves its events behind: its block goes, its
 * buffer stays until collected, named with the name the thread had at exit.
 *
 * Ending a trace without locks on the append path. An appender raises its
 * block's `appending` flag and then reads the trace bit, both sequentially
 * consistent; cprof__trace_end clears the bit and then, under the list's
 * lock, reads every block's flag, also sequentially consistent, and waits
 * while it is up. Of two such store-then-load pairs at least one sees the
 * other's store (Dekker's argument): either the appender sees the bit clear
 * and touches nothing, or the ender sees the flag up and waits for the
 * append to finish. After that no thread can touch a buffer, since the bit
 * stays clear until the trace's state returns to idle, and the buffers are
 * read and freed at leisure. An appender never blocks with its flag up: it
 * lowers it before allocating its buffer (the allocation takes the lock the
 * ender holds while it waits), then starts again.
 *
 * CPU samples come from whichever thread drains the CPU recording, not
 * from the thread sampled, so they cannot go in that thread's buffer: they
 * go in one store of the trace's own, under a lock of its own, in drain
 * order (a thread's in time order, threads interleaved). The end sorts
 * them by thread and time and hands each thread's out among its events.
 * A sample's time is the drain's estimate (sample/cpu.c, "Time stamps":
 * its handler reads no clock), off by up to the time between drains; what
 * places it among its thread's events is exact: the handler reads how many
 * events the thread had appended (`appended`, a counter in the thread's
 * initial-exec TLS, which only the thread writes), and each buffer knows
 * the count at its first event. A sample goes after the events its thread
 * had appended when it was taken and before the next, its time moved into
 * that interval if the estimate fell outside.
 *
 * Tasks are numbered from one process-wide counter that is never reset, so
 * ids stay unique across traces.
 *
 * fork: the child keeps only the forking thread's block (as labels.c) and
 * nothing of a trace or of the listeners, whose threads it does not have. */
#include "sample/trace.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/guard.h"
#include "sample/thread_blocks.h"
#include "unwind/pc.h"

#define NAME_WORDS ((CPROF_MAX_TRACE_NAME + 1) / 8)
#define MIN_BUFFER 64
#define MAX_BUFFER ((size_t)1 << 30)

/* A thread's events during one trace. */
typedef struct buf {
  struct buf *next; /* on `bufs`, under blocks.lock */
  uint64_t first;   /* the owner's `appended` when the buffer was made */
  pid_t tid;
  int exited;       /* under blocks.lock */
  char name[16];    /* at the first event, then at exit; under blocks.lock */
  uint64_t dropped; /* the owner's while the trace records */
  size_t used, cap; /* the owner's while the trace records */
  uint64_t data[];  /* records, 8-byte aligned */
} buf_t;

typedef struct block {
  cprof__thread_node_t node; /* first: on `blocks`, under its lock */
  unsigned seq;              /* odd while the owner changes its regions; atomic */
  int depth;                 /* open regions, named or not; atomic */
  unsigned gen;              /* the listeners' generation `depth` counts in; atomic */
  int appending;             /* 1 while the owner appends; atomic */
  buf_t *buf;                /* the trace's buffer, or NULL; atomic */
  uint64_t names[CPROF_MAX_TRACE_DEPTH][NAME_WORDS]; /* atomic words */
} block_t;

typedef struct hdr {
  int64_t ts;
  uint64_t id, dur;
  uint16_t kind, n1, n2, pad;
} hdr_t;
_Static_assert(sizeof(hdr_t) == CPROF__TRACE_REC_BYTES(0, 0), "the record header is 32 bytes");

/* The word, under the name cprof.h's macros load in the program: with
 * nobody listening, a call there is that load and a branch. Default
 * visibility, and so reached through the GOT here too: a program linked
 * with -lcprof may hold a copy of it (a copy relocation), and then that
 * copy is the word, for the library as for the program. */
CPROF_EXTERN int cprof_trace_listening_;
_Static_assert(CPROF__LISTEN_TRACE == 1 && CPROF__LISTEN_WALL == 2,
               "cprof.h's macros test bit 0 for a trace and bit 1 for a wall profile");
static int counts[2]; /* listeners per bit, under listen_lock */
static pthread_mutex_t listen_lock = PTHREAD_MUTEX_INITIALIZER;

enum { IDLE, RECORDING, ENDING };
static int state;          /* atomic */
static uint64_t lost;      /* events of threads without a buffer; atomic */
static uint64_t next_task; /* atomic */

static __thread __attribute__((tls_model("initial-exec"))) block_t *mine;

/* Under the blocks' lock (blocks.lock, below): every buffer of the trace,
 * and the size of a new buffer (0: no trace takes buffers now). */
static buf_t *bufs;
static size_t buf_bytes;

/* The trace's CPU samples: records of cpu_rec_t and its pcs, back to back
 * in `cpu_store` (NULL: no trace takes samples now), under cpu_lock. */
typedef struct cpu_rec {
  int64_t ts;
  uint64_t seq; /* the thread's `appended` when sampled; CPROF__TRACE_SEQ_UNKNOWN */
  int32_t tid, depth;
  uintptr_t pcs[];
} cpu_rec_t;
#define CPU_STORE ((size_t)16 << 20) /* mapped at the trace's start, touched as filled */
static unsigned char *cpu_store;
static size_t cpu_used;
static uint64_t cpu_dropped;
static pthread_mutex_t cpu_lock = PTHREAD_MUTEX_INITIALIZER;

/* cprof's locks are taken with the guard raised, so that the lock
 * wrappers (interpose/locks.c) pass them through unprofiled. */
static void lock(pthread_mutex_t *m) {
  cprof__guard_enter();
  pthread_mutex_lock(m);
}

static void unlock(pthread_mutex_t *m) {
  pthread_mutex_unlock(m);
  cprof__guard_leave();
}

/* Memory of cprof's own, from mmap, not malloc: the lock wrappers emit
 * their waits here just after the program's thread took the lock it
 * waited for, and an allocator that locks with pthread mutexes (jemalloc
 * does) may be the one holding it; malloc there could wait on that very
 * lock. Each block says its size in its first 16 bytes. */
#define ALLOC_HEAD 16

static void *alloc(size_t n) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE), size = (n + ALLOC_HEAD + page - 1) / page * page;
  char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return NULL;
  *(size_t *)(void *)p = size;
  return p + ALLOC_HEAD;
}

static void release_memory(void *p) {
  if (!p)
    return;
  char *head = (char *)p - ALLOC_HEAD;
  munmap(head, *(size_t *)(void *)head);
}

static void set_mine(void *b) { mine = b; }
static void make_key(void);

/* Every thread's block (thread_blocks.h), in memory of cprof's own. */
static cprof__thread_blocks_t blocks =
    CPROF__THREAD_BLOCKS_INIT(sizeof(block_t), alloc, release_memory, set_mine, make_key);

static int listeners(void) { return __atomic_load_n(&cprof_trace_listening_, __ATOMIC_RELAXED); }
static unsigned generation(int l) { return (unsigned)l & ~(unsigned)CPROF__LISTEN_BITS; }

void cprof__trace_listen(int bit, int on) {
  int i = bit == CPROF__LISTEN_TRACE ? 0 : bit == CPROF__LISTEN_WALL ? 1 : -1;
  if (i < 0)
    return;
  lock(&listen_lock);
  if (on)
    counts[i]++;
  else if (counts[i] > 0)
    counts[i]--;
  int old = listeners();
  int bits = (counts[0] ? CPROF__LISTEN_TRACE : 0) | (counts[1] ? CPROF__LISTEN_WALL : 0);
  unsigned gen = generation(old);
  if (!(old & CPROF__LISTEN_BITS) && bits)
    gen = (gen + CPROF__LISTEN_BITS + 1) & (unsigned)INT_MAX;
  /* Sequentially consistent: the trace's end relies on it (see the top). */
  __atomic_store_n(&cprof_trace_listening_, (int)gen | bits, __ATOMIC_SEQ_CST);
  unlock(&listen_lock);
}

static void emit(int kind, int64_t ts, uint64_t id, uint64_t dur, const char *s1, const char *s2);

/* Under the blocks' lock, as a thread exits: its buffer, if any, stays on
 * the trace's list, with the thread's name when the trace has one. */
static void mark_exited(void *block, void *name) {
  buf_t *buf = __atomic_load_n(&((block_t *)block)->buf, __ATOMIC_RELAXED);
  if (buf) {
    if (((const char *)name)[0])
      memcpy(buf->name, name, sizeof buf->name);
    buf->exited = 1;
  }
}

/* At thread exit. The buffer, if any, stays on the trace's list. */
static void release(void *p) {
  block_t *b = p;
  /* The thread's end on the trace's timeline: here, at thread exit, it
   * comes however the thread ends (a return, pthread_exit, cancellation),
   * and the start routine's frame stays a tail call. */
  if (listeners() & CPROF__LISTEN_TRACE) {
    char now[17] = "";
    prctl(PR_GET_NAME, now);
    emit(CPROF__TRACE_THREAD_EXIT, 0, 0, 0, now, NULL);
  }
  char name[16] = "";
  if (__atomic_load_n(&b->buf, __ATOMIC_RELAXED))
    prctl(PR_GET_NAME, name);
  cprof__thread_blocks_remove(&blocks, b, mark_exited, name);
}

static void make_key(void) { cprof__thread_blocks_make_key(&blocks, release); }

static void fork_prepare(void) {
  lock(&listen_lock);
  lock(&blocks.lock);
  lock(&cpu_lock);
}

static void fork_parent(void) {
  unlock(&cpu_lock);
  unlock(&blocks.lock);
  unlock(&listen_lock);
}

static void fork_child(void) {
  cprof__thread_node_t *gone = cprof__thread_blocks_fork_child(&blocks, mine);
  if (mine) {
    mine->buf = NULL;
    mine->appending = 0;
  }
  buf_t *old = bufs;
  bufs = NULL;
  buf_bytes = 0;
  counts[0] = counts[1] = 0;
  unsigned gen = generation(cprof_trace_listening_);
  cprof_trace_listening_ = (int)((gen + CPROF__LISTEN_BITS + 1) & (unsigned)INT_MAX);
  state = IDLE;
  lost = 0;
  unsigned char *store = cpu_store; /* the parent's trace's, copied: freed below */
  cpu_store = NULL;
  cpu_used = 0;
  cpu_dropped = 0;
  unlock(&cpu_lock);
  unlock(&blocks.lock);
  unlock(&listen_lock);
  cprof__thread_blocks_free_list(&blocks, gone);
  while (old) {
    buf_t *next = old->next;
    release_memory(old);
    old = next;
  }
  release_memory(store);
}

__attribute__((constructor(103))) static void register_fork_handlers(void) {
  pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* The calling thread's block, made on first use; NULL without memory. */
static block_t *my_block(void) { return mine ? mine : cprof__thread_blocks_new(&blocks); }

/* The bytes of s kept: at most max, cut before a UTF-8 character that
 * would not fit whole, so that a JSON writer gets valid text back. */
static size_t cut(const char *s, size_t max) {
  size_t n = strnlen(s, max + 1);
  if (n <= max)
    return n;
  n = max;
  while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
    n--;
  return n;
}

/* ---- The event buffers ---- */

/* Events this thread has appended to a trace's buffer, ever. */
static __thread uint64_t appended __attribute__((tls_model("initial-exec")));

uint64_t cprof__trace_appended_sigsafe(void) {
  return __atomic_load_n(&appended, __ATOMIC_RELAXED);
}

/* A buffer for b's thread in the trace now recording, hung on b; NULL when
 * no trace takes buffers now (no event lost) or there is no memory (one
 * lost). Called with b->appending down: it takes blocks.lock, which the
 * trace's end holds while it waits for appends to finish. */
static buf_t *new_buf(block_t *b) {
  char name[16] = "";
  prctl(PR_GET_NAME, name);
  lock(&blocks.lock);
  buf_t *buf = buf_bytes ? alloc(sizeof *buf + buf_bytes) : NULL;
  if (buf) {
    memset(buf, 0, sizeof *buf);
    buf->first = __atomic_load_n(&appended, __ATOMIC_RELAXED);
    buf->tid = b->node.tid;
    memcpy(buf->name, name, sizeof name);
    buf->cap = buf_bytes;
    buf->next = bufs;
    bufs = buf;
    __atomic_store_n(&b->buf, buf, __ATOMIC_RELAXED);
  } else if (buf_bytes) {
    __atomic_add_fetch(&lost, 1, __ATOMIC_RELAXED);
  }
  unlock(&blocks.lock);
  return buf;
}

/* Appends one event to the calling thread's buffer, if a trace records. */
static void append(block_t *b, int kind, int64_t ts, uint64_t id, uint64_t dur, const char *s1,
                   size_t n1, const char *s2, size_t n2) {
  size_t need = CPROF__TRACE_REC_BYTES(n1, n2);
  for (int tries = 0;; tries++) {
    __atomic_store_n(&b->appending, 1, __ATOMIC_SEQ_CST);
    if (!(__atomic_load_n(&cprof_trace_listening_, __ATOMIC_SEQ_CST) & CPROF__LISTEN_TRACE))
      break;
    buf_t *buf = __atomic_load_n(&b->buf, __ATOMIC_RELAXED);
    if (!buf) {
      __atomic_store_n(&b->appending, 0, __ATOMIC_RELEASE);
      /* A second miss: the trace ended and another began meanwhile. */
      if (tries > 0 || !new_buf(b))
        return;
      continue;
    }
    if (buf->cap - buf->used < need) {
      buf->dropped++;
      break;
    }
    /* Read the clock only for an event that is kept: a full buffer
     * drops events at a third of the cost. */
    if (!ts) /* on the program's thread, which may have no TSC (core/clock.h) */
      ts = cprof__now_ns_program(CLOCK_MONOTONIC);
    unsigned char *p = (unsigned char *)buf->data + buf->used;
    hdr_t h = {ts, id, dur, (uint16_t)kind, (uint16_t)n1, (uint16_t)n2, 0};
    memcpy(p, &h, sizeof h);
    memcpy(p + sizeof h, s1, n1);
    memcpy(p + sizeof h + n1, s2, n2);
    buf->used += need;
    /* After the record: a sample that sees the count sees the event. A
     * relaxed store, as the handler's load: they are on this thread. */
    __atomic_store_n(&appended, appended + 1, __ATOMIC_RELAXED);
    break;
  }
  __atomic_store_n(&b->appending, 0, __ATOMIC_RELEASE);
}

static void emit(int kind, int64_t ts, uint64_t id, uint64_t dur, const char *s1, const char *s2) {
  block_t *b = my_block();
  if (!b) {
    __atomic_add_fetch(&lost, 1, __ATOMIC_RELAXED);
    return;
  }
  s1 = s1 ? s1 : "";
  s2 = s2 ? s2 : "";
  append(b, kind, ts, id, dur, s1, cut(s1, CPROF_MAX_TRACE_NAME), s2,
         cut(s2, CPROF_MAX_TRACE_MESSAGE));
}

void cprof__trace_emit(int kind, int64_t ts, uint64_t id, uint64_t dur, const char *s1,
                       const char *s2) {
  if (listeners() & CPROF__LISTEN_TRACE)
    emit(kind, ts, id, dur, s1, s2);
}

int cprof__trace_begin(size_t bytes_per_thread) {
  if (bytes_per_thread < MIN_BUFFER || bytes_per_thread > MAX_BUFFER)
    return -EINVAL;
  int idle = IDLE;
  if (!__atomic_compare_exchange_n(&state, &idle, RECORDING, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
    return -EBUSY;
  __atomic_store_n(&lost, 0, __ATOMIC_RELAXED);
  unsigned char *store = alloc(CPU_STORE);
  lock(&cpu_lock);
  cpu_store = store; /* without one, the trace has no CPU samples: counted */
  cpu_used = 0;
  cpu_dropped = 0;
  unlock(&cpu_lock);
  lock(&blocks.lock);
  buf_bytes = bytes_per_thread;
  unlock(&blocks.lock);
  cprof__trace_listen(CPROF__LISTEN_TRACE, 1);
  return 0;
}

void cprof__trace_cpu_sample(pid_t tid, int64_t ts, const uintptr_t *pcs, int depth) {
  cprof__trace_cpu_sample_seq(tid, ts, CPROF__TRACE_SEQ_UNKNOWN, pcs, depth);
}

void cprof__trace_cpu_sample_seq(pid_t tid, int64_t ts, uint64_t seq, const uintptr_t *pcs,
                                 int depth) {
  if (!(listeners() & CPROF__LISTEN_TRACE) || depth <= 0)
    return;
  int keep = depth < CPROF__TRACE_CPU_FRAMES ? depth : CPROF__TRACE_CPU_FRAMES;
  size_t need = sizeof(cpu_rec_t) + (size_t)keep * sizeof(uintptr_t);
  lock(&cpu_lock);
  if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != RECORDING) {
    /* Before the trace's start or after its end: not its sample. */
  } else if (!cpu_store || CPU_STORE - cpu_used < need) {
    cpu_dropped++;
  } else {
    cpu_rec_t *r = (cpu_rec_t *)(void *)(cpu_store + cpu_used);
    r->ts = ts;
    r->seq = seq;
    r->tid = tid;
    r->depth = keep;
    memcpy(r->pcs, pcs, (size_t)keep * sizeof(uintptr_t));
    /* A stack cut short keeps its last word when that says which
     * modules its addresses belong to (unwind/pc.h). */
    if (keep < depth && cprof__pc_is_modules(pcs[depth - 1]))
      r->pcs[keep - 1] = pcs[depth - 1];
    cpu_used += need;
  }
  unlock(&cpu_lock);
}

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
  cpu_rec_t **at, **end;
} samples_t;

static int by_thread_and_time(const void *a, const void *b) {
  const cpu_rec_t *x = *(cpu_rec_t *const *)a, *y = *(cpu_rec_t *const *)b;
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
static size_t index_samples(unsigned char *store, size_t used, cpu_rec_t ***out, uint64_t *lost_n) {
  size_t n = 0;
  *out = NULL;
  for (size_t off = 0; off < used; n++)
    off +=
        sizeof(cpu_rec_t) + (size_t)((cpu_rec_t *)(void *)(store + off))->depth * sizeof(uintptr_t);
  if (n == 0)
    return 0;
  cpu_rec_t **idx = malloc(n * sizeof *idx);
  if (!idx) {
    *lost_n += n;
    return 0;
  }
  size_t i = 0;
  for (size_t off = 0; off < used; i++) {
    idx[i] = (cpu_rec_t *)(void *)(store + off);
    off += sizeof(cpu_rec_t) + (size_t)idx[i]->depth * sizeof(uintptr_t);
  }
  qsort(idx, n, sizeof *idx, by_thread_and_time);
  *out = idx;
  return n;
}

/* The samples of thread tid in the sorted index, not yet handed out. */
static samples_t samples_of(cpu_rec_t **idx, size_t n, pid_t tid) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (idx[mid]->tid < tid)
      lo = mid + 1;
    else
      hi = mid;
  }
  size_t end = lo;
  while (end < n && idx[end]->tid == tid)
    end++;
  return (samples_t){idx + lo, idx + end};
}

/* Whether sample c comes before the event appended when its thread's count
 * was `seq`, at time `until`: by the count when the sample has one, else by
 * time. */
static int before(const cpu_rec_t *c, uint64_t seq, int64_t until) {
  return c->seq != CPROF__TRACE_SEQ_UNKNOWN ? c->seq <= seq : c->ts <= until;
}

/* Hands out s's samples that came before the event at `until` whose count
 * was `seq` (see before), with their times within [since, until], marking
 * each handed (its depth set to 0: a stored one has at least 1). */
static void give_samples(samples_t *s, uint64_t seq, int64_t since, int64_t until,
                         cprof__trace_rec_t *r, void (*fn)(const cprof__trace_rec_t *r, void *ctx),
                         void *ctx) {
  for (; s->at < s->end && before(*s->at, seq, until); s->at++) {
    cpu_rec_t *c = *s->at;
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
static void each_record(const buf_t *buf, samples_t *cpu,
                        void (*fn)(const cprof__trace_rec_t *r, void *ctx), void *ctx) {
  char s1[CPROF_MAX_TRACE_NAME + 1], s2[CPROF_MAX_TRACE_MESSAGE + 1];
  const unsigned char *data = (const unsigned char *)buf->data;
  cprof__trace_rec_t r = {.tid = buf->tid, .thread = buf->name, .thread_dropped = buf->dropped};
  uint64_t seq = buf->first;
  int64_t since = INT64_MIN;
  for (size_t off = 0; off < buf->used; seq++) {
    hdr_t h;
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
  int recording = RECORDING;
  if (!__atomic_compare_exchange_n(&state, &recording, ENDING, 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_RELAXED))
    return;
  cprof__trace_listen(CPROF__LISTEN_TRACE, 0);
  lock(&blocks.lock);
  for (cprof__thread_node_t *n = blocks.all; n; n = n->next) {
    block_t *b = (block_t *)n;
    while (__atomic_load_n(&b->appending, __ATOMIC_SEQ_CST))
      sched_yield();
    __atomic_store_n(&b->buf, NULL, __ATOMIC_RELAXED);
  }
  buf_t *got = bufs;
  bufs = NULL;
  buf_bytes = 0;
  unlock(&blocks.lock);
  lock(&cpu_lock);
  unsigned char *store = cpu_store;
  size_t store_used = cpu_used;
  uint64_t total = __atomic_exchange_n(&lost, 0, __ATOMIC_RELAXED) + cpu_dropped;
  cpu_store = NULL;
  unlock(&cpu_lock);

  /* The list holds the newest buffer first; hand the threads out in the
   * order they first recorded. */
  buf_t *ordered = NULL;
  while (got) {
    buf_t *next = got->next;
    got->next = ordered;
    ordered = got;
    got = next;
  }
  cpu_rec_t **idx = NULL;
  size_t nsamples = store ? index_samples(store, store_used, &idx, &total) : 0;
  for (buf_t *buf = ordered; buf; buf = buf->next) {
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
  release_memory(store);
  while (ordered) {
    buf_t *next = ordered->next;
    release_memory(ordered);
    ordered = next;
  }
  if (dropped)
    *dropped = total;
  __atomic_store_n(&state, IDLE, __ATOMIC_RELEASE);
}

/* ---- Open regions ---- */

/* The writer's side of the sequence lock. Every store inside it is a
 * release, so that a reader that sees one of them also sees `seq` odd; on
 * x86 these are plain stores. (labels.c gets the same with a fence, which
 * TSan cannot follow.) */
static void seq_begin(block_t *b) { __atomic_store_n(&b->seq, b->seq + 1, __ATOMIC_RELAXED); }
static void seq_end(block_t *b) { __atomic_store_n(&b->seq, b->seq + 1, __ATOMIC_RELEASE); }

/* Only the words that the name and its NUL cover: what lies past the NUL
 * is never read as text. */
static void store_name(block_t *b, int d, const char *s, size_t n) {
  uint64_t w[NAME_WORDS] = {0};
  memcpy(w, s, n);
  for (size_t i = 0; i < (n + 8) / 8; i++)
    __atomic_store_n(&b->names[d][i], w[i], __ATOMIC_RELEASE);
}

/* Acquire loads: the reader's second look at `seq` cannot move above them. */
static void load_name(const block_t *b, int d, uint64_t w[NAME_WORDS]) {
  for (int i = 0; i < NAME_WORDS; i++)
    w[i] = __atomic_load_n(&b->names[d][i], __ATOMIC_ACQUIRE);
}

/* The thread's depth in generation gen: 0 for a stack of an older one. */
static int depth_in(const block_t *b, unsigned gen) {
  if (__atomic_load_n(&b->gen, __ATOMIC_ACQUIRE) != gen)
    return 0;
  return __atomic_load_n(&b->depth, __ATOMIC_ACQUIRE);
}

__attribute__((noinline)) static void region_begin(int l, const char *name) {
  name = name ? name : "";
  size_t n = cut(name, CPROF_MAX_TRACE_NAME);
  block_t *b = my_block();
  if (!b) {
    if (l & CPROF__LISTEN_TRACE)
      __atomic_add_fetch(&lost, 1, __ATOMIC_RELAXED);
    return;
  }
  unsigned gen = generation(l);
  int d = depth_in(b, gen);
  seq_begin(b);
  __atomic_store_n(&b->gen, gen, __ATOMIC_RELEASE);
  if (d < CPROF_MAX_TRACE_DEPTH)
    store_name(b, d, name, n);
  if (d < INT_MAX)
    __atomic_store_n(&b->depth, d + 1, __ATOMIC_RELEASE);
  seq_end(b);
  if (l & CPROF__LISTEN_TRACE)
    append(b, CPROF__TRACE_REGION_BEGIN, 0, 0, 0, name, n, "", 0);
}

__attribute__((noinline)) static void region_end(int l) {
  block_t *b = mine;
  int d = b ? depth_in(b, generation(l)) : 0;
  if (d == 0)
    return; /* no region open, or none begun while someone listened */
  seq_begin(b);
  __atomic_store_n(&b->depth, --d, __ATOMIC_RELEASE);
  seq_end(b);
  if (l & CPROF__LISTEN_TRACE) {
    uint64_t w[NAME_WORDS + 1] = {0};
    if (d < CPROF_MAX_TRACE_DEPTH)
      load_name(b, d, w);
    const char *name = (const char *)w;
    append(b, CPROF__TRACE_REGION_END, 0, 0, 0, name, strlen(name), "", 0);
  }
}

/* The reader's side of the sequence lock, for another thread's block: 0
 * with its depth and innermost name, or -1 when the owner kept changing
 * them. */
static int copy_innermost(const block_t *b, unsigned gen, int *depth,
                          char name[CPROF_MAX_TRACE_NAME + 1]) {
  uint64_t w[NAME_WORDS];
  for (int tries = 0; tries < 4; tries++) {
    unsigned s1 = __atomic_load_n(&b->seq, __ATOMIC_ACQUIRE);
    if (s1 & 1)
      continue;
    int d = depth_in(b, gen);
    if (d > 0)
      load_name(b, (d < CPROF_MAX_TRACE_DEPTH ? d : CPROF_MAX_TRACE_DEPTH) - 1, w);
    if (__atomic_load_n(&b->seq, __ATOMIC_RELAXED) != s1)
      continue;
    *depth = d;
    if (d > 0) {
      memcpy(name, w, sizeof w);
      name[CPROF_MAX_TRACE_NAME] = '\0';
    }
    return 0;
  }
  return -1;
}

void cprof__regions_each(void (*fn)(pid_t tid, const char *innermost, int depth, void *ctx),
                         void *ctx) {
  char name[CPROF_MAX_TRACE_NAME + 1];
  lock(&blocks.lock);
  int l = listeners();
  for (const cprof__thread_node_t *n = blocks.all; n && (l & CPROF__LISTEN_BITS); n = n->next) {
    int d;
    if (copy_innermost((const block_t *)n, generation(l), &d, name) == 0 && d > 0)
      fn(n->tid, name, d, ctx);
  }
  unlock(&blocks.lock);
}

/* ---- The public calls: one relaxed load when nobody listens ---- */

void(cprof_region_begin)(const char *name) {
  int l = listeners();
  if (__builtin_expect(l & CPROF__LISTEN_BITS, 0))
    region_begin(l, name);
}

void(cprof_region_end)(void) {
  int l = listeners();
  if (__builtin_expect(l & CPROF__LISTEN_BITS, 0))
    region_end(l);
}

uint64_t(cprof_task_begin)(const char *name) {
  if (__builtin_expect(!(listeners() & CPROF__LISTEN_TRACE), 1))
    return 0;
  uint64_t id = __atomic_add_fetch(&next_task, 1, __ATOMIC_RELAXED);
  emit(CPROF__TRACE_TASK_BEGIN, 0, id, 0, name, NULL);
  return id;
}

void(cprof_task_end)(uint64_t id) {
  if (__builtin_expect(!(listeners() & CPROF__LISTEN_TRACE), 1) || id == 0)
    return;
  emit(CPROF__TRACE_TASK_END, 0, id, 0, NULL, NULL);
}

void(cprof_trace_log)(const char *category, const char *message) {
  if (__builtin_expect(listeners() & CPROF__LISTEN_TRACE, 0))
    emit(CPROF__TRACE_LOG, 0, 0, 0, category, message);
}

int(cprof_trace_enabled)(void) { return (listeners() & CPROF__LISTEN_TRACE) != 0; }

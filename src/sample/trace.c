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
#include "sample/trace_internal.h"

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

#define MIN_BUFFER 64
#define MAX_BUFFER ((size_t)1 << 30)

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

int cprof__trace_state;     /* atomic */
uint64_t cprof__trace_lost; /* events of threads without a buffer; atomic */
static uint64_t next_task;  /* atomic */

static __thread __attribute__((tls_model("initial-exec"))) cprof__trace_block_t *mine;

/* Under the blocks' lock (cprof__trace_blocks, below): every buffer of the trace,
 * and the size of a new buffer (0: no trace takes buffers now). */
cprof__trace_buf_t *cprof__trace_bufs;
size_t cprof__trace_buf_bytes;

#define CPU_STORE ((size_t)16 << 20) /* mapped at the trace's start, touched as filled */
unsigned char *cprof__trace_cpu_store;
size_t cprof__trace_cpu_used;
uint64_t cprof__trace_cpu_dropped;
pthread_mutex_t cprof__trace_cpu_lock = PTHREAD_MUTEX_INITIALIZER;

/* cprof's locks are taken with the guard raised, so that the lock
 * wrappers (interpose/locks.c) pass them through unprofiled. */
void cprof__trace_lock(pthread_mutex_t *m) {
  cprof__guard_enter();
  pthread_mutex_lock(m);
}

void cprof__trace_unlock(pthread_mutex_t *m) {
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

void cprof__trace_free(void *p) {
  if (!p)
    return;
  char *head = (char *)p - ALLOC_HEAD;
  munmap(head, *(size_t *)(void *)head);
}

static void set_mine(void *b) { mine = b; }
static void make_key(void);

/* Every thread's block (thread_blocks.h), in memory of cprof's own. */
cprof__thread_blocks_t cprof__trace_blocks = CPROF__THREAD_BLOCKS_INIT(
    sizeof(cprof__trace_block_t), alloc, cprof__trace_free, set_mine, make_key);

static int listeners(void) { return __atomic_load_n(&cprof_trace_listening_, __ATOMIC_RELAXED); }
static unsigned generation(int l) { return (unsigned)l & ~(unsigned)CPROF__LISTEN_BITS; }

void cprof__trace_listen(int bit, int on) {
  int i = bit == CPROF__LISTEN_TRACE ? 0 : bit == CPROF__LISTEN_WALL ? 1 : -1;
  if (i < 0)
    return;
  cprof__trace_lock(&listen_lock);
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
  cprof__trace_unlock(&listen_lock);
}

static void emit(int kind, int64_t ts, uint64_t id, uint64_t dur, const char *s1, const char *s2);

/* Under the blocks' lock, as a thread exits: its buffer, if any, stays on
 * the trace's list, with the thread's name when the trace has one. */
static void mark_exited(void *block, void *name) {
  cprof__trace_buf_t *buf =
      __atomic_load_n(&((cprof__trace_block_t *)block)->buf, __ATOMIC_RELAXED);
  if (buf) {
    if (((const char *)name)[0])
      memcpy(buf->name, name, sizeof buf->name);
    buf->exited = 1;
  }
}

/* At thread exit. The buffer, if any, stays on the trace's list. */
static void release(void *p) {
  cprof__trace_block_t *b = p;
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
  cprof__thread_blocks_remove(&cprof__trace_blocks, b, mark_exited, name);
}

static void make_key(void) { cprof__thread_blocks_make_key(&cprof__trace_blocks, release); }

static void fork_prepare(void) {
  cprof__trace_lock(&listen_lock);
  cprof__trace_lock(&cprof__trace_blocks.lock);
  cprof__trace_lock(&cprof__trace_cpu_lock);
}

static void fork_parent(void) {
  cprof__trace_unlock(&cprof__trace_cpu_lock);
  cprof__trace_unlock(&cprof__trace_blocks.lock);
  cprof__trace_unlock(&listen_lock);
}

static void fork_child(void) {
  cprof__thread_node_t *gone = cprof__thread_blocks_fork_child(&cprof__trace_blocks, mine);
  if (mine) {
    mine->buf = NULL;
    mine->appending = 0;
  }
  cprof__trace_buf_t *old = cprof__trace_bufs;
  cprof__trace_bufs = NULL;
  cprof__trace_buf_bytes = 0;
  counts[0] = counts[1] = 0;
  unsigned gen = generation(cprof_trace_listening_);
  cprof_trace_listening_ = (int)((gen + CPROF__LISTEN_BITS + 1) & (unsigned)INT_MAX);
  cprof__trace_state = CPROF__TRACING_IDLE;
  cprof__trace_lost = 0;
  unsigned char *store = cprof__trace_cpu_store; /* the parent's trace's, copied: freed below */
  cprof__trace_cpu_store = NULL;
  cprof__trace_cpu_used = 0;
  cprof__trace_cpu_dropped = 0;
  cprof__trace_unlock(&cprof__trace_cpu_lock);
  cprof__trace_unlock(&cprof__trace_blocks.lock);
  cprof__trace_unlock(&listen_lock);
  cprof__thread_blocks_free_list(&cprof__trace_blocks, gone);
  while (old) {
    cprof__trace_buf_t *next = old->next;
    cprof__trace_free(old);
    old = next;
  }
  cprof__trace_free(store);
}

__attribute__((constructor(103))) static void register_fork_handlers(void) {
  pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* The calling thread's block, made on first use; NULL without memory. */
static cprof__trace_block_t *my_block(void) {
  return mine ? mine : cprof__thread_blocks_new(&cprof__trace_blocks);
}

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
static cprof__trace_buf_t *new_buf(cprof__trace_block_t *b) {
  char name[16] = "";
  prctl(PR_GET_NAME, name);
  cprof__trace_lock(&cprof__trace_blocks.lock);
  cprof__trace_buf_t *buf =
      cprof__trace_buf_bytes ? alloc(sizeof *buf + cprof__trace_buf_bytes) : NULL;
  if (buf) {
    memset(buf, 0, sizeof *buf);
    buf->first = __atomic_load_n(&appended, __ATOMIC_RELAXED);
    buf->tid = b->node.tid;
    memcpy(buf->name, name, sizeof name);
    buf->cap = cprof__trace_buf_bytes;
    buf->next = cprof__trace_bufs;
    cprof__trace_bufs = buf;
    __atomic_store_n(&b->buf, buf, __ATOMIC_RELAXED);
  } else if (cprof__trace_buf_bytes) {
    __atomic_add_fetch(&cprof__trace_lost, 1, __ATOMIC_RELAXED);
  }
  cprof__trace_unlock(&cprof__trace_blocks.lock);
  return buf;
}

/* Appends one event to the calling thread's buffer, if a trace records. */
static void append(cprof__trace_block_t *b, int kind, int64_t ts, uint64_t id, uint64_t dur,
                   const char *s1, size_t n1, const char *s2, size_t n2) {
  size_t need = CPROF__TRACE_REC_BYTES(n1, n2);
  for (int tries = 0;; tries++) {
    __atomic_store_n(&b->appending, 1, __ATOMIC_SEQ_CST);
    if (!(__atomic_load_n(&cprof_trace_listening_, __ATOMIC_SEQ_CST) & CPROF__LISTEN_TRACE))
      break;
    cprof__trace_buf_t *buf = __atomic_load_n(&b->buf, __ATOMIC_RELAXED);
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
    cprof__trace_hdr_t h = {ts, id, dur, (uint16_t)kind, (uint16_t)n1, (uint16_t)n2, 0};
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
  cprof__trace_block_t *b = my_block();
  if (!b) {
    __atomic_add_fetch(&cprof__trace_lost, 1, __ATOMIC_RELAXED);
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
  int idle = CPROF__TRACING_IDLE;
  if (!__atomic_compare_exchange_n(&cprof__trace_state, &idle, CPROF__TRACING_RECORDING, 0,
                                   __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
    return -EBUSY;
  __atomic_store_n(&cprof__trace_lost, 0, __ATOMIC_RELAXED);
  unsigned char *store = alloc(CPU_STORE);
  cprof__trace_lock(&cprof__trace_cpu_lock);
  cprof__trace_cpu_store = store; /* without one, the trace has no CPU samples: counted */
  cprof__trace_cpu_used = 0;
  cprof__trace_cpu_dropped = 0;
  cprof__trace_unlock(&cprof__trace_cpu_lock);
  cprof__trace_lock(&cprof__trace_blocks.lock);
  cprof__trace_buf_bytes = bytes_per_thread;
  cprof__trace_unlock(&cprof__trace_blocks.lock);
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
  size_t need = sizeof(cprof__trace_cpu_rec_t) + (size_t)keep * sizeof(uintptr_t);
  cprof__trace_lock(&cprof__trace_cpu_lock);
  if (__atomic_load_n(&cprof__trace_state, __ATOMIC_ACQUIRE) != CPROF__TRACING_RECORDING) {
    /* Before the trace's start or after its end: not its sample. */
  } else if (!cprof__trace_cpu_store || CPU_STORE - cprof__trace_cpu_used < need) {
    cprof__trace_cpu_dropped++;
  } else {
    cprof__trace_cpu_rec_t *r =
        (cprof__trace_cpu_rec_t *)(void *)(cprof__trace_cpu_store + cprof__trace_cpu_used);
    r->ts = ts;
    r->seq = seq;
    r->tid = tid;
    r->depth = keep;
    memcpy(r->pcs, pcs, (size_t)keep * sizeof(uintptr_t));
    /* A stack cut short keeps its last word when that says which
     * modules its addresses belong to (unwind/pc.h). */
    if (keep < depth && cprof__pc_is_modules(pcs[depth - 1]))
      r->pcs[keep - 1] = pcs[depth - 1];
    cprof__trace_cpu_used += need;
  }
  cprof__trace_unlock(&cprof__trace_cpu_lock);
}

/* ---- Open regions ---- */

/* The writer's side of the sequence lock. Every store inside it is a
 * release, so that a reader that sees one of them also sees `seq` odd; on
 * x86 these are plain stores. (labels.c gets the same with a fence, which
 * TSan cannot follow.) */
static void seq_begin(cprof__trace_block_t *b) {
  __atomic_store_n(&b->seq, b->seq + 1, __ATOMIC_RELAXED);
}
static void seq_end(cprof__trace_block_t *b) {
  __atomic_store_n(&b->seq, b->seq + 1, __ATOMIC_RELEASE);
}

/* Only the words that the name and its NUL cover: what lies past the NUL
 * is never read as text. */
static void store_name(cprof__trace_block_t *b, int d, const char *s, size_t n) {
  uint64_t w[CPROF__TRACE_NAME_WORDS] = {0};
  memcpy(w, s, n);
  for (size_t i = 0; i < (n + 8) / 8; i++)
    __atomic_store_n(&b->names[d][i], w[i], __ATOMIC_RELEASE);
}

/* Acquire loads: the reader's second look at `seq` cannot move above them. */
static void load_name(const cprof__trace_block_t *b, int d, uint64_t w[CPROF__TRACE_NAME_WORDS]) {
  for (int i = 0; i < CPROF__TRACE_NAME_WORDS; i++)
    w[i] = __atomic_load_n(&b->names[d][i], __ATOMIC_ACQUIRE);
}

/* The thread's depth in generation gen: 0 for a stack of an older one. */
static int depth_in(const cprof__trace_block_t *b, unsigned gen) {
  if (__atomic_load_n(&b->gen, __ATOMIC_ACQUIRE) != gen)
    return 0;
  return __atomic_load_n(&b->depth, __ATOMIC_ACQUIRE);
}

__attribute__((noinline)) static void region_begin(int l, const char *name) {
  name = name ? name : "";
  size_t n = cut(name, CPROF_MAX_TRACE_NAME);
  cprof__trace_block_t *b = my_block();
  if (!b) {
    if (l & CPROF__LISTEN_TRACE)
      __atomic_add_fetch(&cprof__trace_lost, 1, __ATOMIC_RELAXED);
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
  cprof__trace_block_t *b = mine;
  int d = b ? depth_in(b, generation(l)) : 0;
  if (d == 0)
    return; /* no region open, or none begun while someone listened */
  seq_begin(b);
  __atomic_store_n(&b->depth, --d, __ATOMIC_RELEASE);
  seq_end(b);
  if (l & CPROF__LISTEN_TRACE) {
    uint64_t w[CPROF__TRACE_NAME_WORDS + 1] = {0};
    if (d < CPROF_MAX_TRACE_DEPTH)
      load_name(b, d, w);
    const char *name = (const char *)w;
    append(b, CPROF__TRACE_REGION_END, 0, 0, 0, name, strlen(name), "", 0);
  }
}

/* The reader's side of the sequence lock, for another thread's block: 0
 * with its depth and innermost name, or -1 when the owner kept changing
 * them. */
static int copy_innermost(const cprof__trace_block_t *b, unsigned gen, int *depth,
                          char name[CPROF_MAX_TRACE_NAME + 1]) {
  uint64_t w[CPROF__TRACE_NAME_WORDS];
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
  cprof__trace_lock(&cprof__trace_blocks.lock);
  int l = listeners();
  for (const cprof__thread_node_t *n = cprof__trace_blocks.all; n && (l & CPROF__LISTEN_BITS);
       n = n->next) {
    int d;
    if (copy_innermost((const cprof__trace_block_t *)n, generation(l), &d, name) == 0 && d > 0)
      fn(n->tid, name, d, ctx);
  }
  cprof__trace_unlock(&cprof__trace_blocks.lock);
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

#include "metrics/sampler.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/fds.h"
#include "core/guard.h"
#include "core/log.h"
#include "core/pages.h"
#include "metrics/tree.h"
#include "registry/stats.h"
#include "tree/tree.h"

static struct {
  pthread_mutex_t lock; /* the ring, the state; never held across a read of /proc */
  pthread_cond_t cond;  /* on CLOCK_MONOTONIC: stop, for the thread; started, for its creator */
  pthread_t thread;
  int running, started, stop, table_err, atexit_set, exiting;
  int on; /* the thread records: the endpoints answer */
  long interval_ms, window_s;
  cprof__metrics_ring_t ring;
  size_t ring_bytes;
  int64_t start_ms; /* the process's start, unix ms; 0: not read yet */
  /* At a tree's owner with members: the tree's points (metrics/tree.h),
   * mapped at the first point with a member; NULL elsewhere. */
  cprof__metrics_tree_t *tree;
  size_t tree_bytes;
  int tree_inherited;           /* the mapping is not MADV_DONTFORK: a child unmaps it */
  struct tree_scratch *scratch; /* the thread's, at a tree's owner (read_tree) */
  int scratch_inherited;
} m = {.lock = PTHREAD_MUTEX_INITIALIZER};

static int64_t serve_ns; /* atomic */

void cprof__metrics_serve_add(int64_t ns) {
  if (ns > 0)
    __atomic_add_fetch(&serve_ns, ns, __ATOMIC_RELAXED);
}

/* ---- reading the figures ---- */

/* The process readers are sample/proc.c's, reached through the registry
 * (registry/stats.h), as every consumer reaches a sampler. */

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The figures that need no descriptor, for any thread. */
static void read_direct(cprof__metrics_point_t *p) {
  p->t_ms = now_ms();
  cprof__proc_usage_t u;
  cprof__stats_usage(&u);
  p->cpu_user_us = u.cpu_user_us;
  p->cpu_system_us = u.cpu_system_us;
  p->ctx_voluntary = u.ctx_voluntary;
  p->ctx_involuntary = u.ctx_involuntary;
  p->faults_minor = u.faults_minor;
  p->faults_major = u.faults_major;
  p->rss_peak_bytes = u.rss_peak_bytes;
  cprof__stats_heap(&p->heap_inuse_bytes, &p->heap_alloc_bytes);
  uint64_t taken, dropped;
  cprof__stats_cpu_samples(&taken, &dropped);
  p->cprof_samples = (int64_t)taken;
  p->cprof_dropped = (int64_t)dropped;
  p->cprof_memory_bytes = (int64_t)(cprof__stats_tables_bytes() + m.ring_bytes);
  p->cprof_serve_ns = __atomic_load_n(&serve_ns, __ATOMIC_RELAXED);
}

/* The figures from /proc: only in cprof's own descriptor table. */
static void read_proc(cprof__metrics_point_t *p) {
  cprof__proc_status_t s;
  cprof__stats_status(&s);
  p->rss_bytes = s.rss_bytes;
  if (s.rss_peak_bytes >= 0) /* VmHWM, else getrusage's */
    p->rss_peak_bytes = s.rss_peak_bytes;
  p->vm_bytes = s.vm_bytes;
  p->threads = s.threads;
  p->read_bytes = s.read_bytes;
  p->write_bytes = s.write_bytes;
}

void cprof__metrics_read(cprof__metrics_point_t *p) {
  read_direct(p);
  if (cprof__fds_in_own_table()) {
    read_proc(p);
    p->open_fds = cprof__stats_count_fds();
    return;
  }
  /* A program's thread (cprof_handle_request called by the program):
   * opening a file would take one of its descriptor numbers. */
  pthread_mutex_lock(&m.lock);
  if (m.ring.n) {
    const cprof__metrics_point_t *last = cprof__metrics_ring_at(&m.ring, m.ring.n - 1);
    p->rss_bytes = last->rss_bytes;
    p->vm_bytes = last->vm_bytes;
    p->threads = last->threads;
    p->open_fds = last->open_fds;
    p->read_bytes = last->read_bytes;
    p->write_bytes = last->write_bytes;
  } else {
    p->rss_bytes = p->vm_bytes = p->threads = p->open_fds = p->read_bytes = p->write_bytes = -1;
  }
  pthread_mutex_unlock(&m.lock);
}

/* ---- the tree's processes ---- */

/* At a tree's owner the thread also reads every process of the tree from
 * /proc/PID (tree/figures.c): the members run no sampler and are never
 * asked. Which processes there are comes from cprof__tree_list, which
 * reads the tree's directory and /proc/net/unix (and allocates, under
 * cprof's guard): at every point while that costs less than
 * TREE_BUDGET_PPM of the thread's time, less often past it. Between
 * lists a process gone (or its pid taken by another: a new start time)
 * stops its series at once; one new waits for the next list. */
#define TREE_BUDGET_PPM 1000
#define TREE_LIST_MAX (4 * CPROF_METRICS_TREE_MAX)

typedef struct {
  pid_t pid[CPROF_METRICS_TREE_MAX];
  long long start[CPROF_METRICS_TREE_MAX]; /* 0: not read yet */
  int n, processes;
  long every, wait; /* list every `every` points; `wait` more to go */
} tree_pace_t;

static int64_t thread_cpu_ns(void);

/* What read_tree lists and reads, some 75 kB: not on the thread's stack,
 * whose touched pages every member forked later would carry, resident,
 * but in pages of its own that no fork inherits, mapped at the owner's
 * first point and kept across a stop and start. */
struct tree_scratch {
  cprof__tree_proc_t procs[TREE_LIST_MAX];
  cprof__tree_figures_t figs[CPROF_METRICS_TREE_MAX];
};

/* Pages no fork inherits (MADV_DONTFORK); *inherited when madvise
 * refused, so that a child unmaps them itself. */
static void *map_unforked(size_t bytes, int *inherited) {
  void *p = cprof__pages_map(bytes);
  if (p)
    *inherited = madvise(p, cprof__pages_round(bytes), MADV_DONTFORK) != 0;
  return p;
}

/* The figures of the tree's processes now (owner first), into the
 * scratch's figs: how many (0 when this process owns no tree).
 * *processes: how many the tree has (more than returned past
 * CPROF_METRICS_TREE_MAX). */
static int read_tree(tree_pace_t *tp, long interval_ms, int *processes) {
  *processes = 0;
  if (cprof__tree_role() != CPROF_TREE_OWNER) {
    tp->n = 0;
    return 0;
  }
  if (!m.scratch && !(m.scratch = map_unforked(sizeof *m.scratch, &m.scratch_inherited)))
    return 0;
  cprof__tree_proc_t *procs = m.scratch->procs;
  cprof__tree_figures_t *f = m.scratch->figs;
  if (tp->wait-- <= 0) {
    int64_t t0 = thread_cpu_ns();
    /* It allocates (opendir, /proc/net/unix): under the guard, so that
     * cprof's blocks are none of the heap profile's. */
    cprof__guard_enter();
    int np = cprof__tree_list(procs, TREE_LIST_MAX);
    cprof__guard_leave();
    int64_t cost = thread_cpu_ns() - t0;
    int64_t budget = (int64_t)interval_ms * TREE_BUDGET_PPM; /* ns */
    tp->every = budget > 0 ? (long)(cost / budget) + 1 : 1;
    tp->wait = tp->every - 1;
    /* Keep the start times of the pids still listed. */
    tree_pace_t was = *tp;
    tp->n = 0;
    tp->processes = np;
    for (int i = 0; i < np && tp->n < CPROF_METRICS_TREE_MAX; i++) {
      tp->pid[tp->n] = procs[i].pid;
      tp->start[tp->n] = 0;
      for (int j = 0; j < was.n; j++)
        if (was.pid[j] == procs[i].pid)
          tp->start[tp->n] = was.start[j];
      tp->n++;
    }
  }
  int n = 0, kept = 0;
  for (int i = 0; i < tp->n; i++) {
    if (cprof__tree_figures(tp->pid[i], &f[n]) != 0 ||
        (tp->start[i] && f[n].start_ticks != tp->start[i])) {
      tp->processes--; /* gone: its series stop */
      continue;
    }
    tp->pid[kept] = tp->pid[i];
    tp->start[kept++] = f[n].start_ticks;
    n++;
  }
  tp->n = kept;
  *processes = tp->processes > n ? tp->processes : n;
  return n;
}

/* Under m.lock: the tree's figures into its ring, mapped at the first
 * point with a member. */
static void record_tree(int64_t t_ms, const cprof__tree_figures_t *f, int n, int processes) {
  if (!m.tree) {
    if (n < 2)
      return;
    size_t cap = m.ring.cap;
    size_t bytes = cprof__metrics_tree_size(cap);
    /* The members fork from the owner: they must not carry its ring. */
    cprof__metrics_tree_t *t = map_unforked(bytes, &m.tree_inherited);
    if (!t) {
      cprof__log("the charts show no process tree: cannot map %zu bytes for its ring", bytes);
      return;
    }
    cprof__metrics_tree_init(t, cap, (int32_t)getpid());
    m.tree = t;
    m.tree_bytes = bytes;
  }
  cprof__metrics_tree_push(m.tree, t_ms, f, n, processes);
}

/* ---- the thread ---- */

static void add_ms(struct timespec *t, long ms) {
  t->tv_sec += ms / 1000;
  t->tv_nsec += (ms % 1000) * 1000000L;
  if (t->tv_nsec >= 1000000000L) {
    t->tv_sec++;
    t->tv_nsec -= 1000000000L;
  }
}

/* Counting descriptors costs about 0.35 us each (getdents64 of
 * /proc/self/fd), 3.5 ms for 10 000: far more than the rest of a point.
 * The thread counts them only as often as keeps that below FD_BUDGET_PPM
 * of its time (0.01 %, a tenth of the sampler's goal), measured on the
 * count itself: every point up to some 300 descriptors at 1 s, every 36th
 * point for 10 000. The points between repeat the last count. */
#define FD_BUDGET_PPM 100

typedef struct {
  int64_t last;     /* the last count */
  long every, wait; /* count every `every` points; `wait` more to go */
} fd_pace_t;

static int64_t thread_cpu_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int64_t paced_count_fds(fd_pace_t *f, long interval_ms) {
  if (f->wait-- > 0)
    return f->last;
  int64_t t0 = thread_cpu_ns();
  f->last = cprof__stats_count_fds();
  int64_t cost = thread_cpu_ns() - t0;
  int64_t budget = (int64_t)interval_ms * FD_BUDGET_PPM; /* ns: interval_ms * 1e6 * ppm / 1e6 */
  f->every = budget > 0 ? (long)(cost / budget) + 1 : 1;
  f->wait = f->every - 1;
  return f->last;
}

static void *sampler(void *unused) {
  (void)unused;
  pthread_setname_np(pthread_self(), "cprof-metrics");
  int table = cprof__fds_unshare();
  int64_t start = table == 0 && !m.start_ms ? cprof__stats_start_ms() : 0;
  pthread_mutex_lock(&m.lock);
  m.table_err = table;
  if (start)
    m.start_ms = start;
  if (table != 0) {
    m.started = 1;
    pthread_cond_broadcast(&m.cond);
    pthread_mutex_unlock(&m.lock);
    return NULL;
  }
  struct timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  fd_pace_t fds = {.last = -1};
  tree_pace_t tree = {.n = 0};
  while (!m.stop) {
    long interval_ms = m.interval_ms;
    pthread_mutex_unlock(&m.lock);
    cprof__metrics_point_t p;
    read_direct(&p);
    read_proc(&p);
    p.open_fds = paced_count_fds(&fds, interval_ms);
    int processes, nfigs = read_tree(&tree, interval_ms, &processes);
    pthread_mutex_lock(&m.lock);
    cprof__metrics_ring_push(&m.ring, &p);
    if (nfigs)
      record_tree(p.t_ms, m.scratch->figs, nfigs, processes);
    if (!m.started) { /* the first point is in: the answers are whole */
      m.started = 1;
      pthread_cond_broadcast(&m.cond);
    }
    /* On a grid, not after each read: the points stay interval_ms apart
     * however long a read takes. A late wake (a stopped process) skips
     * ahead rather than catching up. */
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    add_ms(&next, m.interval_ms);
    if (next.tv_sec < now.tv_sec || (next.tv_sec == now.tv_sec && next.tv_nsec < now.tv_nsec)) {
      next = now;
      add_ms(&next, m.interval_ms);
    }
    while (!m.stop && pthread_cond_timedwait(&m.cond, &m.lock, &next) != ETIMEDOUT)
      ;
  }
  pthread_mutex_unlock(&m.lock);
  return NULL;
}

static void stop_at_exit(void);

static void init_cond(void) { cprof__cond_init_monotonic(&m.cond); }

int cprof__metrics_start(long interval_ms, long window_s) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, init_cond);
  pthread_mutex_lock(&m.lock);
  if (m.running || m.exiting) {
    pthread_mutex_unlock(&m.lock);
    return m.running ? -EALREADY : -ESHUTDOWN;
  }
  size_t cap = (size_t)(window_s * 1000 / interval_ms);
  if (cap < 2)
    cap = 2;
  if (m.ring.cap != cap) { /* the first start, or other settings: a new ring */
    cprof__pages_unmap(m.ring.v, m.ring_bytes);
    m.ring_bytes = cap * sizeof(cprof__metrics_point_t);
    cprof__metrics_point_t *v = cprof__pages_map(m.ring_bytes);
    if (!v) {
      m.ring_bytes = 0;
      cprof__metrics_ring_init(&m.ring, NULL, 0);
      pthread_mutex_unlock(&m.lock);
      cprof__log("the metrics sampler is off: cannot map %zu bytes for its ring", cap * sizeof *v);
      return -ENOMEM;
    }
    cprof__metrics_ring_init(&m.ring, v, cap);
    cprof__pages_unmap(m.tree, m.tree_bytes); /* its points follow the ring's */
    m.tree = NULL;
    m.tree_bytes = 0;
  }
  m.interval_ms = interval_ms;
  m.window_s = window_s;
  m.stop = m.started = 0;
  /* Created as cprof's own: every signal blocked, nothing sampled. */
  cprof__guard_enter();
  int err = pthread_create(&m.thread, NULL, sampler, NULL);
  cprof__guard_leave();
  if (err != 0) {
    pthread_mutex_unlock(&m.lock);
    cprof__log("the metrics sampler is off: cannot start its thread: %s", strerror(err));
    return -err;
  }
  /* Until the thread has a table of its own it shares ours (fds.c); and
   * until its first point, a program serving /metrics itself would get
   * none of the /proc figures (cprof__metrics_read). */
  while (!m.started)
    pthread_cond_wait(&m.cond, &m.lock);
  if (m.table_err) {
    pthread_mutex_unlock(&m.lock);
    pthread_join(m.thread, NULL);
    cprof__log("the metrics sampler is off: it needs a descriptor table of its own: %s",
               strerror(-m.table_err));
    return m.table_err;
  }
  m.running = m.on = 1;
  if (!m.atexit_set)
    m.atexit_set = atexit(stop_at_exit) == 0;
  pthread_mutex_unlock(&m.lock);
  return 0;
}

void cprof__metrics_stop(void) {
  pthread_mutex_lock(&m.lock);
  if (!m.running) {
    pthread_mutex_unlock(&m.lock);
    return;
  }
  m.stop = 1;
  m.on = 0;
  pthread_cond_broadcast(&m.cond);
  pthread_mutex_unlock(&m.lock);
  pthread_join(m.thread, NULL);
  pthread_mutex_lock(&m.lock);
  m.running = 0;
  pthread_mutex_unlock(&m.lock);
}

/* At exit the thread ends before the libraries' destructors run: it reads
 * through glibc (mallinfo2) to the last. For good: nothing starts it
 * again. */
static void stop_at_exit(void) {
  pthread_mutex_lock(&m.lock);
  m.exiting = 1;
  pthread_mutex_unlock(&m.lock);
  cprof__metrics_stop();
}

/* ---- the answers ---- */

void (*cprof__metrics_demand_hook)(void);

void cprof__metrics_demand(void) {
  void (*hook)(void) = __atomic_load_n(&cprof__metrics_demand_hook, __ATOMIC_ACQUIRE);
  if (hook)
    hook();
}

static const char *off_reason(void) {
  return "the metrics sampler is off (CPROF_METRICS=0, or it could not start: see stderr)";
}

int cprof__metrics_charts_json(int64_t since_ms, cprof__buf_t *out, const char **reason) {
  pthread_mutex_lock(&m.lock);
  if (!m.on) {
    pthread_mutex_unlock(&m.lock);
    *reason = off_reason();
    return -ENOENT;
  }
  cprof__metrics_meta_t meta = {m.interval_ms, m.window_s, m.start_ms};
  cprof__metrics_json_open(&m.ring, &meta, since_ms, out);
  if (m.tree)
    cprof__metrics_tree_json(m.tree, since_ms, ",\n", out);
  cprof__buf_puts(out, "}\n");
  pthread_mutex_unlock(&m.lock);
  return 0;
}

int cprof__metrics_exposition(cprof__buf_t *out, const char **reason) {
  pthread_mutex_lock(&m.lock);
  int on = m.on;
  cprof__metrics_meta_t meta = {m.interval_ms, m.window_s, m.start_ms};
  pthread_mutex_unlock(&m.lock);
  if (!on) {
    *reason = off_reason();
    return -ENOENT;
  }
  /* Fresh, as the client libraries' process collectors read at scrape
   * time. */
  cprof__metrics_point_t now;
  cprof__metrics_read(&now);
  struct rlimit nofile, as;
  int64_t max_fds = getrlimit(RLIMIT_NOFILE, &nofile) == 0 ? (int64_t)nofile.rlim_cur : -1;
  int64_t max_vm =
      getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY ? (int64_t)as.rlim_cur : -1;
  cprof__metrics_prometheus(&now, &meta, max_fds, max_vm, out);
  /* The tree's figures are the last point's (at most an interval old):
   * listing the tree at every scrape would cost the owner more. */
  pthread_mutex_lock(&m.lock);
  if (m.tree)
    cprof__metrics_tree_prometheus(m.tree, out);
  pthread_mutex_unlock(&m.lock);
  return 0;
}

/* ---- fork ---- */

/* The lock is held across fork (start.c's handlers): the child finds it its
 * own. The thread stayed in the parent, and the points are the parent's. */
void cprof__metrics_atfork_prepare(void) { pthread_mutex_lock(&m.lock); }
void cprof__metrics_atfork_parent(void) { pthread_mutex_unlock(&m.lock); }

void cprof__metrics_atfork_child(void) {
  m.running = m.on = m.started = m.stop = 0;
  m.ring.n = m.ring.next = 0;
  m.start_ms = 0; /* the child's own start */
  if (m.tree_inherited)
    cprof__pages_unmap(m.tree, m.tree_bytes);
  m.tree = NULL; /* the owner's, not the child's (MADV_DONTFORK) */
  m.tree_bytes = 0;
  if (m.scratch_inherited)
    cprof__pages_unmap(m.scratch, sizeof *m.scratch);
  m.scratch = NULL;
  __atomic_store_n(&serve_ns, 0, __ATOMIC_RELAXED);
  cprof__stats_atfork_child(); /* the child's rchar starts at 0 */
  init_cond();
  pthread_mutex_unlock(&m.lock);
}

/* CPROF_PUSH_URL: the library pushes its own profiles to Grafana
 * Pyroscope's ingest API (push/ingest.h), as pyroscope-go does for a Go
 * program, for short-lived jobs and for hosts nobody can scrape.
 *
 * - The CPU profile is a recording (registry/cpu.h) with a drainer thread
 *   of its own, "cprof-push-cpu", cut every CPROF_PUSH_INTERVAL: each cut
 *   is the profile of one interval, pushed with from and until its start
 *   and end. It is a reader of the CPU recording, which /debug/pprof/profile
 *   requests, CPROF_OUTPUT and cprof_cpu_profile_start read meanwhile,
 *   each for its own window: none of them waits for the push (Go's
 *   /debug/pprof/profile answers "in use" beside pyroscope-go). The heap profile is the registry's
 * "heap" at each cut, as GET /debug/pprof/heap serves it: in-use figures now, allocations since the
 * start, marked cumulative (Pyroscope takes the differences).
 * - A thread of cprof's, "cprof-push", made under cprof's guard (every
 *   signal blocked, nothing it allocates sampled), cuts the profiles and
 *   sends them, oldest first, one request at a time, in a descriptor table
 *   of its own (core/fds.c), so that libcurl's sockets are out of the
 *   program's reach and the program's descriptors out of libcurl's. Each
 *   request has a handle of its own: no connection or cache outlives it.
 * - libcurl is loaded there (dlopen, libcurl.c), the first time: a
 *   program that does not push never loads it, nor the libraries it
 *   brings.
 * - A failure to connect, a 5xx or a 429 is retried after a pause that
 *   doubles from 0.5 s to 30 s, the profiles cut meanwhile queued; the
 *   queue holds QUEUE_CAP (32 profiles: eight minutes at the default 15 s;
 *   as many per process for a tree, grown as its members are counted),
 *   and a full queue drops its oldest, counted. Any other answer drops the
 *   profile, counted, with a line on stderr. A line says when pushing
 *   fails, and one when it works again: no line while all is well.
 * - At exit (an atexit handler: before libcurl's and GnuTLS's destructors)
 *   and at cprof_stop, the last window is cut and what is queued is sent,
 *   one attempt each, until one fails or CPROF_PUSH_FLUSH_MS (2 s) has
 *   passed; the program waits that long at most, and only while Pyroscope
 *   is slow. What is left is dropped, counted, with a line.
 * - Every wait of a request has that bound, name lookups included: a
 *   request polls whether it is to end every 50 ms (ingest.c), and one cut
 *   short does not wait for its name lookup (CURLOPT_QUICK_EXIT), which a
 *   name server that does not answer holds for ten seconds and more. At
 *   exit the bound is the one all of cprof's exit handlers share
 *   (core/exit_bound.h), and a thread that has not ended by then (a
 *   libcurl that resolves names in the calling thread, say) is left
 *   behind, to end with the process: it never comes back into libcurl,
 *   whose libraries' destructors run next.
 * - The thread ends and starts again around a change of the program's
 *   credentials and when the program's last thread ends (start.c parks it
 *   then), keeping its queue. A forked child does not push itself: the
 *   owner of a process tree (tree/tree.h) pushes for all of it.
 * - A process tree: the owner pushes each process's profiles as a series
 *   of its own, the name's tags with pid=N added (APP{env=dev,pid=812}),
 *   its own included, as Pyroscope users see one series per worker and
 *   filter or group by pid. Not the merged profile: its pid is a numeric
 *   sample label (for pprof's -tagfocus), which Pyroscope does not make a
 *   series of. The members' profiles come over their sockets
 *   (tree/fetch.c), as GET /debug/pprof/...?pid=N gets them: at every cut
 *   a thread of the push's, "cprof-push-tree", asks each member for its
 *   CPU profile of the next window (?seconds=the interval) and then its
 *   heap, and the next cut pushes what came, with the owner's window. So
 *   a worker's profiles start with the first window after it joined, and
 *   the last window's are not pushed at exit (the workers are ending
 *   too). Nothing of the push runs in a worker (no thread, no libcurl
 *   state of its own, no connection): a worker's memory stays the idle
 *   cost issue 31 bounds, and one push serves the whole tree.
 *
 * Everything is under one lock, never held across a request; the queue is
 * the thread's alone while it runs. */
#include "push/push.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/exit_bound.h"
#include "core/fds.h"
#include "core/log.h"
#include "cprof.h"
#include "push/ingest.h"
#include "push/libcurl.h"
#include "registry/cpu.h"
#include "registry/registry.h"
#include "core/guard.h"
#include "registry/symbols.h"
#include "tree/tree.h"

#define QUEUE_CAP 32
#define BACKOFF_FIRST_MS 500L
#define BACKOFF_MAX_MS 30000L
#define REQUEST_TIMEOUT_MS 10000L
/* At exit, the time the thread has after its last round's deadline to
 * end, within the exit's bound, before it is left behind: its request
 * polls every 50 ms. */
#define EXIT_GRACE_MS 150
/* The most members of a tree pushed for. */
#define MAX_TREE 1024
/* Beyond a window's seconds, how long the members have to answer. */
#define TREE_SLACK_MS 2000

typedef struct item {
  char *url, *stc;
  const char *what; /* "CPU", "heap": for messages */
  cprof__buf_t body;
} item_t;

typedef struct totals {
  uint64_t pushed, retried, dropped, rejected;
} totals_t;

static struct {
  pthread_mutex_t lock;
  pthread_cond_t cond; /* on CLOCK_MONOTONIC */
  int armed;           /* pushing: cprof__push_start succeeded */
  pid_t owner;         /* the process that pushes: not a forked child */
  int running;         /* the thread runs; ended by stop */
  int started;         /* the thread has its table (or failed to) */
  int stop;            /* the thread is asked to end... */
  int final;           /* ... after the last round */
  int parked;          /* ended by cprof__push_park, to start again */
  int failing;         /* the last attempt failed; its line is written */
  int ended;           /* the thread is about to return */
  int exiting;         /* the program's exit has begun */
  int abandoned;       /* exit stopped waiting for the thread: it must never go on */
  pthread_t thread;
  cprof__cpu_reader_t *cpu; /* NULL: the heap alone */
  int hz;
  char url[512], shown[512], name[600];
  long interval_ms;
  int64_t window_start_s; /* realtime: the current window's start */
  int64_t next_ms;        /* monotonic: the next cut */
  int64_t retry_ms;       /* monotonic: the next attempt, after a failure */
  int64_t deadline_ms;    /* monotonic: when the final round gives up */
  long backoff_ms;
  item_t *ring_one[QUEUE_CAP]; /* the ring of one process */
  item_t **ring;               /* ring_one, or a larger one for a tree */
  size_t cap;                  /* the ring's slots */
  size_t head, count;
  totals_t totals;
  int atexit_set;
  int tree; /* owned a process tree: its series carry pid */
} ps = {.lock = PTHREAD_MUTEX_INITIALIZER};

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void init_once(void) { cprof__cond_init_monotonic(&ps.cond); }

static int64_t mono_ms(void) { return cprof__now_ms(CLOCK_MONOTONIC); }

/* ---- The queue (the thread's) ---- */

static void item_free(item_t *it) {
  if (!it)
    return;
  free(it->url);
  free(it->stc);
  cprof__buf_free(&it->body);
  free(it);
}

static void enqueue(item_t *it) {
  pthread_mutex_lock(&ps.lock);
  if (!ps.ring) {
    ps.ring = ps.ring_one;
    ps.cap = QUEUE_CAP;
  }
  if (ps.count == ps.cap) { /* the oldest goes: the newest tell most about now */
    item_free(ps.ring[ps.head]);
    ps.head = (ps.head + 1) % ps.cap;
    ps.count--;
    ps.totals.dropped++;
  }
  ps.ring[(ps.head + ps.count) % ps.cap] = it;
  ps.count++;
  pthread_mutex_unlock(&ps.lock);
}

static void dequeue_locked(void) {
  item_free(ps.ring[ps.head]);
  ps.head = (ps.head + 1) % ps.cap;
  ps.count--;
}

/* Room for QUEUE_CAP profiles of each of n processes: a tree's cut
 * queues two of every process at once, which a ring of 32 would drop from
 * 16 workers on. The queue's order is kept; it never shrinks. */
static void grow(size_t n) {
  size_t want = QUEUE_CAP * (n ? n : 1);
  pthread_mutex_lock(&ps.lock);
  item_t **ring = want > ps.cap ? calloc(want, sizeof *ring) : NULL;
  if (ring) {
    for (size_t i = 0; i < ps.count; i++)
      ring[i] = ps.ring[(ps.head + i) % ps.cap];
    if (ps.ring != ps.ring_one)
      free(ps.ring);
    ps.ring = ring;
    ps.cap = want;
    ps.head = 0;
  }
  pthread_mutex_unlock(&ps.lock);
}

/* A profile of kind with these sample types, over [from, until], its body
 * taken from b (freed either way). */
static void push_profile(const char *name, const char *what, const char *kind, int delta,
                         const cprof__value_type_t *types, size_t n, long hz, int64_t from,
                         int64_t until, cprof__buf_t *b) {
  item_t *it = calloc(1, sizeof *it);
  if (it) {
    it->what = what;
    it->url = cprof__ingest_url(ps.url, name, from, until, hz);
    it->stc = cprof__ingest_sample_type_config(kind, delta, types, n);
    it->body = *b;
    cprof__buf_init(b);
  }
  if (!it || !it->url || !it->stc) {
    item_free(it);
    cprof__buf_free(b);
    pthread_mutex_lock(&ps.lock);
    ps.totals.dropped++;
    pthread_mutex_unlock(&ps.lock);
    return;
  }
  enqueue(it);
}

static const cprof__value_type_t cpu_types[] = {{"samples", "count"}, {"cpu", "nanoseconds"}};
static const cprof__value_type_t heap_types[] = {{"alloc_objects", "count"},
                                                 {"alloc_space", "bytes"},
                                                 {"inuse_objects", "count"},
                                                 {"inuse_space", "bytes"}};

/* name with pid=PID among its tags: APP{k=v} -> APP{k=v,pid=PID},
 * APP{} or APP -> APP{pid=PID}. */
static void name_with_pid(const char *name, pid_t pid, char *out, size_t len) {
  size_t n = strlen(name);
  if (n && name[n - 1] == '}') {
    const char *brace = strchr(name, '{');
    snprintf(out, len, "%.*s%spid=%d}", (int)(n - 1), name, brace && brace[1] == '}' ? "" : ",",
             (int)pid);
  } else {
    snprintf(out, len, "%s{pid=%d}", name, (int)pid);
  }
}

/* ---- A process tree's members (the push thread's, and its helper's) ---- */

static struct {
  int running; /* the helper is out, or has ended and is not joined yet */
  pthread_t thread;
  unsigned table; /* the push thread's descriptor table, which the helper joins */
  int n;          /* members asked */
  cprof__tree_reply_t *cpu, *heap;
  char cpu_target[600], heap_target[600];
  long timeout_ms;
} tw;

static int tree_cancelled(void *unused) {
  (void)unused;
  pthread_mutex_lock(&ps.lock);
  int stop = ps.stop;
  pthread_mutex_unlock(&ps.lock);
  return stop;
}

/* The helper: every member's CPU profile of the window, then its heap. */
static void *tree_fetcher(void *unused) {
  (void)unused;
  cprof__guard_enter(); /* the push's: nothing it allocates is sampled */
  cprof__fds_joined(tw.table);
  pthread_setname_np(pthread_self(), "cprof-push-tree");
  cprof__tree_fetch(tw.cpu, tw.n, tw.cpu_target, tw.timeout_ms, tree_cancelled, NULL);
  cprof__tree_fetch(tw.heap, tw.n, tw.heap_target, TREE_SLACK_MS, tree_cancelled, NULL);
  return NULL;
}

/* The helper joined and what it brought freed (pushed first when from <
 * until). */
static void tree_collect(int64_t from, int64_t until) {
  if (!tw.running)
    return;
  pthread_join(tw.thread, NULL);
  tw.running = 0;
  if (from < until)
    grow((size_t)tw.n + 1);
  for (int i = 0; i < tw.n && from < until; i++) {
    char name[sizeof ps.name + 24];
    name_with_pid(ps.name, tw.cpu[i].pid, name, sizeof name);
    /* A member that left, or whose CPU profiler someone else holds, has
     * no profile for the window: nothing to push, and no failure. */
    if (tw.cpu[i].status == 200)
      push_profile(name, "CPU", "process_cpu", 1, cpu_types, 2, ps.hz, from, until,
                   &tw.cpu[i].body);
    if (tw.heap[i].status == 200)
      push_profile(name, "heap", "memory", 0, heap_types, 4, 0, from, until, &tw.heap[i].body);
  }
  cprof__tree_replies_free(tw.cpu, tw.n);
  cprof__tree_replies_free(tw.heap, tw.n);
  free(tw.cpu);
  free(tw.heap);
  tw.cpu = tw.heap = NULL;
  tw.n = 0;
}

/* At a cut of the owner of a tree with members: the helper sent out for
 * the window that begins. */
static void tree_start(void) {
  if (cprof__tree_role() != CPROF_TREE_OWNER)
    return;
  cprof__tree_proc_t *procs = calloc(MAX_TREE, sizeof *procs);
  int n = procs ? cprof__tree_list(procs, MAX_TREE) - 1 : 0; /* the owner first */
  if (n > 0) {
    tw.cpu = calloc((size_t)n, sizeof *tw.cpu);
    tw.heap = calloc((size_t)n, sizeof *tw.heap);
  }
  if (n <= 0 || !tw.cpu || !tw.heap) {
    free(tw.cpu);
    free(tw.heap);
    tw.cpu = tw.heap = NULL;
    free(procs);
    return;
  }
  for (int i = 0; i < n; i++)
    tw.cpu[i].pid = tw.heap[i].pid = procs[i + 1].pid;
  free(procs);
  tw.n = n;
  cprof__config_t cfg;
  cprof__config_get(&cfg);
  long seconds = (ps.interval_ms + 500) / 1000;
  if (seconds < 1)
    seconds = 1;
  snprintf(tw.cpu_target, sizeof tw.cpu_target, "%s/debug/pprof/profile?seconds=%ld", cfg.prefix,
           seconds);
  snprintf(tw.heap_target, sizeof tw.heap_target, "%s/debug/pprof/heap", cfg.prefix);
  tw.timeout_ms = seconds * 1000 + TREE_SLACK_MS;
  tw.table = cprof__fds_table();
  if (pthread_create(&tw.thread, NULL, tree_fetcher, NULL) == 0) {
    tw.running = 1;
    return;
  }
  free(tw.cpu);
  free(tw.heap);
  tw.cpu = tw.heap = NULL;
  tw.n = 0;
}

/* Cuts the window that ends now: the CPU profile since the last cut (the
 * rest of it, and the CPU profiler let go, when last), and the heap; then
 * a tree's members' of the same window, and the next window asked of
 * them. */
static void cut(int last) {
  int64_t now = cprof__now_ns(CLOCK_REALTIME) / 1000000000, from = ps.window_start_s;
  ps.window_start_s = now;
  /* The owner of a tree is one of its processes: a series by pid too. */
  char name[sizeof ps.name + 24];
  if (cprof__tree_role() == CPROF_TREE_OWNER)
    ps.tree = 1; /* and stays so: at exit the tree is left before the last cut */
  if (ps.tree)
    name_with_pid(ps.name, getpid(), name, sizeof name);
  else
    snprintf(name, sizeof name, "%s", ps.name);
  cprof__buf_t b;
  cprof__buf_init(&b);
  if (ps.cpu) {
    int err;
    if (last) {
      err = cprof__cpu_reader_stop(ps.cpu, &b);
      ps.cpu = NULL;
    } else {
      err = cprof__cpu_reader_cut(ps.cpu, &b);
    }
    if (err == 0)
      push_profile(name, "CPU", "process_cpu", 1, cpu_types, 2, ps.hz, from, now, &b);
    else
      cprof__buf_free(&b);
  }
  cprof__config_t cfg;
  cprof__config_get(&cfg);
  const cprof__profile_t *heap = cprof__registry_lookup("heap");
  cprof__collect_t c = {.debug = 0, .seconds = 0};
  if (cfg.heap_rate > 0 && heap && cprof__profile_collect(heap, &c, &b) == 0)
    push_profile(name, "heap", "memory", 0, heap_types, 4, 0, from, now, &b);
  else
    cprof__buf_free(&b);
  tree_collect(from, now);
  if (!last)
    tree_start();
}

/* ---- Sending ---- */

static int aborted(void *unused) {
  (void)unused;
  pthread_mutex_lock(&ps.lock);
  if (ps.abandoned) { /* exit goes on without us: stay out of libcurl until the end */
    pthread_mutex_unlock(&ps.lock);
    for (;;)
      pause(); /* every signal is blocked here */
  }
  int stop = ps.stop && (!ps.final || mono_ms() >= ps.deadline_ms);
  pthread_mutex_unlock(&ps.lock);
  return stop;
}

/* Sends the queue's oldest; with the lock held, dropped around the
 * request. 1 when it is done with (sent or refused), 0 to try again. */
static int send_oldest_locked(long timeout_ms) {
  item_t *it = ps.ring[ps.head];
  pthread_mutex_unlock(&ps.lock);
  char why[300] = "";
  int r = CPROF_INGEST_RETRY;
  CURL *c = cprof__libcurl.easy_init();
  if (c) {
    cprof__ingest_request_t req = {.url = it->url,
                                   .profile = it->body.data,
                                   .len = it->body.len,
                                   .stc = it->stc,
                                   .user_agent = "cprof/" CPROF_VERSION_STRING,
                                   .timeout_ms = timeout_ms,
                                   .abort = aborted};
    r = cprof__ingest_post(&cprof__libcurl, c, &req, why, sizeof why);
    cprof__libcurl.easy_cleanup(c);
  } else {
    snprintf(why, sizeof why, "out of memory");
  }
  pthread_mutex_lock(&ps.lock);
  if (r == CPROF_INGEST_RETRY && ps.stop && !ps.final)
    return 0; /* cut short by a park: sent again after it, not a failure */
  if (r == CPROF_INGEST_SENT) {
    ps.totals.pushed++;
    if (ps.failing)
      cprof__log("pushing to %s works again", ps.shown);
    ps.failing = 0;
    ps.backoff_ms = 0;
    dequeue_locked();
    return 1;
  }
  if (r == CPROF_INGEST_REJECTED) {
    ps.totals.rejected++;
    cprof__log("CPROF_PUSH_URL: %s refused the %s profile: %s", ps.shown, it->what, why);
    dequeue_locked();
    return 1;
  }
  ps.totals.retried++;
  if (!ps.failing) /* at exit there is no again: the line at the end counts what is lost */
    cprof__log("cannot push to %s: %s%s", ps.shown, why, ps.final ? "" : "; trying again");
  ps.failing = 1;
  ps.backoff_ms = ps.backoff_ms ? ps.backoff_ms * 2 : BACKOFF_FIRST_MS;
  if (ps.backoff_ms > BACKOFF_MAX_MS)
    ps.backoff_ms = BACKOFF_MAX_MS;
  ps.retry_ms = mono_ms() + ps.backoff_ms;
  return 0;
}

static void wait_until_locked(int64_t ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000};
  pthread_cond_timedwait(&ps.cond, &ps.lock, &ts);
}

static void *pusher(void *unused) {
  (void)unused;
  pthread_setname_np(pthread_self(), "cprof-push");
  int table = cprof__fds_unshare();
  cprof__symbols_passing(1);
  char why[300] = "";
  if (table != 0)
    snprintf(why, sizeof why, "no descriptor table of cprof's own: %s", strerror(-table));
  else
    cprof__libcurl_load(why, sizeof why);
  pthread_mutex_lock(&ps.lock);
  ps.started = 1;
  pthread_cond_broadcast(&ps.cond);
  if (why[0]) { /* for good: the profiles would only pile up */
    cprof__log("CPROF_PUSH_URL: %s; nothing will be pushed", why);
    ps.armed = 0;
    if (ps.cpu)
      cprof__cpu_reader_stop(ps.cpu, NULL);
    ps.cpu = NULL;
    ps.ended = 1;
    pthread_cond_broadcast(&ps.cond);
    pthread_mutex_unlock(&ps.lock);
    return NULL;
  }
  while (!ps.stop) {
    int64_t now = mono_ms();
    if (now >= ps.next_ms) {
      pthread_mutex_unlock(&ps.lock);
      cut(0);
      pthread_mutex_lock(&ps.lock);
      ps.next_ms += ps.interval_ms;
      if (ps.next_ms <= now) /* asleep (a stopped process): start afresh */
        ps.next_ms = now + ps.interval_ms;
    }
    while (!ps.stop && ps.count && mono_ms() >= ps.retry_ms && mono_ms() < ps.next_ms)
      if (!send_oldest_locked(REQUEST_TIMEOUT_MS))
        break;
    int64_t until = ps.count && ps.retry_ms < ps.next_ms ? ps.retry_ms : ps.next_ms;
    if (!ps.stop && mono_ms() < until)
      wait_until_locked(until);
  }
  if (!ps.final) { /* parked: the members' window is dropped with the helper */
    pthread_mutex_unlock(&ps.lock);
    tree_collect(0, 0);
    pthread_mutex_lock(&ps.lock);
  }
  if (ps.final) {
    pthread_mutex_unlock(&ps.lock);
    cut(1);
    pthread_mutex_lock(&ps.lock);
    /* One attempt each, oldest first, until one fails or the time is up:
     * the program is waiting to exit, and a store that is away now will
     * not be back in the next two seconds. */
    while (ps.count && mono_ms() < ps.deadline_ms && send_oldest_locked(ps.deadline_ms - mono_ms()))
      ;
    ps.totals.dropped += ps.count;
    while (ps.count)
      dequeue_locked();
  }
  ps.ended = 1;
  pthread_cond_broadcast(&ps.cond);
  pthread_mutex_unlock(&ps.lock);
  return NULL;
}

/* Starts the thread and waits until it has a table of its own: until then
 * it shares its creator's, and fds.c needs the creator alive meanwhile. */
static int start_thread_locked(void) {
  ps.stop = ps.started = ps.ended = 0;
  cprof__guard_enter(); /* cprof's own: every signal blocked, nothing sampled */
  int err = pthread_create(&ps.thread, NULL, pusher, NULL);
  cprof__guard_leave();
  if (err != 0)
    return -err;
  ps.running = 1;
  while (!ps.started)
    pthread_cond_wait(&ps.cond, &ps.lock);
  return 0;
}

static void end_thread_locked(int final) {
  if (!ps.running)
    return;
  ps.stop = 1;
  ps.final = final;
  ps.deadline_ms = mono_ms() + CPROF_PUSH_FLUSH_MS;
  int64_t give_up = 0;
  if (ps.exiting) {
    give_up = cprof__exit_deadline_ms();
    if (give_up - EXIT_GRACE_MS < ps.deadline_ms)
      ps.deadline_ms = give_up - EXIT_GRACE_MS;
  }
  pthread_cond_broadcast(&ps.cond);
  if (ps.exiting) {
    /* Exit waits no longer than its bound, whatever the thread is in. */
    while (!ps.ended && mono_ms() < give_up)
      wait_until_locked(give_up);
    if (!ps.ended) {
      ps.abandoned = 1;
      ps.running = 0;
      pthread_detach(ps.thread);
      return;
    }
  }
  pthread_mutex_unlock(&ps.lock);
  pthread_join(ps.thread, NULL);
  pthread_mutex_lock(&ps.lock);
  ps.running = 0;
}

static void finish_at_exit(void);

/* The program's file name, for the default application name. */
static void program_name(char *out, size_t len) {
  char path[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  path[n > 0 ? n : 0] = '\0';
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t k = 0;
  for (; *base && k + 1 < len; base++) /* as CPROF_PUSH_NAME's APP may be */
    out[k++] = strchr("._-", *base) || (*base >= '0' && *base <= '9') ||
                       (*base >= 'a' && *base <= 'z') || (*base >= 'A' && *base <= 'Z')
                   ? *base
                   : '_';
  out[k] = '\0';
  if (!k)
    snprintf(out, len, "program");
}

/* The URL for messages: without user:password@. */
static void shown_url(const char *url, char *out, size_t len) {
  const char *host = strstr(url, "://");
  host = host ? host + 3 : url;
  const char *at = strchr(host, '@'), *slash = strchr(host, '/');
  if (at && (!slash || at < slash))
    snprintf(out, len, "%.*s%s", (int)(host - url), url, at + 1);
  else
    snprintf(out, len, "%s", url);
}

void cprof__push_start(const cprof__config_t *cfg) {
  if (!cfg->push_url[0])
    return;
  pthread_once(&once, init_once);
  pthread_mutex_lock(&ps.lock);
  if (ps.armed)
    goto out;
  snprintf(ps.url, sizeof ps.url, "%s", cfg->push_url);
  shown_url(ps.url, ps.shown, sizeof ps.shown);
  if (cfg->push_name[0]) {
    snprintf(ps.name, sizeof ps.name, "%s", cfg->push_name);
  } else {
    char app[200], host[256] = "";
    program_name(app, sizeof app);
    gethostname(host, sizeof host - 1);
    char *name = cprof__ingest_name(app, &(cprof__ingest_tag_t){"hostname", host}, 1);
    snprintf(ps.name, sizeof ps.name, "%s", name ? name : app);
    free(name);
  }
  ps.interval_ms = cfg->push_interval_ms;
  ps.hz = cfg->cpu_hz;
  ps.owner = getpid();
  ps.tree = 0;
  ps.totals = (totals_t){0};
  ps.failing = 0;
  ps.backoff_ms = 0;
  ps.window_start_s = cprof__now_ns(CLOCK_REALTIME) / 1000000000;
  ps.next_ms = mono_ms() + ps.interval_ms;
  ps.retry_ms = 0;

  char why[256];
  int err = cprof__cpu_reader_start(cfg->cpu_hz, 0, cfg->unwind, why, sizeof why, &ps.cpu);
  if (err == 0)
    ps.hz = cprof__cpu_reader_hz(ps.cpu); /* the running recording's, if one ran */
  if (err == 0 && cprof__cpu_reader_drainer(ps.cpu, "cprof-push-cpu") != 0) {
    cprof__cpu_reader_stop(ps.cpu, NULL);
    ps.cpu = NULL;
    snprintf(why, sizeof why, "cannot start its thread");
    err = -EAGAIN;
  }
  if (err)
    cprof__log("CPROF_PUSH_URL: no CPU profile will be pushed: %s; the heap profile will be",
               why[0]          ? why
               : err == -EBUSY ? "the program uses SIGPROF itself"
                               : cprof_strerror(err));
  if (start_thread_locked() != 0) {
    cprof__log("CPROF_PUSH_URL: cannot start the push's thread; nothing will be pushed");
    if (ps.cpu)
      cprof__cpu_reader_stop(ps.cpu, NULL);
    ps.cpu = NULL;
    goto out;
  }
  ps.armed = 1;
  if (!ps.atexit_set)
    ps.atexit_set = atexit(finish_at_exit) == 0;
out:
  pthread_mutex_unlock(&ps.lock);
}

/* The program's exit: the last round within the bound exit keeps. */
static void finish_at_exit(void) {
  pthread_mutex_lock(&ps.lock);
  ps.exiting = 1;
  pthread_mutex_unlock(&ps.lock);
  cprof__push_finish();
}

void cprof__push_finish(void) {
  cprof__guard_enter(); /* atexit runs on the program's thread */
  pthread_once(&once, init_once);
  pthread_mutex_lock(&ps.lock);
  if (ps.armed && ps.owner == getpid()) {
    /* A parked thread starts again for the last round: it sends from its
     * own table. */
    if (ps.running || start_thread_locked() == 0)
      end_thread_locked(1);
    if (ps.abandoned) {
      /* What it holds (the CPU recording, the queue) stays with it: the
       * process ends now. */
      cprof__log("CPROF_PUSH_URL: %s did not answer within %d s of exit; %zu profiles not pushed",
                 ps.shown, CPROF_EXIT_BOUND_MS / 1000, ps.count);
    } else {
      if (ps.cpu) /* the thread could not run the last round */
        cprof__cpu_reader_stop(ps.cpu, NULL);
      ps.cpu = NULL;
      if (ps.totals.dropped || ps.totals.rejected)
        cprof__log("CPROF_PUSH_URL: pushed %llu profiles to %s; %llu dropped, %llu refused",
                   (unsigned long long)ps.totals.pushed, ps.shown,
                   (unsigned long long)ps.totals.dropped, (unsigned long long)ps.totals.rejected);
    }
    ps.armed = ps.parked = 0;
  }
  pthread_mutex_unlock(&ps.lock);
  cprof__guard_leave();
}

void cprof__push_park(void) {
  pthread_once(&once, init_once);
  pthread_mutex_lock(&ps.lock);
  if (ps.armed && ps.running && ps.owner == getpid()) {
    end_thread_locked(0);
    ps.parked = 1;
  }
  pthread_mutex_unlock(&ps.lock);
}

void cprof__push_unpark(void) {
  pthread_once(&once, init_once);
  pthread_mutex_lock(&ps.lock);
  if (ps.armed && ps.parked && start_thread_locked() == 0)
    ps.parked = 0;
  pthread_mutex_unlock(&ps.lock);
}

void cprof__push_exposition(cprof__buf_t *out) {
  pthread_once(&once, init_once);
  pthread_mutex_lock(&ps.lock);
  int on = ps.armed;
  totals_t t = ps.totals;
  size_t queued = ps.count;
  pthread_mutex_unlock(&ps.lock);
  if (!on)
    return;
  cprof__buf_printf(out,
                    "# HELP cprof_push_profiles_total Profiles pushed to CPROF_PUSH_URL, dropped "
                    "(the queue full, or not sent at exit) and refused by it.\n"
                    "# TYPE cprof_push_profiles_total counter\n"
                    "cprof_push_profiles_total{result=\"pushed\"} %llu\n"
                    "cprof_push_profiles_total{result=\"dropped\"} %llu\n"
                    "cprof_push_profiles_total{result=\"refused\"} %llu\n"
                    "# HELP cprof_push_retries_total Pushes that failed and were tried again.\n"
                    "# TYPE cprof_push_retries_total counter\n"
                    "cprof_push_retries_total %llu\n"
                    "# HELP cprof_push_queued Profiles waiting to be pushed.\n"
                    "# TYPE cprof_push_queued gauge\n"
                    "cprof_push_queued %zu\n",
                    (unsigned long long)t.pushed, (unsigned long long)t.dropped,
                    (unsigned long long)t.rejected, (unsigned long long)t.retried, queued);
}

void cprof__push_atfork_prepare(void) { pthread_mutex_lock(&ps.lock); }
void cprof__push_atfork_parent(void) { pthread_mutex_unlock(&ps.lock); }

void cprof__push_atfork_child(void) {
  /* The thread, its recording and its queue stayed with the parent, whose
   * profiles they are; the memory is left as it is, a copy. */
  ps.armed = ps.running = ps.parked = 0;
  ps.cpu = NULL;
  tw.running = tw.n = 0; /* the helper, too, stayed with the parent */
  tw.cpu = tw.heap = NULL;
  ps.count = ps.head = 0;
  pthread_mutex_unlock(&ps.lock);
}

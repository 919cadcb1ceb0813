/* Debug files from debuginfod servers.
 *
 * Debian ships its programs and libraries stripped. Their debug information
 * is in -dbgsym packages, or on a debuginfod server (debuginfod.debian.net),
 * which serves it by build ID. libdw's standard callbacks ask debuginfod
 * themselves when their local search fails; dwfl_files.c does not use them,
 * because libdebuginfod brings some thirty libraries into the host and
 * downloads while its caller waits: there, with the symbolizer's lock held
 * and a profile waiting. So cprof asks itself, and only as told:
 *
 * - Only with DEBUGINFOD_URLS set and not empty, libdebuginfod's own
 *   switch. Without it nothing here loads, opens or starts anything.
 * - In the background. When an address falls in a module without debug
 *   information, the symbolizer says so here (cprof__debuginfod_want, with
 *   its lock held, never waiting), and a thread of cprof's,
 *   "cprof-debuginfo", fetches such files one at a time. The profile being
 *   built goes out at once, without those names, and says in a comment that
 *   they are being fetched. A file fetched changes cprof__debuginfod_generation,
 *   the symbolizer builds its Dwfl again at its next use, and its
 *   find_debuginfo callback finds the file (cprof__debuginfod_candidate).
 * - Within a time limit per file: DEBUGINFOD_MAXTIME, libdebuginfod's own
 *   setting for it, else DEFAULT_LIMIT_S. libdebuginfod calls our progress
 *   callback at least once a second while it fetches, and stops when it
 *   returns nonzero. A module whose fetch failed is asked again at most
 *   every RETRY_S.
 * - Cached by libdebuginfod ($DEBUGINFOD_CACHE_PATH, else
 *   ~/.cache/debuginfod_client): a later process finds the file there in
 *   its first profile, without loading libdebuginfod at all.
 * - The thread is cprof's own. It is created under cprof's guard, so that
 *   it blocks every signal from its first instruction (interpose/thread_start.c),
 *   and it runs in a descriptor table of its own (core/fds.c): libcurl's
 *   sockets, its connection cache and libdebuginfod's cache files are out
 *   of the program's reach, and the program's descriptors out of theirs.
 *   libdebuginfod.so.1 is dlopened there, the first time something is to be
 *   fetched, and stays. Its client, with libcurl's connections, lives and
 *   ends with the thread, in its table.
 * - The thread ends, cancelling a fetch in flight, when cprof stops, when
 *   the program's last thread ends (the process must then end as it would
 *   without us), and at exit, from an atexit handler: those run before any
 *   library's destructors, and libcurl's and GnuTLS's must not tear down
 *   their state under a fetch. Until then it sleeps.
 * - Ending it is bounded (STOP_MS; at exit, also the bound all of cprof's
 *   exit handlers share, core/exit_bound.h). libdebuginfod sees a
 *   cancellation at its next progress call, up to a second later, and then
 *   cleans up its libcurl handles, which waits for a name lookup in flight
 *   (libcurl's threaded resolver joins its thread), and a name server that
 *   does not answer holds that for ten seconds and more; libdebuginfod
 *   gives us no way to ask libcurl not to wait. So a thread that has not
 *   ended in time is left behind, detached: it records nothing when it
 *   comes back, and at exit its next progress call never returns into
 *   libdebuginfod, whose libraries' destructors run next. A later fetch
 *   gets a thread of its own.
 *
 * Everything is under one lock of its own, never held across a fetch. */
#include "symbol/debuginfod.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/exit_bound.h"
#include "core/fds.h"
#include "core/guard.h"

/* The time limit for one file without DEBUGINFOD_MAXTIME: what a debug file
 * of some tens of megabytes needs on an ordinary link. */
#define DEFAULT_LIMIT_S 30
/* How long a failed fetch stands before the module is asked again; also
 * how long libdebuginfod keeps its own record of a file a server did not
 * have (cache_miss_s). */
#define RETRY_S 600
/* Build IDs are at most 64 bytes to libdebuginfod (MAX_BUILD_ID_BYTES). */
#define MAX_ID_HEX 128
/* How long a stop waits for the thread to end before it leaves it behind:
 * libdebuginfod's progress calls come about a second apart. */
#define STOP_MS 1200
/* Modules asked for; more are not fetched. */
#define MAX_ENTRIES 4096

/* libdebuginfod's API (debuginfod_find_debuginfo(3)), declared here so that
 * building cprof needs no libdebuginfod-dev: the library is only dlopened. */
typedef struct debuginfod_client debuginfod_client;
typedef int (*progress_fn)(debuginfod_client *, long, long);
static struct {
  debuginfod_client *(*begin)(void);
  void (*end)(debuginfod_client *);
  int (*find_debuginfo)(debuginfod_client *, const unsigned char *, int, char **);
  void (*set_progressfn)(debuginfod_client *, progress_fn);
  void (*set_verbose_fd)(debuginfod_client *, int); /* from 0.179 */
} api;

enum { WAITING, FETCHING, FOUND, FAILED };

typedef struct entry {
  char id[MAX_ID_HEX + 1];
  int state;
  int err;       /* FAILED: a negative errno */
  long limit_s;  /* FAILED with -ETIME: the limit it ran into */
  char *path;    /* FOUND: the file in libdebuginfod's cache */
  time_t failed; /* FAILED: when, CLOCK_MONOTONIC seconds */
} entry_t;

static struct {
  pthread_mutex_t lock;
  pthread_cond_t cond; /* work or stop, for the thread; started, for its creator */
  entry_t *v;
  int n, cap;
  pthread_t thread;
  int running;  /* a thread was started and not joined */
  int started;  /* ... and has its descriptor table */
  int stop;     /* the thread is asked to end */
  int stopping; /* a caller of stop is joining it */
  int exiting;  /* exit has begun: no thread starts again */
  int broken;   /* a negative errno that ends all fetching: no library, no table */
  int kick;     /* fetches wait and no thread runs */
  int ended;    /* the running thread is about to return */
  unsigned epoch; /* moved when a thread is left behind: it is no longer the thread */
  int atexit_set;
  unsigned generation;
} f = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static int enabled = -1;

int cprof__debuginfod_enabled(void) {
  int e = __atomic_load_n(&enabled, __ATOMIC_RELAXED);
  if (e < 0) {
    const char *v = getenv("DEBUGINFOD_URLS");
    e = v && v[0];
    __atomic_store_n(&enabled, e, __ATOMIC_RELAXED);
  }
  return e;
}

static time_t now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec;
}

/* The limit for one fetch, in seconds, 0 for none: DEBUGINFOD_MAXTIME read
 * as libdebuginfod reads it (atol; 0 or less: no limit). */
static long time_limit(void) {
  const char *v = getenv("DEBUGINFOD_MAXTIME");
  if (!v)
    return DEFAULT_LIMIT_S;
  long s = atol(v);
  return s > 0 ? s : 0;
}

static entry_t *find_locked(const char *id) {
  for (int i = 0; i < f.n; i++)
    if (strcmp(f.v[i].id, id) == 0)
      return &f.v[i];
  return NULL;
}

static entry_t *add_locked(const char *id) {
  if (strlen(id) > MAX_ID_HEX || f.n == MAX_ENTRIES)
    return NULL;
  if (f.n == f.cap) {
    int cap = f.cap ? 2 * f.cap : 16;
    entry_t *v = realloc(f.v, (size_t)cap * sizeof *v);
    if (!v)
      return NULL;
    f.v = v;
    f.cap = cap;
  }
  entry_t *e = &f.v[f.n++];
  memset(e, 0, sizeof *e);
  strcpy(e->id, id);
  e->state = WAITING;
  return e;
}

/* Failures that asking again will not mend. */
static int lasting(int err) { return err == -ELIBACC || err == -ENOTSUP; }

void cprof__debuginfod_want(const char *build_id) {
  if (!cprof__debuginfod_enabled() || !build_id[0])
    return;
  cprof__guard_enter();
  pthread_mutex_lock(&f.lock);
  entry_t *e = find_locked(build_id);
  if (!e)
    e = add_locked(build_id);
  else if (e->state == FAILED && !lasting(e->err) && now_s() - e->failed >= RETRY_S)
    e->state = WAITING;
  if (e && e->state == WAITING && f.broken) {
    e->state = FAILED;
    e->err = f.broken;
  }
  if (e && e->state == WAITING) {
    if (f.running)
      pthread_cond_broadcast(&f.cond);
    else
      __atomic_store_n(&f.kick, 1, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&f.lock);
  cprof__guard_leave();
}

unsigned cprof__debuginfod_generation(void) {
  return __atomic_load_n(&f.generation, __ATOMIC_ACQUIRE);
}

/* libdebuginfod's cache directory, found as it finds it
 * (debuginfod-client.c): $DEBUGINFOD_CACHE_PATH; else ~/.debuginfod_client_cache
 * if that exists (its old place); else $XDG_CACHE_HOME/debuginfod_client,
 * or ~/.cache/debuginfod_client. */
static int cache_dir(char *out, size_t len) {
  const char *v = getenv("DEBUGINFOD_CACHE_PATH");
  if (v && v[0])
    return snprintf(out, len, "%s", v) < (int)len ? 0 : -1;
  const char *home = getenv("HOME");
  if (!home)
    home = "/";
  struct stat st;
  if (snprintf(out, len, "%s/.debuginfod_client_cache", home) < (int)len && stat(out, &st) == 0)
    return 0;
  const char *xdg = getenv("XDG_CACHE_HOME");
  int n = xdg && xdg[0] ? snprintf(out, len, "%s/debuginfod_client", xdg)
                        : snprintf(out, len, "%s/.cache/debuginfod_client", home);
  return n < (int)len ? 0 : -1;
}

/* Where libdebuginfod's cache keeps the debug file of id. */
static int cache_file(const char *id, char *out, size_t len) {
  if (cache_dir(out, len) != 0)
    return -1;
  size_t n = strlen(out);
  return snprintf(out + n, len - n, "/%s/debuginfo", id) < (int)(len - n) ? 0 : -1;
}

int cprof__debuginfod_candidate(const char *build_id, int k, char *path, size_t len) {
  if (!cprof__debuginfod_enabled() || !build_id[0] || strchr(build_id, '/'))
    return -1;
  if (k == 1)
    return cache_file(build_id, path, len);
  if (k != 0)
    return -1;
  int rc = -1;
  pthread_mutex_lock(&f.lock);
  entry_t *e = find_locked(build_id);
  if (e && e->state == FOUND && strlen(e->path) < len) {
    strcpy(path, e->path);
    rc = 0;
  }
  pthread_mutex_unlock(&f.lock);
  return rc;
}

void cprof__debuginfod_advice(const char *build_id, char *buf, size_t len) {
  if (!cprof__debuginfod_enabled()) {
    snprintf(buf, len,
             "install its -dbgsym package (for /usr/lib/debug/.build-id/%.2s/%s.debug), "
             "or set DEBUGINFOD_URLS",
             build_id, build_id + (build_id[0] && build_id[1] ? 2 : 0));
    return;
  }
  pthread_mutex_lock(&f.lock);
  entry_t *e = find_locked(build_id);
  entry_t c = e ? *e : (entry_t){.state = -1};
  pthread_mutex_unlock(&f.lock);
  if (c.state == -1) /* a profile written at exit asks nothing */
    snprintf(buf, len, "debuginfod (DEBUGINFOD_URLS) was not asked for it");
  else if (c.state == WAITING || c.state == FETCHING)
    snprintf(buf, len, "asking debuginfod (DEBUGINFOD_URLS); its names come in a later profile");
  else if (c.state == FOUND)
    snprintf(buf, len, "debuginfod's file for it has no debug information");
  else if (c.err == -ENOENT)
    snprintf(buf, len, "debuginfod (DEBUGINFOD_URLS) has no debug file for it");
  else if (c.err == -ETIME)
    snprintf(buf, len,
             "debuginfod did not deliver its debug file within %ld s (DEBUGINFOD_MAXTIME)",
             c.limit_s);
  else if (c.err == -ELIBACC)
    snprintf(buf, len,
             "libdebuginfod.so.1 could not be loaded to ask debuginfod (Debian: "
             "libdebuginfod1)");
  else if (c.err == -ENOTSUP)
    snprintf(buf, len, "the kernel refused the descriptor table cprof fetches debug files in");
  else
    snprintf(buf, len, "asking debuginfod failed: %s", strerror(-c.err));
}

/* ---- the fetching thread --------------------------------------------------- */

/* The running fetch's deadline (CLOCK_MONOTONIC seconds, 0: none), and
 * whether the progress callback ended it there; and the epoch the thread
 * began in. Each thread's own: one left behind may still run beside the
 * next. */
static __thread time_t deadline;
static __thread int timed_out;
static __thread unsigned my_epoch;

/* Whether this thread was left behind. */
static int left_behind(void) { return __atomic_load_n(&f.epoch, __ATOMIC_ACQUIRE) != my_epoch; }

/* libdebuginfod calls this at least once a second while it fetches: a
 * nonzero return ends the fetch. */
static int progress(debuginfod_client *c, long a, long b) {
  (void)c, (void)a, (void)b;
  if (left_behind()) {
    /* At exit, the libraries' destructors run now: stay out of them until
     * the process ends (every signal is blocked here). */
    if (__atomic_load_n(&f.exiting, __ATOMIC_ACQUIRE))
      for (;;)
        pause();
    return 1;
  }
  if (__atomic_load_n(&f.stop, __ATOMIC_RELAXED))
    return 1;
  if (deadline && now_s() >= deadline) {
    timed_out = 1;
    return 1;
  }
  return 0;
}

static int load_api(void) {
  if (api.begin)
    return 0;
  void *h = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h)
    return -ELIBACC;
  *(void **)&api.end = dlsym(h, "debuginfod_end");
  *(void **)&api.find_debuginfo = dlsym(h, "debuginfod_find_debuginfo");
  *(void **)&api.set_progressfn = dlsym(h, "debuginfod_set_progressfn");
  *(void **)&api.set_verbose_fd = dlsym(h, "debuginfod_set_verbose_fd");
  if (!api.end || !api.find_debuginfo || !api.set_progressfn)
    return -ELIBACC;
  *(void **)&api.begin = dlsym(h, "debuginfod_begin");
  return api.begin ? 0 : -ELIBACC;
}

static debuginfod_client *new_client(void) {
  debuginfod_client *c = api.begin();
  if (!c)
    return NULL;
  /* Ours replaces the one DEBUGINFOD_PROGRESS would install, which prints. */
  api.set_progressfn(c, progress);
  if (api.set_verbose_fd) /* DEBUGINFOD_VERBOSE would print too */
    api.set_verbose_fd(c, -1);
  return c;
}

/* libdebuginfod records a fetch that ends without a file as the server
 * not having it, an empty file in its cache that makes every client (gdb
 * too) give up on that build ID for cache_miss_s. A fetch we ended (the
 * time limit, cprof stopping) says nothing of the kind: the record goes,
 * if it is an empty file made since the fetch began. */
static void forget_miss(const char *id, time_t began) {
  char path[4096];
  struct stat st;
  if (cache_file(id, path, sizeof path) != 0 || stat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
      st.st_size != 0 || st.st_mtime < began || unlink(path) != 0)
    return;
  *strrchr(path, '/') = '\0';
  rmdir(path); /* the build ID's directory, if that leaves it empty */
}

/* Fetches id's debug file into libdebuginfod's cache. Returns 0 with *path
 * (malloc'd), -ECANCELED when cprof is stopping, or a negative errno. */
static int fetch(debuginfod_client *c, const char *id, long limit, char **path) {
  timed_out = 0;
  deadline = limit ? now_s() + limit : 0;
  time_t began = time(NULL);
  *path = NULL;
  /* A length of 0: the ID is given in hex. */
  int fd = api.find_debuginfo(c, (const unsigned char *)id, 0, path);
  if (fd >= 0) {
    close(fd);
    return *path ? 0 : -ENOMEM;
  }
  free(*path);
  *path = NULL;
  int cancelled = __atomic_load_n(&f.stop, __ATOMIC_RELAXED) || left_behind();
  if (timed_out || cancelled) {
    forget_miss(id, began);
    return cancelled ? -ECANCELED : -ETIME;
  }
  return fd;
}

static void record_locked(int i, int rc, char *path, long limit) {
  entry_t *e = &f.v[i];
  if (rc == 0) {
    e->state = FOUND;
    e->path = path;
    __atomic_add_fetch(&f.generation, 1, __ATOMIC_RELEASE);
  } else if (rc == -ECANCELED) {
    e->state = WAITING;
  } else {
    e->state = FAILED;
    e->err = rc;
    e->limit_s = limit;
    e->failed = now_s();
  }
}

static int next_waiting_locked(void) {
  for (int i = 0; i < f.n; i++)
    if (f.v[i].state == WAITING)
      return i;
  return -1;
}

/* Every waiting fetch fails with err, and later ones with it at once. */
static void break_locked(int err) {
  f.broken = err;
  for (int i; (i = next_waiting_locked()) >= 0;)
    record_locked(i, err, NULL, 0);
}

static void *fetcher(void *unused) {
  (void)unused;
  pthread_setname_np(pthread_self(), "cprof-debuginfo");
  /* libcurl's sockets must not be in the program's table: without a table
   * of our own, nothing is fetched. */
  int table = cprof__fds_unshare();
  pthread_mutex_lock(&f.lock);
  my_epoch = f.epoch;
  f.started = 1;
  pthread_cond_broadcast(&f.cond);
  if (table != 0)
    break_locked(-ENOTSUP);
  debuginfod_client *c = NULL;
  while (!f.stop && !f.broken) {
    int i = next_waiting_locked();
    if (i < 0) {
      pthread_cond_wait(&f.cond, &f.lock);
      continue;
    }
    f.v[i].state = FETCHING;
    char id[MAX_ID_HEX + 1];
    strcpy(id, f.v[i].id);
    pthread_mutex_unlock(&f.lock);

    long limit = time_limit();
    char *path = NULL;
    int rc = load_api();
    if (rc == 0 && !c && !(c = new_client()))
      rc = -ENOMEM;
    if (rc == 0)
      rc = fetch(c, id, limit, &path);

    pthread_mutex_lock(&f.lock);
    if (left_behind()) { /* its entry went back to waiting, for the next thread */
      free(path);
      break;
    }
    /* Entries do not move while we fetch, but the array may have grown. */
    i = (int)(find_locked(id) - f.v);
    record_locked(i, rc, path, limit);
    if (lasting(rc))
      break_locked(rc);
  }
  if (!left_behind()) {
    f.ended = 1;
    pthread_cond_broadcast(&f.cond);
  }
  pthread_mutex_unlock(&f.lock);
  if (c)
    api.end(c); /* its connections close here, in our table */
  return NULL;
}

static void stop_at_exit(void);

/* Starts the thread and waits until it has a table of its own: until then
 * it shares its creator's, and fds.c needs the creator alive meanwhile. */
static void start_locked(void) {
  f.stop = f.started = f.ended = 0;
  /* Created as cprof's own: every signal blocked, nothing sampled. */
  cprof__guard_enter();
  int err = pthread_create(&f.thread, NULL, fetcher, NULL);
  cprof__guard_leave();
  if (err != 0)
    return; /* the next kick tries again */
  f.running = 1;
  while (!f.started)
    pthread_cond_wait(&f.cond, &f.lock);
  if (!f.atexit_set)
    f.atexit_set = atexit(stop_at_exit) == 0;
}

void cprof__debuginfod_kick(void) {
  if (!__atomic_load_n(&f.kick, __ATOMIC_ACQUIRE))
    return;
  pthread_mutex_lock(&f.lock);
  if (f.kick && !f.running && !f.exiting && !f.broken && next_waiting_locked() >= 0)
    start_locked();
  f.kick = 0;
  pthread_mutex_unlock(&f.lock);
}

void cprof__debuginfod_stop(void) {
  pthread_mutex_lock(&f.lock);
  if (f.stopping) { /* another caller joins it: wait for that */
    while (f.running)
      pthread_cond_wait(&f.cond, &f.lock);
    pthread_mutex_unlock(&f.lock);
    return;
  }
  if (!f.running) {
    pthread_mutex_unlock(&f.lock);
    return;
  }
  __atomic_store_n(&f.stop, 1, __ATOMIC_RELAXED);
  f.stopping = 1;
  pthread_cond_broadcast(&f.cond);
  /* Bounded: see "Ending it is bounded" above. */
  int64_t give_up = cprof__now_ms(CLOCK_MONOTONIC) + STOP_MS;
  if (f.exiting) {
    int64_t exit_ms = cprof__exit_deadline_ms();
    if (exit_ms < give_up)
      give_up = exit_ms;
  }
  struct timespec until = {give_up / 1000, give_up % 1000 * 1000000};
  while (!f.ended && pthread_cond_clockwait(&f.cond, &f.lock, CLOCK_MONOTONIC, &until) == 0)
    ;
  if (f.ended) {
    pthread_mutex_unlock(&f.lock);
    pthread_join(f.thread, NULL);
    pthread_mutex_lock(&f.lock);
  } else {
    __atomic_add_fetch(&f.epoch, 1, __ATOMIC_RELEASE);
    pthread_detach(f.thread);
    for (int i = 0; i < f.n; i++)
      if (f.v[i].state == FETCHING)
        f.v[i].state = WAITING;
  }
  f.running = f.stopping = 0;
  __atomic_store_n(&f.stop, 0, __ATOMIC_RELAXED);
  if (next_waiting_locked() >= 0)
    __atomic_store_n(&f.kick, 1, __ATOMIC_RELEASE);
  pthread_cond_broadcast(&f.cond);
  pthread_mutex_unlock(&f.lock);
}

/* Before the libraries' destructors (atexit handlers run first), and for
 * good: a profile written at exit does not start the thread again. */
static void stop_at_exit(void) {
  pthread_mutex_lock(&f.lock);
  __atomic_store_n(&f.exiting, 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&f.lock);
  cprof__debuginfod_stop();
}

/* The lock is held across fork (start.c's handlers), so that the child
 * finds it its own. The thread stayed in the parent. */
void cprof__debuginfod_atfork_prepare(void) { pthread_mutex_lock(&f.lock); }
void cprof__debuginfod_atfork_parent(void) { pthread_mutex_unlock(&f.lock); }

void cprof__debuginfod_atfork_child(void) {
  f.running = f.started = f.stopping = 0;
  f.stop = 0;
  for (int i = 0; i < f.n; i++)
    if (f.v[i].state == FETCHING)
      f.v[i].state = WAITING;
  f.kick = next_waiting_locked() >= 0;
  pthread_cond_init(&f.cond, NULL);
  pthread_mutex_unlock(&f.lock);
}

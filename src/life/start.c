/* cprof's lifecycle: cprof_start, cprof_stop, fork handling, and the
 * constructor that starts cprof in a program it was LD_PRELOADed into. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/config.h"
#include "core/fds.h"
#include "core/log.h"
#include "life/output.h"
#include "cprof.h"
#include "http/server.h"
#include "metrics/sampler.h"
#include "push/push.h"
#include "interpose/creds.h"
#include "interpose/malloc.h"
#include "interpose/namespaces.h"
#include "interpose/thread_start.h"
#include "registry/cpu.h"
#include "sample/contention.h"
#include "sample/cpu.h"
#include "core/guard.h"
#include "sample/heap.h"
#include "sample/stack_table.h"
#include "sample/threads.h"
#include "symbol/debuginfod.h"
#include "symbol/symbolize.h"
#include "tree/tree.h"
#include "unwind/unwind.h"

static pthread_mutex_t life_lock = PTHREAD_MUTEX_INITIALIZER;
static int running;
static int serving;
static char bound[300];
static cprof__addr_t served;   /* the address asked for, with the port the kernel chose */
static int server_parked;      /* stopped by park_locked, to start again */
static int kept_listener = -1; /* its listening socket, kept by park_locked */
/* The process cprof's threads run in. A child made by vfork shares our
 * memory, and runs none of the fork handlers, until it execs: its
 * credential or namespace calls are its own, never a reason to stop our
 * threads. Known when cprof_start starts threads (the system call is
 * among theirs); 0 when it starts none, and a thread started later (the
 * API's CPU profile) is followed without the check. */
static pid_t life_pid;
/* The metrics sampler's settings (0: no sampler), whether it runs, and
 * whether park_locked stopped it. It starts with the server; without one
 * (a program serving cprof_handle_request itself) at the first request
 * for its figures (metrics_demand). */
static long metrics_interval_ms, metrics_window_s;
static int metrics_on, metrics_parked;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* A forked child of a process tree joins it (serves on its socket in the
 * tree's directory) JOIN_DELAY_MS after the fork, from a thread of ours,
 * the joiner; or at once when it is about to change its credentials
 * (a server's worker dropping root: the socket is made while the
 * directory still lets it). A child that execs before then never serves:
 * a shell's commands, a fork-and-exec helper. */
#define JOIN_DELAY_MS 100
/* How long a member's wait for its tree's owner to end lasts at most (it
 * ends at once when the owner does, through a pidfd), which is how soon
 * stop_joiner is seen; and how long one that took the owner's place tries
 * for its port: within the second the issue asks for. */
#define WATCH_MS 250
#define TAKE_OVER_TRIES 10
#define TAKE_OVER_WAIT_NS 50000000L
/* The owner's settings, the address with the port it had (a member that
 * takes over serves there): set when it becomes the owner, inherited by
 * every member. */
static cprof__config_t tree_cfg;
/* A member that has not joined yet; read without the lock by
 * before_credentials, so atomic. */
static int join_pending_;
#define join_pending __atomic_load_n(&join_pending_, __ATOMIC_ACQUIRE)
static void set_join_pending(int v) { __atomic_store_n(&join_pending_, v, __ATOMIC_RELEASE); }
static int joiner_running; /* the joiner thread exists (to join) */
static pthread_t joiner;
static struct {
  pthread_mutex_t lock;
  pthread_cond_t cond; /* on CLOCK_MONOTONIC */
  int cancel;
} joiner_wait = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
static void start_joiner(void);
static void stop_joiner(void);
static int join_locked(void);
static int take_over_locked(pid_t gone);
static int in_vfork_child(void);

/* fork: every lock of cprof's is held across it, so that the child finds
 * each consistent and its own, to release, never to re-initialise under a
 * thread that may hold it. Taken outer to inner, in the order cprof takes
 * them itself: this lock (held while the server and the output collector
 * start and stop), the output's (held while it writes, which symbolizes),
 * the push's (held while its thread and CPU recording start and stop,
 * never while it symbolizes or sends), the capture's (held while it
 * unwinds threads from outside, which symbolizes), the symbolizer's, the
 * debuginfod fetcher's (taken under the symbolizer's), the server
 * keeper's, the settings'.
 * Inner still, each with handlers of its own registered earlier, so that
 * their prepare runs after this one: cpu.c's lock, then the samplers'
 * tables (own_lock.c). */
/* life_lock held: a process that serves becomes its tree's owner (once).
 * On the program's thread (at its fork): cprof's allocations unsampled. */
static void own_tree_locked(void) {
  if (!serving || cprof__tree_role() != CPROF_TREE_NONE)
    return;
  cprof__guard_enter();
  if (cprof__tree_own() == 0) {
    cprof__config_get(&tree_cfg);
    tree_cfg.addr = served;
  }
  cprof__guard_leave();
}

static void atfork_prepare(void) {
  pthread_mutex_lock(&life_lock);
  /* A forked child serves its owner on a socket in the tree's directory
   * (tree/tree.h), made before the first fork. */
  own_tree_locked();
  cprof__output_atfork_prepare();
  cprof__push_atfork_prepare();
  cprof__threads_atfork_prepare();
  cprof__symbolizer_atfork_prepare();
  cprof__debuginfod_atfork_prepare();
  cprof__server_atfork_prepare();
  cprof__metrics_atfork_prepare();
  cprof__config_atfork_prepare();
}

static void atfork_parent(void) {
  cprof__config_atfork_parent();
  cprof__metrics_atfork_parent();
  cprof__server_atfork_parent();
  cprof__debuginfod_atfork_parent();
  cprof__symbolizer_atfork_parent();
  cprof__threads_atfork_parent();
  cprof__push_atfork_parent();
  cprof__output_atfork_parent();
  pthread_mutex_unlock(&life_lock);
}

static void atfork_child(void) {
  /* The child is single-threaded: our server thread and any request in
   * flight stayed in the parent. Start the child clean; it may call
   * cprof_start again. */
  cprof__config_atfork_child();
  cprof__metrics_atfork_child();
  cprof__server_atfork_child();
  cprof__debuginfod_atfork_child();
  cprof__symbolizer_atfork_child();
  cprof__threads_atfork_child();
  cprof__push_atfork_child();
  cprof__output_atfork_child();
  cprof__cpu_atfork_child();
  cprof__thread_count_atfork_child();
  running = 0;
  serving = 0;
  server_parked = 0;
  metrics_interval_ms = metrics_window_s = 0;
  metrics_on = metrics_parked = 0;
  bound[0] = '\0';
  joiner_running = 0;
  set_join_pending(cprof__tree_join_child());
  if (join_pending) {
    life_pid = getpid();
    start_joiner();
  }
  pthread_mutex_unlock(&life_lock);
}

static void register_atfork(void) {
  /* First (each registers the one inside it first, cpu.c's): their
   * prepare handlers run after ours. */
  cprof__cpu_api_atfork_register();
  pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* Waits ms, or until stop_joiner; joiner_wait.lock held. Returns 1 when
 * stopped. */
static int joiner_wait_ms(long ms) {
  struct timespec deadline = cprof__deadline_ms(CLOCK_MONOTONIC, ms);
  while (!joiner_wait.cancel &&
         pthread_cond_timedwait(&joiner_wait.cond, &joiner_wait.lock, &deadline) != ETIMEDOUT)
    ;
  return joiner_wait.cancel;
}

/* Takes life_lock, which the joiner only tries for: stop_joiner, called
 * with it held, waits for this thread to end. joiner_wait.lock held, and
 * released. Returns 0 when stopped (life_lock not taken). */
static int joiner_lock_life(void) {
  for (;;) {
    if (joiner_wait.cancel) {
      pthread_mutex_unlock(&joiner_wait.lock);
      return 0;
    }
    if (pthread_mutex_trylock(&life_lock) == 0)
      break;
    joiner_wait_ms(1);
  }
  pthread_mutex_unlock(&joiner_wait.lock);
  return 1;
}

/* The joiner, a member's thread of cprof's: waits JOIN_DELAY_MS (unless
 * the member has joined already), joins, then waits for the tree's owner
 * to end (cprof__tree_owner_wait); when it has (a daemon's parent, gone
 * after its fork), the member takes its place (take_over_locked), and the
 * thread ends; it ends too in a member that cannot watch. In a descriptor
 * table of its own: the owner's pidfd is out of the program's reach. */
static void *joiner_main(void *unused) {
  (void)unused;
  pthread_setname_np(pthread_self(), "cprof-member");
  cprof__fds_unshare();
  pthread_mutex_lock(&joiner_wait.lock);
  if (join_pending && joiner_wait_ms(JOIN_DELAY_MS)) {
    pthread_mutex_unlock(&joiner_wait.lock);
    return NULL;
  }
  if (!joiner_lock_life())
    return NULL;
  if (join_pending && !serving)
    join_locked();
  pthread_mutex_unlock(&life_lock);
  cprof__tree_watch_t w = CPROF_TREE_WATCH_INIT;
  pthread_mutex_lock(&joiner_wait.lock);
  while (!joiner_wait.cancel) {
    pthread_mutex_unlock(&joiner_wait.lock);
    pid_t gone = cprof__tree_owner_wait(&w, WATCH_MS);
    pthread_mutex_lock(&joiner_wait.lock);
    if (gone < 0)
      break;
    if (gone == 0)
      continue;
    if (!joiner_lock_life())
      break;
    int took = take_over_locked(gone);
    pthread_mutex_unlock(&life_lock);
    pthread_mutex_lock(&joiner_wait.lock);
    if (took)
      break;
  }
  pthread_mutex_unlock(&joiner_wait.lock);
  cprof__tree_watch_end(&w);
  return NULL;
}

/* In the fork handler, or with life_lock held. */
static void start_joiner(void) {
  cprof__cond_init_monotonic(&joiner_wait.cond);
  pthread_mutex_init(&joiner_wait.lock, NULL);
  joiner_wait.cancel = 0;
  cprof__guard_enter(); /* a thread of cprof's: see thread_start.c */
  joiner_running = pthread_create(&joiner, NULL, joiner_main, NULL) == 0;
  cprof__guard_leave();
}

/* life_lock held: the joiner, if there is one, ends (without joining, if
 * it had not). */
static void stop_joiner(void) {
  if (!joiner_running)
    return;
  pthread_mutex_lock(&joiner_wait.lock);
  joiner_wait.cancel = 1;
  pthread_cond_signal(&joiner_wait.cond);
  pthread_mutex_unlock(&joiner_wait.lock);
  pthread_join(joiner, NULL);
  joiner_running = 0;
}

/* life_lock held, in a member not yet serving: serves the tree's owner
 * on the member's socket, with the settings the parent had but those of
 * the address (no credentials asked: the directory keeps others out; no
 * TLS), and without what is the owner's alone: the exit files, the push,
 * the metrics sampler. Silent unless it fails. */
static int join_locked(void) {
  set_join_pending(0);
  cprof__config_t cfg;
  cprof__config_get(&cfg);
  memset(&cfg.addr, 0, sizeof cfg.addr);
  cfg.addr.enabled = 1;
  int err = cprof__tree_socket_path(getpid(), cfg.addr.unix_path, sizeof cfg.addr.unix_path);
  cfg.auth[0] = cfg.token[0] = cfg.tls_cert[0] = cfg.tls_key[0] = '\0';
  cfg.output[0] = cfg.push_url[0] = '\0';
  cfg.metrics = 0;
  cprof__config_set(&cfg);
  /* One worker of many: what a request needs is given back after it
   * (issue 31: each worker adds at most 2 MB of RSS, profiled or not). */
  cprof__symbolizer_frugal(1);
  cprof__server_frugal(1);
  if (!err)
    err = cprof__server_start(&cfg.addr, bound, sizeof bound);
  if (err) {
    cprof__log("pid %d: cannot serve this process's profiles to its tree's owner (%s): %s",
               (int)getpid(), cfg.addr.unix_path, cprof_strerror(err));
    return err;
  }
  running = serving = 1;
  served = cfg.addr;
  life_pid = getpid();
  return 0;
}

/* Before the program changes its credentials (interpose/creds.c): a
 * member that has not joined joins now, while it may still make its
 * socket. */
static void before_credentials(void) {
  if (!join_pending || in_vfork_child())
    return;
  cprof__guard_enter();
  pthread_mutex_lock(&life_lock);
  if (join_pending && !serving)
    join_locked(); /* the joiner goes on to watch the owner */
  pthread_mutex_unlock(&life_lock);
  cprof__guard_leave();
}

/* life_lock held, in a member whose owner (gone) has ended: if no other
 * member took its place first (cprof__tree_claim), this one does: it
 * serves the owner's address, with the owner's settings (its exit files,
 * push, metrics), for the tree. Returns 1 when it did. */
static int take_over_locked(pid_t gone) {
  /* A member exec'd (CPROF_CHILDREN=1) knows not the owner's settings:
   * only forked ones take over. */
  if (!tree_cfg.addr.enabled || !cprof__tree_claim(gone))
    return 0;
  if (serving)
    cprof__server_stop(); /* the member's socket */
  serving = 0;
  set_join_pending(0);
  cprof__config_set(&tree_cfg);
  running = 1;
  life_pid = getpid();
  cprof__output_start(&tree_cfg);
  cprof__push_start(&tree_cfg);
  /* The port is the one the owner had: its socket is closed with it, but
   * a client's connection to it may hold the port a moment longer. */
  int err = -EADDRINUSE;
  for (int i = 0; i < TAKE_OVER_TRIES && err == -EADDRINUSE; i++) {
    if (i)
      nanosleep(&(struct timespec){0, TAKE_OVER_WAIT_NS}, NULL);
    err = cprof__server_start(&tree_cfg.addr, bound, sizeof bound);
  }
  if (err) {
    cprof__log("pid %d: cannot listen on %s:%d after pid %d, which served there, ended: %s; "
               "the profiling server is off",
               (int)getpid(), tree_cfg.addr.host, tree_cfg.addr.port, (int)gone,
               cprof_strerror(err));
    return 1;
  }
  serving = 1;
  served = tree_cfg.addr;
  metrics_interval_ms = tree_cfg.metrics ? tree_cfg.metrics_interval_ms : 0;
  metrics_window_s = tree_cfg.metrics ? tree_cfg.metrics_window_s : 0;
  if (metrics_interval_ms)
    metrics_on = cprof__metrics_start(metrics_interval_ms, metrics_window_s) == 0;
  return 1;
}

static void follow_credentials(void);
static int run_alone(long (*call)(void *), void *arg, long *rc);
static void last_program_thread_gone(void);
static void metrics_demand(void);

/* Everything cprof_start does, and every thread it starts (which inherit
 * the guard, see thread_start.c), allocates without being sampled. */
static int start(const cprof_options_t *opts);
int cprof_start(const cprof_options_t *opts) {
  cprof__guard_enter();
  int rc = start(opts);
  cprof__guard_leave();
  return rc;
}

static int start(const cprof_options_t *opts) {
  pthread_once(&atfork_once, register_atfork);
  pthread_mutex_lock(&life_lock);
  if (running) {
    pthread_mutex_unlock(&life_lock);
    return -EALREADY;
  }
  cprof__config_t cfg;
  int err = cprof__config_load(opts, &cfg);

  /* The signal with which threads are asked for their stacks: installed
   * only for a server, so that a program without one sees no system call
   * it does not need. (A program that calls cprof_handle_request itself
   * gets it at its first capture: threads.c.) */
  if (cfg.addr.enabled && cprof__threads_init() != 0)
    cprof__log("no free real-time signal: running threads will show without stacks in the goroutine profile");
  if (cfg.heap_rate > 0) {
    char why[600];
    if (cprof__malloc_check(why, sizeof why) != 0) {
      cprof__log("heap profiling is off: %s", why);
      cfg.heap_rate = 0;
    }
  }
  cprof__stack_memory_set_limit(cfg.max_memory);
  cprof__set_max_depth(cfg.max_depth);
  cprof__heap_configure(cfg.heap_rate, cfg.unwind);
  cprof__contention_set_unwinder(cfg.unwind);
  cprof__block_set_rate(cfg.block_rate);
  cprof__mutex_set_fraction(cfg.mutex_fraction);
  cprof__config_set(&cfg);
  __atomic_store_n(&cprof__follow_credentials_hook, follow_credentials, __ATOMIC_RELEASE);
  __atomic_store_n(&cprof__before_credentials_hook, before_credentials, __ATOMIC_RELEASE);
  __atomic_store_n(&cprof__alone_hook, run_alone, __ATOMIC_RELEASE);
  __atomic_store_n(&cprof__last_program_thread_hook, last_program_thread_gone, __ATOMIC_RELEASE);
  __atomic_store_n(&cprof__metrics_demand_hook, metrics_demand, __ATOMIC_RELEASE);
  running = 1;
  life_pid = cfg.addr.enabled || cfg.output[0] || cfg.push_url[0] ? getpid() : 0;
  cprof__output_start(&cfg);
  cprof__push_start(&cfg);

  if (cfg.addr.enabled) {
    int serr = cprof__server_start(&cfg.addr, bound, sizeof bound);
    if (serr == 0) {
      serving = 1;
      served = cfg.addr;
      const char *colon = strrchr(bound, ':');
      if (colon)
        served.port = atoi(colon + 1);
      if (cfg.addr.port == 0) /* the user asked for any free port: say which */
        cprof__log("serving %s://%s%s/debug/pprof/", cfg.tls_cert[0] ? "https" : "http", bound,
                   cfg.prefix);
    } else if (serr != -ENOTSUP) { /* -ENOTSUP: the server has said why */
      const char *v = opts && opts->addr ? opts->addr : getenv("CPROF_ADDR");
      cprof__log("CPROF_ADDR=%s: cannot listen: %s; the profiling server is off",
                 v ? v : "127.0.0.1:6060", cprof_strerror(serr));
      if (!err)
        err = serr;
    } else if (!err) {
      err = serr;
    }
  }
  /* With CPROF_CHILDREN=1 the programs this one runs join its tree, and
   * find it by its directory, which a fork would make (a shell's vfork or
   * posix_spawn makes none). */
  const char *children = getenv("CPROF_CHILDREN");
  if (children && strcmp(children, "1") == 0)
    own_tree_locked();
  metrics_interval_ms = cfg.metrics ? cfg.metrics_interval_ms : 0;
  metrics_window_s = cfg.metrics ? cfg.metrics_window_s : 0;
  if (serving && metrics_interval_ms)
    metrics_on = cprof__metrics_start(metrics_interval_ms, metrics_window_s) == 0;
  pthread_mutex_unlock(&life_lock);
  return err;
}

/* A request for the sampler's figures (http/metrics.c): starts it if it
 * should run and does not. Never waits for the lock: cprof_stop holds it
 * while it waits for requests in flight, and a later request will do. */
static void metrics_demand(void) {
  if (pthread_mutex_trylock(&life_lock) != 0)
    return;
  if (running && metrics_interval_ms && !metrics_on && !metrics_parked) {
    metrics_on = cprof__metrics_start(metrics_interval_ms, metrics_window_s) == 0;
    if (!metrics_on) /* it said why; once is enough */
      metrics_interval_ms = metrics_window_s = 0;
  }
  pthread_mutex_unlock(&life_lock);
}

void cprof_stop(void) {
  cprof__guard_enter();
  cprof__output_finish();
  cprof__push_finish();
  cprof__heap_configure(0, CPROF_UNWIND_DWARF);
  cprof__block_set_rate(0);
  cprof__mutex_set_fraction(0);
  pthread_mutex_lock(&life_lock);
  if (serving)
    cprof__server_stop();
  cprof__metrics_stop();
  metrics_interval_ms = metrics_window_s = 0;
  metrics_on = metrics_parked = 0;
  serving = 0;
  running = 0;
  bound[0] = '\0';
  pthread_mutex_unlock(&life_lock);
  cprof__debuginfod_stop();
  cprof__guard_leave();
}

/* cprof's own threads (the server's, a CPU recording's drainer) ended, then
 * started again. Credentials that Linux keeps per thread (capabilities,
 * PR_SET_KEEPCAPS, securebits) are copied to a thread from its creator, so
 * threads started again by the program's thread that changed them follow
 * the program exactly (creds.c). The listening socket is opened again on
 * the same port; or, with keep (for a caller that is the program's only
 * thread, which alone sees its table meanwhile), kept: it stays in the
 * network namespace it was made in, and a port the new credentials could
 * not bind stays the server's. */
static void park_locked(int keep) {
  stop_joiner(); /* a member not yet serving: joins in unpark_locked */
  /* A member's socket: its directory may no longer let it be made again
   * (a worker that dropped root), so it is always kept. */
  keep = keep || served.unix_path[0];
  cprof__push_park();
  /* The drainer of CPROF_OUTPUT's, the push's or the API's CPU profile. */
  cprof__cpu_recording_park();
  cprof__debuginfod_stop(); /* started again when a profile wants it */
  if (serving) {
    if (keep)
      kept_listener = cprof__server_stop_keeping();
    else
      cprof__server_stop();
    serving = 0;
    server_parked = 1;
  }
  if (metrics_on) {
    cprof__metrics_stop();
    metrics_on = 0;
    metrics_parked = 1;
  }
}

/* why: what the program did, for the line that says the server could
 * not listen again. */
static void unpark_locked(const char *why) {
  if (server_parked) {
    server_parked = 0;
    int err = cprof__server_start_on(kept_listener, &served, bound, sizeof bound);
    if (kept_listener >= 0) {
      close(kept_listener);
      /* Not taken over (the server could not copy it): it held the port
       * the server then asked for. */
      if (err != 0)
        err = cprof__server_start(&served, bound, sizeof bound);
    }
    kept_listener = -1;
    if (err == 0)
      serving = 1;
    else
      cprof__log("cannot listen again on %s after the program %s: %s; "
                 "the profiling server is off",
                 bound, why, cprof_strerror(err));
  }
  if (metrics_parked) {
    metrics_parked = 0;
    metrics_on = cprof__metrics_start(metrics_interval_ms, metrics_window_s) == 0;
  }
  cprof__cpu_recording_unpark();
  cprof__push_unpark();
  if (join_pending && !serving)
    join_locked();
  if (cprof__tree_role() == CPROF_TREE_MEMBER && !joiner_running)
    start_joiner(); /* watches the owner again */
}

/* Whether the caller is in a child made by vfork. */
static int in_vfork_child(void) { return life_pid && getpid() != life_pid; }

static void follow_credentials(void) {
  if (in_vfork_child())
    return;
  cprof__guard_enter();
  pthread_mutex_lock(&life_lock);
  if (running) {
    park_locked(0);
    unpark_locked("changed its credentials");
  }
  pthread_mutex_unlock(&life_lock);
  cprof__guard_leave();
}

/* The threads of the process, or -1 when /proc cannot tell (a sandbox
 * without it). */
static int threads_alive(void) {
  DIR *d = opendir("/proc/self/task");
  if (!d)
    return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.')
      n++;
  closedir(d);
  return n;
}

/* How long a call waits for cprof's stopped threads to leave the process:
 * pthread_join returns when the kernel has cleared a thread's id, a little
 * before the thread leaves its group (do_exit), and until then the kernel
 * counts it. Reached only when the program has threads that
 * pthread_create did not make (raw clone), which the call then refuses. */
#define ALONE_WAIT_NS 500000000L

static long call_alone(long (*call)(void *), void *arg) {
  struct timespec start, now, nap = {0, 1000000};
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    clock_gettime(CLOCK_MONOTONIC, &now);
    int past =
        (now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) >= ALONE_WAIT_NS;
    int n = threads_alive();
    if (n == 1 || n < 0 || past) {
      long rc = call(arg);
      /* Without /proc, a refusal may be for a thread still leaving: try
       * again until the bound. */
      if (rc != -1 || !cprof__ns_refused(errno) || n == 1 || past)
        return rc;
    }
    nanosleep(&nap, NULL);
  }
}

/* unshare or setns refused (EINVAL, EUSERS) while cprof's threads run
 * (interpose/namespaces.c): made again with them stopped, if the caller
 * is the program's only thread, as the kernel requires of a process
 * without cprof. Their new threads, made by the caller, are in its new
 * namespaces. */
static int run_alone(long (*call)(void *), void *arg, long *rc) {
  if (cprof__program_thread_count() != 1 || in_vfork_child())
    return 0;
  cprof__guard_enter();
  pthread_mutex_lock(&life_lock);
  int ran = running, waited = joiner_running, err = 0;
  if (ran) {
    park_locked(1);
    *rc = call_alone(call, arg);
    err = errno;
    unpark_locked("changed its namespaces");
  } else if (waited) { /* a member not yet serving: it waits again after */
    stop_joiner();
    *rc = call_alone(call, arg);
    err = errno;
    start_joiner();
  }
  pthread_mutex_unlock(&life_lock);
  cprof__guard_leave();
  errno = err;
  return ran || waited;
}

/* The program's last thread is ending (main called pthread_exit, and the
 * threads it left have ended too). Without cprof the process would end
 * now; so our threads end, and the last thread out calls exit(0), as glibc
 * does, which runs the program's atexit handlers and ours (CPROF_OUTPUT
 * writes its files there). */
static void last_program_thread_gone(void) {
  cprof__guard_enter();
  pthread_mutex_lock(&life_lock);
  park_locked(0);
  pthread_mutex_unlock(&life_lock);
  cprof__guard_leave();
}

const char *cprof_addr(void) { return serving ? bound : NULL; }

/* Whether this library was loaded through LD_PRELOAD, rather than linked:
 * a linked program decides itself when to call cprof_start. */
static int preloaded(void) {
  const char *v = getenv("LD_PRELOAD");
  if (!v)
    return 0;
  /* Entries are separated by spaces or colons (ld.so(8)). */
  const char *p = v;
  while (*p) {
    size_t n = strcspn(p, ": ");
    const char *base = p;
    for (const char *q = p; q < p + n; q++)
      if (*q == '/')
        base = q + 1;
    if ((size_t)(p + n - base) >= 8 && strncmp(base, "libcprof", 8) == 0)
      return 1;
    p += n;
    while (*p == ':' || *p == ' ')
      p++;
  }
  return 0;
}

/* Whether our parent process has this library loaded: then we are a
 * program it ran (a shell's command, a server's helper), which inherited
 * LD_PRELOAD and CPROF_* with the rest of its environment. Read from the
 * parent's /proc maps, not from a mark in the environment, which the
 * program would see (and print, with env(1)). A program that replaced the
 * parent by exec keeps the parent's parent, and starts as the parent
 * would have. A parent gone before we look (an orphan's parent is init or
 * a subreaper) or whose maps we may not read is taken for one without
 * cprof. */
static int parent_runs_cprof(void) {
  Dl_info info;
  struct stat st;
  if (!dladdr((void *)cprof_start, &info) || !info.dli_fname || stat(info.dli_fname, &st) != 0)
    return 0;
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/maps", (int)getppid());
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  /* Lines: "start-end perms offset MAJOR:MINOR INODE path", the device
   * numbers in hex. */
  char buf[8192];
  size_t have = 0;
  int found = 0;
  for (;;) {
    ssize_t n = read(fd, buf + have, sizeof buf - 1 - have);
    if (n <= 0)
      break;
    have += (size_t)n;
    buf[have] = '\0';
    char *line = buf, *nl;
    while (!found && (nl = strchr(line, '\n'))) {
      unsigned maj, min;
      unsigned long ino;
      *nl = '\0';
      if (sscanf(line, "%*s %*s %*s %x:%x %lu", &maj, &min, &ino) == 3 && ino == st.st_ino &&
          maj == major(st.st_dev) && min == minor(st.st_dev))
        found = 1;
      line = nl + 1;
    }
    if (found)
      break;
    have = (size_t)(buf + have - line);
    memmove(buf, line, have);
    if (have == sizeof buf - 1)
      have = 0; /* a line longer than the buffer: not one of ours */
  }
  close(fd);
  return found;
}

/* At exit: the owner takes its tree's directory away; a member its
 * socket (the owner also removes those of processes gone). */
__attribute__((destructor)) static void leave_tree(void) {
  cprof__guard_enter();
  if (cprof__tree_role() == CPROF_TREE_OWNER)
    cprof__tree_leave();
  else
    cprof__tree_member_leave();
  cprof__guard_leave();
}

__attribute__((constructor)) static void preload_start(void) {
  if (!preloaded())
    return;
  /* CPROF_CHILDREN=1: programs the profiled program runs are profiled too,
   * each a member of its parent's tree. */
  const char *v = getenv("CPROF_CHILDREN");
  int children = v && strcmp(v, "1") == 0;
  int exec_d = parent_runs_cprof();
  if (!children && exec_d)
    return; /* exec'd by a program under cprof: be silent, serve and write nothing */
  if (v && strcmp(v, "0") != 0 && strcmp(v, "1") != 0)
    cprof__log("CPROF_CHILDREN=%s: want 0 or 1; programs this one runs will not start cprof", v);
  cprof__guard_enter();
  int joined = children && exec_d && cprof__tree_join_parent();
  cprof__guard_leave();
  if (joined) {
    /* Its settings but the owner's alone (the address, the exit files,
     * the push, the sampler), then a member as a forked child is. */
    cprof_options_t member = {.addr = "0", .output = "", .push_url = "", .metrics = "0"};
    cprof_start(&member);
    pthread_mutex_lock(&life_lock);
    set_join_pending(running);
    life_pid = getpid();
    if (join_pending)
      start_joiner();
    pthread_mutex_unlock(&life_lock);
    return;
  }
  cprof_start(NULL);
}

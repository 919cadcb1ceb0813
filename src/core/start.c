/* cprof's lifecycle: cprof_start, cprof_stop, fork handling, and the
 * constructor that starts cprof in a program it was LD_PRELOADed into. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/log.h"
#include "core/output.h"
#include "cprof.h"
#include "http/server.h"
#include "sample/cpu.h"
#include "sample/contention.h"
#include "sample/heap.h"
#include "sample/malloc.h"
#include "sample/stack_table.h"
#include "sample/threads.h"
#include "symbol/symbolize.h"
#include "unwind/unwind.h"

static pthread_mutex_t life_lock = PTHREAD_MUTEX_INITIALIZER;
static int running;
static int serving;
static char bound[300];
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void atfork_child(void) {
  /* The child is single-threaded: our server thread and any request in
   * flight stayed in the parent, and the locks they held may look taken.
   * Start the child clean; it may call cprof_start again. */
  pthread_mutex_init(&life_lock, NULL);
  cprof__config_atfork_child();
  cprof__threads_atfork_child();
  cprof__cpu_atfork_child();
  cprof__output_atfork_child();
  cprof__symbolizer_atfork_child();
  if (serving)
    cprof__server_atfork_child();
  running = 0;
  serving = 0;
  bound[0] = '\0';
}

static void register_atfork(void) { pthread_atfork(NULL, NULL, atfork_child); }

/* Everything cprof_start does, and every thread it starts (which inherit
 * the guard, see thread_start.c), allocates without being sampled. */
static int start(const cprof_options_t *opts);
int cprof_start(const cprof_options_t *opts) {
  cprof__heap_guard_enter();
  int rc = start(opts);
  cprof__heap_guard_leave();
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

  int terr = cprof__threads_init();
  if (terr != 0)
    cprof__log("no free real-time signal: thread stacks (goroutine profile) are unavailable");
  if (cfg.heap_rate > 0) {
    char why[600];
    if (cprof__malloc_check(why, sizeof why) != 0) {
      cprof__log("heap profiling is off: %s", why);
      cfg.heap_rate = 0;
    }
  }
  cprof__stack_memory_set_limit(cfg.max_memory);
  cprof__heap_configure(cfg.heap_rate, cfg.unwind);
  cprof__contention_set_unwinder(cfg.unwind);
  cprof__block_set_rate(cfg.block_rate);
  cprof__mutex_set_fraction(cfg.mutex_fraction);
  cprof__config_set(&cfg);
  running = 1;
  cprof__output_start(&cfg);

  if (cfg.addr.enabled) {
    int serr = cprof__server_start(&cfg.addr, bound, sizeof bound);
    if (serr == 0) {
      serving = 1;
      if (cfg.addr.port == 0) /* the user asked for any free port: say which */
        cprof__log("serving http://%s%s/debug/pprof/", bound, cfg.prefix);
    } else {
      const char *v = opts && opts->addr ? opts->addr : getenv("CPROF_ADDR");
      cprof__log("CPROF_ADDR=%s: cannot listen: %s; the profiling server is off",
                 v ? v : "127.0.0.1:6060", cprof_strerror(serr));
      if (!err)
        err = serr;
    }
  }
  pthread_mutex_unlock(&life_lock);
  return err;
}

void cprof_stop(void) {
  cprof__heap_guard_enter();
  cprof__output_finish();
  cprof__heap_configure(0, CPROF_UNWIND_DWARF);
  cprof__block_set_rate(0);
  cprof__mutex_set_fraction(0);
  pthread_mutex_lock(&life_lock);
  if (serving)
    cprof__server_stop();
  serving = 0;
  running = 0;
  bound[0] = '\0';
  pthread_mutex_unlock(&life_lock);
  cprof__heap_guard_leave();
}

const char *cprof_addr(void) { return serving ? bound : NULL; }

const char *cprof_strerror(int err) {
  switch (err) {
  case 0:
    return "success";
  case -EALREADY:
    return "cprof is already running";
  case -EINVAL:
    return "invalid setting";
  case -EBUSY:
    return "resource in use";
  case -ENOMEM:
    return "out of memory";
  default:
    return err < 0 ? strerror(-err) : "unknown error";
  }
}

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

__attribute__((constructor)) static void preload_start(void) {
  if (preloaded())
    cprof_start(NULL);
}

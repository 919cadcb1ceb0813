/* The demo behind `make demo`: a small program whose threads do
 * recognisable work in named functions, so every cprof profile has
 * something true to show.
 *
 *   cpu-burner    burn_cpu -> checksum_block (about 2/3) and sort_block (1/3)
 *   allocator     allocate_buffers -> cache_insert: malloc/free churn,
 *                 and remember_session: a leak (4 KiB every 10 ms, up to 16 MiB)
 *   lock-worker-1 contend_on_lock -> hold_lock: two threads fighting
 *   lock-worker-2   over one mutex (block and mutex profiles, turned on
 *                   below)
 *   waiter        wait_for_jobs: blocked on a condition variable
 *
 * The work is marked for /debug/pprof/trace's timeline, as Go's
 * runtime/trace marks it: regions "checksum" and "sort" on the
 * cpu-burner, "critical section" around each lock holder's work, a task
 * "refill" per round of the allocator, with a log line every 100 rounds.
 * While no trace records, each mark is a load and a branch (cprof.h).
 *
 * Usage: demo_server [--seconds N]   (default: until Ctrl-C)
 * Listens where CPROF_ADDR says, 127.0.0.1:6060 by default. At exit it
 * says how much work its threads did (rounds of their loops), so a
 * benchmark can tell what serving profiles cost it (bench/load). */
#include <cprof.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile sig_atomic_t stopping;
static pthread_mutex_t job_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t job_ready = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile uint64_t sink;

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

NOINLINE static uint64_t checksum_block(const uint32_t *v, size_t n) {
  uint64_t h = 1469598103934665603ULL;
  for (int round = 0; round < 8; round++)
    for (size_t i = 0; i < n; i++)
      h = (h ^ v[i]) * 1099511628211ULL;
  return h;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

NOINLINE static void sort_block(uint32_t *v, size_t n) {
  for (size_t i = 0; i < n; i++)
    v[i] = (uint32_t)(v[i] * 2654435761u + i);
  qsort(v, n, sizeof *v, cmp_u32);
}

/* Each worker counts its rounds in *rounds, read by main after the join. */
NOINLINE static void burn_cpu(uint64_t *rounds) {
  static uint32_t block[16384];
  while (!stopping) {
    cprof_region_begin("checksum");
    sink += checksum_block(block, 16384);
    cprof_region_end();
    cprof_region_begin("sort");
    sort_block(block, 4096);
    cprof_region_end();
    ++*rounds;
    sleep_ms(5); /* leave the machine some room: about half a core */
  }
}

NOINLINE static void cache_insert(void **cache, size_t slot, size_t size) {
  free(cache[slot]);
  cache[slot] = malloc(size);
  if (cache[slot])
    memset(cache[slot], (int)slot, size);
}

/* The leak: sessions remembered and never forgotten. */
NOINLINE static void remember_session(void **sessions, int i) {
  sessions[i] = malloc(4096);
  if (sessions[i])
    memset(sessions[i], i, 4096);
}

NOINLINE static void allocate_buffers(uint64_t *rounds) {
  enum { SLOTS = 256, MAX_SESSIONS = 4096 };
  static void *cache[SLOTS], *sessions[MAX_SESSIONS];
  unsigned seed = 1;
  int nsessions = 0;
  while (!stopping) {
    uint64_t task = cprof_task_begin("refill");
    for (int i = 0; i < 64; i++) {
      seed = seed * 1103515245u + 12345u;
      cache_insert(cache, seed % SLOTS, 64 + (seed >> 8) % 16384);
    }
    if (nsessions < MAX_SESSIONS)
      remember_session(sessions, nsessions++);
    cprof_task_end(task);
    if (++*rounds % 100 == 0 && cprof_trace_enabled()) {
      char msg[64];
      snprintf(msg, sizeof msg, "%d sessions remembered", nsessions);
      cprof_trace_log("allocator", msg);
    }
    sleep_ms(10);
  }
  for (int i = 0; i < SLOTS; i++)
    free(cache[i]);
}

NOINLINE static void hold_lock(void) {
  for (volatile int i = 0; i < 200000; i++)
    sink += (uint64_t)i;
}

NOINLINE static void contend_on_lock(uint64_t *rounds) {
  while (!stopping) {
    pthread_mutex_lock(&shared_lock);
    cprof_region_begin("critical section");
    hold_lock();
    cprof_region_end();
    pthread_mutex_unlock(&shared_lock);
    ++*rounds;
    sleep_ms(2);
  }
}

NOINLINE static void wait_for_jobs(uint64_t *rounds) {
  (void)rounds; /* waiting is its whole job */
  pthread_mutex_lock(&job_lock);
  while (!stopping)
    pthread_cond_wait(&job_ready, &job_lock);
  pthread_mutex_unlock(&job_lock);
}

typedef struct worker {
  const char *name;
  void (*run)(uint64_t *rounds);
  pthread_t thread;
  uint64_t rounds;
} worker_t;

static void *worker_main(void *arg) {
  worker_t *w = arg;
  pthread_setname_np(pthread_self(), w->name);
  w->run(&w->rounds);
  return NULL;
}

static void on_signal(int sig) { stopping = 1; }

/* One line of what the threads did, e.g. "cprof demo: work: 10512 rounds
 * in 60.0 s (cpu-burner 10512, allocator 5480, ...)": bench/load/run.sh
 * compares these rates with and without clients fetching profiles. */
static void report_work(const worker_t *w, int n, struct timespec began, struct timespec ended) {
  double s = (double)(ended.tv_sec - began.tv_sec) + (double)(ended.tv_nsec - began.tv_nsec) / 1e9;
  uint64_t total = 0;
  for (int i = 0; i < n; i++)
    total += w[i].rounds;
  printf("cprof demo: work: %llu rounds in %.1f s (", (unsigned long long)total, s);
  for (int i = 0, shown = 0; i < n; i++)
    if (w[i].rounds)
      printf("%s%s %llu", shown++ ? ", " : "", w[i].name, (unsigned long long)w[i].rounds);
  printf(")\n");
}

int main(int argc, char **argv) {
  long seconds = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
      char *end;
      seconds = strtol(argv[++i], &end, 10);
      if (*end || seconds < 0) {
        fprintf(stderr, "demo_server: --seconds wants a whole number, got %s\n", argv[i]);
        return 2;
      }
    } else {
      fprintf(stderr, "usage: demo_server [--seconds N]\n");
      return 2;
    }
  }

  int err = cprof_start(NULL);
  const char *addr = cprof_addr();
  if (!addr) {
    fprintf(stderr,
            "demo_server: cprof is not serving (%s).\n"
            "If port 6060 is taken, pick another: CPROF_ADDR=127.0.0.1:6061 make demo\n",
            cprof_strerror(err));
    return 1;
  }

  /* As a Go program calls runtime.SetBlockProfileRate and
   * SetMutexProfileFraction to have these profiles: every wait of 10 µs or
   * more, shorter ones sampled; 1 in 5 contended unlocks. */
  cprof_set_block_rate(10000);
  cprof_set_mutex_fraction(5);

  worker_t workers[] = {
      {"cpu-burner", burn_cpu, 0, 0},         {"allocator", allocate_buffers, 0, 0},
      {"lock-worker-1", contend_on_lock, 0, 0}, {"lock-worker-2", contend_on_lock, 0, 0},
      {"waiter", wait_for_jobs, 0, 0},
  };
  const int nworkers = sizeof workers / sizeof workers[0];
  struct timespec began, ended;
  clock_gettime(CLOCK_MONOTONIC, &began);
  for (int i = 0; i < nworkers; i++)
    pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]);

  const char *prefix = getenv("CPROF_PREFIX") ? getenv("CPROF_PREFIX") : "";
  printf("cprof demo: pid %d, serving http://%s%s/debug/pprof/\n\n"
         "Open in a browser:\n"
         "  http://%s%s/debug/charts/      live charts of CPU, memory, threads...\n"
         "  http://%s%s/debug/pprof/ui/    flame graphs of every profile\n"
         "Or try, in another terminal:\n"
         "  go tool pprof -top http://%s%s/debug/pprof/goroutine\n"
         "  curl 'http://%s%s/debug/pprof/goroutine?debug=2'\n"
         "  go tool pprof -top 'http://%s%s/debug/pprof/profile?seconds=5'\n"
         "  go tool pprof -top http://%s%s/debug/pprof/heap\n"
         "  build/cprof top http://%s%s/debug/pprof/mutex\n"
         "  curl http://%s%s/metrics\n\n",
         (int)getpid(), addr, prefix, addr, prefix, addr, prefix, addr, prefix, addr, prefix, addr,
         prefix, addr, prefix, addr, prefix, addr, prefix);
  if (seconds)
    printf("Stopping by itself after %ld s.\n", seconds);
  else
    printf("Ctrl-C to stop.\n");
  fflush(stdout);

  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  for (long waited = 0; !stopping && (!seconds || waited < seconds * 10); waited++)
    sleep_ms(100);
  stopping = 1;

  pthread_mutex_lock(&job_lock);
  pthread_cond_broadcast(&job_ready);
  pthread_mutex_unlock(&job_lock);
  for (int i = 0; i < nworkers; i++)
    pthread_join(workers[i].thread, NULL);
  clock_gettime(CLOCK_MONOTONIC, &ended);
  cprof_stop();
  report_work(workers, nworkers, began, ended);
  printf("cprof demo: stopped.\n");
  return 0;
}

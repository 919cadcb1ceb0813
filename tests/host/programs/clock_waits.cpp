// Threads that wait known amounts in the clock* calls C++'s <mutex>,
// <shared_mutex> and <condition_variable> compile to on glibc 2.30 and
// later (std::condition_variable::wait_for, std::timed_mutex::try_lock_for,
// std::shared_timed_mutex::try_lock_shared_for and try_lock_for), in the
// same calls made from C, and in pthread_barrier_wait, pthread_timedjoin_np
// and pthread_clockjoin_np; for clock_waits.sh.
//
//   clock_waits [--serve]
//
// First the calls' answers where they do not wait (bad clocks and
// timeouts, free locks, posted semaphores, ended threads): one "edge ..."
// line each, which must read the same with and without cprof. Then every
// wait at once, each in a thread of its own, each measured by the program
// itself with CLOCK_MONOTONIC around the call: "truth FUNCTION NS COUNT",
// FUNCTION being the function that waited (and, for the locks, the
// function that held the lock: "holds HOLDER WAITER"). Then "ready"; with
// --serve it sleeps until killed, for the profile to be fetched.
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#define NOINLINE extern "C" __attribute__((noinline))

static const long HOLD_MS = 300;

static long long now_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}
static void sleep_ms(long ms) {
  timespec t = {ms / 1000, ms % 1000 * 1000000};
  while (nanosleep(&t, &t) != 0 && errno == EINTR) {
  }
}
// An absolute time `ms` from now on clock k.
static timespec in_ms(clockid_t k, long ms) {
  timespec t;
  clock_gettime(k, &t);
  t.tv_sec += ms / 1000;
  t.tv_nsec += ms % 1000 * 1000000;
  if (t.tv_nsec >= 1000000000) {
    t.tv_sec++;
    t.tv_nsec -= 1000000000;
  }
  return t;
}

// ---- the truths ----

struct truth {
  const char *fn;
  std::atomic<long long> ns{0};
  std::atomic<int> n{0};
};
static truth truths[32];
static std::atomic<int> ntruths{0};
static truth *truth_of(const char *fn) {
  int n = ntruths.load();
  for (int i = 0; i < n; i++)
    if (strcmp(truths[i].fn, fn) == 0)
      return &truths[i];
  return nullptr;
}
// Declared from main, before any thread runs.
static void declare(const char *fn) { truths[ntruths++].fn = fn; }
static void add(const char *fn, long long t0) {
  truth *t = truth_of(fn);
  t->ns += now_ns() - t0;
  t->n++;
}

// A holder takes its lock, says so, holds it HOLD_MS and lets it go; its
// waiter waits for the word, then for the lock.
struct handshake {
  std::atomic<int> held{0};
  void wait_held() {
    while (!held.load())
      sleep_ms(1);
  }
};

// ---- C++ ----

static std::mutex cv_mu;
static std::condition_variable cv;
NOINLINE void wait_cv_for() {
  std::unique_lock<std::mutex> lk(cv_mu);
  long long t0 = now_ns();
  cv.wait_for(lk, std::chrono::milliseconds(HOLD_MS)); // nobody notifies: it times out
  add(__func__, t0);
}

static std::timed_mutex tm;
static handshake tm_h;
NOINLINE void hold_timed_mutex() {
  tm.lock();
  tm_h.held = 1;
  sleep_ms(HOLD_MS);
  tm.unlock();
}
NOINLINE void wait_timed_mutex() {
  tm_h.wait_held();
  long long t0 = now_ns();
  bool got = tm.try_lock_for(std::chrono::seconds(5));
  add(__func__, t0);
  if (got)
    tm.unlock();
}

static std::shared_timed_mutex stm_a, stm_b;
static handshake stm_a_h, stm_b_h;
NOINLINE void hold_shared_mutex() {
  stm_a.lock();
  stm_a_h.held = 1;
  sleep_ms(HOLD_MS);
  stm_a.unlock();
}
NOINLINE void wait_shared_for() {
  stm_a_h.wait_held();
  long long t0 = now_ns();
  bool got = stm_a.try_lock_shared_for(std::chrono::seconds(5));
  add(__func__, t0);
  if (got)
    stm_a.unlock_shared();
}
NOINLINE void hold_shared_mutex_shared() {
  stm_b.lock_shared();
  stm_b_h.held = 1;
  sleep_ms(HOLD_MS);
  stm_b.unlock_shared();
}
NOINLINE void wait_exclusive_for() {
  stm_b_h.wait_held();
  long long t0 = now_ns();
  bool got = stm_b.try_lock_for(std::chrono::seconds(5));
  add(__func__, t0);
  if (got)
    stm_b.unlock();
}

// ---- C ----

static pthread_mutex_t c_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c_cond = PTHREAD_COND_INITIALIZER;
NOINLINE void wait_cond_clockwait() {
  pthread_mutex_lock(&c_mu);
  timespec until = in_ms(CLOCK_MONOTONIC, HOLD_MS);
  long long t0 = now_ns();
  while (pthread_cond_clockwait(&c_cond, &c_mu, CLOCK_MONOTONIC, &until) != ETIMEDOUT) {
  }
  add(__func__, t0);
  pthread_mutex_unlock(&c_mu);
}

static sem_t c_sem;
NOINLINE void wait_sem_clockwait() {
  timespec until = in_ms(CLOCK_MONOTONIC, HOLD_MS);
  long long t0 = now_ns();
  while (sem_clockwait(&c_sem, CLOCK_MONOTONIC, &until) != 0 && errno == EINTR) {
  }
  add(__func__, t0);
}

static pthread_mutex_t c_lock = PTHREAD_MUTEX_INITIALIZER;
static handshake c_lock_h;
NOINLINE void hold_mutex() {
  pthread_mutex_lock(&c_lock);
  c_lock_h.held = 1;
  sleep_ms(HOLD_MS);
  pthread_mutex_unlock(&c_lock);
}
NOINLINE void wait_mutex_clocklock() {
  c_lock_h.wait_held();
  timespec until = in_ms(CLOCK_MONOTONIC, 5000);
  long long t0 = now_ns();
  int rc = pthread_mutex_clocklock(&c_lock, CLOCK_MONOTONIC, &until);
  add(__func__, t0);
  if (rc == 0)
    pthread_mutex_unlock(&c_lock);
}

static pthread_rwlock_t c_rw_a = PTHREAD_RWLOCK_INITIALIZER, c_rw_b = PTHREAD_RWLOCK_INITIALIZER;
static handshake c_rw_a_h, c_rw_b_h;
NOINLINE void hold_rwlock_writing() {
  pthread_rwlock_wrlock(&c_rw_a);
  c_rw_a_h.held = 1;
  sleep_ms(HOLD_MS);
  pthread_rwlock_unlock(&c_rw_a);
}
NOINLINE void wait_rwlock_clockrdlock() {
  c_rw_a_h.wait_held();
  timespec until = in_ms(CLOCK_MONOTONIC, 5000);
  long long t0 = now_ns();
  int rc = pthread_rwlock_clockrdlock(&c_rw_a, CLOCK_MONOTONIC, &until);
  add(__func__, t0);
  if (rc == 0)
    pthread_rwlock_unlock(&c_rw_a);
}
NOINLINE void hold_rwlock_reading() {
  pthread_rwlock_rdlock(&c_rw_b);
  c_rw_b_h.held = 1;
  sleep_ms(HOLD_MS);
  pthread_rwlock_unlock(&c_rw_b);
}
NOINLINE void wait_rwlock_clockwrlock() {
  c_rw_b_h.wait_held();
  timespec until = in_ms(CLOCK_REALTIME, 5000);
  long long t0 = now_ns();
  int rc = pthread_rwlock_clockwrlock(&c_rw_b, CLOCK_REALTIME, &until);
  add(__func__, t0);
  if (rc == 0)
    pthread_rwlock_unlock(&c_rw_b);
}

// Three threads at a barrier of 3: two arrive at once and wait for the
// third, which arrives HOLD_MS later and does not wait.
static pthread_barrier_t barrier;
NOINLINE void wait_barrier() {
  long long t0 = now_ns();
  pthread_barrier_wait(&barrier);
  add(__func__, t0);
}
NOINLINE void arrive_late_barrier() {
  sleep_ms(HOLD_MS);
  long long t0 = now_ns();
  int rc = pthread_barrier_wait(&barrier);
  add(__func__, t0);
  if (rc != PTHREAD_BARRIER_SERIAL_THREAD)
    printf("arrive_late_barrier: not the serial thread (%d)\n", rc);
}

static void *sleep_then_exit(void *) {
  sleep_ms(HOLD_MS);
  return (void *)42;
}
NOINLINE void wait_timedjoin() {
  pthread_t t;
  pthread_create(&t, nullptr, sleep_then_exit, nullptr);
  timespec until = in_ms(CLOCK_REALTIME, 5000);
  void *out = nullptr;
  long long t0 = now_ns();
  pthread_timedjoin_np(t, &out, &until);
  add(__func__, t0);
}
NOINLINE void wait_clockjoin() {
  pthread_t t;
  pthread_create(&t, nullptr, sleep_then_exit, nullptr);
  timespec until = in_ms(CLOCK_MONOTONIC, 5000);
  void *out = nullptr;
  long long t0 = now_ns();
  pthread_clockjoin_np(t, &out, CLOCK_MONOTONIC, &until);
  add(__func__, t0);
}

// ---- the calls that do not wait ----

// The pthread calls answer an error number; the semaphores -1 and errno.
static void edge(const char *what, int rc) { printf("edge %s: rc=%d\n", what, rc); }
static void edge_sem(const char *what, int rc) {
  printf("edge %s: rc=%d errno=%s\n", what, rc, rc == -1 ? strerrorname_np(errno) : "-");
}
static void *quick_exit_thread(void *) { return (void *)7; }
static void *hold_for_timeout(void *m) {
  pthread_mutex_lock((pthread_mutex_t *)m);
  sleep_ms(200);
  pthread_mutex_unlock((pthread_mutex_t *)m);
  return nullptr;
}

// A thread with a cancel pending (deferred) that calls sem_wait or
// sem_timedwait on a posted semaphore: both are cancellation points,
// tested before the semaphore is taken.
static sem_t cancel_sem;
static std::atomic<int> cancel_sent{0};
static void *cancelled_waiter(void *timed) {
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, nullptr);
  while (!cancel_sent.load())
    sleep_ms(1);
  pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, nullptr); // not a cancellation point
  timespec until = in_ms(CLOCK_REALTIME, 1000);
  if (timed)
    sem_timedwait(&cancel_sem, &until);
  else
    sem_wait(&cancel_sem);
  return (void *)1;
}
static void cancel_at_sem(const char *what, bool timed) {
  sem_init(&cancel_sem, 0, 1);
  cancel_sent = 0;
  pthread_t t;
  pthread_create(&t, nullptr, cancelled_waiter, (void *)timed);
  pthread_cancel(t);
  cancel_sent = 1;
  void *out = nullptr;
  pthread_join(t, &out);
  int v;
  sem_getvalue(&cancel_sem, &v);
  printf("edge %s, cancel pending: %s, value %d\n", what,
         out == PTHREAD_CANCELED ? "cancelled" : "went on", v);
  sem_destroy(&cancel_sem);
}

static void edges() {
  cancel_at_sem("sem_wait posted", false);
  cancel_at_sem("sem_timedwait posted", true);

  const clockid_t cpu = CLOCK_PROCESS_CPUTIME_ID;
  timespec ok = in_ms(CLOCK_MONOTONIC, 1000), bad_ns = ok;
  bad_ns.tv_nsec = 1000000000;
  timespec ok_rt = in_ms(CLOCK_REALTIME, 1000), bad_rt = ok_rt;
  bad_rt.tv_nsec = -1;

  // A free mutex with a clock or a timeout glibc refuses: is it taken?
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  edge("mutex_clocklock cpu clock", pthread_mutex_clocklock(&m, cpu, &ok));
  edge("  then trylock", pthread_mutex_trylock(&m));
  pthread_mutex_unlock(&m);
  edge("mutex_clocklock bad tv_nsec", pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &bad_ns));
  edge("  then trylock", pthread_mutex_trylock(&m));
  pthread_mutex_unlock(&m);
  edge("mutex_timedlock bad tv_nsec", pthread_mutex_timedlock(&m, &bad_rt));
  edge("  then trylock", pthread_mutex_trylock(&m));
  pthread_mutex_unlock(&m);
  edge("mutex_clocklock free", pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &ok));
  pthread_mutex_unlock(&m);
  // Held by another thread past the timeout.
  pthread_t h;
  pthread_create(&h, nullptr, hold_for_timeout, &m);
  sleep_ms(50);
  timespec soon = in_ms(CLOCK_MONOTONIC, 20);
  edge("mutex_clocklock times out", pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &soon));
  pthread_join(h, nullptr);

  pthread_rwlock_t l = PTHREAD_RWLOCK_INITIALIZER;
  edge("rwlock_clockrdlock cpu clock", pthread_rwlock_clockrdlock(&l, cpu, &ok));
  edge("  then trywrlock", pthread_rwlock_trywrlock(&l));
  pthread_rwlock_unlock(&l);
  edge("rwlock_clockrdlock bad tv_nsec", pthread_rwlock_clockrdlock(&l, CLOCK_MONOTONIC, &bad_ns));
  edge("  then trywrlock", pthread_rwlock_trywrlock(&l));
  pthread_rwlock_unlock(&l);
  edge("rwlock_clockwrlock cpu clock", pthread_rwlock_clockwrlock(&l, cpu, &ok));
  edge("  then trywrlock", pthread_rwlock_trywrlock(&l));
  pthread_rwlock_unlock(&l);
  edge("rwlock_timedrdlock bad tv_nsec", pthread_rwlock_timedrdlock(&l, &bad_rt));
  edge("  then trywrlock", pthread_rwlock_trywrlock(&l));
  pthread_rwlock_unlock(&l);
  edge("rwlock_timedwrlock bad tv_nsec", pthread_rwlock_timedwrlock(&l, &bad_rt));
  edge("  then trywrlock", pthread_rwlock_trywrlock(&l));
  pthread_rwlock_unlock(&l);
  edge("rwlock_clockwrlock free", pthread_rwlock_clockwrlock(&l, CLOCK_MONOTONIC, &ok));
  pthread_rwlock_unlock(&l);

  // A posted semaphore with a clock or timeout glibc refuses: is it taken?
  sem_t s;
  int v;
  sem_init(&s, 0, 1);
  edge_sem("sem_clockwait cpu clock", sem_clockwait(&s, cpu, &ok));
  sem_getvalue(&s, &v);
  printf("edge   value %d\n", v);
  edge_sem("sem_clockwait bad tv_nsec", sem_clockwait(&s, CLOCK_MONOTONIC, &bad_ns));
  sem_getvalue(&s, &v);
  printf("edge   value %d\n", v);
  edge_sem("sem_timedwait bad tv_nsec", sem_timedwait(&s, &bad_rt));
  sem_getvalue(&s, &v);
  printf("edge   value %d\n", v);
  errno = 1234;
  edge_sem("sem_clockwait posted", sem_clockwait(&s, CLOCK_MONOTONIC, &ok));
  printf("edge   errno left at %d\n", errno);
  timespec past = in_ms(CLOCK_MONOTONIC, -1000);
  edge_sem("sem_clockwait empty, in the past", sem_clockwait(&s, CLOCK_MONOTONIC, &past));
  sem_destroy(&s);

  pthread_cond_t c = PTHREAD_COND_INITIALIZER;
  pthread_mutex_lock(&m);
  edge("cond_clockwait cpu clock", pthread_cond_clockwait(&c, &m, cpu, &ok));
  edge("cond_clockwait bad tv_nsec", pthread_cond_clockwait(&c, &m, CLOCK_MONOTONIC, &bad_ns));
  edge("cond_clockwait in the past", pthread_cond_clockwait(&c, &m, CLOCK_MONOTONIC, &past));
  pthread_mutex_unlock(&m);

  // Joins of a thread that has ended.
  pthread_t t;
  void *out = nullptr;
  pthread_create(&t, nullptr, quick_exit_thread, nullptr);
  sleep_ms(50);
  edge("clockjoin cpu clock", pthread_clockjoin_np(t, &out, cpu, &ok));
  edge("timedjoin ended", pthread_timedjoin_np(t, &out, &ok_rt));
  printf("edge   out %ld\n", (long)out);
  pthread_create(&t, nullptr, quick_exit_thread, nullptr);
  sleep_ms(50);
  edge("clockjoin ended", pthread_clockjoin_np(t, &out, CLOCK_MONOTONIC, &ok));
  printf("edge   out %ld\n", (long)out);
  pthread_create(&t, nullptr, sleep_then_exit, nullptr);
  timespec soon_rt = in_ms(CLOCK_REALTIME, 20);
  edge("timedjoin times out", pthread_timedjoin_np(t, &out, &soon_rt));
  edge("  then join", pthread_join(t, &out));

  pthread_barrier_t one;
  pthread_barrier_init(&one, nullptr, 1);
  edge("barrier of 1", pthread_barrier_wait(&one));
  pthread_barrier_destroy(&one);
}

// ---- main ----

typedef void (*fn_t)();
static void *run(void *f) {
  ((fn_t)f)();
  return nullptr;
}

int main(int argc, char **argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  edges();

  struct {
    fn_t fn;
    const char *name;
    const char *holder;
  } waits[] = {
      {wait_cv_for, "wait_cv_for", nullptr},
      {wait_timed_mutex, "wait_timed_mutex", "hold_timed_mutex"},
      {wait_shared_for, "wait_shared_for", "hold_shared_mutex"},
      {wait_exclusive_for, "wait_exclusive_for", "hold_shared_mutex_shared"},
      {wait_cond_clockwait, "wait_cond_clockwait", nullptr},
      {wait_sem_clockwait, "wait_sem_clockwait", nullptr},
      {wait_mutex_clocklock, "wait_mutex_clocklock", "hold_mutex"},
      {wait_rwlock_clockrdlock, "wait_rwlock_clockrdlock", "hold_rwlock_writing"},
      {wait_rwlock_clockwrlock, "wait_rwlock_clockwrlock", "hold_rwlock_reading"},
      {wait_barrier, "wait_barrier", nullptr},
      {wait_barrier, nullptr, nullptr},
      {arrive_late_barrier, "arrive_late_barrier", nullptr},
      {wait_timedjoin, "wait_timedjoin", nullptr},
      {wait_clockjoin, "wait_clockjoin", nullptr},
      {hold_timed_mutex, nullptr, nullptr},
      {hold_shared_mutex, nullptr, nullptr},
      {hold_shared_mutex_shared, nullptr, nullptr},
      {hold_mutex, nullptr, nullptr},
      {hold_rwlock_writing, nullptr, nullptr},
      {hold_rwlock_reading, nullptr, nullptr},
  };
  const int n = sizeof waits / sizeof waits[0];
  for (auto &w : waits)
    if (w.name)
      declare(w.name);
  sem_init(&c_sem, 0, 0);
  pthread_barrier_init(&barrier, nullptr, 3);
  pthread_t ts[n];
  for (int i = 0; i < n; i++)
    pthread_create(&ts[i], nullptr, run, (void *)waits[i].fn);
  for (int i = 0; i < n; i++)
    pthread_join(ts[i], nullptr);
  for (int i = 0; i < ntruths; i++)
    printf("truth %s %lld %d\n", truths[i].fn, truths[i].ns.load(), truths[i].n.load());
  for (auto &w : waits)
    if (w.holder)
      printf("holds %s %s\n", w.holder, w.name);
  printf("ready\n");
  if (argc > 1 && strcmp(argv[1], "--serve") == 0)
    for (;;)
      pause();
  return 0;
}

/* cprof_do, Go's pprof.Do for C: every bad argument refused before fn
 * runs and before anything changes; nested calls stack and each restores
 * exactly the set it found, whatever fn did; -ENOSPC past
 * CPROF_MAX_LABELS keys. Then the other readers: threads created inside
 * cprof_do start with its labels (the pthread_create wrapper), the
 * all-thread capture finds every thread's labels by tid, sleeping or
 * running, a thread's block leaves the list when it ends, and a fork
 * child's list holds only its own thread. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "cprof.h"
#include "sample/labels.h"
#include "sample/threads.h"

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)

static const char *value_of(const cprof__labels_t *l, const char *key) {
  for (int i = 0; i < l->n; i++)
    if (strcmp(l->key[i], key) == 0)
      return l->value[i];
  return NULL;
}

static cprof__labels_t now(void) {
  cprof__labels_t l;
  cprof__labels_copy_sigsafe(&l);
  return l;
}

/* The same pairs in the same order. */
static int same(const cprof__labels_t *a, const cprof__labels_t *b) {
  if (a->n != b->n)
    return 0;
  for (int i = 0; i < a->n; i++)
    if (strcmp(a->key[i], b->key[i]) != 0 || strcmp(a->value[i], b->value[i]) != 0)
      return 0;
  return 1;
}

static int runs;
static void count_run(void *arg) { runs++; }

/* ---- arguments ---- */

static void bad_arguments(void) {
  CHECK_EQ_INT(cprof_label_set("base", "1"), 0);
  cprof__labels_t before = now();
  char long_key[CPROF_MAX_LABEL_KEY + 2], long_value[CPROF_MAX_LABEL_VALUE + 2];
  memset(long_key, 'k', sizeof long_key - 1);
  long_key[sizeof long_key - 1] = '\0';
  memset(long_value, 'v', sizeof long_value - 1);
  long_value[sizeof long_value - 1] = '\0';

  static const char *const ok[] = {"a", "1", NULL};
  static const char *const odd1[] = {"a", NULL};
  static const char *const odd3[] = {"a", "1", "b", NULL};
  static const char *const empty_key[] = {"", "1", NULL};
  static const char *const empty_value[] = {"a", "", NULL};
  /* A bad pair after a good one: the good one is not applied either. */
  static const char *const late_bad[] = {"a", "1", "", "2", NULL};
  const char *const long_k[] = {long_key, "1", NULL};
  const char *const long_v[] = {"a", long_value, NULL};
  const char *const *cases[] = {odd1, odd3, empty_key, empty_value, late_bad, long_k, long_v};

  runs = 0;
  CHECK_EQ_INT(cprof_do(NULL, count_run, NULL), -EINVAL);
  CHECK_EQ_INT(cprof_do(ok, NULL, NULL), -EINVAL);
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    CHECK_EQ_INT(cprof_do(cases[i], count_run, NULL), -EINVAL);
    cprof__labels_t after = now();
    CHECK(same(&before, &after));
  }
  CHECK_EQ_INT(runs, 0);

  /* Exactly the limits are fine. */
  long_key[CPROF_MAX_LABEL_KEY] = '\0';
  long_value[CPROF_MAX_LABEL_VALUE] = '\0';
  const char *const longest[] = {long_key, long_value, NULL};
  CHECK_EQ_INT(cprof_do(longest, count_run, NULL), 0);
  CHECK_EQ_INT(runs, 1);

  /* No pairs: fn runs with the labels as they are. */
  static const char *const none[] = {NULL};
  CHECK_EQ_INT(cprof_do(none, count_run, NULL), 0);
  CHECK_EQ_INT(runs, 2);
  cprof__labels_t after = now();
  CHECK(same(&before, &after));
  CHECK_EQ_INT(cprof_label_clear("base"), 0);
}

/* ---- nesting ---- */

static void innermost(void *arg) {
  cprof__labels_t l = now();
  CHECK_EQ_INT(l.n, 4);
  CHECK_EQ_STR(value_of(&l, "base"), "1");
  CHECK_EQ_STR(value_of(&l, "request"), "search"); /* replaced for the inner call */
  CHECK_EQ_STR(value_of(&l, "tenant"), "acme");
  CHECK_EQ_STR(value_of(&l, "step"), "pay");
  /* Changes inside fn are undone with the rest. */
  CHECK_EQ_INT(cprof_label_set("scratch", "x"), 0);
  CHECK_EQ_INT(cprof_label_clear("tenant"), 0);
  (*(int *)arg)++;
}

static void outer(void *arg) {
  cprof__labels_t l = now();
  CHECK_EQ_INT(l.n, 3);
  CHECK_EQ_STR(value_of(&l, "request"), "checkout");
  CHECK_EQ_STR(value_of(&l, "tenant"), "acme");
  static const char *const kv[] = {"request", "search", "step", "pay", NULL};
  CHECK_EQ_INT(cprof_do(kv, innermost, arg), 0);
  cprof__labels_t back = now();
  CHECK(same(&l, &back)); /* exactly, order included */
  CHECK(value_of(&back, "step") == NULL);
  CHECK(value_of(&back, "scratch") == NULL);
  (*(int *)arg)++;
}

static void nesting(void) {
  CHECK_EQ_INT(cprof_label_set("base", "1"), 0);
  cprof__labels_t before = now();
  static const char *const kv[] = {"request", "checkout", "tenant", "acme", NULL};
  int ran = 0;
  CHECK_EQ_INT(cprof_do(kv, outer, &ran), 0);
  CHECK_EQ_INT(ran, 2);
  cprof__labels_t after = now();
  CHECK(same(&before, &after));
  CHECK_EQ_INT(after.n, 1);
  CHECK_EQ_INT(cprof_label_clear("base"), 0);
}

/* ---- the limit ---- */

static void full(void *arg) {
  cprof__labels_t l = now();
  CHECK_EQ_INT(l.n, CPROF_MAX_LABELS);
  CHECK_EQ_STR(value_of(&l, "k0"), "new"); /* replaced: takes no room */
}

static void no_space(void) {
  CHECK_EQ_INT(cprof_label_set("k0", "old"), 0);
  /* k0 (replaced) and k1..k7: eight keys, the limit. */
  static const char *const fits[] = {"k0", "new", "k1", "1", "k2", "2", "k3", "3", "k4", "4",
                                     "k5", "5", "k6", "6", "k7", "7", NULL};
  CHECK_EQ_INT(cprof_do(fits, full, NULL), 0);
  static const char *const over[] = {"k1", "1", "k2", "2", "k3", "3", "k4", "4",
                                     "k5", "5", "k6", "6", "k7", "7", "k8", "8", NULL};
  runs = 0;
  CHECK_EQ_INT(cprof_do(over, count_run, NULL), -ENOSPC);
  CHECK_EQ_INT(runs, 0);
  cprof__labels_t l = now();
  CHECK_EQ_INT(l.n, 1);
  CHECK_EQ_STR(value_of(&l, "k0"), "old");
  CHECK_EQ_INT(cprof_label_clear("k0"), 0);
}

/* ---- threads ---- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int stop, ready;
static pid_t sleeper_tid, spinner_tid, plain_tid;
static cprof__labels_t sleeper_seen; /* the sleeper's labels at its start */

static void wait_for_stop(void) {
  pthread_mutex_lock(&mu);
  ready++;
  pthread_cond_broadcast(&cv);
  while (!stop)
    pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
}

/* Created inside cprof_do: sleeps in the kernel (a futex wait), so the
 * capture unwinds it from outside. */
static void *sleeper(void *arg) {
  sleeper_seen = now();
  STORE(sleeper_tid, (pid_t)syscall(SYS_gettid));
  wait_for_stop();
  return NULL;
}

static volatile unsigned long spins;
static void spin(void *arg) {
  pthread_mutex_lock(&mu);
  ready++;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
  while (!LOAD(stop))
    spins++;
}

/* Labels itself and runs: the capture asks it with a signal. */
static void *spinner(void *arg) {
  STORE(spinner_tid, (pid_t)syscall(SYS_gettid));
  static const char *const kv[] = {"role", "spinner", NULL};
  CHECK_EQ_INT(cprof_do(kv, spin, NULL), 0);
  return NULL;
}

static void *plain(void *arg) {
  STORE(plain_tid, (pid_t)syscall(SYS_gettid));
  wait_for_stop();
  return NULL;
}

static pthread_t sleeper_thread;
static void start_sleeper(void *arg) {
  CHECK_EQ_INT(pthread_create(&sleeper_thread, NULL, sleeper, NULL), 0);
}

static const cprof__thread_stack_t *entry(const cprof__thread_dump_t *d, pid_t tid) {
  for (int i = 0; i < d->n; i++)
    if (d->v[i].tid == tid)
      return &d->v[i];
  return NULL;
}

static void count_tid(pid_t tid, const cprof__labels_t *l, void *ctx) {
  int *found = ctx;
  if (tid == found[0])
    found[1]++;
  found[2]++;
}

/* How many blocks the list holds, and how many of them are tid's. */
static int listed(pid_t tid, int *total) {
  int found[3] = {tid, 0, 0};
  cprof__labels_each(count_tid, found);
  if (total)
    *total = found[2];
  return found[1];
}

static void create_in_inner(void *arg) {
  static const char *const inner_kv[] = {"step", "pay", NULL};
  CHECK_EQ_INT(cprof_do(inner_kv, start_sleeper, NULL), 0);
}

static void threads(void) {
  CHECK_EQ_INT(cprof_label_set("base", "main"), 0);
  /* Nested: the sleeper starts with both levels and the base. */
  static const char *const outer_kv[] = {"request", "checkout", NULL};
  CHECK_EQ_INT(cprof_do(outer_kv, create_in_inner, NULL), 0);
  pthread_t spin_thread, plain_thread;
  CHECK_EQ_INT(pthread_create(&spin_thread, NULL, spinner, NULL), 0);
  CHECK_EQ_INT(cprof_label_clear("base"), 0); /* main has none now, */
  CHECK_EQ_INT(pthread_create(&plain_thread, NULL, plain, NULL), 0); /* so neither has this one */
  pthread_mutex_lock(&mu);
  while (ready < 3)
    pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);

#ifdef CPROF_NO_INTERPOSE
  int inherit = sleeper_seen.n > 0;
  if (!inherit)
    fprintf(stderr, "test_do: this build has no pthread_create wrapper: inheritance not checked\n");
#else
  int inherit = 1;
#endif
  if (inherit) {
    CHECK_EQ_INT(sleeper_seen.n, 3);
    CHECK_EQ_STR(value_of(&sleeper_seen, "base"), "main");
    CHECK_EQ_STR(value_of(&sleeper_seen, "request"), "checkout");
    CHECK_EQ_STR(value_of(&sleeper_seen, "step"), "pay");
  }

  /* Each unwinder, so that both ways a thread is asked are seen. */
  for (int how = 0; how < 2; how++) {
    cprof__thread_dump_t d;
    CHECK_EQ_INT(cprof__threads_capture((cprof__unwinder_t)how, 1000, &d), 0);
    const cprof__thread_stack_t *t = entry(&d, LOAD(sleeper_tid));
    CHECK(t != NULL);
    if (t && inherit) {
      CHECK_EQ_INT(t->labels.n, 3);
      CHECK_EQ_STR(value_of(&t->labels, "base"), "main");
      CHECK_EQ_STR(value_of(&t->labels, "request"), "checkout");
      CHECK_EQ_STR(value_of(&t->labels, "step"), "pay");
    }
    t = entry(&d, LOAD(spinner_tid));
    CHECK(t != NULL);
    if (t) {
      CHECK_EQ_INT(t->labels.n, inherit ? 2 : 1); /* created while main had base */
      CHECK_EQ_STR(value_of(&t->labels, "role"), "spinner");
    }
    t = entry(&d, LOAD(plain_tid));
    CHECK(t != NULL);
    if (t)
      CHECK_EQ_INT(t->labels.n, 0);
    t = entry(&d, (pid_t)syscall(SYS_gettid));
    CHECK(t != NULL);
    if (t)
      CHECK_EQ_INT(t->labels.n, 0); /* restored after each cprof_do, and cleared */
    cprof__threads_dump_free(&d);
  }

  pid_t gone = LOAD(spinner_tid);
  CHECK_EQ_INT(listed(gone, NULL), 1);
  pthread_mutex_lock(&mu);
  STORE(stop, 1);
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
  pthread_join(sleeper_thread, NULL);
  pthread_join(spin_thread, NULL);
  pthread_join(plain_thread, NULL);
  /* pthread_join returns after the thread's key destructors have run. */
  CHECK_EQ_INT(listed(gone, NULL), 0);
}

/* ---- fork ---- */

static void forked(void) {
  CHECK_EQ_INT(cprof_label_set("who", "parent"), 0);
  pthread_t t;
  STORE(stop, 0);
  STORE(spinner_tid, 0);
  CHECK_EQ_INT(pthread_create(&t, NULL, spinner, NULL), 0);
  while (!LOAD(spinner_tid))
    usleep(1000);
  int total;
  CHECK_EQ_INT(listed((pid_t)syscall(SYS_gettid), &total), 1);
#ifdef CPROF_NO_INTERPOSE
  CHECK(total >= 1); /* the spinner has a block only if it inherited "who" */
#else
  CHECK(total >= 2);
#endif
  pid_t child = fork();
  if (child == 0) {
    /* Only this thread lives on, under its new id, with its labels. */
    int ok = listed((pid_t)syscall(SYS_gettid), &total) == 1 && total == 1 &&
             now().n == 1;
    _exit(ok ? 0 : 1);
  }
  int status = -1;
  CHECK(child > 0 && waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  STORE(stop, 1);
  pthread_join(t, NULL);
  CHECK_EQ_INT(cprof_label_clear("who"), 0);
}

int main(void) {
  bad_arguments();
  nesting();
  no_space();
  threads();
  forked();
  return check_result("test_do");
}

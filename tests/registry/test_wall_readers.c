/* The readers of the one wall-clock recording (registry/wall_profile.h):
 * two overlapping readers on two threads, each profile standing for its
 * own window (a thread asleep throughout weighs each reader's seconds, no
 * more, no less), with its own time_nanos and duration_nanos; a reader at
 * another explicit rate refused while the recording runs, with that rate;
 * the recording gone with its last reader, so that the next may set the
 * rate. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "core/config.h"
#include "model/model.h"
#include "registry/wall_profile.h"

typedef struct take {
  long ms;
  long delay_ms;
  int hz, flags;
  cprof__buf_t out;
  cprof__wall_result_t res;
  int err;
} take_t;

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static void *run(void *arg) {
  take_t *t = arg;
  sleep_ms(t->delay_ms);
  cprof__wall_opts_t o = {.hz = t->hz,
                          .duration_ms = t->ms,
                          .budget = CPROF_WALL_DEFAULT_BUDGET,
                          .how = CPROF_UNWIND_FP};
  cprof__buf_init(&t->out);
  t->err = cprof__wall_profile_take(&o, t->flags, &t->out, &t->res);
  return NULL;
}

static int napping = 1;

/* A thread asleep the whole time, named so that its samples can be found. */
static void *napper(void *arg) {
  (void)arg;
  prctl(PR_SET_NAME, "napper", 0, 0, 0);
  while (__atomic_load_n(&napping, __ATOMIC_RELAXED))
    sleep_ms(10);
  return NULL;
}

/* The napper's wall time in a profile, and its time_nanos and duration. */
static int64_t napper_ns(const cprof__buf_t *b, int64_t *time_nanos, int64_t *duration) {
  cprof__pf_t *p = NULL;
  char err[256] = "";
  if (cprof__pf_decode(b->data, b->len, &p, err, sizeof err) != 0) {
    fprintf(stderr, "decode: %s\n", err);
    CHECK(0);
    return 0;
  }
  int64_t sum = 0;
  for (size_t i = 0; i < p->n_samples; i++)
    for (size_t j = 0; j < p->samples[i].n_labels; j++)
      if (strcmp(p->samples[i].labels[j].key, "thread") == 0 && p->samples[i].labels[j].str &&
          strcmp(p->samples[i].labels[j].str, "napper") == 0)
        sum += p->samples[i].values[1];
  *time_nanos = p->time_nanos;
  *duration = p->duration_nanos;
  cprof__pf_free(p);
  return sum;
}

int main(void) {
  pthread_t nap;
  CHECK_EQ_INT(pthread_create(&nap, NULL, napper, NULL), 0);
  sleep_ms(50);

  /* A: 2 s from now; B: 0.5 s from 0.3 s on, inside A's; C, at 0.15 s,
   * asks for another rate explicitly. (Early in A: the recording settles
   * its end two ticks before it, and a tick under TSan takes 0.4 s.) */
  take_t a = {.ms = 2000, .hz = 50}, b = {.ms = 500, .delay_ms = 300, .hz = 50},
         c = {.ms = 200, .delay_ms = 150, .hz = 100, .flags = CPROF_WALL_EXPLICIT_HZ};
  pthread_t ta, tb, tc;
  CHECK_EQ_INT(pthread_create(&ta, NULL, run, &a), 0);
  CHECK_EQ_INT(pthread_create(&tb, NULL, run, &b), 0);
  CHECK_EQ_INT(pthread_create(&tc, NULL, run, &c), 0);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  pthread_join(tc, NULL);
  CHECK_EQ_INT(a.err, 0);
  CHECK_EQ_INT(b.err, 0);
  CHECK_EQ_INT(c.err, -ERANGE);
  CHECK_EQ_INT(c.res.hz, 50);

  int64_t ta_ns = 0, tb_ns = 0, da = 0, db = 0;
  int64_t na = a.err ? 0 : napper_ns(&a.out, &ta_ns, &da);
  int64_t nb = b.err ? 0 : napper_ns(&b.out, &tb_ns, &db);
  fprintf(stderr,
          "A: napper %.3f s of %.3f s (%ld ticks); B: napper %.3f s of %.3f s (%ld ticks)\n",
          na / 1e9, da / 1e9, a.res.ticks, nb / 1e9, db / 1e9, b.res.ticks);
  CHECK(da >= 1990000000LL && da <= 2060000000LL);
  CHECK(db >= 490000000LL && db <= 525000000LL);
  /* Each reader's share of the one recording: the napper's time is its
   * own window's (within 50 ms: the parts of ticks are exact, what is
   * lost is a stack asked for and not answered). */
  CHECK(na > da - 50000000LL && na < da + 50000000LL);
  CHECK(nb > db - 50000000LL && nb < db + 50000000LL);
  CHECK(ta_ns > 0 && tb_ns >= ta_ns + 250000000LL);
  CHECK(a.res.ticks > 0 && a.res.ticks >= b.res.ticks);

  /* The recording ended with its last reader: another rate now works. */
  take_t d = {.ms = 200, .hz = 100, .flags = CPROF_WALL_EXPLICIT_HZ};
  run(&d);
  CHECK_EQ_INT(d.err, 0);
  CHECK(d.res.ticks > 0);

  cprof__buf_free(&a.out);
  cprof__buf_free(&b.out);
  cprof__buf_free(&c.out);
  cprof__buf_free(&d.out);
  __atomic_store_n(&napping, 0, __ATOMIC_RELAXED);
  pthread_join(nap, NULL);
  return check_result("test_wall_readers");
}

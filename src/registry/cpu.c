/* The CPU recording (registry/cpu.h): the per-thread timers of
 * sample/cpu.c started, their samples drained into a profile
 * (registry/cpu_profile.c), and the profile written at the stop.
 *
 * A recording may have a drainer thread that drains it every 50 ms, as an
 * HTTP profile request's thread does for its own. The drainer sleeps on a
 * condition variable, so that the stop wakes it at once instead of after
 * the rest of its 50 ms (the program may be waiting at its exit). */
#include "registry/cpu.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "registry/cpu_profile.h"
#include "sample/cpu.h"
#include "sample/signals.h"
#include "sample/trace.h"

#define DRAIN_MS 50

struct cprof__cpu_recording {
  cprof__cpu_profile_t *profile;
  int hz;
  pid_t owner; /* the process that records: not a forked child */
  int drained; /* has a drainer, running or parked */
  int parked;  /* the drainer ended for a while */
  pthread_t drainer;
  char name[16];
};

/* Held while a recording starts, stops, or parks its drainer; guards
 * `current`. Inside output.c's and cpu_api.c's locks, outside cpu.c's. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static cprof__cpu_recording_t *current;

/* Held while samples move into the recording's profile, and while a cut
 * swaps the profile for a new one: the drainer drains without `lock`.
 * Innermost of this file's. */
static pthread_mutex_t profile_lock = PTHREAD_MUTEX_INITIALIZER;

/* The drainer sleeps on wake between drains; stopping is set, under
 * wake_lock, to end it. */
static pthread_mutex_t wake_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake;
static int stopping;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void atfork_prepare(void) {
  pthread_mutex_lock(&lock);
  pthread_mutex_lock(&wake_lock);
  pthread_mutex_lock(&profile_lock);
}

static void atfork_parent(void) {
  pthread_mutex_unlock(&profile_lock);
  pthread_mutex_unlock(&wake_lock);
  pthread_mutex_unlock(&lock);
}

static void atfork_child(void) {
  /* The drainer stayed in the parent, and the profile is the parent's to
   * write; sample/cpu.c's own handler has reset the timers. The memory is
   * left as it is: a copy of the parent's. */
  pthread_mutex_unlock(&profile_lock);
  pthread_mutex_unlock(&wake_lock);
  pthread_mutex_unlock(&lock);
  current = NULL;
}

static void init_once(void) {
  /* First: their prepare handlers run after ours. signals.c's lock is
   * taken inside ours, by cprof__cpu_start_why. */
  cprof__signal_atfork_register();
  cprof__cpu_atfork_register();
  pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
  /* CLOCK_MONOTONIC, so that a change of the wall clock neither stretches
   * nor cuts the drainer's sleeps. */
  cprof__cond_init_monotonic(&wake);
}

/* Every sample goes into the profile, and onto a trace's timeline when a
 * trace records (sample/trace.h): a trace sees the samples of whichever
 * recording runs. */
static void add(void *profile, const cprof__cpu_sample_t *s) {
  cprof__cpu_profile_add(profile, s);
  if (!s->cpu_ns)
    cprof__trace_cpu_sample_seq(s->tid, s->ts, s->trace_seq, s->pcs, s->depth);
}

void cprof__cpu_recording_atfork_register(void) { pthread_once(&once, init_once); }

int cprof__cpu_recording_start(int hz, cprof__unwinder_t how, char *why, size_t why_size,
                               cprof__cpu_recording_t **out) {
  char line[256];
  pthread_once(&once, init_once);
  if (why && why_size)
    why[0] = '\0';
  *out = NULL;
  cprof__cpu_recording_t *r = calloc(1, sizeof *r);
  if (!r)
    return -ENOMEM;
  pthread_mutex_lock(&lock);
  int err = -ENOMEM;
  if (!(r->profile = cprof__cpu_profile_new(hz)))
    goto fail;
  line[0] = '\0';
  err = cprof__cpu_start_why(hz, how, line, sizeof line);
  if (err) {
    if (why && why_size)
      snprintf(why, why_size, "%s", line);
    goto fail;
  }
  r->owner = getpid();
  r->hz = hz;
  current = r;
  pthread_mutex_unlock(&lock);
  *out = r;
  return 0;
fail:
  pthread_mutex_unlock(&lock);
  cprof__cpu_profile_free(r->profile);
  free(r);
  return err;
}

void cprof__cpu_recording_drain(cprof__cpu_recording_t *r) {
  cprof__cpu_track_threads();
  pthread_mutex_lock(&profile_lock);
  cprof__cpu_drain(add, r->profile);
  pthread_mutex_unlock(&profile_lock);
}

void cprof__cpu_recording_flush(void) {
  pthread_mutex_lock(&lock);
  cprof__cpu_recording_t *r = current;
  if (r && r->owner == getpid()) {
    pthread_mutex_lock(&profile_lock);
    cprof__cpu_drain(add, r->profile);
    pthread_mutex_unlock(&profile_lock);
  }
  pthread_mutex_unlock(&lock);
}

int cprof__cpu_recording_cut(cprof__cpu_recording_t *r, cprof__buf_t *out) {
  pthread_mutex_lock(&lock);
  int err = -EINVAL;
  cprof__cpu_profile_t *done = NULL;
  if (r == current && r->owner == getpid()) {
    err = -ENOMEM;
    cprof__cpu_profile_t *next = cprof__cpu_profile_new(r->hz);
    if (next) {
      pthread_mutex_lock(&profile_lock);
      cprof__cpu_drain(add, r->profile);
      done = r->profile;
      r->profile = next;
      pthread_mutex_unlock(&profile_lock);
      err = 0;
    }
  }
  pthread_mutex_unlock(&lock);
  if (done) {
    err = cprof__cpu_profile_write(done, 0, out);
    cprof__cpu_profile_free(done);
  }
  return err;
}

static void *drain_loop(void *arg) {
  cprof__cpu_recording_t *r = arg;
  prctl(PR_SET_NAME, r->name, 0, 0, 0);
  pthread_mutex_lock(&wake_lock);
  while (!stopping) {
    struct timespec until = cprof__deadline_ms(CLOCK_MONOTONIC, DRAIN_MS);
    while (!stopping && pthread_cond_timedwait(&wake, &wake_lock, &until) == 0)
      ; /* woken early without a stop: spurious, sleep on */
    if (stopping)
      break;
    pthread_mutex_unlock(&wake_lock);
    cprof__cpu_recording_drain(r);
    pthread_mutex_lock(&wake_lock);
  }
  pthread_mutex_unlock(&wake_lock);
  return NULL;
}

/* Both with lock held. */
static int start_drainer(cprof__cpu_recording_t *r) {
  pthread_mutex_lock(&wake_lock);
  stopping = 0;
  pthread_mutex_unlock(&wake_lock);
  return -pthread_create(&r->drainer, NULL, drain_loop, r);
}

static void end_drainer(cprof__cpu_recording_t *r) {
  pthread_mutex_lock(&wake_lock);
  stopping = 1;
  pthread_cond_signal(&wake);
  pthread_mutex_unlock(&wake_lock);
  pthread_join(r->drainer, NULL);
}

int cprof__cpu_recording_drainer(cprof__cpu_recording_t *r, const char *name) {
  pthread_mutex_lock(&lock);
  int err = -EINVAL;
  if (r == current && !r->drained) {
    snprintf(r->name, sizeof r->name, "%s", name);
    if ((err = start_drainer(r)) == 0)
      r->drained = 1;
  }
  pthread_mutex_unlock(&lock);
  return err;
}

int cprof__cpu_recording_stop(cprof__cpu_recording_t *r, cprof__buf_t *out) {
  pthread_mutex_lock(&lock);
  uint64_t lost = 0;
  if (r == current && r->owner == getpid()) {
    if (r->drained && !r->parked)
      end_drainer(r);
    pthread_mutex_lock(&profile_lock);
    lost = cprof__cpu_stop(add, r->profile);
    pthread_mutex_unlock(&profile_lock);
    current = NULL;
  }
  pthread_mutex_unlock(&lock);
  int err = out ? cprof__cpu_profile_write(r->profile, lost, out) : 0;
  cprof__cpu_profile_free(r->profile);
  free(r);
  return err;
}

void cprof__cpu_recording_park(void) {
  pthread_mutex_lock(&lock);
  cprof__cpu_recording_t *r = current;
  if (r && r->drained && !r->parked && r->owner == getpid()) {
    end_drainer(r);
    pthread_mutex_lock(&profile_lock);
    cprof__cpu_drain(add, r->profile);
    pthread_mutex_unlock(&profile_lock);
    r->parked = 1;
  }
  pthread_mutex_unlock(&lock);
}

void cprof__cpu_recording_unpark(void) {
  pthread_mutex_lock(&lock);
  cprof__cpu_recording_t *r = current;
  if (r && r->parked && start_drainer(r) == 0)
    r->parked = 0;
  pthread_mutex_unlock(&lock);
}

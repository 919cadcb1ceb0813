/* The CPU recording and its readers (registry/cpu.h): the per-thread
 * timers of sample/cpu.c started with the first reader and stopped with
 * the last, their samples drained into every open reader's profile
 * (registry/cpu_profile.c), and each reader's profile written at its stop
 * or cut.
 *
 * Windows. The sample buffer has no time stamps to go by (the handler
 * reads no clock: sample/cpu.c, "Time stamps"), so a reader's window is
 * made of drains: its start and its stop each drain the buffer first,
 * under the lock the readers' list is changed under, so every sample
 * drained before a reader joined went to the readers before it, and every
 * sample taken after its stop's drain goes to the readers after it. The
 * fan-out happens here, in the drain, on a normal thread: the handler
 * knows nothing of readers.
 *
 * The recording may have a drainer thread that drains it every 50 ms, for
 * readers that do not wait themselves (CPROF_OUTPUT, push, the API); an
 * HTTP request's thread drains as it waits. The drainer sleeps on a
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

struct cprof__cpu_reader {
  cprof__cpu_profile_t *profile; /* NULL: CPROF_CPU_READER_NO_PROFILE */
  uint64_t dropped;              /* the sampler's drops when its window opened */
  int hz;
};

/* The one recording. Under `lock`; the readers' list under profile_lock
 * too, as the drains (which take only that one) walk it. */
static struct {
  int running;
  int hz;
  pid_t owner; /* the process that records: not a forked child */
  int drained; /* has a drainer, running or parked */
  int parked;  /* the drainer ended for a while */
  pthread_t drainer;
  char name[16];
  int n;
  cprof__cpu_reader_t *readers[CPROF_CPU_MAX_READERS];
} rec;

/* Held while the recording starts, stops, gains or loses a reader, or
 * parks its drainer. Inside output.c's and cpu_api.c's locks, outside
 * cpu.c's. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Held while samples move into the readers' profiles, and while the
 * readers' list or a reader's profile changes: the drains take only this
 * one. Innermost of this file's. */
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
  /* The drainer stayed in the parent, and the readers' profiles are the
   * parent's readers' to write; sample/cpu.c's own handler has reset the
   * timers. The memory is left as it is: a copy of the parent's. */
  pthread_mutex_unlock(&profile_lock);
  pthread_mutex_unlock(&wake_lock);
  pthread_mutex_unlock(&lock);
  memset(&rec, 0, sizeof rec);
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

/* The sink of every drain, under profile_lock: each sample goes into
 * every open reader's profile, and onto a trace's timeline when a trace
 * records (sample/trace.h). */
static void fan_out(void *arg, const cprof__cpu_sample_t *s) {
  (void)arg;
  for (int i = 0; i < rec.n; i++)
    if (rec.readers[i]->profile)
      cprof__cpu_profile_add(rec.readers[i]->profile, s);
  if (!s->cpu_ns)
    cprof__trace_cpu_sample_seq(s->tid, s->ts, s->trace_seq, s->pcs, s->depth);
}

static uint64_t dropped_now(void) {
  uint64_t taken, dropped;
  cprof__cpu_totals(&taken, &dropped);
  return dropped;
}

/* Under lock: r's place among the readers, or -1. */
static int find(const cprof__cpu_reader_t *r) {
  if (!rec.running || rec.owner != getpid())
    return -1;
  for (int i = 0; i < rec.n; i++)
    if (rec.readers[i] == r)
      return i;
  return -1;
}

void cprof__cpu_recording_atfork_register(void) { pthread_once(&once, init_once); }

int cprof__cpu_reader_start(int hz, int flags, cprof__unwinder_t how, char *why, size_t why_size,
                            cprof__cpu_reader_t **out) {
  char line[256] = "";
  pthread_once(&once, init_once);
  *out = NULL;
  cprof__cpu_reader_t *r = calloc(1, sizeof *r);
  if (!r)
    return -ENOMEM;
  pthread_mutex_lock(&lock);
  int err;
  if (rec.running) {
    err = -ERANGE;
    if ((flags & CPROF_CPU_READER_EXPLICIT_HZ) && hz != rec.hz) {
      snprintf(line, sizeof line, "the CPU profile already records at %d Hz, not %d", rec.hz, hz);
      goto fail;
    }
    err = -EUSERS;
    if (rec.n == CPROF_CPU_MAX_READERS) {
      snprintf(line, sizeof line, "%d CPU profiles already record, the most at once",
               CPROF_CPU_MAX_READERS);
      goto fail;
    }
    hz = rec.hz;
  }
  err = -ENOMEM;
  if (!(flags & CPROF_CPU_READER_NO_PROFILE) && !(r->profile = cprof__cpu_profile_new(hz)))
    goto fail;
  if (!rec.running) {
    err = cprof__cpu_start_why(hz, how, line, sizeof line);
    if (err)
      goto fail;
  }
  r->hz = hz;
  pthread_mutex_lock(&profile_lock);
  if (!rec.running) {
    rec.running = 1;
    rec.hz = hz;
    rec.owner = getpid();
    rec.drained = rec.parked = 0;
  }
  /* What was taken so far is the readers' before this one. */
  cprof__cpu_drain(fan_out, NULL);
  r->dropped = dropped_now();
  if (r->profile)
    cprof__cpu_profile_restart(r->profile);
  rec.readers[rec.n++] = r;
  pthread_mutex_unlock(&profile_lock);
  pthread_mutex_unlock(&lock);
  if (why && why_size)
    why[0] = '\0';
  *out = r;
  return 0;
fail:
  pthread_mutex_unlock(&lock);
  if (why && why_size)
    snprintf(why, why_size, "%s", line);
  cprof__cpu_profile_free(r->profile);
  free(r);
  return err;
}

int cprof__cpu_reader_hz(const cprof__cpu_reader_t *r) { return r->hz; }

int cprof__cpu_readers(int *hz) {
  pthread_mutex_lock(&lock);
  int mine = rec.running && rec.owner == getpid();
  int n = mine ? rec.n : 0;
  if (hz)
    *hz = mine ? rec.hz : 0;
  pthread_mutex_unlock(&lock);
  return n;
}

void cprof__cpu_recording_drain(void) {
  /* A plain look first: no lock when nothing records. */
  if (!cprof__cpu_running())
    return;
  cprof__cpu_track_threads();
  pthread_mutex_lock(&profile_lock);
  if (rec.running && rec.owner == getpid())
    cprof__cpu_drain(fan_out, NULL);
  pthread_mutex_unlock(&profile_lock);
}

int cprof__cpu_reader_cut(cprof__cpu_reader_t *r, cprof__buf_t *out) {
  pthread_mutex_lock(&lock);
  int err = -EINVAL;
  cprof__cpu_profile_t *done = NULL;
  uint64_t lost = 0;
  if (find(r) >= 0 && r->profile) {
    err = -ENOMEM;
    cprof__cpu_profile_t *next = cprof__cpu_profile_new(r->hz);
    if (next) {
      pthread_mutex_lock(&profile_lock);
      cprof__cpu_drain(fan_out, NULL);
      uint64_t dropped = dropped_now();
      lost = dropped - r->dropped;
      r->dropped = dropped;
      done = r->profile;
      cprof__cpu_profile_end(done);
      cprof__cpu_profile_restart(next);
      r->profile = next;
      pthread_mutex_unlock(&profile_lock);
      err = 0;
    }
  }
  pthread_mutex_unlock(&lock);
  if (done) {
    err = cprof__cpu_profile_write(done, lost, out);
    cprof__cpu_profile_free(done);
  }
  return err;
}

static void *drain_loop(void *arg) {
  (void)arg;
  prctl(PR_SET_NAME, rec.name, 0, 0, 0);
  pthread_mutex_lock(&wake_lock);
  while (!stopping) {
    struct timespec until = cprof__deadline_ms(CLOCK_MONOTONIC, DRAIN_MS);
    while (!stopping && pthread_cond_timedwait(&wake, &wake_lock, &until) == 0)
      ; /* woken early without a stop: spurious, sleep on */
    if (stopping)
      break;
    pthread_mutex_unlock(&wake_lock);
    cprof__cpu_recording_drain();
    pthread_mutex_lock(&wake_lock);
  }
  pthread_mutex_unlock(&wake_lock);
  return NULL;
}

/* Both with lock held. */
static int start_drainer(void) {
  pthread_mutex_lock(&wake_lock);
  stopping = 0;
  pthread_mutex_unlock(&wake_lock);
  return -pthread_create(&rec.drainer, NULL, drain_loop, NULL);
}

static void end_drainer(void) {
  pthread_mutex_lock(&wake_lock);
  stopping = 1;
  pthread_cond_signal(&wake);
  pthread_mutex_unlock(&wake_lock);
  pthread_join(rec.drainer, NULL);
}

int cprof__cpu_reader_drainer(cprof__cpu_reader_t *r, const char *name) {
  pthread_mutex_lock(&lock);
  int err = -EINVAL;
  if (find(r) >= 0) {
    err = 0;
    if (!rec.drained) {
      snprintf(rec.name, sizeof rec.name, "%s", name);
      if ((err = start_drainer()) == 0)
        rec.drained = 1;
    }
  }
  pthread_mutex_unlock(&lock);
  return err;
}

int cprof__cpu_reader_stop(cprof__cpu_reader_t *r, cprof__buf_t *out) {
  pthread_mutex_lock(&lock);
  uint64_t lost = 0;
  int i = find(r);
  if (i >= 0) {
    int last = rec.n == 1;
    if (last && rec.drained && !rec.parked)
      end_drainer();
    pthread_mutex_lock(&profile_lock);
    if (last)
      cprof__cpu_stop(fan_out, NULL); /* its lost count is the drops', read below */
    else
      cprof__cpu_drain(fan_out, NULL);
    lost = dropped_now() - r->dropped;
    if (r->profile)
      cprof__cpu_profile_end(r->profile);
    rec.readers[i] = rec.readers[--rec.n];
    if (last)
      memset(&rec, 0, sizeof rec);
    pthread_mutex_unlock(&profile_lock);
  }
  pthread_mutex_unlock(&lock);
  int err = out && r->profile ? cprof__cpu_profile_write(r->profile, lost, out) : 0;
  cprof__cpu_profile_free(r->profile);
  free(r);
  return err;
}

void cprof__cpu_recording_park(void) {
  pthread_mutex_lock(&lock);
  if (rec.running && rec.drained && !rec.parked && rec.owner == getpid()) {
    end_drainer();
    pthread_mutex_lock(&profile_lock);
    cprof__cpu_drain(fan_out, NULL);
    pthread_mutex_unlock(&profile_lock);
    rec.parked = 1;
  }
  pthread_mutex_unlock(&lock);
}

void cprof__cpu_recording_unpark(void) {
  pthread_mutex_lock(&lock);
  if (rec.running && rec.parked && rec.owner == getpid() && start_drainer() == 0)
    rec.parked = 0;
  pthread_mutex_unlock(&lock);
}

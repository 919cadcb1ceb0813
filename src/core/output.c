/* CPROF_OUTPUT: record the CPU profile of the whole run, write it at exit,
 * with the heap profile as it stands then (heap.pb.gz: what is still in
 * use at exit, and everything allocated during the run).
 *
 * A collector thread ("cprof-output") drains the sample buffer every 50 ms,
 * as an HTTP profile request's thread does. While it records, the CPU
 * profiler is taken: /debug/pprof/profile answers that it is in use. The
 * file is written to a temporary name and renamed, so a reader never sees
 * half a profile. Exits that run no atexit handlers (_exit, a fatal signal)
 * write nothing.
 *
 * The program waits for all this at its exit, so it has to be quick: the
 * collector is woken rather than left to finish its sleep, the CPU profile
 * stops before anything else is done (our own writing is not the program's
 * CPU time), and the profiles are symbolized in the symbolizer's quick mode,
 * which leaves out debug information that would take long to load (see
 * cprof__symbolizer_quick). */
#include "core/output.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "registry/cpu_profile.h"
#include "registry/heap_profile.h"
#include "sample/cpu.h"
#include "sample/heap.h"
#include "symbol/symbolize.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* The collector sleeps on this between drains, so that stopping wakes it at
 * once instead of after the rest of its 50 ms. */
static pthread_mutex_t wake_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake;
static pthread_t collector;
static int armed;              /* a directory was given: write at exit */
static int recording, stopping; /* the CPU profile */
static int parked; /* recording, with the collector ended for a while */
static pid_t owner; /* the process that records: not a forked child */
static cprof__cpu_profile_t *profile;
static char dir[512];

static void *collect(void *arg) {
  (void)arg;
  prctl(PR_SET_NAME, "cprof-output", 0, 0, 0);
  pthread_mutex_lock(&wake_lock);
  while (!stopping) {
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += 50 * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000L;
    }
    while (!stopping && pthread_cond_timedwait(&wake, &wake_lock, &until) == 0)
      ; /* woken early without a stop: spurious, sleep on */
    if (stopping)
      break;
    pthread_mutex_unlock(&wake_lock);
    cprof__cpu_track_threads();
    cprof__cpu_drain(cprof__cpu_profile_add, profile);
    pthread_mutex_lock(&wake_lock);
  }
  pthread_mutex_unlock(&wake_lock);
  return NULL;
}

/* Stops the collector and the CPU profiler; what is left in the buffer goes
 * into the profile. Returns the count of samples lost on the way. */
static void end_collector(void) {
  pthread_mutex_lock(&wake_lock);
  stopping = 1;
  pthread_cond_signal(&wake);
  pthread_mutex_unlock(&wake_lock);
  pthread_join(collector, NULL);
}

static int start_collector(void) {
  stopping = 0;
  return pthread_create(&collector, NULL, collect, NULL);
}

static uint64_t stop_recording(void) {
  if (!parked)
    end_collector();
  parked = 0;
  pthread_cond_destroy(&wake);
  return cprof__cpu_stop(cprof__cpu_profile_add, profile);
}

/* The collector thread ends, and the CPU profile records on into its
 * buffer; what does not fit is counted as lost. For the moments when cprof
 * must have no thread of its own (start.c): a credential change, the
 * program's last thread gone. */
void cprof__output_park(void) {
  pthread_mutex_lock(&lock);
  if (recording && !parked && getpid() == owner) {
    end_collector();
    cprof__cpu_drain(cprof__cpu_profile_add, profile);
    parked = 1;
  }
  pthread_mutex_unlock(&lock);
}

void cprof__output_unpark(void) {
  pthread_mutex_lock(&lock);
  if (parked && start_collector() == 0)
    parked = 0;
  pthread_mutex_unlock(&lock);
}

static void write_file(const char *name, const cprof__buf_t *b) {
  char path[600], tmp[620];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  size_t done = 0;
  while (fd >= 0 && done < b->len) {
    ssize_t n = write(fd, b->data + done, b->len - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    done += (size_t)n;
  }
  int ok = fd >= 0 && done == b->len && close(fd) == 0 && rename(tmp, path) == 0;
  if (!ok) {
    cprof__log("CPROF_OUTPUT: cannot write %s: %s", path, strerror(errno));
    unlink(tmp);
  }
}

static void write_heap(void) {
  if (cprof__heap_rate() <= 0)
    return;
  cprof__heap_snapshot_t now;
  cprof__buf_t b;
  cprof__buf_init(&b);
  if (cprof__heap_snapshot(&now) == 0 &&
      cprof__heap_profile_write(&now, NULL, 0, "inuse_space", 0, &b) == 0)
    write_file("heap.pb.gz", &b);
  else
    cprof__log("CPROF_OUTPUT: out of memory writing the heap profile");
  cprof__heap_snapshot_free(&now);
  cprof__buf_free(&b);
}

void cprof__output_finish(void) {
  cprof__heap_guard_enter(); /* atexit runs on the program's thread */
  pthread_mutex_lock(&lock);
  if (!armed || getpid() != owner)
    goto out;
  armed = 0;
  int cpu = recording;
  recording = 0;
  uint64_t lost = cpu ? stop_recording() : 0;
  cprof__symbolizer_quick(1);
  write_heap();
  if (cpu) {
    cprof__buf_t b;
    cprof__buf_init(&b);
    if (cprof__cpu_profile_write(profile, lost, &b) == 0)
      write_file("cpu.pb.gz", &b);
    else
      cprof__log("CPROF_OUTPUT: out of memory writing the CPU profile");
    cprof__buf_free(&b);
    cprof__cpu_profile_free(profile);
    profile = NULL;
  }
  cprof__symbolizer_quick(0);
out:
  pthread_mutex_unlock(&lock);
  cprof__heap_guard_leave();
}

void cprof__output_start(const cprof__config_t *cfg) {
  static int registered;
  if (!cfg->output[0])
    return;
  pthread_mutex_lock(&lock);
  if (armed)
    goto out;
  snprintf(dir, sizeof dir, "%s", cfg->output);
  owner = getpid();
  armed = 1;
  if (!registered++)
    atexit(cprof__output_finish);
  if (!(profile = cprof__cpu_profile_new(cfg->cpu_hz))) {
    cprof__log("CPROF_OUTPUT: out of memory; no CPU profile will be written");
    goto out;
  }
  char why[256];
  int err = cprof__cpu_start_why(cfg->cpu_hz, cfg->unwind, why, sizeof why);
  if (err) {
    cprof__log("CPROF_OUTPUT: cannot record the CPU profile: %s; no cpu.pb.gz will be written",
               why[0]          ? why
               : err == -EBUSY ? "the program uses SIGPROF itself"
                               : cprof_strerror(err));
    cprof__cpu_profile_free(profile);
    profile = NULL;
    goto out;
  }
  /* CLOCK_MONOTONIC, so that a change of the wall clock neither stretches
   * nor cuts the collector's sleeps. */
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&wake, &attr);
  pthread_condattr_destroy(&attr);
  if (start_collector() != 0) {
    cprof__cpu_stop(cprof__cpu_profile_add, profile);
    cprof__cpu_profile_free(profile);
    profile = NULL;
    cprof__log("CPROF_OUTPUT: cannot start the collector thread");
    goto out;
  }
  recording = 1;
out:
  pthread_mutex_unlock(&lock);
}

/* Both locks are held across fork (start.c's handlers), so that the child
 * finds them consistent and its own, to release. */
void cprof__output_atfork_prepare(void) {
  pthread_mutex_lock(&lock);
  pthread_mutex_lock(&wake_lock);
}

void cprof__output_atfork_parent(void) {
  pthread_mutex_unlock(&wake_lock);
  pthread_mutex_unlock(&lock);
}

void cprof__output_atfork_child(void) {
  /* The collector stayed in the parent; the file is the parent's to write. */
  pthread_mutex_unlock(&wake_lock);
  pthread_mutex_unlock(&lock);
  armed = 0;
  recording = 0;
  parked = 0;
  profile = NULL;
}

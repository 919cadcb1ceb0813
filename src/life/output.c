/* CPROF_OUTPUT: record the CPU profile of the whole run, write it at exit,
 * with the heap profile as it stands then (heap.pb.gz: what is still in
 * use at exit, and everything allocated during the run).
 *
 * The CPU profile is a reader of the CPU recording (registry/cpu.h) for
 * the whole run, which gives the recording a drainer thread,
 * "cprof-output", if it has none, to drain the sample buffer every 50 ms.
 * /debug/pprof/profile requests, the push and cprof_cpu_profile_start
 * read the same recording meanwhile, each for its own window. The heap profile
 * is the registry's "heap", as /debug/pprof/heap serves it. The
 * file is written to a temporary name and renamed, so a reader never sees
 * half a profile. Exits that run no atexit handlers (_exit, a fatal signal)
 * write nothing.
 *
 * The program waits for all this at its exit, so it has to be quick: the
 * drainer is woken rather than left to finish its sleep, the CPU profile
 * stops before anything else is done (our own writing is not the program's
 * CPU time), and the profiles are symbolized in the symbolizer's quick mode,
 * which leaves out debug information that would take long to load (see
 * cprof__symbolizer_quick). */
#include "life/output.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fds.h"
#include "core/log.h"
#include "registry/cpu.h"
#include "registry/registry.h"
#include "core/guard.h" /* only for the guard: cprof's own allocations unsampled */
#include "symbol/symbolize.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int armed;                         /* a directory was given: write at exit */
static pid_t owner;                       /* the process that records: not a forked child */
static cprof__cpu_reader_t *recording;    /* NULL when the CPU profile could not start */
static char dir[512];

static void write_file(const char *name, const cprof__buf_t *b) {
  char path[600], tmp[620];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  /* The program waits for this at its exit: a FIFO put at our temporary
   * name would hold it there until a reader came (O_NONBLOCK: it fails with
   * ENXIO instead), and anything but a regular file is not where a profile
   * goes. */
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0644);
  struct stat st;
  if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
    close(fd);
    fd = -1;
    errno = EINVAL;
  }
  int ok = fd >= 0 && cprof__write_all(fd, b->data, b->len) == 0;
  if (fd >= 0 && close(fd) != 0)
    ok = 0;
  if (!ok || rename(tmp, path) != 0) {
    cprof__log("CPROF_OUTPUT: cannot write %s: %s", path, strerror(errno));
    unlink(tmp);
  }
}

/* The heap profile as it stands, through the registry, as GET
 * /debug/pprof/heap would have it; nothing when heap sampling is off. */
static void write_heap(void) {
  cprof__config_t cfg;
  cprof__config_get(&cfg);
  const cprof__profile_t *heap = cprof__registry_lookup("heap");
  if (cfg.heap_rate <= 0 || !heap)
    return;
  cprof__collect_t c = {.debug = 0, .seconds = 0};
  cprof__buf_t b;
  cprof__buf_init(&b);
  if (cprof__profile_collect(heap, &c, &b) == 0)
    write_file("heap.pb.gz", &b);
  else
    cprof__log("CPROF_OUTPUT: out of memory writing the heap profile");
  cprof__buf_free(&b);
}

void cprof__output_finish(void) {
  cprof__guard_enter(); /* atexit runs on the program's thread */
  pthread_mutex_lock(&lock);
  if (!armed || getpid() != owner)
    goto out;
  armed = 0;
  /* The CPU profile stops first: our own writing is not the program's CPU
   * time. Its proto is made afterwards, in the symbolizer's quick mode. */
  cprof__cpu_reader_t *cpu = recording;
  recording = NULL;
  cprof__buf_t b;
  cprof__buf_init(&b);
  cprof__symbolizer_quick(1);
  int err = cpu ? cprof__cpu_reader_stop(cpu, &b) : 0;
  write_heap();
  if (cpu) {
    if (err == 0)
      write_file("cpu.pb.gz", &b);
    else
      cprof__log("CPROF_OUTPUT: out of memory writing the CPU profile");
  }
  cprof__buf_free(&b);
  cprof__symbolizer_quick(0);
out:
  pthread_mutex_unlock(&lock);
  cprof__guard_leave();
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
  char why[256];
  int err = cprof__cpu_reader_start(cfg->cpu_hz, 0, cfg->unwind, why, sizeof why, &recording);
  if (err == -ENOMEM && !why[0]) {
    cprof__log("CPROF_OUTPUT: out of memory; no CPU profile will be written");
    goto out;
  }
  if (err) {
    cprof__log("CPROF_OUTPUT: cannot record the CPU profile: %s; no cpu.pb.gz will be written",
               why[0]          ? why
               : err == -EBUSY ? "the program uses SIGPROF itself"
                               : cprof_strerror(err));
    goto out;
  }
  if (cprof__cpu_reader_drainer(recording, "cprof-output") != 0) {
    cprof__cpu_reader_stop(recording, NULL);
    recording = NULL;
    cprof__log("CPROF_OUTPUT: cannot start the collector thread");
  }
out:
  pthread_mutex_unlock(&lock);
}

/* Held across fork (start.c's handlers), so that the child finds it
 * consistent and its own, to release. */
void cprof__output_atfork_prepare(void) { pthread_mutex_lock(&lock); }

void cprof__output_atfork_parent(void) { pthread_mutex_unlock(&lock); }

void cprof__output_atfork_child(void) {
  /* The recording stayed in the parent (registry/cpu.c forgets it in the
   * child); the files are the parent's to write. */
  pthread_mutex_unlock(&lock);
  armed = 0;
  recording = NULL;
}

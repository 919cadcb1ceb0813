/* cprof_cpu_profile_start and cprof_cpu_profile_stop (cprof.h), as Go's
 * pprof.StartCPUProfile and StopCPUProfile: a reader of the CPU recording
 * (registry/cpu.h), which gets a drainer thread ("cprof-cpu") if it has
 * none, written to the program's descriptor at the stop.
 *
 * The calls have no handle, so the program has one such profile at a time,
 * as Go's: a second start while its own runs is -EBUSY. It shares the
 * recording with everyone else's readers (/debug/pprof/profile, the push,
 * CPROF_OUTPUT, the trace), and so is refused only when the program uses
 * SIGPROF itself. The rate is the configuration's (cprof_set_cpu_rate,
 * CPROF_CPU_HZ) when it starts the recording, the running one's when it
 * joins, as Go's SetCPUProfileRate leaves a running profile's rate alone;
 * the unwinder is the configuration's (CPROF_UNWIND). */
#include <errno.h>
#include <pthread.h>
#include <unistd.h>

#include "core/config.h"
#include "core/fds.h"
#include "cprof.h"
#include "registry/cpu.h"
#include "core/guard.h"

/* Guards the three below. Never held while the profile is written (which
 * symbolizes, under locks that fork's handlers take before this one). */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static cprof__cpu_reader_t *recording;
static int out_fd;
static pid_t owner;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void atfork_prepare(void) { pthread_mutex_lock(&lock); }
static void atfork_parent(void) { pthread_mutex_unlock(&lock); }
static void atfork_child(void) {
  /* The profile is the parent's to stop and write. */
  pthread_mutex_unlock(&lock);
  recording = NULL;
}

static void init_once(void) {
  cprof__cpu_recording_atfork_register(); /* first: its prepare runs after ours */
  pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

void cprof__cpu_api_atfork_register(void) { pthread_once(&once, init_once); }

static int start(int fd) {
  int err = cprof__fd_writable(fd); /* fcntl(2) F_GETFL: open, and not read-only */
  if (err)
    return err;
  cprof__config_t cfg;
  cprof__config_get(&cfg);
  pthread_once(&once, init_once);
  pthread_mutex_lock(&lock);
  err = -EBUSY;
  if (recording && owner == getpid())
    goto out;
  cprof__cpu_reader_t *r;
  err = cprof__cpu_reader_start(cfg.cpu_hz, 0, cfg.unwind, NULL, 0, &r);
  if (err)
    goto out;
  if ((err = cprof__cpu_reader_drainer(r, "cprof-cpu")) != 0) {
    cprof__cpu_reader_stop(r, NULL);
    goto out;
  }
  recording = r;
  out_fd = fd;
  owner = getpid();
out:
  pthread_mutex_unlock(&lock);
  return err;
}

int cprof_cpu_profile_start(int fd) {
  int saved = errno;
  cprof__guard_enter(); /* cprof's own allocations, not the program's */
  int err = start(fd);
  cprof__guard_leave();
  errno = saved;
  return err;
}

static int stop(void) {
  pthread_mutex_lock(&lock);
  cprof__cpu_reader_t *r = owner == getpid() ? recording : NULL;
  int fd = out_fd;
  recording = NULL;
  pthread_mutex_unlock(&lock);
  if (!r)
    return -ENOENT;
  cprof__buf_t b;
  cprof__buf_init(&b);
  int err = cprof__cpu_reader_stop(r, &b);
  if (!err && b.failed)
    err = -ENOMEM;
  if (!err)
    err = cprof__write_all(fd, b.data, b.len);
  cprof__buf_free(&b);
  return err;
}

int cprof_cpu_profile_stop(void) {
  int saved = errno;
  cprof__guard_enter();
  int err = stop();
  cprof__guard_leave();
  errno = saved;
  return err;
}

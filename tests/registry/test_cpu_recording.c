/* The CPU profile as a recording (registry/cpu.h) and the public calls on
 * it: cprof_cpu_profile_start/stop to a file, one such profile at a time
 * beside other readers, bad descriptors, a stop with nothing started, a
 * forked child; and the rate setters' return values and bounds. All before any cprof_start, as a
 * program may call them. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "burn.h"
#include "check.h"
#include "core/config.h"
#include "cprof.h"
#include "interpose/malloc.h"
#include "registry/cpu.h"

/* A gzip stream (RFC 1952's magic) of more than a header. */
static void check_gzip_file(const char *path) {
  unsigned char head[2] = {0};
  struct stat st;
  int fd = open(path, O_RDONLY);
  CHECK(fd >= 0);
  CHECK_EQ_INT(read(fd, head, 2), 2);
  CHECK_EQ_INT(head[0], 0x1f);
  CHECK_EQ_INT(head[1], 0x8b);
  CHECK(fstat(fd, &st) == 0 && st.st_size > 20);
  close(fd);
}

static void rates(void) {
  cprof__config_t cfg;
  CHECK_EQ_INT(cprof_set_cpu_rate(-1), CPROF_DEFAULT_CPU_HZ);
  CHECK_EQ_INT(cprof_set_cpu_rate(0), -EINVAL);
  CHECK_EQ_INT(cprof_set_cpu_rate(CPROF_MAX_CPU_HZ + 1), -EINVAL);
  CHECK_EQ_INT(cprof_set_cpu_rate(-7), CPROF_DEFAULT_CPU_HZ); /* read-only */
  CHECK_EQ_INT(cprof_set_cpu_rate(500), CPROF_DEFAULT_CPU_HZ);
  CHECK_EQ_INT(cprof_set_cpu_rate(-1), 500);
  cprof__config_get(&cfg);
  CHECK_EQ_INT(cfg.cpu_hz, 500); /* what /debug/pprof/profile will use */
  CHECK_EQ_INT(cprof_set_cpu_rate(CPROF_MAX_CPU_HZ), 500);
  CHECK_EQ_INT(cprof_set_cpu_rate(1), CPROF_MAX_CPU_HZ);
  CHECK_EQ_INT(cprof_set_cpu_rate(CPROF_DEFAULT_CPU_HZ), 1);

  /* Before cprof_start the sampler is off: the rate in force is 0. */
  CHECK_EQ_INT(cprof_set_heap_rate(-1), 0);
  CHECK_EQ_INT(cprof_set_heap_rate(CPROF_MAX_HEAP_RATE + 1), -EINVAL);
  CHECK_EQ_INT(cprof_set_heap_rate(-1), 0);
  char why[600];
  if (cprof__malloc_check(why, sizeof why) != 0) {
    /* A sanitizer's malloc: heap sampling cannot be turned on. */
    CHECK_EQ_INT(cprof_set_heap_rate(4096), -ENOTSUP);
    CHECK_EQ_INT(cprof_set_heap_rate(0), 0);
    return;
  }
  CHECK_EQ_INT(cprof_set_heap_rate(4096), 0);
  CHECK_EQ_INT(cprof_set_heap_rate(-1), 4096);
  cprof__config_get(&cfg);
  CHECK_EQ_INT(cfg.heap_rate, 4096);
  CHECK_EQ_INT(cprof_set_heap_rate(CPROF_MAX_HEAP_RATE), 4096);
  CHECK_EQ_INT(cprof_set_heap_rate(0), CPROF_MAX_HEAP_RATE);
  CHECK_EQ_INT(cprof_set_heap_rate(-1), 0);
  cprof__config_get(&cfg);
  CHECK_EQ_INT(cfg.heap_rate, 0);
}

static void bad_descriptors(const char *dir) {
  char path[600];
  snprintf(path, sizeof path, "%s/ro", dir);
  int fd = open(path, O_WRONLY | O_CREAT, 0644);
  close(fd);
  CHECK_EQ_INT(cprof_cpu_profile_start(fd), -EBADF); /* closed */
  CHECK_EQ_INT(cprof_cpu_profile_start(-1), -EBADF);
  int ro = open(path, O_RDONLY);
  CHECK(ro >= 0);
  CHECK_EQ_INT(cprof_cpu_profile_start(ro), -EBADF);
  close(ro);
  int opath = open(path, O_PATH);
  CHECK_EQ_INT(cprof_cpu_profile_start(opath), -EBADF);
  close(opath);
  CHECK_EQ_INT(cprof_cpu_profile_stop(), -ENOENT); /* none of those started one */
}

static void to_file(const char *dir) {
  char path[600];
  snprintf(path, sizeof path, "%s/cpu.pb.gz", dir);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CHECK(fd >= 0);
  errno = 1234;
  CHECK_EQ_INT(cprof_cpu_profile_start(fd), 0);
  CHECK_EQ_INT(errno, 1234);
  CHECK_EQ_INT(cprof_cpu_profile_start(fd), -EBUSY);
  /* An HTTP request's reader joins it, at its rate (the API's is the
   * configuration's, 100 Hz); one that asks for another rate is refused,
   * saying the running one. */
  cprof__cpu_reader_t *r = NULL;
  char why[256];
  CHECK_EQ_INT(cprof__cpu_reader_start(250, CPROF_CPU_READER_EXPLICIT_HZ, CPROF_UNWIND_FP, why,
                                       sizeof why, &r),
               -ERANGE);
  CHECK(r == NULL);
  CHECK(strstr(why, "100 Hz") != NULL);
  CHECK_EQ_INT(cprof__cpu_reader_start(250, 0, CPROF_UNWIND_FP, NULL, 0, &r), 0);
  CHECK_EQ_INT(cprof__cpu_reader_hz(r), 100);
  int hz = 0;
  CHECK_EQ_INT(cprof__cpu_readers(&hz), 2);
  CHECK_EQ_INT(hz, 100);
  burn(200);
  CHECK_EQ_INT(cprof__cpu_reader_stop(r, NULL), 0);
  CHECK_EQ_INT(cprof__cpu_readers(NULL), 1);

  /* A forked child has no profile of its own to stop, and may start one. */
  pid_t pid = fork();
  if (pid == 0) {
    int ok = cprof_cpu_profile_stop() == -ENOENT;
    cprof__cpu_reader_t *child = NULL;
    ok = ok && cprof__cpu_readers(NULL) == 0;
    ok = ok && cprof__cpu_reader_start(100, 0, CPROF_UNWIND_FP, NULL, 0, &child) == 0 &&
         cprof__cpu_reader_stop(child, NULL) == 0;
#ifndef __SANITIZE_THREAD__ /* TSan: no threads after a multi-threaded fork */
    int null = open("/dev/null", O_WRONLY);
    ok = ok && cprof_cpu_profile_start(null) == 0 && cprof_cpu_profile_stop() == 0;
#endif
    _exit(ok ? 0 : 1);
  }
  int status = -1;
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  CHECK_EQ_INT(cprof_cpu_profile_stop(), 0);
  CHECK_EQ_INT(cprof_cpu_profile_stop(), -ENOENT);
  close(fd);
  check_gzip_file(path);

  CHECK_EQ_INT(cprof__cpu_readers(NULL), 0); /* the last reader stopped the recording */

  /* The API's profile joins a recording another reader started, and
   * outlives it. */
  CHECK_EQ_INT(cprof__cpu_reader_start(100, 0, CPROF_UNWIND_FP, NULL, 0, &r), 0);
  int null = open("/dev/null", O_WRONLY);
  CHECK_EQ_INT(cprof_cpu_profile_start(null), 0);
  cprof__cpu_recording_drain();
  CHECK_EQ_INT(cprof__cpu_reader_stop(r, NULL), 0);
  CHECK_EQ_INT(cprof__cpu_readers(NULL), 1);
  CHECK_EQ_INT(cprof_cpu_profile_stop(), 0);
  CHECK_EQ_INT(cprof__cpu_readers(NULL), 0);
  close(null);
}

/* A recording with a drainer, parked and unparked as start.c does around
 * a credential change, stopped into a buffer. */
static void drainer(void) {
  cprof__cpu_reader_t *r = NULL;
  char why[256];
  CHECK_EQ_INT(cprof__cpu_reader_start(100, 0, CPROF_UNWIND_FP, why, sizeof why, &r), 0);
  CHECK_EQ_INT(cprof__cpu_reader_drainer(r, "test-drainer"), 0);
  CHECK_EQ_INT(cprof__cpu_reader_drainer(r, "test-drainer"), 0); /* has one: nothing more */
  burn(100);
  cprof__cpu_recording_park();
  cprof__cpu_recording_park(); /* twice: nothing more */
  burn(50);
  cprof__cpu_recording_unpark();
  burn(50);
  cprof__buf_t b;
  cprof__buf_init(&b);
  CHECK_EQ_INT(cprof__cpu_reader_stop(r, &b), 0);
  CHECK(b.len > 20 && (unsigned char)b.data[0] == 0x1f && (unsigned char)b.data[1] == 0x8b);
  cprof__buf_free(&b);
  cprof__cpu_recording_unpark(); /* no recording: nothing */
}

int main(void) {
  char dir[] = "/tmp/cprof-cpu-recording-XXXXXX";
  if (!mkdtemp(dir))
    return 2;
  rates();
  bad_descriptors(dir);
  to_file(dir);
  drainer();
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0)
    CHECK(0);
  return check_result("test_cpu_recording");
}

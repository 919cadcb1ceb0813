/* The metrics sampler across cprof_stop, cprof_start and fork, for
 * tests/integration/metrics.sh: it runs while the server does (a
 * cprof-metrics thread, points in /debug/charts/data), ends with
 * cprof_stop (no thread, a 404), comes back with cprof_start and goes on
 * adding to the same ring (the history kept, with a gap); a forked child
 * has neither thread nor server until it calls cprof_start, and then a
 * sampler and a ring of its own, from its start, while the parent's goes
 * on. Without cprof's server, the first request for the figures through
 * cprof_handle_request starts it. Exit code 1 when a check failed (the child's too). */
#include <cprof.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static const cprof_options_t opts = {
    .addr = "127.0.0.1:0", .metrics_interval = "50ms", .metrics_window = "60s"};
static const cprof_options_t no_server = {
    .addr = "0", .metrics_interval = "50ms", .metrics_window = "30s"}; /* a new ring */

/* Whether one of this process's threads is called cprof-metrics. */
static int sampler_thread_now(void) {
  DIR *d = opendir("/proc/self/task");
  struct dirent *e;
  int found = 0;
  while (d && (e = readdir(d)) && !found) {
    char path[300], comm[32] = "";
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    FILE *f = e->d_name[0] != '.' ? fopen(path, "r") : NULL;
    if (f && fgets(comm, sizeof comm, f))
      found = strcmp(comm, "cprof-metrics\n") == 0;
    if (f)
      fclose(f);
  }
  if (d)
    closedir(d);
  return found;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Whether the thread is there, asked until the answer is `want` (up to
 * 5 s): a joined thread's /proc entry outlives the join for a moment. */
static int sampler_thread(int want) {
  int got = sampler_thread_now();
  for (int i = 0; i < 500 && got != want; i++) {
    sleep_ms(10);
    got = sampler_thread_now();
  }
  return got;
}

static int status_of(const char *path) {
  cprof_request_t req = {.method = "GET", .path = path};
  cprof_response_t r;
  if (cprof_handle_request(&req, &r) != 0)
    abort();
  int status = r.status;
  cprof_response_free(&r);
  return status;
}

/* /debug/charts/data's status; *points, and the first and last point's
 * time (unix ms) in first[0] and first[1], from its body. */
static int charts(int *points, long long *first) {
  cprof_request_t req = {.method = "GET", .path = "/debug/charts/data"};
  cprof_response_t r;
  if (cprof_handle_request(&req, &r) != 0)
    abort();
  *points = 0;
  first[0] = first[1] = 0;
  const char *t = r.status == 200 && r.body ? strstr(r.body, "\"t\":[") : NULL;
  for (t = t ? t + 5 : NULL; t && *t && *t != ']'; t++)
    if (*t == ',' || t[-1] == '[') {
      first[*points ? 1 : 0] = first[1] = atoll(t + (*t == ','));
      ++*points;
    }
  int status = r.status;
  cprof_response_free(&r);
  return status;
}

/* Waits (up to 10 s, a bound on a hang, not a timing) for n points. */
static int wait_points(int n, long long *first) {
  int points = 0;
  for (int i = 0; i < 1000 && points < n; i++) {
    if (charts(&points, first) != 200)
      return 0;
    if (points < n)
      sleep_ms(10);
  }
  return points;
}

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int main(void) {
  long long t1[2], t2[2], tc[2];
  int points, before;
  CHECK_EQ_INT(cprof_start(&opts), 0);
  CHECK(sampler_thread(1));
  CHECK(wait_points(3, t1) >= 3);

  cprof_stop();
  CHECK(!sampler_thread(0));
  CHECK_EQ_INT(charts(&points, t2), 404);

  sleep_ms(20);
  CHECK_EQ_INT(cprof_start(&opts), 0);
  CHECK(sampler_thread(1));
  CHECK_EQ_INT(charts(&before, t2), 200);
  CHECK(wait_points(before + 3, t2) >= before + 3);
  CHECK_EQ_INT(t2[0], t1[0]); /* the history kept */
  CHECK(t2[1] > t1[1] + 20);  /* and new points after the gap */

  long long forked = now_ms();
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    CHECK(!sampler_thread_now());
    CHECK_EQ_INT(charts(&points, tc), 404);
    CHECK_EQ_INT(cprof_start(&opts), 0);
    CHECK(sampler_thread(1));
    CHECK(wait_points(3, tc) >= 3);
    CHECK(tc[0] >= forked); /* the child's own ring, from its start */
    cprof_stop();
    exit(check_result("metrics_restart (child)"));
  }
  int status = 0;
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CHECK_EQ_INT(charts(&before, t1), 200);
  CHECK_EQ_INT(t1[0], t2[0]); /* the parent's ring went on */
  CHECK(sampler_thread_now());
  CHECK(wait_points(before + 2, t1) >= before + 2);
  cprof_stop();

  /* No server of cprof's (the program serves cprof_handle_request): no
   * thread until the first request for the figures starts it. */
  CHECK_EQ_INT(cprof_start(&no_server), 0);
  CHECK(!sampler_thread(0));
  CHECK_EQ_INT(status_of("/debug/pprof/heap"), 200);
  CHECK(!sampler_thread_now());
  cprof_request_t req = {.method = "GET", .path = "/metrics"};
  cprof_response_t r;
  CHECK_EQ_INT(cprof_handle_request(&req, &r), 0);
  CHECK_EQ_INT(r.status, 200);
  /* Whole from the first request: the sampler's first point is in. */
  CHECK(r.body && strstr(r.body, "\nprocess_resident_memory_bytes "));
  CHECK(r.body && strstr(r.body, "\nprocess_open_fds "));
  cprof_response_free(&r);
  CHECK(sampler_thread(1));
  CHECK(wait_points(3, t1) >= 3);
  cprof_stop();
  CHECK(!sampler_thread(0));
  return check_result("metrics_restart");
}

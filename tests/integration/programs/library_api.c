/* Every function of cprof.h's runtime/pprof API, as a program linked with
 * -lcprof uses them, for library_api.sh: wrong arguments first (each
 * answer checked here with tests/check.h: a failed check is a line on
 * stderr, and the program exits 1 before "ready"), then real
 * profiles written to files in DIR, then "ready" on stdout and a wait,
 * while the test reads the same profiles over HTTP. Ends on SIGTERM.
 *
 * usage: library_api DIR (the address from CPROF_ADDR) */
#include <cprof.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static volatile unsigned long sink;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Burns the calling thread's CPU for s seconds in the function named. */
__attribute__((noinline)) static void burn(double s) {
  double end = now() + s;
  while (now() < end)
    for (int i = 0; i < 10000; i++)
      sink += (unsigned long)i * i;
}
__attribute__((noinline)) static void hot_loop(void) { burn(0.6); }
__attribute__((noinline)) static void pay_work(void) { burn(0.3); }

static int hold[2]; /* a pipe nobody writes: the labelled thread sleeps on it */

/* Created inside cprof_do: it inherits request=checkout and step=pay, and
 * sleeps in read() so that the goroutine profile shows it there. */
__attribute__((noinline)) static void *inherited_worker(void *arg) {
  char c;
  while (read(hold[0], &c, 1) < 0 && errno == EINTR)
    ;
  return arg;
}

static void pay(void *arg) {
  pthread_t *t = arg;
  pay_work();
  pthread_create(t, NULL, inherited_worker, NULL);
}

static void checkout(void *arg) {
  static const char *const step[] = {"step", "pay", NULL};
  CHECK_EQ_INT(cprof_do(step, pay, arg), 0);
  burn(0.3);
}

static int ran;
static void mark(void *arg) { ran = 1; }

/* Custom profile: connections opened by two functions. */
static cprof_profile_t *conns;
static char conn_a[30], conn_b[5];
__attribute__((noinline)) static void open_from_a(int i) {
  CHECK_EQ_INT(cprof_profile_add(conns, &conn_a[i], 0), 0);
}
__attribute__((noinline)) static void open_from_b(int i) {
  CHECK_EQ_INT(cprof_profile_add(conns, &conn_b[i], 0), 0);
}

static void bad_arguments(void) {
  static const char *const odd[] = {"request", NULL};
  static const char *const empty_key[] = {"", "x", NULL};
  static const char *const ok[] = {"k", "v", NULL};
  int devnull = open("/dev/null", O_RDONLY);

  CHECK_EQ_INT(cprof_profile_write(NULL, 1, 0), -EINVAL);
  CHECK_EQ_INT(cprof_profile_write("nosuch", 1, 0), -ENOENT);
  CHECK_EQ_INT(cprof_profile_write("profile", 1, 0), -ENOENT);
  CHECK_EQ_INT(cprof_profile_write("heap", 1, -1), -EINVAL);
  CHECK_EQ_INT(cprof_profile_write("heap", 999, 0), -EBADF);
  CHECK_EQ_INT(cprof_profile_write("heap", devnull, 0), -EBADF);
  CHECK_EQ_INT(cprof_cpu_profile_start(999), -EBADF);
  CHECK_EQ_INT(cprof_cpu_profile_start(devnull), -EBADF);
  CHECK_EQ_INT(cprof_cpu_profile_stop(), -ENOENT);
  CHECK_EQ_INT(cprof_set_cpu_rate(0), -EINVAL);
  CHECK_EQ_INT(cprof_set_cpu_rate(10001), -EINVAL);
  CHECK_EQ_INT(cprof_set_heap_rate(1L << 31), -EINVAL);
  CHECK_EQ_INT(cprof_do(NULL, mark, NULL), -EINVAL);
  CHECK_EQ_INT(cprof_do(ok, NULL, NULL), -EINVAL);
  CHECK_EQ_INT(cprof_do(odd, mark, NULL), -EINVAL);
  CHECK_EQ_INT(cprof_do(empty_key, mark, NULL), -EINVAL);
  CHECK_EQ_INT(ran, 0);
  CHECK(cprof_profile_new(NULL, "x") == NULL && errno == EINVAL);
  CHECK(cprof_profile_new("a/b", "x") == NULL && errno == EINVAL);
  CHECK(cprof_profile_new("heap", "x") == NULL && errno == EEXIST);
  CHECK(cprof_profile_new("profile", "x") == NULL && errno == EEXIST);
  CHECK_EQ_INT(cprof_profile_add(NULL, &ran, 0), -EINVAL);
  CHECK_EQ_INT(cprof_profile_remove(NULL, &ran), -EINVAL);
  close(devnull);
  printf("bad arguments ok\n");
}

static int create(const char *dir, const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
}

/* Writes profile `name` to DIR/FILE with cprof_profile_write. */
static void write_to(const char *dir, const char *name, int debug, const char *file) {
  int fd = create(dir, file);
  int rc = cprof_profile_write(name, fd, debug);
  CHECK_EQ_INT(rc, 0);
  if (rc)
    fprintf(stderr, "  (writing %s)\n", file);
  close(fd);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: library_api DIR\n");
    return 2;
  }
  const char *dir = argv[1];
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (pipe(hold) != 0)
    return 2;

  /* Before cprof_start: all of it must answer, none of it crash. */
  CHECK_EQ_INT(strcmp(cprof_version(), CPROF_VERSION_STRING), 0);
  CHECK_EQ_INT(cprof_set_cpu_rate(-1), 100);
  bad_arguments();

  /* Settings through the options, each a string in its variable's syntax;
   * the address, left NULL, from CPROF_ADDR. */
  cprof_options_t o = {.heap_rate = "4096", .cpu_hz = "250"};
  CHECK_EQ_INT(cprof_start(&o), 0);
  CHECK_EQ_INT(cprof_set_cpu_rate(-1), 250);
  CHECK_EQ_INT(cprof_set_heap_rate(-1), 4096);
  CHECK_EQ_INT(cprof_set_cpu_rate(200), 250);
  CHECK_EQ_INT(cprof_set_heap_rate(8192), 4096);

  conns = cprof_profile_new("connections", "Open connections, by the stack that opened them");
  CHECK(conns != NULL);
  CHECK(cprof_profile_new("connections", "x") == NULL && errno == EEXIST);
  for (int i = 0; i < 30; i++)
    open_from_a(i);
  for (int i = 0; i < 5; i++)
    open_from_b(i);
  for (int i = 0; i < 10; i++)
    CHECK_EQ_INT(cprof_profile_remove(conns, &conn_a[i]), 0);
  CHECK_EQ_INT(cprof_profile_remove(conns, &conn_a[0]), -ENOENT);
  CHECK_EQ_INT(cprof_profile_add(conns, &conn_b[0], 0), -EEXIST);
  CHECK_EQ_INT(cprof_profile_add(conns, NULL, 0), -EINVAL);
  CHECK_EQ_INT(cprof_profile_add(conns, &ran, -1), -EINVAL);

  /* The CPU profile of the labelled work and of hot_loop, to a file. */
  int cpu = create(dir, "cpu.pb.gz");
  CHECK_EQ_INT(cprof_cpu_profile_start(cpu), 0);
  CHECK_EQ_INT(cprof_cpu_profile_start(cpu), -EBUSY);
  hot_loop();
  static const char *const request[] = {"request", "checkout", NULL};
  pthread_t worker;
  CHECK_EQ_INT(cprof_do(request, checkout, &worker), 0);
  CHECK_EQ_INT(cprof_cpu_profile_stop(), 0);
  CHECK_EQ_INT(cprof_cpu_profile_stop(), -ENOENT);
  close(cpu);

  static const char *const names[] = {"goroutine", "threadcreate", "heap", "allocs",
                                      "block",     "mutex",        "connections"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char file[64];
    snprintf(file, sizeof file, "%s.pb.gz", names[i]);
    write_to(dir, names[i], 0, file);
    snprintf(file, sizeof file, "%s.txt", names[i]);
    write_to(dir, names[i], 1, file);
  }
  write_to(dir, "threads", 2, "threads.txt");
  /* The wall profile records a second, on a thread of cprof's own with
   * descriptors of its own: the program's next descriptor is the same
   * before and after. */
  int before = open("/dev/null", O_RDONLY);
  close(before);
  write_to(dir, "wall", 0, "wall.pb.gz");
  int after = open("/dev/null", O_RDONLY);
  close(after);
  CHECK_EQ_INT(after, before);

  if (check_result("library_api") != 0)
    return 1;
  printf("ready\n");
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  int sig;
  sigwait(&set, &sig);
  cprof_stop();
  return 0;
}

/* core/fds.c: a thread that unshares gets a table of its own with 0, 1 and
 * 2 on /dev/null and placeholders (/dev/null write-only) from 3 up to its
 * first own number in it; numbers there and in the program's table are
 * independent both ways; the threads it creates share its table. What the
 * threads see is recorded and checked on the main thread, whose stderr is
 * the test's (theirs is /dev/null). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "check.h"
#include "core/fds.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

typedef struct seen {
  int unshare_rc;
  int own_table;
  char listing[256]; /* "0:/dev/null 1:/dev/null 2:..." of its table's 0-2 */
  int placeholders;  /* numbers from 3 on /dev/null write-only */
  int others;        /* any other number open there */
  int opened;        /* the number its first open got */
  int closed_main;   /* close() of the main thread's pipe number, there */
  int closed_high;   /* ... and of its copy at 150 */
  int child_sees;    /* a thread it created sees `opened` */
  int child_own;     /* ... and says it is in the table */
  unsigned table;    /* the table's number */
  unsigned child_table; /* ... as the thread it created has it */
} seen_t;

static int main_pipe[2], main_high;

/* A placeholder: /dev/null opened write-only. */
static int is_placeholder(int fd) {
  char link[64], target[64] = "";
  snprintf(link, sizeof link, "/proc/thread-self/fd/%d", fd);
  ssize_t k = readlink(link, target, sizeof target - 1);
  target[k > 0 ? k : 0] = '\0';
  return strcmp(target, "/dev/null") == 0 && (fcntl(fd, F_GETFL) & O_ACCMODE) == O_WRONLY;
}

static void list_table(char *out, size_t size, int *placeholders, int *others) {
  DIR *d = opendir("/proc/thread-self/fd");
  out[0] = '\0';
  if (!d)
    return;
  int fds[128], n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (e->d_name[0] != '.' && atoi(e->d_name) != dirfd(d)) {
      int fd = atoi(e->d_name);
      if (fd < 3 && n < 128)
        fds[n++] = fd;
      else if (fd >= 3)
        *(is_placeholder(fd) ? placeholders : others) += 1;
    }
  closedir(d);
  for (int i = 0; i < n; i++) /* in order: readdir lists them so, but be sure */
    for (int j = i + 1; j < n; j++)
      if (fds[j] < fds[i]) {
        int t = fds[i];
        fds[i] = fds[j];
        fds[j] = t;
      }
  size_t len = 0;
  for (int i = 0; i < n; i++) {
    char link[64], target[128] = "?";
    snprintf(link, sizeof link, "/proc/thread-self/fd/%d", fds[i]);
    ssize_t k = readlink(link, target, sizeof target - 1);
    target[k > 0 ? k : 0] = '\0';
    len += (size_t)snprintf(out + len, size - len, "%s%d:%s", i ? " " : "", fds[i], target);
    if (len >= size)
      break;
  }
}

static void *child(void *arg) {
  seen_t *s = arg;
  cprof__fds_joined(s->table);
  s->child_sees = fcntl(s->opened, F_GETFD) >= 0;
  s->child_own = cprof__fds_in_own_table();
  s->child_table = cprof__fds_table();
  return NULL;
}

static void *unsharer(void *arg) {
  seen_t *s = arg;
  s->unshare_rc = cprof__fds_unshare();
  s->own_table = cprof__fds_in_own_table();
  s->table = cprof__fds_table();
  list_table(s->listing, sizeof s->listing, &s->placeholders, &s->others);
  s->opened = open("/dev/zero", O_RDONLY | O_CLOEXEC);
  /* The main thread's numbers, here: not open, and closing them must not
   * touch the main thread's pipe. */
  s->closed_main = close(main_pipe[1]) == 0 ? 0 : errno;
  s->closed_high = close(main_high) == 0 ? 0 : errno;
  pthread_t t;
  if (pthread_create(&t, NULL, child, s) == 0)
    pthread_join(t, NULL);
  close(s->opened);
  return NULL;
}

int main(void) {
  CHECK_EQ_INT(pipe(main_pipe), 0);
  main_high = fcntl(main_pipe[1], F_DUPFD, 150);
  CHECK_EQ_INT(main_high, 150);
  /* Numbers above the pipe, so that the thread's first open (3) is a number
   * the main thread uses too. */
  int before = open("/dev/null", O_RDONLY);

  seen_t s = {.opened = -1};
  pthread_t t;
  CHECK_EQ_INT(pthread_create(&t, NULL, unsharer, &s), 0);
  pthread_join(t, NULL);

  CHECK_EQ_INT(s.unshare_rc, 0);
  CHECK_EQ_INT(s.own_table, 1);
  CHECK_EQ_INT(cprof__fds_in_own_table(), 0);
#if defined(__SANITIZE_THREAD__)
  CHECK(strncmp(s.listing, "0:/dev/null 1:/dev/null 2:", 26) == 0);
#elif defined(__SANITIZE_ADDRESS__)
  /* Sanitizer builds keep stderr for the sanitizers' reports. */
  char err[128] = "?", want[200];
  ssize_t k = readlink("/proc/self/fd/2", err, sizeof err - 1);
  err[k > 0 ? k : 0] = '\0';
  snprintf(want, sizeof want, "0:/dev/null 1:/dev/null 2:%s", err);
  CHECK_EQ_STR(s.listing, want);
#else
  CHECK_EQ_STR(s.listing, "0:/dev/null 1:/dev/null 2:/dev/null");
#endif
  /* Its own numbers start at 256, or a quarter of RLIMIT_NOFILE where
   * that is less (100 at least under TSan: see fds.c); below, from 3,
   * placeholders, and nothing else is open there. */
  struct rlimit rl;
  CHECK_EQ_INT(getrlimit(RLIMIT_NOFILE, &rl), 0);
  int base = rl.rlim_cur / 4 < 256 ? (int)(rl.rlim_cur / 4) : 256;
#ifdef __SANITIZE_THREAD__
  if (base < 100)
    base = 100;
#endif
  if (base < 3)
    base = 3;
  CHECK_EQ_INT(s.opened, base); /* the lowest free number in its table */
  CHECK_EQ_INT(s.placeholders, base - 3);
  CHECK_EQ_INT(s.others, 0);
  /* The main thread's numbers name placeholders there, or nothing: closing
   * them closes no descriptor of the main thread's (checked below). */
#ifndef __SANITIZE_THREAD__ /* there its numbers below 100 are taken */
  CHECK_EQ_INT(s.closed_main, main_pipe[1] < base ? 0 : EBADF);
#endif
  CHECK_EQ_INT(s.closed_high, main_high < base ? 0 : EBADF);
  CHECK_EQ_INT(s.child_sees, 1);
  CHECK_EQ_INT(s.child_own, 1);
  /* Tables have numbers: not the program's 0, and shared with the thread
   * that joined. */
  CHECK(s.table != 0);
  CHECK_EQ_INT(s.child_table, s.table);
  CHECK_EQ_INT(cprof__fds_table(), 0);

  /* The main thread's table is untouched: its pipe works, its numbers are
   * where they were, and its next open gets the number it would have. */
  CHECK_EQ_INT(write(main_pipe[1], "x", 1), 1);
  char c = 0;
  CHECK_EQ_INT(read(main_pipe[0], &c, 1), 1);
  CHECK_EQ_INT(c, 'x');
  CHECK_EQ_INT(write(main_high, "y", 1), 1);
  CHECK_EQ_INT(read(main_pipe[0], &c, 1), 1);
  CHECK_EQ_INT(c, 'y');
  CHECK(fcntl(before, F_GETFD) >= 0);
  int next = open("/dev/null", O_RDONLY);
  CHECK_EQ_INT(next, before + 1);
  close(next);
  close(before);
  return check_result("core/test_fds");
}

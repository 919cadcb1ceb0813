/* What a program's descriptors look like to itself and to its children.
 *
 *   host_fd_limits count   opens /dev/null until EMFILE and prints how many
 *                          it got; prints "ready", waits for the file named
 *                          by $DONE, and counts again
 *   host_fd_limits fork    prints its own descriptors, then those of a
 *                          forked child and of a child exec'd without
 *                          LD_PRELOAD
 *   host_fd_limits list    prints its own descriptors (the exec'd child)
 *
 * Everything printed depends on the program alone: with cprof it must print
 * what it prints without it. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int count_until_emfile(void) {
  static int fds[1 << 16];
  int n = 0;
  while (n < (int)(sizeof fds / sizeof fds[0])) {
    int fd = open("/dev/null", O_RDONLY);
    if (fd < 0) {
      if (errno != EMFILE)
        printf("open failed: %s\n", strerror(errno));
      break;
    }
    fds[n++] = fd;
  }
  for (int i = 0; i < n; i++)
    close(fds[i]);
  return n;
}

static void wait_done(void) {
  const char *done = getenv("DONE");
  for (int i = 0; i < 3000 && done && access(done, F_OK) != 0; i++) {
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

/* The open descriptors, in order, without the one reading the directory. */
static void list(const char *who) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) {
    printf("%s: cannot list: %s\n", who, strerror(errno));
    return;
  }
  char seen[4096] = {0};
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    int fd = atoi(e->d_name);
    if (e->d_name[0] != '.' && fd != dirfd(d) && fd >= 0 && fd < (int)sizeof seen)
      seen[fd] = 1;
  }
  closedir(d);
  printf("%s:", who);
  for (int fd = 0; fd < (int)sizeof seen; fd++)
    if (seen[fd])
      printf(" %d", fd);
  printf("\n");
  fflush(stdout);
}

static char *const no_env[] = {"PATH=/usr/bin:/bin", NULL};

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "count") == 0) {
    printf("opened %d before EMFILE\n", count_until_emfile());
    printf("ready\n");
    fflush(stdout);
    wait_done();
    printf("then %d before EMFILE\n", count_until_emfile());
    return 0;
  }
  if (strcmp(mode, "list") == 0) {
    list("exec'd child");
    return 0;
  }
  if (strcmp(mode, "fork") == 0) {
    list("parent");
    pid_t c = fork();
    if (c == 0) {
      list("forked child");
      _exit(0);
    }
    waitpid(c, NULL, 0);
    c = fork();
    if (c == 0) {
      execle("/proc/self/exe", argv[0], "list", (char *)NULL, no_env);
      _exit(127);
    }
    int st = 0;
    waitpid(c, &st, 0);
    printf("exec'd child exited %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return 0;
  }
  fprintf(stderr, "usage: %s count|fork|list\n", argv[0]);
  return 2;
}

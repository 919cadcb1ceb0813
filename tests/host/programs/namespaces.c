/* Changes its namespaces as a sandbox does, then waits, for
 * tests/host/namespaces.sh:
 *   namespaces unshare-user [raw] [wait]   unshare(CLONE_NEWUSER), then
 *                          writes its id maps (root inside, as unshare -r)
 *   namespaces unshare-net [raw] [wait]    the same, and a network namespace
 *   namespaces unshare-thread [raw] [wait] the same with a thread of its
 *                          own alive: the kernel refuses it (EINVAL)
 *   namespaces setns PATH [raw] [wait]     setns into the namespace file PATH
 * "raw" makes the call through syscall(). Prints the call's result and
 * errno, its ids, the number its next open gets (cprof keeps nothing in
 * its table), then "ready"; with "wait", then lives 20 s more, so that
 * the test can look at /proc and ask its server for profiles. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static void *sleeper(void *arg) {
  (void)arg;
  sleep(30);
  return NULL;
}

static void write_file(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0 || write(fd, text, strlen(text)) < 0)
    printf("%s: %s\n", path, strerror(errno));
  if (fd >= 0)
    close(fd);
}

int main(int argc, char **argv) {
  if (argc < 2)
    return 2;
  int raw = 0, wait = 0;
  for (int i = 2; i < argc; i++) {
    raw |= strcmp(argv[i], "raw") == 0;
    wait |= strcmp(argv[i], "wait") == 0;
  }
  int rc;
  if (strcmp(argv[1], "setns") == 0 && argc > 2) {
    int fd = open(argv[2], O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      perror(argv[2]);
      return 2;
    }
    rc = raw ? (int)syscall(SYS_setns, fd, 0) : setns(fd, 0);
  } else {
    pthread_t t;
    if (strcmp(argv[1], "unshare-thread") == 0)
      pthread_create(&t, NULL, sleeper, NULL);
    unsigned uid = getuid(), gid = getgid();
    int flags = CLONE_NEWUSER | (strcmp(argv[1], "unshare-net") == 0 ? CLONE_NEWNET : 0);
    rc = raw ? (int)syscall(SYS_unshare, flags) : unshare(flags);
    if (rc == 0) {
      char map[64];
      write_file("/proc/self/setgroups", "deny");
      snprintf(map, sizeof map, "0 %u 1", uid);
      write_file("/proc/self/uid_map", map);
      snprintf(map, sizeof map, "0 %u 1", gid);
      write_file("/proc/self/gid_map", map);
    }
  }
  printf("%s: %d %s\n", argv[1], rc, rc ? strerror(errno) : "");
  printf("uid %u gid %u\n", (unsigned)getuid(), (unsigned)getgid());
  int next = open("/dev/null", O_RDONLY);
  printf("next fd %d\n", next);
  printf("ready\n");
  fflush(stdout);
  /* The test looks, then ends us. */
  for (int i = 0; wait && i < 200; i++)
    usleep(100000);
  return 0;
}

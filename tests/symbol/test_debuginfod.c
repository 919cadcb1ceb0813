/* debuginfod.c without a debuginfod server: nothing at all without
 * DEBUGINFOD_URLS; where a fetched file is looked for (libdebuginfod's
 * cache directory, as it finds it); a failed fetch said in the profile's
 * words; the fetching thread's descriptors kept out of the program's table;
 * and stopping it while a fetch hangs. DEBUGINFOD_URLS is read once per
 * process, so each case with it set runs in a child of its own.
 * (tests/integration/debuginfod.sh drives a real server.) */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "check.h"
#include "symbol/debuginfod.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char id[] = "00112233445566778899aabbccddeeff00112233";

static long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Entries of a /proc/self directory. */
static int count(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  if (!d)
    return -1;
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    n += e->d_name[0] != '.';
  closedir(d);
  return n - 1; /* the directory's own descriptor */
}

/* Whether a thread named "cprof-debuginfo" runs. */
static int fetcher_runs(void) {
  DIR *d = opendir("/proc/self/task");
  int found = 0;
  for (struct dirent *e; d && !found && (e = readdir(d)) != NULL;) {
    char path[300], comm[32] = "";
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen(path, "r");
    if (f) {
      found = fgets(comm, sizeof comm, f) && strcmp(comm, "cprof-debuginfo\n") == 0;
      fclose(f);
    }
  }
  if (d)
    closedir(d);
  return found;
}

/* Whether it is gone, a second at most after it was joined: the kernel
 * lists a thread a moment longer. */
static int fetcher_gone(void) {
  for (int i = 0; i < 100 && fetcher_runs(); i++)
    usleep(10000);
  return !fetcher_runs();
}

static void advice(char *buf, size_t len) { cprof__debuginfod_advice(id, buf, len); }

static void test_off(void) {
  unsetenv("DEBUGINFOD_URLS");
  CHECK(!cprof__debuginfod_enabled());
  char path[4096], text[512];
  CHECK_EQ_INT(cprof__debuginfod_candidate(id, 0, path, sizeof path), -1);
  CHECK_EQ_INT(cprof__debuginfod_candidate(id, 1, path, sizeof path), -1);
  advice(text, sizeof text);
  CHECK(strstr(text, "install its -dbgsym package (for /usr/lib/debug/.build-id/00/"
                     "112233445566778899aabbccddeeff00112233.debug)") != NULL);
  CHECK(strstr(text, "or set DEBUGINFOD_URLS") != NULL);
  unsigned gen = cprof__debuginfod_generation();
  cprof__debuginfod_want(id);
  cprof__debuginfod_kick();
  CHECK(!fetcher_runs());
  CHECK_EQ_INT(cprof__debuginfod_generation(), gen);
}

/* libdebuginfod's cache directory, in the order it tries them. */
static void cache_places(const char *tmp) {
  char path[4096], want[8192], home[2048];
  CHECK(cprof__debuginfod_enabled());
  setenv("DEBUGINFOD_CACHE_PATH", "/c", 1);
  CHECK_EQ_INT(cprof__debuginfod_candidate(id, 1, path, sizeof path), 0);
  snprintf(want, sizeof want, "/c/%s/debuginfo", id);
  CHECK_EQ_STR(path, want);

  unsetenv("DEBUGINFOD_CACHE_PATH");
  snprintf(home, sizeof home, "%s/home", tmp);
  mkdir(home, 0700);
  setenv("HOME", home, 1);
  setenv("XDG_CACHE_HOME", "/x", 1);
  CHECK_EQ_INT(cprof__debuginfod_candidate(id, 1, path, sizeof path), 0);
  snprintf(want, sizeof want, "/x/debuginfod_client/%s/debuginfo", id);
  CHECK_EQ_STR(path, want);

  unsetenv("XDG_CACHE_HOME");
  CHECK_EQ_INT(cprof__debuginfod_candidate(id, 1, path, sizeof path), 0);
  snprintf(want, sizeof want, "%s/.cache/debuginfod_client/%s/debuginfo", home, id);
  CHECK_EQ_STR(path, want);

  /* The old place, where it exists, comes first. */
  snprintf(want, sizeof want, "%s/.debuginfod_client_cache", home);
  mkdir(want, 0700);
  CHECK_EQ_INT(cprof__debuginfod_candidate(id, 1, path, sizeof path), 0);
  snprintf(want, sizeof want, "%s/.debuginfod_client_cache/%s/debuginfo", home, id);
  CHECK_EQ_STR(path, want);

  /* Nothing fetched in this process; and no path out of the cache. */
  CHECK_EQ_INT(cprof__debuginfod_candidate(id, 0, path, sizeof path), -1);
  CHECK_EQ_INT(cprof__debuginfod_candidate("../x", 1, path, sizeof path), -1);
}

/* A server that refuses: the fetch fails, and says why. */
static void refused(const char *tmp) {
  char text[512];
  setenv("DEBUGINFOD_CACHE_PATH", tmp, 1);
  int fds = count("/proc/self/fd");
  cprof__debuginfod_want(id);
  advice(text, sizeof text);
  CHECK(strstr(text, "asking debuginfod") == text);
  cprof__debuginfod_kick();
  CHECK(fetcher_runs());
  for (long end = now_ms() + 30000; now_ms() < end; usleep(20000)) {
    advice(text, sizeof text);
    if (strstr(text, "asking debuginfod (") != text)
      break;
  }
  CHECK_EQ_STR(text, "asking debuginfod failed: Connection refused");
  /* libdebuginfod and libcurl opened files and sockets: in the fetching
   * thread's own table. */
  CHECK_EQ_INT(count("/proc/self/fd"), fds);
  cprof__debuginfod_stop();
  CHECK(fetcher_gone());
}

/* A server that accepts and never answers: stopping cancels the fetch,
 * which is asked again later, and leaves no record of a miss. */
static void hanging(const char *tmp) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof a;
  CHECK(bind(s, (struct sockaddr *)&a, sizeof a) == 0 && listen(s, 8) == 0 &&
        getsockname(s, (struct sockaddr *)&a, &alen) == 0);
  char url[64], text[512], miss[4096];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", ntohs(a.sin_port));
  setenv("DEBUGINFOD_URLS", url, 1);
  setenv("DEBUGINFOD_CACHE_PATH", tmp, 1);
  CHECK(cprof__debuginfod_enabled());
  int fds = count("/proc/self/fd");
  cprof__debuginfod_want(id);
  cprof__debuginfod_kick();
  usleep(500000);
  CHECK_EQ_INT(count("/proc/self/fd"), fds); /* the client's socket is not here */
  long t0 = now_ms();
  cprof__debuginfod_stop();
  long took = now_ms() - t0;
  fprintf(stderr, "stopping with a fetch in flight took %ld ms\n", took);
  CHECK(took < 5000); /* libdebuginfod looks at our callback every second */
  CHECK(fetcher_gone());
  advice(text, sizeof text);
  CHECK(strstr(text, "asking debuginfod (") == text);
  snprintf(miss, sizeof miss, "%s/%s/debuginfo", tmp, id);
  CHECK(access(miss, F_OK) != 0);
  close(s);
}

/* Runs fn in a child, with DEBUGINFOD_URLS set before it is first read. */
static void in_child(void (*fn)(const char *), const char *urls) {
  char tmp[] = "/tmp/cprof-debuginfod-XXXXXX";
  if (!mkdtemp(tmp)) {
    CHECK(0);
    return;
  }
  pid_t pid = fork();
  if (pid == 0) {
    check_failures = 0;
    if (urls)
      setenv("DEBUGINFOD_URLS", urls, 1);
    fn(tmp);
    _exit(check_failures ? 1 : 0);
  }
  int status = -1;
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  char rm[256];
  snprintf(rm, sizeof rm, "rm -rf '%s'", tmp);
  CHECK(system(rm) == 0);
}

int main(void) {
  in_child(cache_places, "http://127.0.0.1:1");
  in_child(refused, "http://127.0.0.1:1");
  in_child(hanging, NULL);
  test_off();
  return check_result("symbol/test_debuginfod");
}

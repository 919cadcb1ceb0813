/* A program with a custom profile, for custom_profile.sh: "connections",
 * to which accept_tcp adds 7 keys and closes 2, and accept_unix adds 3, so
 * the profile holds 5 from the one and 3 from the other. Then it prints
 * "ready" and waits.
 *
 * Built a second time with DELTA (linking the static library): it writes,
 * to the file named by its argument, the profile's change while accept_unix
 * opened 4 more and one of the TCP connections closed, as
 * /debug/pprof/connections?seconds=N would, with the wait between the two
 * snapshots doing that work instead of sleeping, so the delta is exact. */
#include <cprof.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#ifdef DELTA
#include <fcntl.h>

#include "registry/registry.h"
#endif

static cprof_profile_t *conns;
static char tcp[16], unix_[16];

__attribute__((noinline)) void accept_tcp(int i) {
  if (cprof_profile_add(conns, &tcp[i], 0) != 0)
    abort();
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void accept_unix(int i) {
  if (cprof_profile_add(conns, &unix_[i], 0) != 0)
    abort();
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void close_conn(const void *key) {
  if (cprof_profile_remove(conns, key) != 0)
    abort();
}

#ifdef DELTA
static int meanwhile(void *ctx, long ms) {
  (void)ctx, (void)ms;
  for (int i = 3; i < 7; i++)
    accept_unix(i);
  close_conn(&tcp[6]);
  return 0;
}
#endif

int main(int argc, char **argv) {
  conns = cprof_profile_new("connections", "Open connections, by where they were accepted");
  if (!conns) {
    perror("cprof_profile_new");
    return 1;
  }
  for (int i = 0; i < 7; i++)
    accept_tcp(i);
  for (int i = 0; i < 3; i++)
    accept_unix(i);
  close_conn(&tcp[0]);
  close_conn(&tcp[1]);
#ifdef DELTA
  if (argc != 2)
    return 2;
  cprof__collect_t c = {.debug = 0, .seconds = 1, .wait = meanwhile};
  cprof__buf_t out;
  cprof__buf_init(&out);
  int err = cprof__profile_collect(cprof__registry_lookup("connections"), &c, &out);
  int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (err || fd < 0 || write(fd, out.data, out.len) != (ssize_t)out.len) {
    fprintf(stderr, "delta: %d\n", err);
    return 1;
  }
  close(fd);
  return 0;
#else
  (void)argc, (void)argv;
  puts("ready");
  fflush(stdout);
  for (;;)
    pause();
#endif
}

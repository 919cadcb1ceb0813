/* /debug/pprof/profile when no thread can be given a CPU timer: the
 * program's own server calls cprof_handle_request on its thread, which a
 * seccomp filter forbids timer_create (SECCOMP_RET_ERRNO, EPERM). The
 * answer is a 500 whose one line says why, not an empty profile; stderr,
 * the program's here, gets one line saying so, once however often it is
 * asked. */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "seccomp_deny.h"
#include "cprof.h"

static const char WHY[] =
    "no thread could be given a CPU timer: timer_create: Operation not permitted";

static int deny_timer_create(void) {
  seccomp_denial_t d[] = {{SYS_timer_create, EPERM}};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && seccomp_deny(d, 1, 0) == 0 ? 0 : -1;
}

static void ask(void) {
  cprof_request_t req = {.method = "GET", .path = "/debug/pprof/profile", .query = "seconds=1"};
  cprof_response_t r;
  CHECK_EQ_INT(cprof_handle_request(&req, &r), 0);
  CHECK_EQ_INT(r.status, 500);
  char want[256];
  snprintf(want, sizeof want, "Could not enable CPU profiling: %s\n", WHY);
  CHECK(r.body && r.body_len == strlen(want) && memcmp(r.body, want, r.body_len) == 0);
  if (r.body && r.status != 200) /* a profile is gzip: not for the log */
    fprintf(stdout, "body: %.*s", (int)r.body_len, r.body);
  cprof_response_free(&r);
}

int main(void) {
#ifndef __x86_64__
  return check_skip("test_profile_refused", "the filter is written for x86-64");
#endif
  if (deny_timer_create() != 0)
    return check_skip("test_profile_refused", "no seccomp filter here");
  /* stderr into a file, to count its lines. */
  char path[] = "/tmp/cprof-refused-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  int saved = dup(2);
  dup2(fd, 2);
  ask();
  ask();
  dup2(saved, 2);
  char err[1024] = "";
  ssize_t n = pread(fd, err, sizeof err - 1, 0);
  err[n > 0 ? n : 0] = '\0';
  close(fd);
  unlink(path);
  fprintf(stderr, "stderr:\n%s", err);
  char want[256];
  snprintf(want, sizeof want, "cprof: the CPU profile is off: %s\n", WHY);
  CHECK_EQ_STR(err, want); /* one line, for two requests */
  return check_result("test_profile_refused");
}

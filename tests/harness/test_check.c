/* The test helpers themselves (tests/check.h): a test that ran no check
 * fails, a failed check fails, a skip exits 77 (ctest's skip), and only a
 * test whose checks ran and held passes. Each case runs in a child, whose
 * counters start at zero. */
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

enum { NONE, FAILING, PASSING, SKIPPED };

static int child_result(int what) {
  check_count = check_failures = 0;
  switch (what) {
  case FAILING:
    CHECK(1 + 1 == 3);
    break;
  case PASSING:
    CHECK(1 + 1 == 2);
    break;
  case SKIPPED:
    return check_skip("harness/child", "asked to");
  }
  return check_result("harness/child");
}

/* The exit code of a child that ran case `what`, or -1. */
static int exit_code(int what) {
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0)
    _exit(child_result(what));
  int status;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
    return -1;
  return WEXITSTATUS(status);
}

int main(void) {
  CHECK_EQ_INT(exit_code(NONE), 1);
  CHECK_EQ_INT(exit_code(FAILING), 1);
  CHECK_EQ_INT(exit_code(PASSING), 0);
  CHECK_EQ_INT(exit_code(SKIPPED), 77);
  return check_result("harness/test_check");
}

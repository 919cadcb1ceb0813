/* Minimal assertions for cprof's C tests. Each test file is one process
 * (ctest runs it alone), so a failed CHECK prints where and carries on, and
 * main returns check_result(). */
#ifndef CPROF_TESTS_CHECK_H
#define CPROF_TESTS_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_failures;
static int check_count;

#define CHECK(cond)                                                                 \
  do {                                                                              \
    check_count++;                                                                  \
    if (!(cond)) {                                                                  \
      check_failures++;                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);     \
    }                                                                               \
  } while (0)

#define CHECK_EQ_INT(a, b)                                                          \
  do {                                                                              \
    long long a_ = (long long)(a), b_ = (long long)(b);                             \
    check_count++;                                                                  \
    if (a_ != b_) {                                                                 \
      check_failures++;                                                             \
      fprintf(stderr, "%s:%d: %s == %lld, want %lld\n", __FILE__, __LINE__, #a, a_, \
              b_);                                                                  \
    }                                                                               \
  } while (0)

#define CHECK_EQ_STR(a, b)                                                          \
  do {                                                                              \
    const char *a_ = (a), *b_ = (b);                                                \
    check_count++;                                                                  \
    if (!a_ || !b_ || strcmp(a_, b_) != 0) {                                        \
      check_failures++;                                                             \
      fprintf(stderr, "%s:%d: %s == \"%s\", want \"%s\"\n", __FILE__, __LINE__, #a, \
              a_ ? a_ : "(null)", b_ ? b_ : "(null)");                              \
    }                                                                               \
  } while (0)

/* The exit code of a test: 1 when a check failed, and also when none ran,
 * since a test that checked nothing (a loop that never iterated, a main
 * that returned early) has shown nothing. A test that cannot run here says
 * so with check_skip instead. */
static inline int check_result(const char *name) {
  fprintf(stderr, "%s: %d checks, %d failed\n", name, check_count, check_failures);
  if (check_count == 0) {
    fprintf(stderr, "%s: FAIL: no check ran\n", name);
    return 1;
  }
  return check_failures ? 1 : 0;
}

/* The exit code of a test that cannot run in this build (a sanitizer
 * brings its own allocator, say): ctest shows it as skipped, not passed
 * (SKIP_RETURN_CODE in tests/CMakeLists.txt). */
#define CHECK_SKIP_CODE 77
static inline int check_skip(const char *name, const char *why) {
  fprintf(stderr, "%s: skipped: %s\n", name, why);
  return CHECK_SKIP_CODE;
}

#endif

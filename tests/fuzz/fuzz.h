/* What the libFuzzer targets share: the input cut into the C strings the
 * parsers take. Each tests/fuzz/fuzz_NAME.c defines LLVMFuzzerTestOneInput
 * and is one target; see tests/fuzz/CMakeLists.txt and scripts/fuzz.sh. */
#ifndef CPROF_TESTS_FUZZ_H
#define CPROF_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The input not yet taken. */
typedef struct fuzz_in {
  const uint8_t *p;
  size_t n;
} fuzz_in_t;

/* A NUL-terminated copy of p[0..n): a parser given a C string must not read
 * past its end, and AddressSanitizer sees it if one does. Free it. */
static inline char *fuzz_str(const uint8_t *p, size_t n) {
  char *s = malloc(n + 1);
  if (!s)
    abort();
  memcpy(s, p, n);
  s[n] = '\0';
  return s;
}

/* The next field, up to a '\n' (not included), or the rest; NULL when
 * nothing is left, so a missing field can stand for an absent one. */
static inline char *fuzz_field(fuzz_in_t *in) {
  if (in->n == 0)
    return NULL;
  const uint8_t *nl = memchr(in->p, '\n', in->n);
  size_t len = nl ? (size_t)(nl - in->p) : in->n;
  char *s = fuzz_str(in->p, len);
  in->p += len + (nl != NULL);
  in->n -= len + (nl != NULL);
  return s;
}

/* One byte, 0 when nothing is left. */
static inline uint8_t fuzz_byte(fuzz_in_t *in) {
  if (in->n == 0)
    return 0;
  in->n--;
  return *in->p++;
}

#endif

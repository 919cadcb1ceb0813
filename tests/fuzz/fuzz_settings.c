/* Every CPROF_* setting's parser (core/config.c), as the environment hands
 * it over: a C string (CPROF_PUSH_URL, _NAME and _INTERVAL included). The first byte chooses the
 * parser; the rest is the value. CPROF_OUTPUT is left out: its parser makes the directory it names,
 * and the fuzzer must not make directories all over the disk. A value that is refused must come
 * with its message; one that is accepted must be in the setting's range. */
#include "fuzz.h"

#include <errno.h>

#include "core/config.h"
#include "sample/stack_table.h"

static void refused(int rc, const char *err) {
  if (rc != 0 && (rc != -EINVAL || err[0] == '\0'))
    abort();
}

static void parse(uint8_t which, const char *v) {
  char err[160] = "", out[256];
  int rc = 0;
  switch (which % 16) {
  case 0: {
    cprof__addr_t a;
    rc = cprof__parse_addr(v, &a, err, sizeof err);
    if (rc == 0 &&
        (a.port < 0 || a.port > 65535 || strnlen(a.host, sizeof a.host) >= sizeof a.host))
      abort();
    break;
  }
  case 1:
    rc = cprof__parse_prefix(v, out, sizeof out, err, sizeof err);
    if (rc == 0 && out[0] && (out[0] != '/' || out[strlen(out) - 1] == '/'))
      abort(); /* "" or "/path", no trailing slash */
    break;
  case 2: {
    cprof__unwinder_t u;
    rc = cprof__parse_unwind(v, &u, err, sizeof err);
    break;
  }
  case 3:
    rc = cprof__parse_auth(v, out, sizeof out, err, sizeof err);
    if (rc == 0 && out[0] && !strchr(out, ':'))
      abort();
    break;
  case 4:
    rc = cprof__parse_token(v, out, sizeof out, err, sizeof err);
    break;
  case 5: {
    int hz = 0;
    rc = cprof__parse_cpu_hz(v, &hz, err, sizeof err);
    if (rc == 0 && (hz < 1 || hz > CPROF_MAX_CPU_HZ))
      abort();
    break;
  }
  case 6: {
    long r = 0;
    rc = cprof__parse_heap_rate(v, &r, err, sizeof err);
    if (rc == 0 && (r < 0 || r > CPROF_MAX_HEAP_RATE))
      abort();
    break;
  }
  case 7:
  case 8: { /* CPROF_BLOCK_RATE, CPROF_MUTEX_FRACTION (and ?rate=, ?fraction=) */
    long max = which % 16 == 7 ? CPROF_MAX_BLOCK_RATE : CPROF_MAX_MUTEX_FRACTION, n = 0;
    rc = cprof__parse_setting(v, max, "units", &n, err, sizeof err);
    if (rc == 0 && (n < 0 || n > max))
      abort();
    break;
  }
  case 9: {
    size_t m = 0;
    rc = cprof__parse_memory(v, &m, err, sizeof err);
    if (rc == 0 && m < CPROF_MIN_MAX_MEMORY)
      abort();
    break;
  }
  case 10: {
    int d = 0;
    rc = cprof__parse_max_depth(v, &d, err, sizeof err);
    if (rc == 0 && (d < CPROF_MIN_DEPTH || d > CPROF_DEPTH_LIMIT))
      abort();
    break;
  }
  case 11: { /* the server's limits: CPROF_MAX_CONNECTIONS and the rest */
    long n = 0;
    rc = cprof__parse_limit(v, 1, CPROF_LIMIT_MAX_CONNECTIONS, "connections", &n, err, sizeof err);
    if (rc == 0 && (n < 1 || n > CPROF_LIMIT_MAX_CONNECTIONS))
      abort();
    break;
  }
  case 12: /* CPROF_TLS_CERT, CPROF_TLS_KEY */
    rc = cprof__parse_tls_path(v, out, sizeof out, err, sizeof err);
    if (rc == 0 && strnlen(out, sizeof out) >= sizeof out)
      abort();
    break;
  case 13: /* CPROF_PUSH_URL: http(s)://, no query, no trailing slash */
    rc = cprof__parse_push_url(v, out, sizeof out, err, sizeof err);
    if (rc == 0 && ((strncmp(out, "http://", 7) && strncmp(out, "https://", 8)) ||
                    strpbrk(out, "?# ") || out[strlen(out) - 1] == '/'))
      abort();
    break;
  case 14: /* CPROF_PUSH_NAME: never a space or control character */
    rc = cprof__parse_push_name(v, out, sizeof out, err, sizeof err);
    for (const char *c = out; rc == 0 && *c; c++)
      if ((unsigned char)*c <= ' ' || *c == 0x7f)
        abort();
    break;
  case 15: { /* CPROF_PUSH_INTERVAL and the metrics' durations */
    long ms = 0;
    rc = cprof__parse_duration_ms(v, CPROF_MIN_PUSH_INTERVAL_MS, CPROF_MAX_PUSH_INTERVAL_MS, &ms,
                                  err, sizeof err);
    if (rc == 0 && (ms < CPROF_MIN_PUSH_INTERVAL_MS || ms > CPROF_MAX_PUSH_INTERVAL_MS))
      abort();
    break;
  }
  }
  refused(rc, err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_in_t in = {data, size};
  uint8_t which = fuzz_byte(&in);
  char *v = fuzz_str(in.p, in.n);
  parse(which, v);
  free(v);
  return 0;
}

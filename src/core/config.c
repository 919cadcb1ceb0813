/* The settings' parsers, one per kind of value (table-tested, and fuzzed
 * by tests/fuzz/fuzz_settings.c), and the configuration in force, under a
 * lock. cprof__config_load, which reads the settings with them, is
 * config_load.c's. */
#include "core/config.h"

#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(char *err, size_t errlen, const char *msg) {
  snprintf(err, errlen, "%s", msg);
  return -EINVAL;
}

int cprof__parse_addr(const char *s, cprof__addr_t *out, char *err, size_t errlen) {
  static const char form[] = "expected host:port, :port, [ipv6]:port, or 0 to turn the server off";
  memset(out, 0, sizeof *out);
  if (s[0] == '\0' || strcmp(s, "0") == 0)
    return 0;
  const char *colon;
  size_t hostlen;
  const char *host = s;
  if (s[0] == '[') { /* [::1]:6060 */
    const char *close = strchr(s, ']');
    if (!close || close[1] != ':')
      return fail(err, errlen, form);
    host = s + 1;
    hostlen = (size_t)(close - host);
    colon = close + 1;
  } else {
    colon = strrchr(s, ':');
    if (!colon || memchr(s, ':', (size_t)(colon - s))) /* bare IPv6 needs brackets */
      return fail(err, errlen, form);
    hostlen = (size_t)(colon - s);
  }
  if (hostlen >= sizeof out->host)
    return fail(err, errlen, "host name too long");
  const char *p = colon + 1;
  if (*p == '\0')
    return fail(err, errlen, form);
  long port = 0;
  for (; *p; p++) {
    if (*p < '0' || *p > '9' || (port = port * 10 + (*p - '0')) > 65535)
      return fail(err, errlen, "port must be a number from 0 to 65535");
  }
  for (size_t i = 0; i < hostlen; i++) {
    if (host[i] == ' ' || host[i] == '/' || host[i] == '[' || host[i] == ']')
      return fail(err, errlen, form);
  }
  memcpy(out->host, host, hostlen);
  out->host[hostlen] = '\0';
  out->port = (int)port;
  out->enabled = 1;
  return 0;
}

int cprof__parse_prefix(const char *s, char *out, size_t outlen, char *err, size_t errlen) {
  size_t n = strlen(s);
  while (n > 0 && s[n - 1] == '/') /* "/auth/" and "/auth" mean the same */
    n--;
  if (n == 0) {
    out[0] = '\0';
    return 0;
  }
  if (s[0] != '/')
    return fail(err, errlen, "expected a path starting with '/', such as /auth");
  if (n >= outlen)
    return fail(err, errlen, "path too long");
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c <= ' ' || c == '?' || c == '#' || c == '%' || c >= 0x7f)
      return fail(err, errlen, "expected a plain path: no spaces, '?', '#' or '%'");
  }
  memcpy(out, s, n);
  out[n] = '\0';
  return 0;
}

int cprof__parse_unwind(const char *s, cprof__unwinder_t *out, char *err, size_t errlen) {
  if (strcmp(s, "dwarf") == 0 || s[0] == '\0')
    *out = CPROF_UNWIND_DWARF;
  else if (strcmp(s, "fp") == 0)
    *out = CPROF_UNWIND_FP;
  else
    return fail(err, errlen, "expected dwarf or fp");
  return 0;
}

static int printable(const char *s) {
  for (; *s; s++)
    if ((unsigned char)*s <= ' ' || (unsigned char)*s == 0x7f)
      return 0;
  return 1;
}

int cprof__parse_auth(const char *s, char *out, size_t outlen, char *err, size_t errlen) {
  if (s[0] == '\0') {
    out[0] = '\0';
    return 0;
  }
  const char *colon = strchr(s, ':');
  if (!colon || colon == s || colon[1] == '\0' || !printable(s) || strlen(s) >= outlen)
    return fail(err, errlen, "expected user:password (no spaces)");
  snprintf(out, outlen, "%s", s);
  return 0;
}

int cprof__parse_token(const char *s, char *out, size_t outlen, char *err, size_t errlen) {
  if (!printable(s) || strlen(s) >= outlen)
    return fail(err, errlen, "expected a token of printable characters without spaces");
  snprintf(out, outlen, "%s", s);
  return 0;
}

int cprof__parse_tls_path(const char *s, char *out, size_t outlen, char *err, size_t errlen) {
  if (strlen(s) >= outlen)
    return fail(err, errlen, "path too long");
  snprintf(out, outlen, "%s", s);
  return 0;
}

int cprof__addr_is_exposed(const cprof__addr_t *a) {
  const char *h = a->host;
  if (!a->enabled)
    return 0;
  if (strcmp(h, "localhost") == 0 || strcmp(h, "::1") == 0 || strncmp(h, "127.", 4) == 0 ||
      strncmp(h, "::ffff:127.", 11) == 0)
    return 0;
  return 1;
}

int cprof__parse_push_url(const char *s, char *out, size_t outlen, char *err, size_t errlen) {
  static const char form[] =
      "expected http://host[:port][/path] or https://..., optionally with user:password@, "
      "without a query";
  const char *host = !strncmp(s, "http://", 7) ? s + 7 : !strncmp(s, "https://", 8) ? s + 8 : NULL;
  size_t n = strlen(s);
  while (n > 0 && s[n - 1] == '/')
    n--;
  if (!host || !printable(s) || strpbrk(s, "?#") || host[0] == '\0' || host[0] == '/' ||
      host[0] == '@' || s + n <= host)
    return fail(err, errlen, form);
  if (n >= outlen)
    return fail(err, errlen, "URL too long");
  memcpy(out, s, n);
  out[n] = '\0';
  return 0;
}

int cprof__parse_budget(const char *s, double *out, char *err, size_t errlen) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end != s && *end == '%')
    end++;
  if (end == s || *end || errno || !(v >= 0.1 && v <= 100) || (*s < '0' || *s > '9'))
    return fail(err, errlen, "expected a percentage of one core from 0.1 to 100, such as 2%");
  *out = v / 100;
  return 0;
}

static int name_char(char c, const char *more) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         (c && strchr(more, c));
}

int cprof__parse_push_name(const char *s, char *out, size_t outlen, char *err, size_t errlen) {
  static const char form[] = "expected APP or APP{key=value,...}, such as checkout{env=prod}: APP "
                             "of letters, digits and ._-/, keys of letters, digits and _";
  const char *p = s;
  while (name_char(*p, "._-/"))
    p++;
  if (p == s)
    return fail(err, errlen, form);
  if (*p == '{') {
    p++;
    while (*p != '}') {
      const char *k = p;
      while (name_char(*p, "_"))
        p++;
      if (p == k || (*k >= '0' && *k <= '9') || *p++ != '=')
        return fail(err, errlen, form);
      const char *v = p;
      while (*p && (unsigned char)*p > ' ' && (unsigned char)*p != 0x7f && !strchr("{},=", *p))
        p++;
      if (p == v || (*p == ',' && p[1] == '}'))
        return fail(err, errlen, form);
      if (*p == ',')
        p++;
      else if (*p != '}')
        return fail(err, errlen, form);
    }
    p++;
  }
  if (*p)
    return fail(err, errlen, form);
  if (strlen(s) >= outlen)
    return fail(err, errlen, "name too long");
  snprintf(out, outlen, "%s", s);
  return 0;
}

int cprof__parse_cpu_hz(const char *s, int *out, char *err, size_t errlen) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (!*s || *end || errno || v < 1 || v > CPROF_MAX_CPU_HZ)
    return fail(err, errlen, "expected a whole number of samples per second from 1 to 10000");
  *out = (int)v;
  return 0;
}

/* Digits only (no sign, no space), from min to max, into *out. 0 or -1. */
static int whole_number(const char *s, long min, long max, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (*s < '0' || *s > '9' || *end || errno || v < min || v > max)
    return -1;
  *out = v;
  return 0;
}

int cprof__parse_heap_rate(const char *s, long *out, char *err, size_t errlen) {
  if (whole_number(s, 0, CPROF_MAX_HEAP_RATE, out) != 0)
    return fail(err, errlen, "expected a whole number of bytes from 0 (off) to 1073741824");
  return 0;
}

int cprof__parse_setting(const char *s, long max, const char *what, long *out, char *err,
                         size_t errlen) {
  if (whole_number(s, 0, max, out) != 0) {
    snprintf(err, errlen, "expected a whole number of %s from 0 (off) to %ld", what, max);
    return -EINVAL;
  }
  return 0;
}

int cprof__parse_limit(const char *s, long min, long max, const char *what, long *out, char *err,
                       size_t errlen) {
  if (whole_number(s, min, max, out) != 0) {
    snprintf(err, errlen, "expected a whole number of %s from %ld to %ld", what, min, max);
    return -EINVAL;
  }
  return 0;
}

int cprof__parse_duration_ms(const char *s, long min_ms, long max_ms, long *out, char *err,
                             size_t errlen) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  long long unit = 0;
  if (*s >= '0' && *s <= '9' && !errno) {
    if (strcmp(end, "ms") == 0)
      unit = 1;
    else if (strcmp(end, "s") == 0 || *end == '\0')
      unit = 1000;
    else if (strcmp(end, "m") == 0)
      unit = 60000;
    else if (strcmp(end, "h") == 0)
      unit = 3600000;
  }
  if (!unit || v > max_ms / unit || v * unit < min_ms) {
    snprintf(err, errlen, "expected a duration from %ldms to %lds, such as 500ms, 1s or 10m",
             min_ms, max_ms / 1000);
    return -EINVAL;
  }
  *out = (long)(v * unit);
  return 0;
}

int cprof__parse_memory(const char *s, size_t *out, char *err, size_t errlen) {
  static const char form[] = "expected a size in bytes of at least 1M, such as 33554432, 32M or 1G";
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (*s < '0' || *s > '9' || errno)
    return fail(err, errlen, form);
  int shift = 0;
  switch (*end) {
  case 'k': case 'K': shift = 10, end++; break;
  case 'm': case 'M': shift = 20, end++; break;
  case 'g': case 'G': shift = 30, end++; break;
  }
  if (*end || v > (SIZE_MAX >> shift) || (v << shift) < CPROF_MIN_MAX_MEMORY)
    return fail(err, errlen, form);
  *out = (size_t)(v << shift);
  return 0;
}

int cprof__parse_max_depth(const char *s, int *out, char *err, size_t errlen) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (*s < '0' || *s > '9' || *end || errno || v < CPROF_MIN_DEPTH || v > CPROF_DEPTH_LIMIT) {
    snprintf(err, errlen, "expected a whole number of frames from %d to %d", CPROF_MIN_DEPTH,
             CPROF_DEPTH_LIMIT);
    return -EINVAL;
  }
  *out = (int)v;
  return 0;
}

int cprof__parse_output(const char *s, char *out, size_t outlen, char *err, size_t errlen) {
  struct stat st;
  if (!*s || strlen(s) >= outlen - 16) /* room for "/cpu.pb.gz.tmp" */
    return fail(err, errlen, "expected a directory path");
  if (stat(s, &st) != 0 && (errno != ENOENT || mkdir(s, 0755) != 0 || stat(s, &st) != 0)) {
    snprintf(err, errlen, "cannot create the directory: %s", strerror(errno));
    return -EINVAL;
  }
  if (!S_ISDIR(st.st_mode))
    return fail(err, errlen, "not a directory");
  if (access(s, W_OK) != 0)
    return fail(err, errlen, "the directory is not writable");
  snprintf(out, outlen, "%s", s);
  return 0;
}

static pthread_mutex_t cfg_lock = PTHREAD_MUTEX_INITIALIZER;
static cprof__config_t current = {.cpu_hz = CPROF_DEFAULT_CPU_HZ,
                                  .heap_rate = CPROF_DEFAULT_HEAP_RATE,
                                  .max_memory = CPROF_DEFAULT_MAX_MEMORY,
                                  .max_depth = CPROF_DEFAULT_DEPTH,
                                  .max_connections = CPROF_DEFAULT_MAX_CONNECTIONS,
                                  .max_connections_per_ip = CPROF_DEFAULT_MAX_CONNECTIONS_PER_IP,
                                  .read_timeout = CPROF_DEFAULT_READ_TIMEOUT,
                                  .idle_timeout = CPROF_DEFAULT_IDLE_TIMEOUT,
                                  .max_profiles = CPROF_DEFAULT_MAX_PROFILES,
                                  .metrics = 1,
                                  .metrics_interval_ms = CPROF_DEFAULT_METRICS_INTERVAL_MS,
                                  .metrics_window_s = CPROF_DEFAULT_METRICS_WINDOW_S,
                                  .push_interval_ms = CPROF_DEFAULT_PUSH_INTERVAL_MS,
                                  .wall_budget =
                                      CPROF_DEFAULT_WALL_BUDGET}; /* no prefix, no auth, dwarf */

void cprof__config_get(cprof__config_t *out) {
  pthread_mutex_lock(&cfg_lock);
  *out = current;
  pthread_mutex_unlock(&cfg_lock);
}

cprof__unwinder_t cprof__config_unwind(void) {
  pthread_mutex_lock(&cfg_lock);
  cprof__unwinder_t how = current.unwind;
  pthread_mutex_unlock(&cfg_lock);
  return how;
}

void cprof__config_set(const cprof__config_t *cfg) {
  pthread_mutex_lock(&cfg_lock);
  current = *cfg;
  pthread_mutex_unlock(&cfg_lock);
}

void cprof__config_edit(void (*edit)(cprof__config_t *cfg, void *arg), void *arg) {
  pthread_mutex_lock(&cfg_lock);
  edit(&current, arg);
  pthread_mutex_unlock(&cfg_lock);
}

/* Held across fork by start.c's handlers: the child's copy is consistent
 * and its one thread holds the lock, which it releases. */
void cprof__config_atfork_prepare(void) { pthread_mutex_lock(&cfg_lock); }
void cprof__config_atfork_parent(void) { pthread_mutex_unlock(&cfg_lock); }
void cprof__config_atfork_child(void) { pthread_mutex_unlock(&cfg_lock); }

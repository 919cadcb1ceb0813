#include "http/auth.h"

#include <string.h>
#include <strings.h>

#include "core/clock.h"
#include "core/log.h"

/* Whether the client's credential equals the configured secret, in a time
 * that depends on the secret's length only. The loop always walks the
 * whole secret, reading the given string while it lasts and its final NUL
 * afterwards, and folds a length difference into the same bit: neither how
 * much of a guess was right nor how long the secret is shows in the time
 * taken. (strlen of the given string tells only what its sender knows.) */
static int same(const char *given, const char *secret) {
  size_t lg = strlen(given), ls = strlen(secret);
  unsigned char diff = lg != ls;
  for (size_t i = 0; i < ls; i++) {
    size_t j = i < lg ? i : lg;
    diff |= (unsigned char)(given[j] ^ secret[i]);
  }
  /* Through a volatile so that the compiler cannot end the loop early on
   * a non-zero diff. */
  volatile unsigned char v = diff;
  return v == 0;
}

static int b64val(char c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '+')
    return 62;
  if (c == '/')
    return 63;
  return -1;
}

int cprof__base64_decode(const char *in, char *out, size_t outlen) {
  size_t o = 0;
  unsigned acc = 0;
  int bits = 0;
  for (; *in && *in != '='; in++) {
    int v = b64val(*in);
    if (v < 0)
      return -1;
    acc = (acc << 6) | (unsigned)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      if (o + 1 >= outlen)
        return -1;
      out[o++] = (char)((acc >> bits) & 0xff);
    }
  }
  for (; *in == '='; in++)
    ;
  if (*in)
    return -1;
  out[o] = '\0';
  return 0;
}

int cprof__auth_check(const cprof__config_t *cfg, const char *authorization) {
  if (!cfg->auth[0] && !cfg->token[0])
    return CPROF_AUTH_OK;
  if (!authorization || !authorization[0])
    return CPROF_AUTH_NONE;
  if (cfg->auth[0] && strncasecmp(authorization, "Basic ", 6) == 0) {
    char decoded[256];
    const char *p = authorization + 6;
    while (*p == ' ')
      p++;
    int ok = cprof__base64_decode(p, decoded, sizeof decoded) == 0 && same(decoded, cfg->auth);
    explicit_bzero(decoded, sizeof decoded); /* it may be a near miss of the password */
    if (ok)
      return CPROF_AUTH_OK;
  }
  if (cfg->token[0] && strncasecmp(authorization, "Bearer ", 7) == 0) {
    const char *p = authorization + 7;
    while (*p == ' ')
      p++;
    if (same(p, cfg->token))
      return CPROF_AUTH_OK;
  }
  return CPROF_AUTH_WRONG;
}

/* One line a second at most, however fast wrong credentials come (a
 * password guesser would otherwise fill the program's stderr): the first
 * refusal after a quiet second is said at once, with how many were refused
 * without a line since the previous one. Atomics rather than a lock, so
 * that nothing here needs care across fork. */
static long long last_line_ms = -1000000; /* CLOCK_MONOTONIC */
static unsigned long unsaid;

/* The path as sent, for the log line: printable ASCII only (MHD has
 * decoded %0a and friends, and a line must stay one line), cut short. */
static void printable_path(const char *path, char *out, size_t outlen) {
  size_t n = 0;
  for (; path && *path && n + 1 < outlen; path++)
    out[n++] = (*path > ' ' && *path < 0x7f) ? *path : '?';
  out[n] = '\0';
}

void cprof__auth_refused(const char *path) {
  long long ms = cprof__now_ms(CLOCK_MONOTONIC);
  long long last = __atomic_load_n(&last_line_ms, __ATOMIC_RELAXED);
  if (ms - last < 1000 || !__atomic_compare_exchange_n(&last_line_ms, &last, ms, 0,
                                                       __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    __atomic_fetch_add(&unsaid, 1, __ATOMIC_RELAXED);
    return;
  }
  unsigned long before = __atomic_exchange_n(&unsaid, 0, __ATOMIC_RELAXED);
  char p[101];
  printable_path(path, p, sizeof p);
  if (before)
    cprof__log("401 for %s: wrong credentials; %lu more refused since the previous line "
               "(one line a second at most)",
               p, before);
  else
    cprof__log("401 for %s: wrong credentials", p);
}

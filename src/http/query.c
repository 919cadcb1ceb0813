#include "http/query.h"

#include "core/hex.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Decodes s[0..n) into out; -1 if it does not fit or a %XX is malformed. */
static int decode(const char *s, size_t n, char *out, size_t outlen) {
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c == '+') {
      c = ' ';
    } else if (c == '%') {
      if (i + 2 >= n) /* a '%' needs two hex digits after it */
        return -1;
      int h = cprof__hexval(s[i + 1]), l = cprof__hexval(s[i + 2]);
      if (h < 0 || l < 0)
        return -1;
      c = (char)(h * 16 + l);
      i += 2;
    }
    if (o + 1 >= outlen)
      return -1;
    out[o++] = c;
  }
  out[o] = '\0';
  return 0;
}

int cprof__query_get(const char *query, const char *key, char *out, size_t outlen) {
  if (!query || outlen == 0)
    return 0;
  size_t klen = strlen(key);
  const char *p = query;
  while (*p) {
    size_t n = strcspn(p, "&;");
    const char *eq = memchr(p, '=', n);
    size_t namelen = eq ? (size_t)(eq - p) : n;
    char name[64];
    if (decode(p, namelen, name, sizeof name) == 0 && strlen(name) == klen &&
        memcmp(name, key, klen) == 0) {
      if (!eq) {
        out[0] = '\0';
        return 1;
      }
      return decode(eq + 1, n - namelen - 1, out, outlen) == 0 ? 1 : -1;
    }
    p += n;
    if (*p)
      p++;
  }
  return 0;
}

int cprof__query_int(const char *s, long min, long max, long *out) {
  if (!*s || (*s != '-' && (*s < '0' || *s > '9')))
    return -1;
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end || v < min || v > max)
    return -1;
  *out = v;
  return 0;
}

#include "http/auth.h"

#include <string.h>
#include <strings.h>

/* Compares without an early exit, so the time taken does not tell an
 * attacker how much of a guess was right. */
static int same(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  unsigned char diff = la != lb;
  for (size_t i = 0; i < la && i < lb; i++)
    diff |= (unsigned char)(a[i] ^ b[i]);
  return diff == 0;
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

int cprof__auth_ok(const cprof__config_t *cfg, const char *authorization) {
  if (!cfg->auth[0] && !cfg->token[0])
    return 1;
  if (!authorization)
    return 0;
  if (cfg->auth[0] && strncasecmp(authorization, "Basic ", 6) == 0) {
    char decoded[256];
    const char *p = authorization + 6;
    while (*p == ' ')
      p++;
    if (cprof__base64_decode(p, decoded, sizeof decoded) == 0 && same(decoded, cfg->auth))
      return 1;
  }
  if (cfg->token[0] && strncasecmp(authorization, "Bearer ", 7) == 0) {
    const char *p = authorization + 7;
    while (*p == ' ')
      p++;
    if (same(p, cfg->token))
      return 1;
  }
  return 0;
}

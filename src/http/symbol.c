/* /debug/pprof/symbol, as Go's: GET answers "num_symbols: 1" (telling
 * pprof that symbol lookups are supported); a POST body, or the query of a
 * GET, of addresses joined by '+' gets one "0xADDR name" line for each
 * address we can name. Words that are not numbers are skipped: go tool
 * pprof fails the whole profile load on a non-200 answer here, so this
 * endpoint always answers 200. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/hex.h"
#include "http/response.h"
#include "http/routes.h"
#include "http/symbol.h"
#include "registry/symbols.h"

int cprof__symbol_parse_addr(const char *s, size_t n, uint64_t *out) {
  char w[40];
  if (n == 0 || n >= sizeof w || memchr(s, '\0', n)) /* a NUL would end the word early */
    return -1;
  memcpy(w, s, n);
  w[n] = '\0';
  int base = 10;
  const char *p = w;
  if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
    base = 16, p += 2;
  else if (p[0] == '0' && (p[1] == 'b' || p[1] == 'B'))
    base = 2, p += 2;
  else if (p[0] == '0' && (p[1] == 'o' || p[1] == 'O'))
    base = 8, p += 2;
  else if (p[0] == '0' && p[1])
    base = 8, p += 1;
  /* Digits of the base and nothing else: strtoull would also take leading
   * white space, a sign and a second "0x", and saturate past 64 bits (the
   * errno check); Go's ParseUint refuses all four. */
  if (!*p)
    return -1;
  for (const char *d = p; *d; d++) { /* every base here is at most 16 */
    int v = cprof__hexval(*d);
    if (v < 0 || v >= base)
      return -1;
  }
  char *end;
  errno = 0;
  unsigned long long v = strtoull(p, &end, base);
  if (*end || errno)
    return -1;
  *out = v;
  return 0;
}

void cprof__serve_symbol(const cprof_request_t *req, const cprof__config_t *cfg,
                         cprof_response_t *resp) {
  cprof__buf_t b;
  cprof__buf_init(&b);
  cprof__buf_puts(&b, "num_symbols: 1\n");

  const char *in;
  size_t len;
  if (req->method && strcmp(req->method, "POST") == 0) {
    in = req->body ? req->body : "";
    len = req->body ? req->body_len : 0;
  } else {
    in = req->query ? req->query : "";
    len = strlen(in);
  }
  if (len > 0) {
    cprof__symbols_t *s = cprof__symbols_begin();
    size_t i = 0;
    while (i < len) {
      const char *word = in + i;
      const char *plus = memchr(word, '+', len - i);
      size_t n = plus ? (size_t)(plus - word) : len - i;
      uint64_t pc;
      if (cprof__symbol_parse_addr(word, n, &pc) == 0 && pc != 0) {
        /* A marker a debug=1 profile's "@" line holds (unwind/pc.h) is
         * named as the profiles name it. */
        char text[128];
        const char *name = cprof__symbols_name(s, (uintptr_t)pc, text, sizeof text);
        if (name)
          cprof__buf_printf(&b, "%#llx %s\n", (unsigned long long)pc, name);
      }
      i += n + 1;
    }
    cprof__symbols_end(s);
  }
  cprof__resp_body(resp, CPROF_TEXT, &b);
}

/* /debug/pprof/symbol's input: "0xADDR+0xADDR..." as a POST body and as a
 * GET query (http/symbol.c). Each word's parse is checked against a
 * strict reading of Go's strconv.ParseUint(s, 0, 64), written here
 * independently, and the whole input is then served both ways. */
#include "fuzz.h"

#include "cprof.h"
#include "http/response.h"
#include "http/routes.h"
#include "http/symbol.h"

static int digit(char c, int base) {
  int v = c >= '0' && c <= '9' ? c - '0'
          : c >= 'a' && c <= 'z' ? c - 'a' + 10
          : c >= 'A' && c <= 'Z' ? c - 'A' + 10
                                 : 99;
  return v < base ? v : -1;
}

/* Go's ParseUint(s, 0, 64) without underscores (which cprof refuses). */
static int strict(const char *s, size_t n, uint64_t *out) {
  int base = 10;
  size_t i = 0;
  if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
    base = 16, i = 2;
  else if (n >= 2 && s[0] == '0' && (s[1] == 'b' || s[1] == 'B'))
    base = 2, i = 2;
  else if (n >= 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'O'))
    base = 8, i = 2;
  else if (n >= 2 && s[0] == '0')
    base = 8, i = 1;
  if (i == n)
    return -1;
  uint64_t v = 0;
  for (; i < n; i++) {
    int d = digit(s[i], base);
    if (d < 0 || v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
      return -1;
    v = v * (uint64_t)base + (uint64_t)d;
  }
  *out = v;
  return 0;
}

static void words(const char *in, size_t len) {
  size_t i = 0;
  while (i < len) {
    const char *w = in + i;
    const char *plus = memchr(w, '+', len - i);
    size_t n = plus ? (size_t)(plus - w) : len - i;
    uint64_t got = 0, want = 0;
    int rc = cprof__symbol_parse_addr(w, n, &got);
    /* Longer words are refused whatever they hold. */
    if (n < 40 && (rc == 0) != (strict(w, n, &want) == 0))
      abort();
    if (rc == 0 && n < 40 && got != want)
      abort();
    i += n + 1;
  }
}

static void serve(const char *method, const char *query, const char *body, size_t len) {
  cprof_request_t req = {.method = method, .path = "/debug/pprof/symbol", .query = query,
                         .body = body, .body_len = len};
  cprof__config_t cfg;
  cprof__config_get(&cfg);
  cprof_response_t resp;
  if (cprof__resp_init(&resp) != 0)
    abort();
  cprof__serve_symbol(&req, &cfg, &resp);
  if (resp.status != 200) /* go tool pprof fails a whole load on anything else */
    abort();
  cprof_response_free(&resp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* The body exactly as sent (no NUL), the query as a C string. */
  char *body = malloc(size ? size : 1);
  if (!body)
    abort();
  memcpy(body, data, size);
  words(body, size);
  serve("POST", NULL, body, size);
  free(body);
  char *query = fuzz_str(data, size);
  serve("GET", query, NULL, 0);
  free(query);
  return 0;
}

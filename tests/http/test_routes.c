/* The transport-free router, called in-process as a program with its own
 * HTTP server would call it; plus the query and credential parsers. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/config.h"
#include "cprof.h"
#include "http/auth.h"
#include "http/query.h"
#include "request.h"

static const char *header(const cprof_response_t *r, const char *name) {
  for (int i = 0; i < r->nheaders; i++)
    if (strcasecmp(r->headers[i].name, name) == 0)
      return r->headers[i].value;
  return NULL;
}

static void test_query(void) {
  char v[64];
  CHECK_EQ_INT(cprof__query_get("debug=1&seconds=30", "seconds", v, sizeof v), 1);
  CHECK_EQ_STR(v, "30");
  CHECK_EQ_INT(cprof__query_get("debug=1&seconds=30", "gc", v, sizeof v), 0);
  CHECK_EQ_INT(cprof__query_get("a=%41%2b+b", "a", v, sizeof v), 1);
  CHECK_EQ_STR(v, "A+ b");
  CHECK_EQ_INT(cprof__query_get("debug", "debug", v, sizeof v), 1);
  CHECK_EQ_STR(v, "");
  CHECK_EQ_INT(cprof__query_get("debug=1&debug=2", "debug", v, sizeof v), 1);
  CHECK_EQ_STR(v, "1");
  CHECK_EQ_INT(cprof__query_get("debug=%zz", "debug", v, sizeof v), -1);
  CHECK_EQ_INT(cprof__query_get("debug=%4", "debug", v, sizeof v), -1);
  CHECK_EQ_INT(cprof__query_get(NULL, "debug", v, sizeof v), 0);
  char tiny[4];
  CHECK_EQ_INT(cprof__query_get("k=123456", "k", tiny, sizeof tiny), -1);
  long n;
  CHECK_EQ_INT(cprof__query_int("30", 1, 100, &n), 0);
  CHECK_EQ_INT(n, 30);
  CHECK_EQ_INT(cprof__query_int("0", 1, 100, &n), -1);
  CHECK_EQ_INT(cprof__query_int("101", 1, 100, &n), -1);
  CHECK_EQ_INT(cprof__query_int("3x", 1, 100, &n), -1);
  CHECK_EQ_INT(cprof__query_int("", 1, 100, &n), -1);
  CHECK_EQ_INT(cprof__query_int(" 3", 1, 100, &n), -1);
}

static void test_base64_and_auth(void) {
  char out[64];
  CHECK_EQ_INT(cprof__base64_decode("b3BzOnMzY3JldA==", out, sizeof out), 0);
  CHECK_EQ_STR(out, "ops:s3cret");
  CHECK_EQ_INT(cprof__base64_decode("b3Bz", out, sizeof out), 0);
  CHECK_EQ_STR(out, "ops");
  CHECK_EQ_INT(cprof__base64_decode("b3B*", out, sizeof out), -1);
  CHECK_EQ_INT(cprof__base64_decode("b3Bz=x", out, sizeof out), -1);
  cprof__config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  CHECK(cprof__auth_check(&cfg, NULL) == CPROF_AUTH_OK); /* nothing configured: open */
  strcpy(cfg.auth, "ops:s3cret");
  CHECK(cprof__auth_check(&cfg, NULL) != CPROF_AUTH_OK);
  CHECK(cprof__auth_check(&cfg, "Basic b3BzOnMzY3JldA==") == CPROF_AUTH_OK);
  CHECK(cprof__auth_check(&cfg, "Basic b3BzOndyb25n") != CPROF_AUTH_OK); /* ops:wrong */
  CHECK(cprof__auth_check(&cfg, "Bearer s3cret") != CPROF_AUTH_OK);
  strcpy(cfg.token, "tok");
  CHECK(cprof__auth_check(&cfg, "Bearer tok") == CPROF_AUTH_OK);
  CHECK(cprof__auth_check(&cfg, "Bearer to") != CPROF_AUTH_OK);
  CHECK(cprof__auth_check(&cfg, "Bearer tokk") != CPROF_AUTH_OK);
  /* Lengths on either side of the secret's, and prefixes of it: the
   * compare walks the secret's length whatever came. */
  CHECK(cprof__auth_check(&cfg, "Bearer ") != CPROF_AUTH_OK);
  CHECK(cprof__auth_check(&cfg, "Bearer t") != CPROF_AUTH_OK);
  CHECK(cprof__auth_check(&cfg, "Bearer tok tok") != CPROF_AUTH_OK);
  CHECK(cprof__auth_check(&cfg, "Bearer tok\x01") != CPROF_AUTH_OK);
  CHECK(cprof__auth_check(&cfg, "Basic b3BzOnMzY3Jl") != CPROF_AUTH_OK); /* ops:s3cre */
  CHECK(cprof__auth_check(&cfg, "Basic b3BzOnMzY3JldFg=") != CPROF_AUTH_OK); /* ops:s3cretX */
  CHECK(cprof__auth_check(&cfg, "Basic ") != CPROF_AUTH_OK);
  /* both set: either works */
  CHECK(cprof__auth_check(&cfg, "Basic b3BzOnMzY3JldA==") == CPROF_AUTH_OK);
  /* None and wrong are told apart: only a wrong one is logged. */
  CHECK_EQ_INT(cprof__auth_check(&cfg, NULL), CPROF_AUTH_NONE);
  CHECK_EQ_INT(cprof__auth_check(&cfg, ""), CPROF_AUTH_NONE);
  CHECK_EQ_INT(cprof__auth_check(&cfg, "Bearer nope"), CPROF_AUTH_WRONG);
  CHECK_EQ_INT(cprof__auth_check(&cfg, "Digest x"), CPROF_AUTH_WRONG);
  /* A secret longer than any guess, and a guess longer than the secret. */
  memset(cfg.token, 'a', 200);
  cfg.token[200] = '\0';
  char guess[300] = "Bearer ";
  memset(guess + 7, 'a', 200);
  guess[207] = '\0';
  CHECK(cprof__auth_check(&cfg, guess) == CPROF_AUTH_OK);
  guess[206] = '\0';
  CHECK(cprof__auth_check(&cfg, guess) != CPROF_AUTH_OK);
  memset(guess + 7, 'a', 250);
  guess[257] = '\0';
  CHECK(cprof__auth_check(&cfg, guess) != CPROF_AUTH_OK);
}

/* The challenges a 401 carries, one WWW-Authenticate header per scheme. */
static int count_header(const cprof_response_t *r, const char *name, const char *value) {
  int n = 0;
  for (int i = 0; i < r->nheaders; i++)
    n += strcasecmp(r->headers[i].name, name) == 0 && strcmp(r->headers[i].value, value) == 0;
  return n;
}

static void challenges(const char *auth, const char *token, int basic, int bearer) {
  cprof_options_t o = {.addr = "0", .auth = auth, .token = token};
  CHECK_EQ_INT(cprof_start(&o), 0);
  /* Every path is behind the credentials: the index, a profile, the
   * redirect, an unknown profile and a path nothing serves. */
  const char *paths[] = {"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof", "/debug/pprof/nope",
                         "/elsewhere"};
  for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
    cprof_response_t r = get(paths[i], NULL);
    CHECK_EQ_INT(r.status, 401);
    CHECK_EQ_INT(count_header(&r, "WWW-Authenticate", "Basic realm=\"cprof\""), basic);
    CHECK_EQ_INT(count_header(&r, "WWW-Authenticate", "Bearer realm=\"cprof\""), bearer);
    CHECK(header(&r, "Location") == NULL);
    cprof_response_free(&r);
  }
  cprof_stop();
}

static void test_challenges(void) {
  challenges("ops:pw", NULL, 1, 0);
  challenges(NULL, "t0k", 0, 1);
  challenges("ops:pw", "t0k", 1, 1);
}

static void test_routes(void) {
  cprof_response_t r = get("/debug/pprof/", NULL);
  CHECK_EQ_INT(r.status, 200);
  CHECK_EQ_STR(header(&r, "Content-Type"), "text/html; charset=utf-8");
  CHECK_EQ_STR(header(&r, "X-Content-Type-Options"), "nosniff");
  CHECK(r.body && strstr(r.body, "goroutine?debug=1"));
  cprof_response_free(&r);

  r = get("/debug/pprof/nosuch", NULL);
  CHECK_EQ_INT(r.status, 404);
  CHECK_EQ_INT(r.body_len, strlen("Unknown profile\n"));
  CHECK(r.body && memcmp(r.body, "Unknown profile\n", r.body_len) == 0);
  CHECK_EQ_STR(header(&r, "X-Go-Pprof"), "1");
  CHECK_EQ_STR(header(&r, "Content-Type"), "text/plain; charset=utf-8");
  cprof_response_free(&r);

  r = get("/debug/pprof/goroutine", "debug=x");
  CHECK_EQ_INT(r.status, 400);
  CHECK(header(&r, "Content-Disposition") == NULL);
  cprof_response_free(&r);

  r = get("/debug/pprof/goroutine", NULL);
  CHECK_EQ_INT(r.status, 200);
  CHECK_EQ_STR(header(&r, "Content-Disposition"), "attachment; filename=\"goroutine\"");
  CHECK(r.body_len > 2 && (unsigned char)r.body[0] == 0x1f && (unsigned char)r.body[1] == 0x8b);
  cprof_response_free(&r);

  r = get("/debug/pprof/symbol", NULL);
  CHECK_EQ_INT(r.status, 200);
  CHECK(r.body && strcmp(r.body, "num_symbols: 1\n") == 0);
  cprof_response_free(&r);

  char body[64];
  snprintf(body, sizeof body, "%p+zz+%p", (void *)test_routes, (void *)0);
  cprof_request_t post = {.method = "POST", .path = "/debug/pprof/symbol", .body = body,
                          .body_len = strlen(body)};
  CHECK_EQ_INT(cprof_handle_request(&post, &r), 0);
  CHECK_EQ_INT(r.status, 200);
  CHECK(r.body && strstr(r.body, " test_routes\n"));
  cprof_response_free(&r);

  r = get("/elsewhere", NULL);
  CHECK_EQ_INT(r.status, 404);
  cprof_response_free(&r);
  r = get(NULL, NULL);
  CHECK_EQ_INT(r.status, 404);
  cprof_response_free(&r);
}

/* A program's own server with a prefix, as go-lanai's context-path. */
static void test_prefix_and_auth(void) {
  cprof_options_t o = {.addr = "0", .prefix = "/svc", .token = "t0k"};
  CHECK_EQ_INT(cprof_start(&o), 0);
  CHECK(cprof_addr() == NULL);
  CHECK_EQ_INT(cprof_start(&o), -EALREADY);
  cprof_response_t r = get("/svc/debug/pprof/", NULL);
  CHECK_EQ_INT(r.status, 401);
  cprof_response_free(&r);
  cprof_request_t req = {.method = "GET", .path = "/svc/debug/pprof/", .authorization = "Bearer t0k"};
  CHECK_EQ_INT(cprof_handle_request(&req, &r), 0);
  CHECK_EQ_INT(r.status, 200);
  cprof_response_free(&r);
  req.path = "/debug/pprof/";
  CHECK_EQ_INT(cprof_handle_request(&req, &r), 0);
  CHECK_EQ_INT(r.status, 404);
  cprof_response_free(&r);
  req.path = "/svcx/debug/pprof/";
  CHECK_EQ_INT(cprof_handle_request(&req, &r), 0);
  CHECK_EQ_INT(r.status, 404);
  cprof_response_free(&r);
  cprof_stop();
}

int main(void) {
  test_query();
  test_base64_and_auth();
  test_routes();
  test_prefix_and_auth();
  test_challenges();
  return check_result("test_routes");
}

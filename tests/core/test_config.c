/* Table tests for the settings parsers, and the fail-closed rules. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "core/config.h"

static void test_addr(void) {
  struct {
    const char *in;
    int ok, enabled;
    const char *host;
    int port;
  } cases[] = {
      {"127.0.0.1:6060", 1, 1, "127.0.0.1", 6060},
      {":6060", 1, 1, "", 6060},
      {"localhost:0", 1, 1, "localhost", 0},
      {"[::1]:7070", 1, 1, "::1", 7070},
      {"0", 1, 0, "", 0},
      {"", 1, 0, "", 0},
      {"host:65535", 1, 1, "host", 65535},
      {"host:65536", 0, 0, NULL, 0},
      {"banana", 0, 0, NULL, 0},
      {"1.2.3.4:", 0, 0, NULL, 0},
      {":", 0, 0, NULL, 0},
      {"host:12ab", 0, 0, NULL, 0},
      {"::1:80", 0, 0, NULL, 0},
      {"[::1]80", 0, 0, NULL, 0},
      {"a b:80", 0, 0, NULL, 0},
      {"host:-1", 0, 0, NULL, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    cprof__addr_t a;
    char err[128] = "";
    int rc = cprof__parse_addr(cases[i].in, &a, err, sizeof err);
    CHECK_EQ_INT(rc == 0, cases[i].ok);
    if (rc == 0) {
      CHECK_EQ_INT(a.enabled, cases[i].enabled);
      CHECK_EQ_STR(a.host, cases[i].host);
      CHECK_EQ_INT(a.port, cases[i].port);
    } else {
      CHECK(err[0] != '\0');
      CHECK_EQ_INT(rc, -EINVAL);
    }
  }
}

static void test_prefix(void) {
  struct {
    const char *in;
    const char *out; /* NULL: rejected */
  } cases[] = {
      {"", ""}, {"/", ""}, {"/auth", "/auth"}, {"/auth/", "/auth"}, {"/a/b", "/a/b"},
      {"auth", NULL}, {"/a b", NULL}, {"/a?b", NULL}, {"/a#b", NULL}, {"/a%20", NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char out[256], err[128];
    int rc = cprof__parse_prefix(cases[i].in, out, sizeof out, err, sizeof err);
    CHECK_EQ_INT(rc == 0, cases[i].out != NULL);
    if (rc == 0)
      CHECK_EQ_STR(out, cases[i].out);
  }
}

static void test_small_parsers(void) {
  char out[256], err[128];
  cprof__unwinder_t u;
  CHECK_EQ_INT(cprof__parse_unwind("fp", &u, err, sizeof err), 0);
  CHECK_EQ_INT(u, CPROF_UNWIND_FP);
  CHECK_EQ_INT(cprof__parse_unwind("dwarf", &u, err, sizeof err), 0);
  CHECK_EQ_INT(u, CPROF_UNWIND_DWARF);
  CHECK_EQ_INT(cprof__parse_unwind("FP", &u, err, sizeof err), -EINVAL);
  CHECK_EQ_INT(cprof__parse_auth("ops:pw", out, sizeof out, err, sizeof err), 0);
  CHECK_EQ_STR(out, "ops:pw");
  CHECK_EQ_INT(cprof__parse_auth("ops", out, sizeof out, err, sizeof err), -EINVAL);
  CHECK_EQ_INT(cprof__parse_auth(":pw", out, sizeof out, err, sizeof err), -EINVAL);
  CHECK_EQ_INT(cprof__parse_auth("ops:", out, sizeof out, err, sizeof err), -EINVAL);
  CHECK_EQ_INT(cprof__parse_auth("o p:pw", out, sizeof out, err, sizeof err), -EINVAL);
  CHECK_EQ_INT(cprof__parse_token("abc", out, sizeof out, err, sizeof err), 0);
  CHECK_EQ_INT(cprof__parse_token("a c", out, sizeof out, err, sizeof err), -EINVAL);
  int hz;
  CHECK_EQ_INT(cprof__parse_cpu_hz("100", &hz, err, sizeof err), 0);
  CHECK_EQ_INT(hz, 100);
  CHECK_EQ_INT(cprof__parse_cpu_hz("10000", &hz, err, sizeof err), 0);
  const char *bad_hz[] = {"0", "-5", "10001", "1e3", "", "fast", "100 "};
  for (size_t i = 0; i < sizeof bad_hz / sizeof *bad_hz; i++)
    CHECK_EQ_INT(cprof__parse_cpu_hz(bad_hz[i], &hz, err, sizeof err), -EINVAL);
  long rate;
  CHECK_EQ_INT(cprof__parse_heap_rate("0", &rate, err, sizeof err), 0);
  CHECK_EQ_INT(rate, 0);
  CHECK_EQ_INT(cprof__parse_heap_rate("4096", &rate, err, sizeof err), 0);
  CHECK_EQ_INT(rate, 4096);
  const char *bad_rate[] = {"-1", "1073741825", "512k", "", " 1", "0x10", "99999999999999999999"};
  for (size_t i = 0; i < sizeof bad_rate / sizeof *bad_rate; i++)
    CHECK_EQ_INT(cprof__parse_heap_rate(bad_rate[i], &rate, err, sizeof err), -EINVAL);
  /* CPROF_BLOCK_RATE, CPROF_MUTEX_FRACTION and their POST parameters. */
  long n;
  CHECK_EQ_INT(cprof__parse_setting("0", 100, "things", &n, err, sizeof err), 0);
  CHECK_EQ_INT(n, 0);
  CHECK_EQ_INT(cprof__parse_setting("100", 100, "things", &n, err, sizeof err), 0);
  CHECK_EQ_INT(n, 100);
  const char *bad_setting[] = {"-3", "101", "abc", "", " 5", "5 ", "1e3", "99999999999999999999"};
  for (size_t i = 0; i < sizeof bad_setting / sizeof *bad_setting; i++)
    CHECK_EQ_INT(cprof__parse_setting(bad_setting[i], 100, "things", &n, err, sizeof err), -EINVAL);
  CHECK_EQ_STR(err, "expected a whole number of things from 0 (off) to 100");
  /* CPROF_MAX_MEMORY. */
  struct {
    const char *in;
    size_t out; /* 0: refused */
  } mem[] = {{"33554432", 33554432}, {"32M", (size_t)32 << 20}, {"32m", (size_t)32 << 20},
             {"1G", (size_t)1 << 30},  {"1024K", (size_t)1 << 20}, {"1M", (size_t)1 << 20},
             {"1048575", 0},           {"512K", 0},                {"0", 0},
             {"", 0},                  {"32MB", 0},                {"-32M", 0},
             {" 32M", 0},              {"32 M", 0},                {"99999999999999999999G", 0},
             {"17179869184G", 0}};
  for (size_t i = 0; i < sizeof mem / sizeof *mem; i++) {
    size_t got = 7;
    int rc = cprof__parse_memory(mem[i].in, &got, err, sizeof err);
    CHECK_EQ_INT(rc, mem[i].out ? 0 : -EINVAL);
    if (mem[i].out)
      CHECK_EQ_INT(got, mem[i].out);
  }
  /* CPROF_MAX_DEPTH. */
  struct {
    const char *in;
    int out; /* 0: refused */
  } depth[] = {{"128", 128}, {"16", 16},  {"1024", 1024}, {"600", 600}, {"15", 0},
               {"1025", 0},  {"0", 0},    {"-128", 0},    {"", 0},      {"128 ", 0},
               {" 128", 0},  {"1e3", 0},  {"deep", 0},    {"99999999999999999999", 0}};
  for (size_t i = 0; i < sizeof depth / sizeof *depth; i++) {
    int got = 7;
    int rc = cprof__parse_max_depth(depth[i].in, &got, err, sizeof err);
    CHECK_EQ_INT(rc, depth[i].out ? 0 : -EINVAL);
    CHECK_EQ_INT(got, depth[i].out ? depth[i].out : 7);
  }
  CHECK_EQ_STR(err, "expected a whole number of frames from 16 to 1024");
}

/* Options win over the environment; NULL fields fall back to it; bad
 * credentials turn the server off rather than leave it open. */
static void test_load(void) {
  cprof__config_t cfg;
  setenv("CPROF_ADDR", ":7000", 1);
  setenv("CPROF_PREFIX", "/p", 1);
  unsetenv("CPROF_AUTH");
  unsetenv("CPROF_TOKEN");
  unsetenv("CPROF_UNWIND");
  CHECK_EQ_INT(cprof__config_load(NULL, &cfg), 0);
  CHECK_EQ_INT(cfg.addr.port, 7000);
  CHECK_EQ_STR(cfg.prefix, "/p");
  CHECK_EQ_INT(cfg.unwind, CPROF_UNWIND_DWARF);

  cprof_options_t o = {.addr = "127.0.0.1:7001", .unwind = "fp"};
  CHECK_EQ_INT(cprof__config_load(&o, &cfg), 0);
  CHECK_EQ_INT(cfg.addr.port, 7001);
  CHECK_EQ_STR(cfg.prefix, "/p");
  CHECK_EQ_INT(cfg.unwind, CPROF_UNWIND_FP);

  cprof_options_t off = {.addr = ""};
  CHECK_EQ_INT(cprof__config_load(&off, &cfg), 0);
  CHECK_EQ_INT(cfg.addr.enabled, 0);

  unsetenv("CPROF_ADDR");
  CHECK_EQ_INT(cprof__config_load(NULL, &cfg), 0);
  CHECK_EQ_STR(cfg.addr.host, "127.0.0.1"); /* the default */
  CHECK_EQ_INT(cfg.addr.port, 6060);

  setenv("CPROF_AUTH", "no-colon", 1);
  CHECK_EQ_INT(cprof__config_load(NULL, &cfg), -EINVAL);
  CHECK_EQ_INT(cfg.addr.enabled, 0);
  unsetenv("CPROF_AUTH");
  setenv("CPROF_PREFIX", "bad", 1);
  CHECK_EQ_INT(cprof__config_load(NULL, &cfg), -EINVAL);
  CHECK_EQ_INT(cfg.addr.enabled, 1); /* a bad prefix only drops the prefix */
  CHECK_EQ_STR(cfg.prefix, "");
  unsetenv("CPROF_PREFIX");

  CHECK_EQ_INT(cfg.max_memory, (size_t)32 << 20); /* the default */
  setenv("CPROF_MAX_MEMORY", "64M", 1);
  CHECK_EQ_INT(cprof__config_load(NULL, &cfg), 0);
  CHECK_EQ_INT(cfg.max_memory, (size_t)64 << 20);
  setenv("CPROF_MAX_MEMORY", "lots", 1);
  CHECK_EQ_INT(cprof__config_load(NULL, &cfg), -EINVAL);
  CHECK_EQ_INT(cfg.max_memory, (size_t)32 << 20);
  unsetenv("CPROF_MAX_MEMORY");

  CHECK_EQ_INT(cfg.max_depth, 128); /* the default */
  setenv("CPROF_MAX_DEPTH", "600", 1);
  CHECK_EQ_INT(cprof__config_load(NULL, &cfg), 0);
  CHECK_EQ_INT(cfg.max_depth, 600);
  setenv("CPROF_MAX_DEPTH", "5000", 1);
  CHECK_EQ_INT(cprof__config_load(NULL, &cfg), -EINVAL);
  CHECK_EQ_INT(cfg.max_depth, 128);
  unsetenv("CPROF_MAX_DEPTH");
}

/* CPROF_PUSH_URL and CPROF_PUSH_NAME, and how a bad one turns the push
 * off. */
static void test_push(void) {
  static const struct {
    const char *in, *out; /* out NULL: refused */
  } urls[] = {{"http://pyroscope:4040", "http://pyroscope:4040"},
              {"https://h/base//", "https://h/base"},
              {"http://u:p@127.0.0.1:4040/", "http://u:p@127.0.0.1:4040"},
              {"http://[::1]:4040", "http://[::1]:4040"},
              {"ftp://h", NULL},
              {"pyroscope:4040", NULL},
              {"http://", NULL},
              {"http:///path", NULL},
              {"http://@h", NULL},
              {"http://h/?x=1", NULL},
              {"http://h/#f", NULL},
              {"http://h /", NULL},
              {"", NULL}};
  char out[64], err[200];
  for (size_t i = 0; i < sizeof urls / sizeof *urls; i++) {
    int rc = cprof__parse_push_url(urls[i].in, out, sizeof out, err, sizeof err);
    CHECK_EQ_INT(rc, urls[i].out ? 0 : -EINVAL);
    if (urls[i].out)
      CHECK_EQ_STR(out, urls[i].out);
  }
  CHECK_EQ_INT(cprof__parse_push_url("http://a-host-name-longer-than-the-buffer.example.com:4040/x",
                                     out, 32, err, sizeof err),
               -EINVAL);
  CHECK_EQ_STR(err, "URL too long");

  static const struct {
    const char *in;
    int ok;
  } names[] = {{"checkout", 1},
               {"checkout{env=prod}", 1},
               {"a.b/c-d_e{k=v,k2=v:2}", 1},
               {"app{}", 1},
               {"", 0},
               {"two words", 0},
               {"app{env}", 0},
               {"app{=v}", 0},
               {"app{1k=v}", 0},
               {"app{env=}", 0},
               {"app{k=v,}", 0},
               {"app{k=v", 0},
               {"app{k=v}x", 0},
               {"app{k=a b}", 0},
               {"{k=v}", 0},
               {"app{k=v}{k=v}", 0},
               {"app{k=v=w}", 0}};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    int rc = cprof__parse_push_name(names[i].in, out, sizeof out, err, sizeof err);
    CHECK_EQ_INT(rc, names[i].ok ? 0 : -EINVAL);
    if (names[i].ok)
      CHECK_EQ_STR(out, names[i].in);
  }

  cprof__config_t cfg;
  unsetenv("CPROF_PUSH_URL");
  CHECK_EQ_INT(cprof__config_load(NULL, &cfg), 0);
  CHECK_EQ_STR(cfg.push_url, "");
  CHECK_EQ_INT(cfg.push_interval_ms, 15000);
  cprof_options_t o = {.push_url = "http://h:4040/", .push_name = "a{b=c}", .push_interval = "2s"};
  CHECK_EQ_INT(cprof__config_load(&o, &cfg), 0);
  CHECK_EQ_STR(cfg.push_url, "http://h:4040");
  CHECK_EQ_STR(cfg.push_name, "a{b=c}");
  CHECK_EQ_INT(cfg.push_interval_ms, 2000);
  /* Any bad part turns the whole push off. */
  o.push_interval = "500ms";
  CHECK_EQ_INT(cprof__config_load(&o, &cfg), -EINVAL);
  CHECK_EQ_STR(cfg.push_url, "");
  o.push_interval = NULL;
  o.push_name = "a b";
  CHECK_EQ_INT(cprof__config_load(&o, &cfg), -EINVAL);
  CHECK_EQ_STR(cfg.push_url, "");
}

/* Which addresses get the "open to the network" warning. */
static void test_exposed(void) {
  static const struct {
    const char *addr;
    int exposed;
  } cases[] = {
      {":6060", 1},          {"0.0.0.0:6060", 1},   {"[::]:6060", 1},
      {"10.1.2.3:6060", 1},  {"myhost:6060", 1},    {"127.0.0.1:6060", 0},
      {"127.9.9.9:0", 0},    {"localhost:6060", 0}, {"[::1]:6060", 0},
      {"0", 0},
  };
  char err[128];
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    cprof__addr_t a;
    CHECK_EQ_INT(cprof__parse_addr(cases[i].addr, &a, err, sizeof err), 0);
    if (cprof__addr_is_exposed(&a) != cases[i].exposed)
      fprintf(stderr, "  exposed(%s) should be %d\n", cases[i].addr, cases[i].exposed);
    CHECK_EQ_INT(cprof__addr_is_exposed(&a), cases[i].exposed);
  }
}

/* CPROF_TLS_CERT and CPROF_TLS_KEY come as a pair, or the server is off. */
static void test_tls_pair(void) {
  cprof__config_t cfg;
  setenv("CPROF_ADDR", "127.0.0.1:0", 1);
  setenv("CPROF_TLS_CERT", "/etc/c.pem", 1);
  CHECK_EQ_INT(cprof__config_load(NULL, &cfg), -EINVAL);
  CHECK_EQ_INT(cfg.addr.enabled, 0);
  CHECK_EQ_STR(cfg.tls_cert, "");
  setenv("CPROF_TLS_KEY", "/etc/k.pem", 1);
  CHECK_EQ_INT(cprof__config_load(NULL, &cfg), 0);
  CHECK_EQ_INT(cfg.addr.enabled, 1);
  CHECK_EQ_STR(cfg.tls_cert, "/etc/c.pem");
  CHECK_EQ_STR(cfg.tls_key, "/etc/k.pem");
  unsetenv("CPROF_TLS_CERT");
  CHECK_EQ_INT(cprof__config_load(NULL, &cfg), -EINVAL);
  CHECK_EQ_INT(cfg.addr.enabled, 0);
  unsetenv("CPROF_TLS_KEY");
  unsetenv("CPROF_ADDR");
}

int main(void) {
  test_exposed();
  test_tls_pair();
  test_addr();
  test_prefix();
  test_small_parsers();
  test_load();
  test_push();
  return check_result("test_config");
}

/* The collector's Prometheus label selector (tools/cprof/collect/
 * selector.c): a table of selectors, good ones with what they match and
 * malformed ones with the one line that says why; series labels read from
 * canonical label text; samples filtered by their own labels, a numeric
 * label as its decimal, a missing one as "". */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "collect/selector.h"
#include "core/buf.h"
#include "profile/protobuf.h"

/* arg NULL: job, instance, pid and env are series labels; not NULL: job
 * alone (pid a sample label, as in a tree's merged profile). */
static int series_names(void *arg, const char *name) {
  if (arg)
    return !strcmp(name, "job");
  return !strcmp(name, "job") || !strcmp(name, "instance") || !strcmp(name, "pid") ||
         !strcmp(name, "env");
}

static const char *const L1 = "{env=\"prod\",instance=\"127.0.0.1:6060\",job=\"backend\"}";
static const char *const L2 = "{instance=\"10.0.0.2:80\",job=\"web\",pid=\"812\"}";

static void test_good(void) {
  static const struct {
    const char *text;
    int m1, m2; /* whether L1, L2 match */
    size_t n;   /* matchers */
  } cases[] = {
      {"", 1, 1, 0},
      {"{}", 1, 1, 0},
      {"{job=\"backend\"}", 1, 0, 1},
      {" { job = \"backend\" , } ", 1, 0, 1},
      {"{job!=\"backend\"}", 0, 1, 1},
      {"{instance=~\"127.0.0.1:.*\"}", 1, 0, 1},
      {"{instance=~\"127\"}", 0, 0, 1}, /* anchored: a prefix is not a match */
      {"{instance!~\"127.0.0.1:.*\"}", 0, 1, 1},
      {"{job=~\"backend|web\",env=\"\"}", 0, 1, 2}, /* a missing label is "" */
      {"{pid=\"\"}", 1, 0, 1},
      {"{job='backend'}", 1, 0, 1},
      {"{job=`web`}", 0, 1, 1},
      {"{job=\"back\\\"end\"}", 0, 0, 1},
      {"{thread=\"worker\"}", 1, 1, 1}, /* a sample label: every series */
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    collect_selector_t *s = NULL;
    char err[200] = "";
    int rc = collect_selector_parse(cases[i].text, &s, err, sizeof err);
    if (rc != 0)
      fprintf(stderr, "case %zu %s: %s\n", i, cases[i].text, err);
    CHECK(rc == 0);
    if (!s)
      continue;
    collect_selector_split(s, series_names, NULL);
    CHECK_EQ_INT(s->n, cases[i].n);
    CHECK_EQ_INT(collect_selector_match_series(s, L1), cases[i].m1);
    CHECK_EQ_INT(collect_selector_match_series(s, L2), cases[i].m2);
    collect_selector_free(s);
  }
}

static void test_bad(void) {
  static const struct {
    const char *text, *want;
  } cases[] = {
      {"job=\"x\"", "column 1: want {"},
      {"{job}", "column 5: want an operator"},
      {"{job=x}", "column 6: want a quoted value"},
      {"{job=\"x\"", "column 9: want } to end"},
      {"{job=\"x", "column 6: a value without its closing quote"},
      {"{job==\"x\"}", "column 6: want a quoted value"},
      {"{1job=\"x\"}", "column 2: want a label name"},
      {"{job=\"x\" env=\"y\"}", "column 10: want , or }"},
      {"{job=\"x\"} extra", "column 11: text after the closing }"},
      {"{job=\"\\q\"}", "unknown escape"},
      {"{job=~\"(\"}", "the regex of job"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    collect_selector_t *s = NULL;
    char err[200] = "";
    int rc = collect_selector_parse(cases[i].text, &s, err, sizeof err);
    CHECK(rc == -EINVAL && s == NULL);
    if (!strstr(err, cases[i].want))
      fprintf(stderr, "case %zu %s: \"%s\", want \"%s\"\n", i, cases[i].text, err, cases[i].want);
    CHECK(strstr(err, cases[i].want) != NULL);
    CHECK(strchr(err, '\n') == NULL);
  }
}

static void test_labels_get(void) {
  char v[64];
  collect_labels_get("{a=\"1\",b=\"x\\\"y\",c=\"\"}", "b", v, sizeof v);
  CHECK_EQ_STR(v, "x\"y");
  collect_labels_get("{a=\"1\",b=\"x\\\"y\",c=\"\"}", "a", v, sizeof v);
  CHECK_EQ_STR(v, "1");
  collect_labels_get("{a=\"1\"}", "z", v, sizeof v);
  CHECK_EQ_STR(v, "");
  collect_labels_get("{ab=\"1\",b=\"2\"}", "b", v, sizeof v);
  CHECK_EQ_STR(v, "2");
}

/* Three samples: thread=worker, thread=main with pid 812 (a number), and
 * none. */
static cprof__pf_t *labelled(void) {
  enum { S_SAMPLES = 1, S_COUNT, S_MAIN, S_THREAD, S_WORKER, S_MAINV, S_PID };
  static const char *strings[] = {"",       "samples", "count", "main",
                                  "thread", "worker",  "main",  "pid"};
  cprof__buf_t b;
  cprof__buf_init(&b);
  size_t s = cprof__pb_start(&b);
  cprof__pb_int64(&b, 1, S_SAMPLES);
  cprof__pb_int64(&b, 2, S_COUNT);
  cprof__pb_end(&b, 1, s);
  for (int i = 0; i < 3; i++) {
    s = cprof__pb_start(&b);
    cprof__pb_uint64(&b, 1, 1);
    cprof__pb_int64(&b, 2, 10 + i);
    if (i < 2) {
      size_t l = cprof__pb_start(&b);
      cprof__pb_int64(&b, 1, S_THREAD);
      cprof__pb_int64(&b, 2, i == 0 ? S_WORKER : S_MAINV);
      cprof__pb_end(&b, 3, l);
    }
    if (i == 1) {
      size_t l = cprof__pb_start(&b);
      cprof__pb_int64(&b, 1, S_PID);
      cprof__pb_int64(&b, 3, 812);
      cprof__pb_end(&b, 3, l);
    }
    cprof__pb_end(&b, 2, s);
  }
  s = cprof__pb_start(&b);
  cprof__pb_uint64(&b, 1, 1);
  cprof__pb_uint64(&b, 3, 0x1000);
  size_t l = cprof__pb_start(&b);
  cprof__pb_uint64(&b, 1, 1);
  cprof__pb_end(&b, 4, l);
  cprof__pb_end(&b, 4, s);
  s = cprof__pb_start(&b);
  cprof__pb_uint64(&b, 1, 1);
  cprof__pb_int64(&b, 2, S_MAIN);
  cprof__pb_end(&b, 5, s);
  for (size_t i = 0; i < sizeof strings / sizeof *strings; i++)
    cprof__pb_string(&b, 6, strings[i]);
  cprof__pb_int64(&b, 9, 1);
  cprof__pf_t *p = NULL;
  char err[200];
  CHECK(cprof__pf_decode(b.data, b.len, &p, err, sizeof err) == 0);
  cprof__buf_free(&b);
  return p;
}

static int64_t kept_sum_of(const char *sel, void *names) {
  collect_selector_t *s;
  char err[200];
  CHECK(collect_selector_parse(sel, &s, err, sizeof err) == 0);
  collect_selector_split(s, series_names, names);
  cprof__pf_t *p = labelled();
  collect_selector_filter(s, p);
  int64_t sum = 0;
  for (size_t i = 0; i < p->n_samples; i++)
    sum += p->samples[i].values[0];
  cprof__pf_free(p);
  collect_selector_free(s);
  return sum;
}

static int64_t kept_sum(const char *sel) { return kept_sum_of(sel, NULL); }

static void test_filter(void) {
  static int job_only;
  CHECK_EQ_INT(kept_sum_of("{pid=\"812\"}", &job_only), 11); /* a number as its decimal */
  CHECK_EQ_INT(kept_sum_of("{pid=~\"8.2\",thread=\"main\"}", &job_only), 11);
  CHECK_EQ_INT(kept_sum("{pid=\"812\"}"), 33); /* a series label here */
  CHECK_EQ_INT(kept_sum("{thread=\"worker\"}"), 10);
  CHECK_EQ_INT(kept_sum("{thread!=\"worker\"}"), 11 + 12);
  CHECK_EQ_INT(kept_sum("{thread=\"\"}"), 12);
  CHECK_EQ_INT(kept_sum("{thread=~\"w.*|main\"}"), 10 + 11);
  CHECK_EQ_INT(kept_sum("{job=\"web\"}"), 33); /* a series matcher leaves samples alone */
  CHECK_EQ_INT(kept_sum("{tid=~\"8.*\"}"), 0);
}

int main(void) {
  test_good();
  test_bad();
  test_labels_get();
  test_filter();
  return check_result("collect/selector");
}

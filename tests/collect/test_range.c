/* What a range of stored profiles means (tools/cprof/collect/range.c):
 * CPU summed, a cumulative profile's range the change between its first
 * and last scrape (per stack), a restart counted from zero, the heap's
 * in-use types averaged beside its alloc types as deltas, latest, several
 * series added up, a lone baseline an empty range, a long range read in
 * batches, and the kinds and modes by name. */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "collect/range.h"
#include "core/buf.h"
#include "profile/protobuf.h"

/* Strings: 0 "", then the sample types' names, then "count", "main",
 * "work", "other". */
#define MAXT 4

typedef struct {
  const char *types[MAXT]; /* sample type names, NULL-ended */
  int64_t duration;
  /* values of stack 1 (main<-work) and stack 2 (main<-other), per type */
  int64_t v1[MAXT], v2[MAXT];
} spec_t;

static cprof__pf_t *make(spec_t k) {
  cprof__buf_t b;
  cprof__buf_init(&b);
  size_t nt = 0;
  while (nt < MAXT && k.types[nt])
    nt++;
  /* string ids: types 1..nt, count nt+1, main nt+2, work nt+3, other nt+4 */
  for (size_t t = 0; t < nt; t++) {
    size_t s = cprof__pb_start(&b);
    cprof__pb_int64(&b, 1, (int64_t)(1 + t));
    cprof__pb_int64(&b, 2, (int64_t)nt + 1);
    cprof__pb_end(&b, 1, s);
  }
  for (int i = 0; i < 2; i++) {
    size_t s = cprof__pb_start(&b);
    cprof__pb_uint64(&b, 1, i == 0 ? 2 : 3); /* leaf */
    cprof__pb_uint64(&b, 1, 1);              /* main */
    for (size_t t = 0; t < nt; t++)
      cprof__pb_int64(&b, 2, i == 0 ? k.v1[t] : k.v2[t]);
    cprof__pb_end(&b, 2, s);
  }
  for (int id = 1; id <= 3; id++) {
    size_t s = cprof__pb_start(&b);
    cprof__pb_uint64(&b, 1, (uint64_t)id);
    cprof__pb_uint64(&b, 3, 0x1000 + (uint64_t)id);
    size_t l = cprof__pb_start(&b);
    cprof__pb_uint64(&b, 1, (uint64_t)id);
    cprof__pb_end(&b, 4, l);
    cprof__pb_end(&b, 4, s);
  }
  for (int id = 1; id <= 3; id++) {
    size_t s = cprof__pb_start(&b);
    cprof__pb_uint64(&b, 1, (uint64_t)id);
    cprof__pb_int64(&b, 2, (int64_t)nt + 1 + id);
    cprof__pb_end(&b, 5, s);
  }
  cprof__pb_string(&b, 6, "");
  for (size_t t = 0; t < nt; t++)
    cprof__pb_string(&b, 6, k.types[t]);
  cprof__pb_string(&b, 6, "count");
  cprof__pb_string(&b, 6, "main");
  cprof__pb_string(&b, 6, "work");
  cprof__pb_string(&b, 6, "other");
  cprof__pb_int64(&b, 9, 1700000000000000000);
  if (k.duration)
    cprof__pb_int64(&b, 10, k.duration);
  CHECK(!b.failed);
  cprof__pf_t *p = NULL;
  char err[200];
  int rc = cprof__pf_decode(b.data, b.len, &p, err, sizeof err);
  if (rc != 0)
    fprintf(stderr, "decode: %s\n", err);
  CHECK(rc == 0);
  cprof__buf_free(&b);
  return p;
}

/* Stack s's (1: work, 2: other) value of type t in p; 0 when absent. */
static int64_t value(const cprof__pf_t *p, int s, size_t t) {
  const char *leaf = s == 1 ? "work" : "other";
  int64_t v = 0;
  for (size_t i = 0; i < p->n_samples; i++) {
    const cprof__pf_location_t *l = p->samples[i].locations[0];
    if (l->n_lines && !strcmp(l->lines[0].function->name, leaf))
      v += p->samples[i].values[t];
  }
  return v;
}

typedef struct {
  const char *series;
  spec_t spec;
} add_t;

/* The range of adds[0..n) reduced with mode; *applied gets what was done. */
static cprof__pf_t *reduce(collect_mode_t mode, const add_t *adds, size_t n, char *applied,
                           size_t *restarts) {
  collect_range_t *r;
  CHECK(collect_range_new(mode, &r) == 0);
  char err[256] = "";
  for (size_t i = 0; i < n; i++)
    CHECK(collect_range_add(r, adds[i].series, make(adds[i].spec), err, sizeof err) == 0);
  cprof__pf_t *out = NULL;
  int rc = collect_range_finish(r, &out, applied, 64, err, sizeof err);
  if (rc)
    fprintf(stderr, "finish: %s\n", err);
  CHECK(rc == 0 && out);
  CHECK_EQ_INT(collect_range_count(r), n);
  if (restarts)
    *restarts = collect_range_restarts(r);
  collect_range_free(r);
  return out;
}

#define BLOCK(a1, d1, a2, d2)                                                                      \
  (spec_t) {                                                                                       \
    .types = {"contentions", "delay"}, .v1 = {a1, d1}, .v2 = { a2, d2 }                            \
  }
#define HEAP(ao, as, io, is)                                                                       \
  (spec_t) {                                                                                       \
    .types = {"alloc_objects", "alloc_space", "inuse_objects", "inuse_space"},                     \
    .v1 = {ao, as, io, is}, .v2 = {                                                                \
      0,                                                                                           \
      0,                                                                                           \
      0,                                                                                           \
      0                                                                                            \
    }                                                                                              \
  }
#define CPU(n1, n2)                                                                                \
  (spec_t) {                                                                                       \
    .types = {"samples", "cpu"}, .duration = 1000000000, .v1 = {1, n1}, .v2 = { 1, n2 }            \
  }

static void test_cumulative(void) {
  /* Block counters 10, 30, 70 on work and 0, 5, 20 on other: the range
   * is 60 and 20, the first scrape a baseline. */
  add_t adds[] = {{"{job=\"a\"}", BLOCK(1, 10, 0, 0)},
                  {"{job=\"a\"}", BLOCK(2, 30, 1, 5)},
                  {"{job=\"a\"}", BLOCK(4, 70, 2, 20)}};
  char applied[64];
  size_t restarts = 9;
  cprof__pf_t *p = reduce(COLLECT_MODE_AUTO, adds, 3, applied, &restarts);
  CHECK_EQ_STR(applied, "delta");
  CHECK_EQ_INT(value(p, 1, 1), 60);
  CHECK_EQ_INT(value(p, 2, 1), 20);
  CHECK_EQ_INT(value(p, 1, 0), 3);
  CHECK_EQ_INT(restarts, 0);
  CHECK(p->n_comments >= 1 && strstr(p->comments[p->n_comments - 1], "delay: delta"));
  cprof__pf_free(p);
  /* The old meaning, every scrape added up, on asking. */
  p = reduce(COLLECT_MODE_SUM, adds, 3, applied, NULL);
  CHECK_EQ_STR(applied, "sum");
  CHECK_EQ_INT(value(p, 1, 1), 110);
  cprof__pf_free(p);
}

static void test_restart(void) {
  /* 10, 30, then the target restarts: 5, 25. 20 before, 25 after (its
   * first profile from zero). */
  add_t adds[] = {{"s", BLOCK(1, 10, 0, 0)},
                  {"s", BLOCK(2, 30, 0, 0)},
                  {"s", BLOCK(1, 5, 0, 0)},
                  {"s", BLOCK(2, 25, 0, 0)}};
  char applied[64];
  size_t restarts = 0;
  cprof__pf_t *p = reduce(COLLECT_MODE_AUTO, adds, 4, applied, &restarts);
  CHECK_EQ_INT(value(p, 1, 1), 45);
  CHECK_EQ_INT(restarts, 1);
  cprof__pf_free(p);
  /* A restart right after the baseline: only the new stretch. */
  add_t two[] = {{"s", BLOCK(3, 50, 0, 0)}, {"s", BLOCK(1, 8, 0, 0)}};
  p = reduce(COLLECT_MODE_AUTO, two, 2, applied, &restarts);
  CHECK_EQ_INT(value(p, 1, 1), 8);
  CHECK_EQ_INT(restarts, 1);
  cprof__pf_free(p);
}

static void test_before(void) {
  /* The series' scrape before the range read 50; the range's first reads
   * 8: a restart in between, so the 8 count, and then 20 more. */
  collect_range_t *r;
  char err[256] = "", applied[64];
  CHECK(collect_range_new(COLLECT_MODE_AUTO, &r) == 0);
  CHECK(collect_range_before(r, "s", make(BLOCK(5, 50, 0, 0)), err, sizeof err) == 0);
  CHECK(collect_range_add(r, "s", make(BLOCK(1, 8, 0, 0)), err, sizeof err) == 0);
  CHECK(collect_range_add(r, "s", make(BLOCK(2, 28, 0, 0)), err, sizeof err) == 0);
  cprof__pf_t *p = NULL;
  CHECK(collect_range_finish(r, &p, applied, sizeof applied, err, sizeof err) == 0 && p);
  CHECK_EQ_INT(value(p, 1, 1), 28);
  CHECK_EQ_INT(collect_range_restarts(r), 1);
  cprof__pf_free(p);
  collect_range_free(r);
  /* No restart since (40 before, 45 then 60): the first is the baseline. */
  CHECK(collect_range_new(COLLECT_MODE_AUTO, &r) == 0);
  CHECK(collect_range_before(r, "s", make(BLOCK(5, 40, 0, 0)), err, sizeof err) == 0);
  CHECK(collect_range_add(r, "s", make(BLOCK(6, 45, 0, 0)), err, sizeof err) == 0);
  CHECK(collect_range_add(r, "s", make(BLOCK(7, 60, 0, 0)), err, sizeof err) == 0);
  CHECK(collect_range_finish(r, &p, applied, sizeof applied, err, sizeof err) == 0 && p);
  CHECK_EQ_INT(value(p, 1, 1), 15);
  CHECK_EQ_INT(collect_range_restarts(r), 0);
  cprof__pf_free(p);
  collect_range_free(r);
}

static void test_heap(void) {
  /* In use 100, 200, 300 bytes (average 200); allocated 1000, 1500,
   * 4000 (a range of 3000). */
  add_t adds[] = {
      {"h", HEAP(10, 1000, 1, 100)}, {"h", HEAP(15, 1500, 2, 200)}, {"h", HEAP(40, 4000, 3, 300)}};
  char applied[64];
  cprof__pf_t *p = reduce(COLLECT_MODE_AUTO, adds, 3, applied, NULL);
  CHECK_EQ_STR(applied, "delta+avg");
  CHECK_EQ_INT(value(p, 1, 3), 200);
  CHECK_EQ_INT(value(p, 1, 2), 2);
  CHECK_EQ_INT(value(p, 1, 1), 3000);
  CHECK_EQ_INT(value(p, 1, 0), 30);
  cprof__pf_free(p);
  p = reduce(COLLECT_MODE_LATEST, adds, 3, applied, NULL);
  CHECK_EQ_STR(applied, "latest");
  CHECK_EQ_INT(value(p, 1, 3), 300);
  CHECK_EQ_INT(value(p, 1, 1), 4000);
  cprof__pf_free(p);
  p = reduce(COLLECT_MODE_AVG, adds, 3, applied, NULL);
  CHECK_EQ_INT(value(p, 1, 1), 2167); /* 6500 / 3, rounded */
  cprof__pf_free(p);
  /* Two series: the sum of their averages (200 + 1000). */
  add_t two[] = {{"h1", HEAP(0, 0, 1, 100)},
                 {"h2", HEAP(0, 0, 1, 1000)},
                 {"h1", HEAP(0, 0, 1, 200)},
                 {"h2", HEAP(0, 0, 1, 1000)},
                 {"h1", HEAP(0, 0, 1, 300)}};
  p = reduce(COLLECT_MODE_AUTO, two, 5, applied, NULL);
  CHECK_EQ_INT(value(p, 1, 3), 1200);
  cprof__pf_free(p);
}

static void test_small_counts(void) {
  /* Threads 1+0, 0+1, 1+1: an average of 4/3 threads, 1 rounded; each
   * stack's 2/3 rounded on its own would make 2. */
  spec_t a = {.types = {"goroutine"}, .v1 = {1}, .v2 = {0}};
  spec_t b = {.types = {"goroutine"}, .v1 = {0}, .v2 = {1}};
  spec_t c = {.types = {"goroutine"}, .v1 = {1}, .v2 = {1}};
  add_t adds[] = {{"g", a}, {"g", b}, {"g", c}};
  char applied[64];
  cprof__pf_t *p = reduce(COLLECT_MODE_AUTO, adds, 3, applied, NULL);
  CHECK_EQ_STR(applied, "avg");
  CHECK_EQ_INT(collect_type_total(p, 0), 1);
  CHECK_EQ_INT(value(p, 1, 0) + value(p, 2, 0), 1);
  cprof__pf_free(p);
}

static void test_cpu(void) {
  add_t adds[] = {{"c", CPU(10, 1)}, {"c", CPU(20, 2)}, {"d", CPU(5, 0)}};
  char applied[64];
  cprof__pf_t *p = reduce(COLLECT_MODE_AUTO, adds, 3, applied, NULL);
  CHECK_EQ_STR(applied, "sum");
  CHECK_EQ_INT(value(p, 1, 1), 35);
  CHECK_EQ_INT(value(p, 2, 1), 3);
  cprof__pf_free(p);
}

static void test_baseline_only(void) {
  /* One cumulative profile: the baseline, and nothing happened after it. */
  add_t adds[] = {{"s", BLOCK(1, 10, 1, 10)}};
  char applied[64];
  cprof__pf_t *p = reduce(COLLECT_MODE_AUTO, adds, 1, applied, NULL);
  CHECK_EQ_INT(p->n_samples, 0);
  CHECK_EQ_INT(p->n_sample_types, 2);
  cprof__pf_free(p);
}

static void test_names(void) {
  collect_mode_t m;
  CHECK(collect_mode_parse("avg", &m) == 0 && m == COLLECT_MODE_AVG);
  CHECK(collect_mode_parse("latest", &m) == 0 && m == COLLECT_MODE_LATEST);
  CHECK(collect_mode_parse("mean", &m) == -EINVAL);
  CHECK(collect_mode_parse("", &m) == -EINVAL);
  CHECK(collect_sample_kind("delay", 0) == COLLECT_CUMULATIVE);
  CHECK(collect_sample_kind("delay", 5) == COLLECT_DELTA); /* scraped with ?seconds= */
  CHECK(collect_sample_kind("inuse_space", 0) == COLLECT_SNAPSHOT);
  CHECK(collect_sample_kind("cpu", 0) == COLLECT_DELTA);
  collect_quantity_t q;
  collect_quantity_of("block", 0, &q);
  CHECK(q.kind == COLLECT_CUMULATIVE && q.per_second && !strcmp(q.unit, "s/s"));
  collect_quantity_of("block", 1, &q);
  CHECK(q.kind == COLLECT_DELTA && q.per_second);
  collect_quantity_of("memory", 0, &q);
  CHECK(q.kind == COLLECT_SNAPSHOT && !strcmp(q.quantity, "bytes in use"));
  collect_quantity_of("process_cpu", 1, &q);
  CHECK(q.kind == COLLECT_DELTA && q.cpu && !strcmp(q.quantity, "CPU cores"));
  /* Incompatible sample types in one series: refused with a line. */
  collect_range_t *r;
  char err[256] = "";
  CHECK(collect_range_new(COLLECT_MODE_AUTO, &r) == 0);
  CHECK(collect_range_add(r, "s", make(BLOCK(1, 1, 0, 0)), err, sizeof err) == 0);
  CHECK(collect_range_add(r, "s", make(CPU(1, 1)), err, sizeof err) == -EINVAL && err[0]);
  collect_range_free(r);
}

static void test_row_value(void) {
  collect_quantity_t q;
  double v = -1;
  /* CPU: 1.5 s sampled in 2 s is 0.75 cores. */
  collect_quantity_of("process_cpu", 1, &q);
  CHECK(collect_row_value(&q, 1500000000, 10, 2000000000, 0, 0, 0, &v) == 0 && v == 0.75);
  CHECK(collect_row_value(&q, 1500000000, 10, 0, 0, 0, 0, &v) == -ENODATA);
  /* Block: 3 s more delay over 10 s is 0.3 s/s; none without a row before. */
  collect_quantity_of("block", 0, &q);
  CHECK(collect_row_value(&q, 5000000000, 20000000000, 0, 1, 2000000000, 10000000000, &v) == 0 &&
        v > 0.2999 && v < 0.3001);
  CHECK(collect_row_value(&q, 5000000000, 20000000000, 0, 0, 0, 0, &v) == -ENODATA);
  /* Restarted: 1 s of delay, counted whole over the 10 s. */
  CHECK(collect_row_value(&q, 1000000000, 20000000000, 0, 1, 9000000000, 10000000000, &v) == 0 &&
        v > 0.0999 && v < 0.1001);
  /* Scraped with ?seconds=5: 2.5 s of delay in 5 s. */
  collect_quantity_of("block", 1, &q);
  CHECK(collect_row_value(&q, 2500000000, 20000000000, 5000000000, 0, 0, 0, &v) == 0 && v == 0.5);
  /* Memory: bytes in use as they are; threadcreate per second. */
  collect_quantity_of("memory", 0, &q);
  CHECK(collect_row_value(&q, 67108864, 1, 0, 0, 0, 0, &v) == 0 && v == 67108864);
  collect_quantity_of("threadcreate", 0, &q);
  CHECK(collect_row_value(&q, 30, 4000000000, 0, 1, 10, 2000000000, &v) == 0 && v == 10);
  collect_quantity_of("custom", 0, &q);
  CHECK(!q.known);
}

/* A long range, reduced as it is read (many batches of the series' sum):
 * 300 heap scrapes of one series, interleaved with a second series, the
 * target restarting before scrapes 100 and 230. The allocated bytes of
 * stack 1 count 10 a scrape from each start: 990 in the first stretch
 * (its first scrape the baseline), then 1300 and 700 whole; the bytes in
 * use (50 to 650, by k % 7) average to what a plain loop says. */
#define LONG_N 300
static int64_t long_alloc(int k) { return 10 * (k < 100 ? k + 1 : k < 230 ? k - 99 : k - 229); }
static int64_t long_inuse(int k) { return k % 7 * 100 + 50; }

static void test_long(void) {
  int64_t inuse_sum = 0, all_alloc = 0;
  for (int k = 0; k < LONG_N; k++) {
    inuse_sum += long_inuse(k);
    all_alloc += long_alloc(k);
  }
  static const collect_mode_t modes[] = {COLLECT_MODE_AUTO, COLLECT_MODE_SUM, COLLECT_MODE_LATEST};
  for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
    collect_range_t *r;
    char err[256] = "", applied[64];
    CHECK(collect_range_new(modes[m], &r) == 0);
    for (int k = 0; k < LONG_N; k++) {
      int rc = collect_range_add(r, "h", make(HEAP(k, long_alloc(k), 1, long_inuse(k))), err,
                                 sizeof err);
      CHECK(rc == 0);
      CHECK(collect_range_add(r, "other", make(HEAP(0, 0, 1, 1000)), err, sizeof err) == 0);
    }
    cprof__pf_t *p = NULL;
    CHECK(collect_range_finish(r, &p, applied, sizeof applied, err, sizeof err) == 0 && p);
    CHECK_EQ_INT(collect_range_count(r), 2 * LONG_N);
    if (modes[m] == COLLECT_MODE_AUTO) {
      CHECK_EQ_STR(applied, "delta+avg");
      CHECK_EQ_INT(value(p, 1, 1), 990 + 1300 + 700);
      CHECK_EQ_INT(collect_range_restarts(r), 2);
      /* The average rounded, plus the other series' 1000. */
      CHECK_EQ_INT(value(p, 1, 3), (inuse_sum + LONG_N / 2) / LONG_N + 1000);
    } else if (modes[m] == COLLECT_MODE_SUM) {
      CHECK_EQ_INT(value(p, 1, 1), all_alloc);
      CHECK_EQ_INT(value(p, 1, 3), inuse_sum + 1000 * LONG_N);
    } else {
      CHECK_EQ_INT(value(p, 1, 1), long_alloc(LONG_N - 1));
      CHECK_EQ_INT(value(p, 1, 3), long_inuse(LONG_N - 1) + 1000);
    }
    cprof__pf_free(p);
    collect_range_free(r);
  }
}

int main(void) {
  test_row_value();
  test_cumulative();
  test_restart();
  test_before();
  test_heap();
  test_cpu();
  test_small_counts();
  test_baseline_only();
  test_names();
  test_long();
  return check_result("collect/range");
}

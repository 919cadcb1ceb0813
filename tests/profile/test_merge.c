/* Merging and subtracting profiles (src/model/merge.c), against what
 * pprof's profile.Merge and -diff_base give. */
#include <errno.h>

#include "check.h"
#include "profile/pf_fixture.h"

/* A small CPU-like profile: two types, a mapping, an inlined frame. */
static fx_t cpu_profile(void) {
  fx_t f = fx_new("samples/count cpu/nanoseconds", 32);
  fx_sample(&f, "main;work;leaf", (int64_t[]){1, 10});
  fx_sample(&f, "main;work>inl", (int64_t[]){2, 20});
  fx_sample(&f, "main;@/lib/libc.so.6", (int64_t[]){3, 30});
  fx_sample(&f, "main;#abc", (int64_t[]){4, 40});
  f.p->period_type = (cprof__value_type_t){"cpu", "nanoseconds"};
  f.p->period = 10000000;
  return f;
}

static void test_merge_identical(void) {
  fx_t a = cpu_profile(), b = cpu_profile();
  cprof__pf_t *ps[2] = {a.p, b.p}, *m;
  char err[128] = "";
  CHECK_EQ_INT(cprof__pf_merge(ps, 2, &m, err, sizeof err), 0);
  CHECK_DUMP(m, "main;#abc 8,80\n"
                "main;@libc.so.6 6,60\n"
                "main;work;leaf 2,20\n"
                "main;work>inl 4,40");
  /* Everything once, numbered from 1. */
  CHECK_EQ_INT(m->n_locations, a.p->n_locations);
  CHECK_EQ_INT(m->n_functions, a.p->n_functions);
  CHECK_EQ_INT(m->n_mappings, 1);
  CHECK_EQ_INT(m->n_samples, 4);
  for (size_t i = 0; i < m->n_locations; i++)
    CHECK_EQ_INT(m->locations[i].id, i + 1);
  for (size_t i = 0; i < m->n_functions; i++)
    CHECK_EQ_INT(m->functions[i].id, i + 1);
  CHECK_EQ_STR(m->mappings[0].file, "/lib/libc.so.6");
  CHECK_EQ_STR(m->period_type.type, "cpu");
  CHECK_EQ_INT(m->period, 10000000);
  /* The inputs are untouched and the output stands alone. */
  CHECK_EQ_INT(a.p->samples[0].values[1], 10);
  cprof__pf_free(a.p);
  cprof__pf_free(b.p);
  CHECK_EQ_STR(m->samples[0].locations[0]->lines[0].function->name, "leaf");
  cprof__pf_free(m);
}

static void test_merge_union_and_labels(void) {
  fx_t a = fx_new("alloc_space/bytes", 16), b = fx_new("alloc_space/bytes", 16);
  cprof__pf_sample_t *s;
  s = fx_sample(&a, "main;f", (int64_t[]){100});
  fx_label(&a, s, "handler", "/x");
  fx_num_label(&a, s, "bytes", 64, "bytes");
  s = fx_sample(&a, "main;f", (int64_t[]){7}); /* no labels: another sample */
  fx_sample(&a, "main;zero", (int64_t[]){0});  /* all zero: dropped */
  /* The same labels in another order are the same sample. */
  s = fx_sample(&b, "main;f", (int64_t[]){1});
  fx_num_label(&b, s, "bytes", 64, "bytes");
  fx_label(&b, s, "handler", "/x");
  s = fx_sample(&b, "main;f", (int64_t[]){2});
  fx_label(&b, s, "handler", "/y");
  s = fx_sample(&b, "main;f", (int64_t[]){4}); /* another unit: another sample */
  fx_label(&b, s, "handler", "/x");
  fx_num_label(&b, s, "bytes", 64, "");
  fx_sample(&b, "main;g", (int64_t[]){5});
  a.p->time_nanos = 2000;
  a.p->duration_nanos = 10;
  a.p->period = 512;
  b.p->time_nanos = 1000;
  b.p->duration_nanos = 5;
  b.p->period = 1024;
  const char *ca[] = {"one", "two"}, *cb[] = {"two", "three"};
  a.p->comments = ca;
  a.p->n_comments = 2;
  b.p->comments = cb;
  b.p->n_comments = 2;
  b.p->default_sample_type = "alloc_space";

  cprof__pf_t *ps[2] = {a.p, b.p}, *m;
  char err[128] = "";
  CHECK_EQ_INT(cprof__pf_merge(ps, 2, &m, err, sizeof err), 0);
  CHECK_DUMP(m, "main;f 101 bytes=64 bytes handler=/x\n"
                "main;f 2 handler=/y\n"
                "main;f 4 bytes=64 handler=/x\n"
                "main;f 7\n"
                "main;g 5");
  CHECK_EQ_INT(m->time_nanos, 1000);
  CHECK_EQ_INT(m->duration_nanos, 15); /* summed, as pprof's combineHeaders */
  CHECK_EQ_INT(m->period, 1024);
  CHECK_EQ_INT(m->n_comments, 3);
  if (m->n_comments == 3) {
    CHECK_EQ_STR(m->comments[0], "one");
    CHECK_EQ_STR(m->comments[1], "two");
    CHECK_EQ_STR(m->comments[2], "three");
  }
  CHECK_EQ_STR(m->default_sample_type, "alloc_space");
  /* "zero" was only in a zero sample: not in the output. */
  for (size_t i = 0; i < m->n_functions; i++)
    CHECK(strcmp(m->functions[i].name, "zero") != 0);
  CHECK_EQ_INT(m->n_functions, 3);
  cprof__pf_free(m);

  /* One profile alone is a copy (pprof's Compact). */
  CHECK_EQ_INT(cprof__pf_merge(ps, 1, &m, err, sizeof err), 0);
  CHECK_DUMP(m, "main;f 100 bytes=64 bytes handler=/x\n"
                "main;f 7");
  cprof__pf_free(m);
  cprof__pf_free(a.p);
  cprof__pf_free(b.p);
}

/* The same library loaded at another address (ASLR) is the same mapping,
 * and its locations move with it. */
static void test_merge_relocated_mapping(void) {
  fx_t a = fx_new("samples/count", 8), b = fx_new("samples/count", 8);
  fx_sample(&a, "main@/bin/app;f@/bin/app", (int64_t[]){1});
  fx_sample(&b, "main@/bin/app;f@/bin/app", (int64_t[]){2});
  uint64_t shift = 0x5550000;
  b.p->mappings[0].start += shift;
  b.p->mappings[0].limit += shift;
  for (size_t i = 0; i < b.p->n_locations; i++)
    b.p->locations[i].address += shift;
  cprof__pf_t *ps[2] = {a.p, b.p}, *m;
  char err[128];
  CHECK_EQ_INT(cprof__pf_merge(ps, 2, &m, err, sizeof err), 0);
  CHECK_DUMP(m, "main;f 3");
  CHECK_EQ_INT(m->n_mappings, 1);
  CHECK_EQ_INT(m->n_locations, 2);
  CHECK_EQ_INT(m->mappings[0].start, a.p->mappings[0].start);
  CHECK_EQ_INT(m->samples[0].locations[0]->address, a.p->samples[0].locations[0]->address);
  CHECK_EQ_INT(m->samples[0].locations[1]->address, a.p->samples[0].locations[1]->address);
  cprof__pf_free(m);
  cprof__pf_free(a.p);
  cprof__pf_free(b.p);
}

static void test_merge_incompatible(void) {
  fx_t a = fx_new("samples/count cpu/nanoseconds", 4), b = fx_new("alloc_space/bytes", 4);
  cprof__pf_t *ps[2] = {a.p, b.p}, *m = (cprof__pf_t *)1;
  char err[160] = "";
  CHECK_EQ_INT(cprof__pf_merge(ps, 2, &m, err, sizeof err), -EINVAL);
  CHECK(m == NULL);
  CHECK_EQ_STR(err, "profile 2's sample types (alloc_space/bytes) differ from profile 1's "
                    "(samples/count, cpu/nanoseconds)");
  CHECK(strchr(err, '\n') == NULL);
  CHECK_EQ_INT(cprof__pf_diff(a.p, b.p, &m, err, sizeof err), -EINVAL);
  CHECK_EQ_STR(err, "BASE's sample types (samples/count, cpu/nanoseconds) differ from NEW's "
                    "(alloc_space/bytes)");
  /* Same sample types, another period type. */
  fx_t c = fx_new("samples/count cpu/nanoseconds", 4);
  c.p->period_type = (cprof__value_type_t){"wall", "nanoseconds"};
  ps[1] = c.p;
  CHECK_EQ_INT(cprof__pf_merge(ps, 2, &m, err, sizeof err), -EINVAL);
  CHECK_EQ_STR(err, "profile 2's period type (wall/nanoseconds) differs from profile 1's (/)");
  CHECK_EQ_INT(cprof__pf_merge(ps, 0, &m, err, sizeof err), -EINVAL);
  CHECK_EQ_STR(err, "no profiles to merge");
  cprof__pf_free(a.p);
  cprof__pf_free(b.p);
  cprof__pf_free(c.p);
}

/* The graph's nodes' flat and cum values, "name flat cum" a line, in the
 * graph's order, and its total. */
static void graph_of(const cprof__pf_t *p, char *buf, size_t len, int64_t *total) {
  cprof__pf_graph_options_t go = {.sample_index = 1};
  cprof__pf_graph_t *g = NULL;
  size_t at = 0;
  buf[0] = 0;
  *total = -1;
  if (cprof__pf_graph(p, &go, &g) != 0)
    return;
  for (size_t i = 0; i < g->n_nodes && at < len; i++) {
    int n = snprintf(buf + at, len - at, "%s%s %lld %lld", i ? "\n" : "", g->nodes[i]->name,
                     (long long)g->nodes[i]->flat, (long long)g->nodes[i]->cum);
    at += n > 0 ? (size_t)n : 0;
  }
  *total = g->total;
  cprof__pf_graph_free(g);
}

static void test_diff_self(void) {
  fx_t a = cpu_profile(), b = cpu_profile();
  cprof__pf_t *d;
  char err[128], nodes[512];
  int64_t total;
  CHECK_EQ_INT(cprof__pf_diff(a.p, b.p, &d, err, sizeof err), 0);
  /* As pprof: NEW's samples and BASE's negated, labelled pprof::base,
   * each stack twice; every node nets to zero, so the graph has none, and
   * its total is BASE's. */
  CHECK_EQ_INT(d->n_samples, 2 * a.p->n_samples);
  CHECK_EQ_INT(d->n_sample_types, 2);
  graph_of(d, nodes, sizeof nodes, &total);
  CHECK_EQ_STR(nodes, "");
  graph_of(a.p, nodes, sizeof nodes, &total);
  int64_t base_total = total;
  graph_of(d, nodes, sizeof nodes, &total);
  CHECK_EQ_INT(total, base_total);
  CHECK(total > 0);
  cprof__pf_free(d);
  /* A profile minus itself, the same pointer. */
  CHECK_EQ_INT(cprof__pf_diff(a.p, a.p, &d, err, sizeof err), 0);
  CHECK_EQ_INT(d->n_samples, 2 * a.p->n_samples);
  graph_of(d, nodes, sizeof nodes, &total);
  CHECK_EQ_STR(nodes, "");
  cprof__pf_free(d);
  cprof__pf_free(a.p);
  cprof__pf_free(b.p);
}

static void test_diff_nets(void) {
  fx_t base = fx_new("samples/count cpu/nanoseconds", 16);
  fx_t new_ = fx_new("samples/count cpu/nanoseconds", 16);
  fx_sample(&base, "main;a", (int64_t[]){5, 50});
  fx_sample(&base, "main;b", (int64_t[]){3, 30});
  fx_sample(&base, "main;d", (int64_t[]){4, 40});
  fx_sample(&base, "main;e", (int64_t[]){1, 10});
  fx_sample(&base, "main;f", (int64_t[]){0, 0}); /* zero: dropped, as Merge drops it */
  cprof__pf_sample_t *s = fx_sample(&base, "main;g", (int64_t[]){1, 5});
  fx_label(&base, s, "pprof::base", "old"); /* replaced, as pprof's SetLabel */
  fx_sample(&new_, "main;a", (int64_t[]){7, 60});
  fx_sample(&new_, "main;b", (int64_t[]){3, 30});
  fx_sample(&new_, "main;c", (int64_t[]){2, 20});
  fx_sample(&new_, "main;e", (int64_t[]){1, 20});
  s = fx_sample(&new_, "main;d", (int64_t[]){1, 10});
  fx_label(&new_, s, "k", "v");
  new_.p->time_nanos = 5000;
  base.p->time_nanos = 4000;
  cprof__pf_t *d;
  char err[128], nodes[512];
  int64_t total;
  CHECK_EQ_INT(cprof__pf_diff(base.p, new_.p, &d, err, sizeof err), 0);
  /* BASE's samples stay apart from NEW's, negated and labelled. */
  CHECK_DUMP(d, "main;a -5,-50 pprof::base=true\n"
                "main;a 7,60\n"
                "main;b -3,-30 pprof::base=true\n"
                "main;b 3,30\n"
                "main;c 2,20\n"
                "main;d -4,-40 pprof::base=true\n"
                "main;d 1,10 k=v\n"
                "main;e -1,-10 pprof::base=true\n"
                "main;e 1,20\n"
                "main;g -1,-5 pprof::base=true");
  CHECK_EQ_INT(d->time_nanos, 4000);
  /* The graph nets them: b is gone; the total is BASE's (50+30+40+10+5). */
  graph_of(d, nodes, sizeof nodes, &total);
  CHECK_EQ_STR(nodes, "d -30 -30\n" /* by |flat|, as pprof sorts */
                      "c 20 20\n"
                      "a 10 10\n"
                      "e 10 10\n"
                      "g -5 -5\n"
                      "main 0 5");
  CHECK_EQ_INT(total, 135);
  cprof__pf_free(d);
  cprof__pf_free(base.p);
  cprof__pf_free(new_.p);
}

int main(void) {
  test_merge_identical();
  test_merge_union_and_labels();
  test_merge_relocated_mapping();
  test_merge_incompatible();
  test_diff_self();
  test_diff_nets();
  return check_result("test_merge");
}

/* A process tree's profiles as one (src/tree/merge.c): each process's
 * profile.proto, made by hand (tests/profile/pf_fixture.h, then encoded)
 * or by the builder, merged with a numeric pid label on every sample; the
 * window is the longest part's, not their sum; the processes not reached
 * are comments; and parts that cannot be merged say which pid and why. */
#include <errno.h>

#include "check.h"
#include "core/buf.h"
#include "model/model.h"
#include "profile/builder.h"
#include "profile/pf_fixture.h"
#include "tree/tree.h"

#define SEC 1000000000LL

/* A process's CPU-like profile, encoded (gzip or not) into out. */
static void encode(fx_t *f, int gzip, cprof__buf_t *out) {
  char err[128] = "";
  cprof__buf_init(out);
  CHECK_EQ_INT(cprof__pf_encode(f->p, gzip, out, err, sizeof err), 0);
  cprof__pf_free(f->p);
}

static fx_t cpu_like(void) {
  fx_t f = fx_new("samples/count cpu/nanoseconds", 16);
  f.p->period_type = (cprof__value_type_t){"cpu", "nanoseconds"};
  f.p->period = 10000000;
  return f;
}

/* The merged profile decoded, or NULL. */
static cprof__pf_t *decode(const cprof__buf_t *b, size_t from) {
  cprof__pf_t *p = NULL;
  char err[128] = "";
  int rc = cprof__pf_decode(b->data + from, b->len - from, &p, err, sizeof err);
  CHECK_EQ_INT(rc, 0);
  if (rc)
    fprintf(stderr, "  decode: %s\n", err);
  return p;
}

/* Every sample has exactly one pid label, and it is a number. */
static void check_pid_labels(const cprof__pf_t *p) {
  for (size_t i = 0; i < p->n_samples; i++) {
    int pids = 0;
    for (size_t k = 0; k < p->samples[i].n_labels; k++) {
      const cprof__label_t *l = &p->samples[i].labels[k];
      if (strcmp(l->key, "pid") != 0)
        continue;
      pids++;
      CHECK(l->str == NULL);
      CHECK(l->num_unit == NULL || l->num_unit[0] == '\0');
    }
    CHECK_EQ_INT(pids, 1);
  }
}

static int one_line(const char *s) { return s[0] && !strchr(s, '\n') && !strchr(s, '\r'); }

/* Two processes: values summed per stack and pid, never across pids. */
static void test_two_processes(void) {
  fx_t a = cpu_like(), b = cpu_like();
  fx_sample(&a, "main;work;leaf", (int64_t[]){1, 10});
  fx_sample(&a, "main;work;leaf", (int64_t[]){2, 20});
  cprof__pf_sample_t *s = fx_sample(&a, "main;idle", (int64_t[]){5, 50});
  fx_label(&a, s, "pid", "stale"); /* replaced, not kept beside */
  fx_label(&a, s, "thread", "main");
  fx_sample(&b, "main;work;leaf", (int64_t[]){4, 40});
  fx_sample(&b, "main;other", (int64_t[]){6, 60});
  a.p->time_nanos = 2000 * SEC;
  a.p->duration_nanos = 10 * SEC;
  b.p->time_nanos = 1999 * SEC;
  b.p->duration_nanos = 12 * SEC;
  b.p->period = 20000000;
  const char *comments[] = {"made by a"};
  a.p->comments = comments;
  a.p->n_comments = 1;
  cprof__buf_t pa, pb;
  encode(&a, 0, &pa);
  encode(&b, 1, &pb);

  cprof__tree_part_t parts[] = {{100, pa.data, pa.len}, {200, pb.data, pb.len}};
  const char *missing[] = {"pid 300 (nginx): not reached: no answer in time",
                           "pid 301 (nginx): not reached: cannot connect: Connection refused"};
  cprof__buf_t out;
  cprof__buf_init(&out);
  cprof__buf_puts(&out, "before"); /* appended to, not replaced */
  char err[200] = "";
  CHECK_EQ_INT(cprof__tree_merge(parts, 2, missing, 2, &out, err, sizeof err), 0);
  CHECK_EQ_STR(err, "");
  CHECK(out.len > 8 && memcmp(out.data, "before", 6) == 0);
  /* gzip-compressed, as every profile.proto cprof serves. */
  CHECK(out.len > 8 && (unsigned char)out.data[6] == 0x1f && (unsigned char)out.data[7] == 0x8b);
  cprof__pf_t *m = decode(&out, 6);
  if (m) {
    CHECK_DUMP(m, "main;idle 5,50 pid=100 thread=main\n"
                  "main;other 6,60 pid=200\n"
                  "main;work;leaf 3,30 pid=100\n"
                  "main;work;leaf 4,40 pid=200");
    check_pid_labels(m);
    CHECK_EQ_INT(m->n_sample_types, 2);
    CHECK_EQ_STR(m->sample_types[1].type, "cpu");
    CHECK_EQ_STR(m->period_type.type, "cpu");
    CHECK_EQ_INT(m->period, 20000000);
    /* Side by side over one window: the longest, not the sum. */
    CHECK_EQ_INT(m->duration_nanos, 12 * SEC);
    CHECK_EQ_INT(m->time_nanos, 1999 * SEC);
    CHECK_EQ_INT(m->n_comments, 3);
    if (m->n_comments == 3) {
      CHECK_EQ_STR(m->comments[0], "made by a");
      CHECK_EQ_STR(m->comments[1], missing[0]);
      CHECK_EQ_STR(m->comments[2], missing[1]);
    }
    cprof__pf_free(m);
  }
  cprof__buf_free(&out);

  /* One process alone, with nobody else reached: its profile, labelled,
   * and the comment. */
  cprof__buf_init(&out);
  CHECK_EQ_INT(cprof__tree_merge(parts + 1, 1, missing, 1, &out, err, sizeof err), 0);
  m = decode(&out, 0);
  if (m) {
    CHECK_DUMP(m, "main;other 6,60 pid=200\n"
                  "main;work;leaf 4,40 pid=200");
    CHECK_EQ_INT(m->duration_nanos, 12 * SEC);
    CHECK_EQ_INT(m->n_comments, 1);
    cprof__pf_free(m);
  }
  cprof__buf_free(&out);
  cprof__buf_free(&pa);
  cprof__buf_free(&pb);
}

/* The parts the real encoder writes: the builder's, whose pseudo frames
 * need no symbols, with a label of their own kept. */
static void test_builder_parts(void) {
  cprof__profile_desc_t desc = {
      .sample_types = {{"samples", "count"}, {"cpu", "nanoseconds"}},
      .n_sample_types = 2,
      .period_type = {"cpu", "nanoseconds"},
      .period = 10000000,
      .time_nanos = 1700000000 * SEC,
  };
  cprof__buf_t bufs[3];
  int64_t durations[3] = {3 * SEC, 5 * SEC, 4 * SEC};
  for (int i = 0; i < 3; i++) {
    cprof__builder_t *b = cprof__builder_new(&desc);
    CHECK(b != NULL);
    if (!b)
      return;
    cprof__label_t thread = {.key = "thread", .str = "worker"};
    CHECK_EQ_INT(
        cprof__builder_add_pseudo(b, "[busy]", (int64_t[]){i + 1, (i + 1) * 100}, &thread, 1), 0);
    CHECK_EQ_INT(cprof__builder_add_pseudo(b, "[busy]", (int64_t[]){1, 100}, &thread, 1), 0);
    CHECK_EQ_INT(cprof__builder_add_pseudo(b, "[idle]", (int64_t[]){7, 700}, NULL, 0), 0);
    cprof__builder_set_duration(b, durations[i]);
    cprof__buf_init(&bufs[i]);
    CHECK_EQ_INT(cprof__builder_write_proto(b, &bufs[i]), 0);
    cprof__builder_free(b);
  }
  cprof__tree_part_t parts[3] = {{812, bufs[0].data, bufs[0].len},
                                 {813, bufs[1].data, bufs[1].len},
                                 {2147483647, bufs[2].data, bufs[2].len}};
  cprof__buf_t out;
  cprof__buf_init(&out);
  char err[200] = "";
  CHECK_EQ_INT(cprof__tree_merge(parts, 3, NULL, 0, &out, err, sizeof err), 0);
  cprof__pf_t *m = decode(&out, 0);
  if (m) {
    CHECK_DUMP(m, "[busy] 2,200 pid=812 thread=worker\n"
                  "[busy] 3,300 pid=813 thread=worker\n"
                  "[busy] 4,400 pid=2147483647 thread=worker\n"
                  "[idle] 7,700 pid=2147483647\n"
                  "[idle] 7,700 pid=812\n"
                  "[idle] 7,700 pid=813");
    check_pid_labels(m);
    CHECK_EQ_INT(m->duration_nanos, 5 * SEC);
    CHECK_EQ_INT(m->n_comments, 0);
    cprof__pf_free(m);
  }
  cprof__buf_free(&out);
  for (int i = 0; i < 3; i++)
    cprof__buf_free(&bufs[i]);
}

/* A part that is not a profile: which pid, and why, on one line; nothing
 * appended. */
static void test_not_a_profile(void) {
  fx_t a = cpu_like(), b = cpu_like();
  fx_sample(&a, "main", (int64_t[]){1, 1});
  fx_sample(&b, "main", (int64_t[]){1, 1});
  cprof__buf_t pa, pb;
  encode(&a, 0, &pa);
  encode(&b, 1, &pb);
  static const char text[] = "cannot take a profile: another is running\n";
  struct {
    const void *data;
    size_t len;
  } bad[] = {
      {text, sizeof text - 1},
      {pb.data, pb.len / 2}, /* gzip cut in half */
      {pa.data, pa.len - 3}, /* profile.proto cut short */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    cprof__tree_part_t parts[] = {{100, pa.data, pa.len}, {4242, bad[i].data, bad[i].len}};
    cprof__buf_t out;
    cprof__buf_init(&out);
    char err[200] = "";
    CHECK_EQ_INT(cprof__tree_merge(parts, 2, NULL, 0, &out, err, sizeof err), -EINVAL);
    fprintf(stderr, "  not a profile %zu: %s\n", i, err);
    CHECK(strncmp(err, "pid 4242: ", 10) == 0);
    CHECK(strlen(err) > 10);
    CHECK(one_line(err));
    CHECK_EQ_INT(out.len, 0);
    cprof__buf_free(&out);
  }
  cprof__buf_free(&pa);
  cprof__buf_free(&pb);
}

/* Parts of different types (a CPU profile and a heap profile: the
 * members answered different requests, or run different cprofs): refused,
 * with the reason, naming the pids. */
static void test_different_types(void) {
  fx_t a = cpu_like(), b = cpu_like(), c = fx_new("alloc_space/bytes", 4);
  fx_sample(&a, "main", (int64_t[]){1, 1});
  b.p->sample_types[1] = (cprof__value_type_t){"wall", "nanoseconds"};
  fx_sample(&b, "main", (int64_t[]){1, 1});
  c.p->period_type = (cprof__value_type_t){"space", "bytes"};
  fx_sample(&c, "main", (int64_t[]){64});
  cprof__buf_t pa, pb, pc;
  encode(&a, 1, &pa);
  encode(&b, 1, &pb);
  encode(&c, 1, &pc);
  const cprof__buf_t *others[] = {&pb, &pc};
  for (int i = 0; i < 2; i++) {
    cprof__tree_part_t parts[] = {
        {100, pa.data, pa.len}, {100, pa.data, pa.len}, {777, others[i]->data, others[i]->len}};
    cprof__buf_t out;
    cprof__buf_init(&out);
    char err[200] = "";
    CHECK_EQ_INT(cprof__tree_merge(parts, 3, NULL, 0, &out, err, sizeof err), -EINVAL);
    fprintf(stderr, "  different types %d: %s\n", i, err);
    CHECK(one_line(err));
    CHECK(strstr(err, i == 0 ? "sample types" : "period type") != NULL);
    CHECK(strstr(err, "pid 777") != NULL);
    CHECK(strstr(err, "pid 100") != NULL);
    CHECK_EQ_INT(out.len, 0);
    cprof__buf_free(&out);
  }
  cprof__buf_free(&pa);
  cprof__buf_free(&pb);
  cprof__buf_free(&pc);
}

/* No part at all: refused, not a crash. */
static void test_no_parts(void) {
  cprof__buf_t out;
  cprof__buf_init(&out);
  char err[200] = "";
  const char *missing[] = {"pid 1: not reached"};
  CHECK_EQ_INT(cprof__tree_merge(NULL, 0, missing, 1, &out, err, sizeof err), -EINVAL);
  CHECK(one_line(err));
  CHECK_EQ_INT(out.len, 0);
  cprof__buf_free(&out);
}

int main(void) {
  test_two_processes();
  test_builder_parts();
  test_not_a_profile();
  test_different_types();
  test_no_parts();
  return check_result("tree/test_merge");
}

/* Custom profiles (cprof_profile_new, _add, _remove): every bad argument,
 * counts through adds and removes, adds from several threads at once, the
 * stack an add records (it starts at the caller; skip drops frames above
 * it), the delta between two snapshots, and the profile as the router
 * serves it: in the index with its count, debug=1 text, debug=0 gzip proto. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "check.h"
#include "cprof.h"
#include "registry/custom.h"
#include "registry/registry.h"
#include "request.h"

/* The response body as a string (the text ones), or "". */
static char *body(const cprof_response_t *r) {
  char *s = malloc(r->body_len + 1);
  memcpy(s, r->body ? r->body : "", r->body_len);
  s[r->body_len] = 0;
  return s;
}

static void test_bad_arguments(void) {
  errno = 0;
  CHECK(cprof_profile_new(NULL, "x") == NULL && errno == EINVAL);
  errno = 0;
  CHECK(cprof_profile_new("", "x") == NULL && errno == EINVAL);
  errno = 0;
  CHECK(cprof_profile_new("a/b", "x") == NULL && errno == EINVAL);
  errno = 0;
  CHECK(cprof_profile_new("with space", "x") == NULL && errno == EINVAL);
  errno = 0;
  CHECK(cprof_profile_new("..", "x") == NULL && errno == EINVAL);
  char long_name[66];
  memset(long_name, 'a', 65);
  long_name[65] = 0;
  errno = 0;
  CHECK(cprof_profile_new(long_name, "x") == NULL && errno == EINVAL);
  long_name[64] = 0; /* 64 is the most */
  CHECK(cprof_profile_new(long_name, NULL) != NULL);
  const char *taken[] = {"heap", "goroutine", "profile", "threads", "cmdline", "symbol"};
  for (size_t i = 0; i < sizeof taken / sizeof taken[0]; i++) {
    errno = 0;
    CHECK(cprof_profile_new(taken[i], "x") == NULL && errno == EEXIST);
  }
  cprof_profile_t *p = cprof_profile_new("test.bad-args_1", "one line");
  CHECK(p != NULL);
  errno = 0;
  CHECK(cprof_profile_new("test.bad-args_1", "again") == NULL && errno == EEXIST);
  int key;
  CHECK_EQ_INT(cprof_profile_add(NULL, &key, 0), -EINVAL);
  CHECK_EQ_INT(cprof_profile_add(p, NULL, 0), -EINVAL);
  CHECK_EQ_INT(cprof_profile_add(p, &key, -1), -EINVAL);
  CHECK_EQ_INT(cprof_profile_add(p, &key, 0), 0);
  CHECK_EQ_INT(cprof_profile_add(p, &key, 0), -EEXIST);
  CHECK_EQ_INT(cprof_profile_remove(NULL, &key), -EINVAL);
  CHECK_EQ_INT(cprof_profile_remove(p, NULL), -ENOENT);
  CHECK_EQ_INT(cprof_profile_remove(p, &long_name), -ENOENT);
  CHECK_EQ_INT(cprof_profile_remove(p, &key), 0);
  CHECK_EQ_INT(cprof_profile_remove(p, &key), -ENOENT);
  /* The description is one line in the index; NULL gets one. */
  const cprof__profile_t *reg = cprof__registry_lookup("test.bad-args_1");
  CHECK(reg != NULL && strcmp(reg->desc, "one line") == 0);
  CHECK(reg != NULL && strcmp(reg->failure, "could not write the test.bad-args_1 profile") == 0);
  cprof_profile_new("test.multiline", "two\nlines");
  reg = cprof__registry_lookup("test.multiline");
  CHECK(reg != NULL && strchr(reg->desc, '\n') == NULL);
  reg = cprof__registry_lookup(long_name);
  CHECK(reg != NULL && reg->desc && reg->desc[0]);
}

static void test_counts(void) {
  cprof_profile_t *p = cprof_profile_new("test.counts", NULL);
  const cprof__profile_t *reg = cprof__registry_lookup("test.counts");
  CHECK(p != NULL && reg != NULL);
  if (!p || !reg)
    return;
  static char keys[5000];
  for (int i = 0; i < 5000; i++)
    CHECK_EQ_INT(cprof_profile_add(p, &keys[i], 0), 0);
  CHECK_EQ_INT(reg->ops->count(reg), 5000);
  /* Every other one removed, then added back and removed again: the
   * table's deletions keep every other key reachable. */
  for (int i = 0; i < 5000; i += 2)
    CHECK_EQ_INT(cprof_profile_remove(p, &keys[i]), 0);
  CHECK_EQ_INT(reg->ops->count(reg), 2500);
  int bad = 0;
  for (int i = 1; i < 5000; i += 2)
    bad += cprof_profile_add(p, &keys[i], 0) != -EEXIST;
  for (int i = 0; i < 5000; i += 2)
    bad += cprof_profile_remove(p, &keys[i]) != -ENOENT;
  CHECK_EQ_INT(bad, 0);
  for (int i = 1; i < 5000; i += 2)
    CHECK_EQ_INT(cprof_profile_remove(p, &keys[i]), 0);
  CHECK_EQ_INT(reg->ops->count(reg), 0);
  CHECK_EQ_INT(cprof_profile_add(p, &keys[7], 0), 0);
  CHECK_EQ_INT(reg->ops->count(reg), 1);
}

/* ---- several threads at once ---- */

#define THREADS 4
#define PER_THREAD 20000
static cprof_profile_t *shared;
static char thread_keys[THREADS][PER_THREAD];

static void *adder(void *arg) {
  char *k = arg;
  long bad = 0;
  for (int i = 0; i < PER_THREAD; i++)
    bad += cprof_profile_add(shared, &k[i], 0) != 0;
  for (int i = 0; i < PER_THREAD; i += 4)
    bad += cprof_profile_remove(shared, &k[i]) != 0;
  return (void *)bad;
}

static void test_threads(void) {
  shared = cprof_profile_new("test.threads", NULL);
  CHECK(shared != NULL);
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++)
    pthread_create(&t[i], NULL, adder, thread_keys[i]);
  long bad = 0;
  for (int i = 0; i < THREADS; i++) {
    void *r;
    pthread_join(t[i], &r);
    bad += (long)r;
  }
  CHECK_EQ_INT(bad, 0);
  const cprof__profile_t *reg = cprof__registry_lookup("test.threads");
  CHECK_EQ_INT(reg->ops->count(reg), THREADS * PER_THREAD * 3 / 4);
}

/* ---- the stack of an add ---- */

static cprof_profile_t *stacks;
static int stack_keys[8];

__attribute__((noinline)) int add_from_here(const void *key) {
  int rc = cprof_profile_add(stacks, key, 0);
  __asm__ volatile("" ::: "memory"); /* not a tail call */
  return rc;
}

__attribute__((noinline)) int add_one_up(const void *key) {
  int rc = cprof_profile_add(stacks, key, 1);
  __asm__ volatile("" ::: "memory");
  return rc;
}

__attribute__((noinline)) int call_add_one_up(const void *key) {
  int rc = add_one_up(key);
  __asm__ volatile("" ::: "memory");
  return rc;
}

/* The first frame line ("#\t0xADDR\tfunc+0xOFF\tfile:line") of the record
 * of count n in a count text; "" when none. */
static void first_frame(const char *text, const char *count_line, char *out, size_t size) {
  out[0] = 0;
  const char *at = strstr(text, count_line);
  if (!at || !(at = strstr(at, "\n#\t0x")))
    return;
  at = strchr(at + 3, '\t');
  if (!at)
    return;
  at++;
  size_t n = strcspn(at, "+\t\n");
  if (n >= size)
    n = size - 1;
  memcpy(out, at, n);
  out[n] = 0;
}

static void test_stack(void) {
  stacks = cprof_profile_new("test.stacks", "stacks");
  CHECK(stacks != NULL);
  for (int i = 0; i < 3; i++)
    CHECK_EQ_INT(add_from_here(&stack_keys[i]), 0);
  CHECK_EQ_INT(call_add_one_up(&stack_keys[3]), 0);
  CHECK_EQ_INT(cprof_profile_add(stacks, &stack_keys[4], 1000000), 0);
  cprof_response_t r = get("/debug/pprof/test.stacks", "debug=1");
  char *text = body(&r);
  CHECK_EQ_INT(r.status, 200);
  CHECK(strstr(text, "test.stacks profile: total 5\n") != NULL);
  /* The three adds from one place are one record of 3, whose stack starts
   * at the function that called cprof_profile_add. */
  char fn[128];
  first_frame(text, "\n3 @ ", fn, sizeof fn);
  CHECK_EQ_STR(fn, "add_from_here");
  /* skip 1: the stack starts one frame above add_one_up's. */
  const char *one = strstr(text, "call_add_one_up");
  CHECK(one != NULL);
  CHECK(strstr(text, "\tadd_one_up+") == NULL);
  /* cprof's own frames are never in a stack. */
  CHECK(strstr(text, "\tcprof_profile_add+") == NULL);
  CHECK(strstr(text, "unwind") == NULL);
  if (check_failures)
    fprintf(stderr, "%s", text);
  free(text);
  cprof_response_free(&r);
}

/* ---- the delta ---- */

static int adds_between(void *ctx, long ms) {
  (void)ms;
  int *k = ctx;
  cprof_profile_remove(stacks, &k[0]);
  cprof_profile_add(stacks, &k[5], 0);
  cprof_profile_add(stacks, &k[6], 0);
  return 0;
}

static void test_delta(void) {
  const cprof__profile_t *reg = cprof__registry_lookup("test.stacks");
  cprof__collect_t c = {.debug = 0, .seconds = 1, .wait = adds_between, .ctx = stack_keys};
  cprof__buf_t out;
  cprof__buf_init(&out);
  CHECK_EQ_INT(cprof__profile_collect(reg, &c, &out), 0);
  CHECK(out.len > 2 && (unsigned char)out.data[0] == 0x1f);
  cprof__buf_free(&out);
  CHECK_EQ_INT(reg->ops->count(reg), 6);
  /* The change by itself, as the builder sees it: +2 from here, -1 from
   * add_from_here. Written as text only to read it here. */
  void *base = NULL, *now = NULL;
  CHECK_EQ_INT(reg->ops->snapshot(reg, &base), 0);
  cprof_profile_remove(stacks, &stack_keys[1]);
  cprof_profile_remove(stacks, &stack_keys[2]);
  CHECK_EQ_INT(reg->ops->snapshot(reg, &now), 0);
  cprof__buf_init(&out);
  CHECK_EQ_INT(reg->ops->write(reg, now, base, 1, 1000, &out), 0);
  cprof__buf_putc(&out, 0);
  CHECK(out.data && strstr(out.data, "test.stacks profile: total -2\n") != NULL);
  CHECK(out.data && strstr(out.data, "\n-2 @ ") != NULL);
  /* Unchanged stacks are left out of a delta. */
  CHECK(out.data && strstr(out.data, "call_add_one_up") == NULL);
  if (check_failures && out.data)
    fprintf(stderr, "%s", out.data);
  cprof__buf_free(&out);
  reg->ops->release(reg, base);
  reg->ops->release(reg, now);
}

/* ---- served ---- */

/* One call site for every add (a loop of three may be unrolled into
 * three). */
__attribute__((noinline)) int open_conn(cprof_profile_t *p, const void *key) {
  int rc = cprof_profile_add(p, key, 0);
  __asm__ volatile("" ::: "memory");
  return rc;
}

static void test_served(void) {
  cprof_profile_t *p = cprof_profile_new("test.served", "Connections open now");
  static int conns[3];
  for (int i = 0; i < 3; i++)
    CHECK_EQ_INT(open_conn(p, &conns[i]), 0);
  cprof_response_t r = get("/debug/pprof/", NULL);
  char *text = body(&r);
  CHECK_EQ_INT(r.status, 200);
  const char *at = strstr(text, "test.served");
  CHECK(at != NULL);
  /* The count stands before the name in the index's row. */
  const char *row = at;
  while (row > text && row[-1] != '\n')
    row--;
  char line[512];
  size_t n = strcspn(row, "\n");
  snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), row);
  CHECK(strstr(line, ">3<") != NULL || strstr(line, " 3 ") != NULL);
  CHECK(strstr(text, "Connections open now") != NULL);
  if (!at || check_failures)
    fprintf(stderr, "row: %s\n", line);
  free(text);
  cprof_response_free(&r);

  r = get("/debug/pprof/test.served", "debug=1");
  text = body(&r);
  CHECK_EQ_INT(r.status, 200);
  CHECK(strncmp(text, "test.served profile: total 3\n3 @ ", 33) == 0);
  if (check_failures)
    fprintf(stderr, "%s", text);
  free(text);
  cprof_response_free(&r);

  r = get("/debug/pprof/test.served", NULL);
  CHECK_EQ_INT(r.status, 200);
  CHECK(r.body_len > 2 && (unsigned char)r.body[0] == 0x1f && (unsigned char)r.body[1] == 0x8b);
  /* The sample type is the profile's name: in the string table. */
  unsigned char pb[1 << 16];
  z_stream zs = {0};
  int ok = inflateInit2(&zs, 15 + 16) == Z_OK;
  zs.next_in = (Bytef *)r.body;
  zs.avail_in = (uInt)r.body_len;
  zs.next_out = pb;
  zs.avail_out = sizeof pb - 1;
  ok = ok && inflate(&zs, Z_FINISH) == Z_STREAM_END;
  inflateEnd(&zs);
  CHECK(ok);
  size_t len = sizeof pb - 1 - zs.avail_out;
  CHECK(memmem(pb, len, "\x0btest.served", 12) != NULL);
  CHECK(memmem(pb, len,
               "\x05"
               "count",
               6) != NULL);
  cprof_response_free(&r);

  /* A delta through the router. */
  r = get("/debug/pprof/test.served", "seconds=1");
  CHECK_EQ_INT(r.status, 200);
  cprof_response_free(&r);
}

int main(void) {
  test_bad_arguments();
  test_counts();
  test_threads();
  test_stack();
  test_delta();
  test_served();
  return check_result("test_custom");
}

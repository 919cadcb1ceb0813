/* The collector's storage (tools/cprof/collect/store.c): puts, range
 * queries, reopening, the repair after a crash (simulated, and a real
 * SIGKILL in the middle of puts), retention, failing puts that must
 * leave nothing behind, and the failed scrapes' events (kept, read,
 * retained, and a store of schema 1 gaining them). Everything happens in a
 * mkdtemp directory. */
#include "collect/store.h"

#include "../check.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define SEC 1000000000LL
#define T0 (1700000000LL * SEC) /* 2023-11-14 22:13:20 UTC */

static char err[512];

/* Deterministic bytes for profile i, of a length that varies with i. */
static size_t gen(int64_t i, unsigned char *buf, size_t cap) {
  size_t n = 100 + (size_t)(i * 37 % 900);
  if (n > cap)
    n = cap;
  for (size_t k = 0; k < n; k++)
    buf[k] = (unsigned char)(i * 131 + k * 7);
  return n;
}

static int put_i(collect_store_t *s, const char *job, const char *inst, const char *type, int64_t t,
                 int64_t i, int64_t *id) {
  unsigned char buf[1024];
  size_t n = gen(i, buf, sizeof buf);
  collect_store_label_t labels[] = {{"job", job}, {"instance", inst}, {"env", "prod"}};
  collect_entry_t e = {.job = job,
                       .instance = inst,
                       .type = type,
                       .labels = labels,
                       .nlabels = 3,
                       .time_ns = t,
                       .duration_ns = 10 * SEC,
                       .total = i};
  return collect_store_put(s, &e, buf, n, id, err, sizeof err);
}

typedef struct {
  int64_t id, time_ns, size, total;
  char job[32], instance[32], type[32], labels[128], path[512];
} row_t;

typedef struct {
  row_t rows[4096];
  int n;
} rows_t;

static int collect_row(void *arg, const collect_store_row_t *r) {
  rows_t *rs = arg;
  if (rs->n == (int)(sizeof rs->rows / sizeof rs->rows[0]))
    return -ENOSPC;
  row_t *o = &rs->rows[rs->n++];
  o->id = r->id;
  o->time_ns = r->time_ns;
  o->size = r->size;
  o->total = r->total;
  snprintf(o->job, sizeof o->job, "%s", r->job);
  snprintf(o->instance, sizeof o->instance, "%s", r->instance);
  snprintf(o->type, sizeof o->type, "%s", r->type);
  snprintf(o->labels, sizeof o->labels, "%s", r->labels);
  snprintf(o->path, sizeof o->path, "%s", r->path);
  return 0;
}

static int query(collect_store_t *s, const char *job, const char *inst, const char *type,
                 int64_t from, int64_t to, rows_t *rs) {
  collect_query_t q = {.job = job, .instance = inst, .type = type, .from_ns = from, .to_ns = to};
  rs->n = 0;
  return collect_store_query(s, &q, collect_row, rs, err, sizeof err);
}

static int64_t all_rows(collect_store_t *s, rows_t *rs) {
  int rc = query(s, NULL, NULL, NULL, INT64_MIN, INT64_MAX, rs);
  CHECK_EQ_INT(rc, 0);
  return rs->n;
}

static int is_one_line(const char *s) { return s[0] && !strchr(s, '\n'); }

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f) {
  (void)st, (void)flag, (void)f;
  return remove(p);
}

static void rm_tree(const char *dir) { nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

/* Counts the regular files under dir/profiles whose names end in suffix. */
static int count_files(const char *dir, const char *suffix) {
  char top[512];
  snprintf(top, sizeof top, "%s/profiles", dir);
  DIR *d = opendir(top);
  if (!d)
    return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    char day[1024];
    snprintf(day, sizeof day, "%s/%s", top, e->d_name);
    DIR *dd = opendir(day);
    if (!dd)
      continue;
    struct dirent *f;
    while ((f = readdir(dd))) {
      size_t a = strlen(f->d_name), b = strlen(suffix);
      if (f->d_name[0] != '.' && a >= b && strcmp(f->d_name + a - b, suffix) == 0)
        n++;
    }
    closedir(dd);
  }
  closedir(d);
  return n;
}

static off_t file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? st.st_size : -1;
}

static int sql_exec(const char *dir, const char *sql) {
  char path[512];
  snprintf(path, sizeof path, "%s/index.sqlite", dir);
  sqlite3 *db;
  int rc = sqlite3_open(path, &db);
  if (rc == SQLITE_OK) {
    sqlite3_busy_timeout(db, 10000);
    rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
  }
  sqlite3_close(db);
  return rc;
}

static int collect_series(void *arg, const collect_series_t *se) {
  char *out = arg;
  size_t n = strlen(out);
  snprintf(out + n, 1024 - n, "%s %s %s %lld %lld %lld;", se->type, se->job, se->instance,
           (long long)se->count, (long long)((se->first_ns - T0) / SEC),
           (long long)((se->last_ns - T0) / SEC));
  return 0;
}

static void test_labels(void) {
  collect_store_label_t l[] = {{"job", "x"}, {"env", "a\"b\\c\nd"}, {"instance", "h:1"}};
  char *t = collect_store_labels_text(l, 3);
  CHECK_EQ_STR(t, "{env=\"a\\\"b\\\\c\\nd\",instance=\"h:1\",job=\"x\"}");
  free(t);
  t = collect_store_labels_text(NULL, 0);
  CHECK_EQ_STR(t, "{}");
  free(t);
}

/* Puts across two jobs, instances and types, out of time order; range
 * queries, reads, series and totals; then the same after a reopen. */
static void test_put_query(const char *dir) {
  collect_store_t *s;
  collect_store_repair_t rep = {-1, -1, -1};
  CHECK_EQ_INT(collect_store_open(dir, &s, &rep, err, sizeof err), 0);
  if (!s) {
    fprintf(stderr, "open: %s\n", err);
    return;
  }
  CHECK_EQ_INT(rep.tmp_removed + rep.orphans_removed + rep.rows_removed, 0);
  /* i: job, instance, type, seconds after T0 */
  static const struct {
    const char *job, *inst, *type;
    int t;
  } in[] = {
      {"a", "h1:1", "cpu", 30},    {"a", "h1:1", "cpu", 10},         {"a", "h1:1", "cpu", 20},
      {"a", "h1:1", "memory", 15}, {"a", "h2:2", "cpu", 20},         {"b", "h1:1", "cpu", 25},
      {"b", "h1:1", "cpu", 5},     {"a", "h1:1", "cpu", 86400 + 40}, /* the next UTC day */
  };
  int n = (int)(sizeof in / sizeof in[0]);
  int64_t ids[8], bytes = 0;
  unsigned char buf[1024];
  for (int i = 0; i < n; i++) {
    CHECK_EQ_INT(put_i(s, in[i].job, in[i].inst, in[i].type, T0 + in[i].t * SEC, i, &ids[i]), 0);
    bytes += (int64_t)gen(i, buf, sizeof buf);
  }
  int64_t np, nb;
  collect_store_totals(s, &np, &nb);
  CHECK_EQ_INT(np, n);
  CHECK_EQ_INT(nb, bytes);
  CHECK_EQ_INT(count_files(dir, ".pb.gz"), n);

  rows_t *rs = malloc(sizeof *rs);
  /* One series, a range that cuts off its first and its last row. */
  CHECK_EQ_INT(query(s, "a", "h1:1", "cpu", T0 + 15 * SEC, T0 + 30 * SEC, rs), 0);
  CHECK_EQ_INT(rs->n, 2);
  if (rs->n == 2) {
    CHECK_EQ_INT(rs->rows[0].id, ids[2]);
    CHECK_EQ_INT(rs->rows[1].id, ids[0]);
    CHECK_EQ_INT(rs->rows[0].total, 2);
    CHECK_EQ_INT(rs->rows[0].time_ns, T0 + 20 * SEC);
    CHECK_EQ_INT(rs->rows[0].size, (int64_t)gen(2, buf, sizeof buf));
    CHECK_EQ_STR(rs->rows[0].labels, "{env=\"prod\",instance=\"h1:1\",job=\"a\"}");
    CHECK_EQ_STR(rs->rows[0].type, "cpu");
    CHECK_EQ_INT(file_size(rs->rows[0].path), rs->rows[0].size);
  }
  /* The whole series in time order, across the day boundary. */
  CHECK_EQ_INT(query(s, "a", "h1:1", "cpu", INT64_MIN, INT64_MAX, rs), 0);
  CHECK_EQ_INT(rs->n, 4);
  for (int i = 1; i < rs->n; i++)
    CHECK(rs->rows[i - 1].time_ns < rs->rows[i].time_ns);
  /* Only a type: both jobs and instances, times ascending. */
  CHECK_EQ_INT(query(s, NULL, NULL, "cpu", T0, T0 + 25 * SEC, rs), 0);
  int64_t want_cpu[] = {ids[6], ids[1], ids[2], ids[4], ids[5]};
  CHECK_EQ_INT(rs->n, 5);
  for (int i = 0; i < rs->n && i < 5; i++)
    CHECK_EQ_INT(rs->rows[i].id, want_cpu[i]);
  /* Only a job. */
  CHECK_EQ_INT(query(s, "b", NULL, NULL, INT64_MIN, INT64_MAX, rs), 0);
  CHECK_EQ_INT(rs->n, 2);
  /* Nothing in an empty range. */
  CHECK_EQ_INT(query(s, NULL, NULL, NULL, T0 + 41 * SEC, T0 + 86400 * SEC, rs), 0);
  CHECK_EQ_INT(rs->n, 0);
  /* Labels and limit. */
  collect_query_t q = {.labels = "{env=\"prod\",instance=\"h2:2\",job=\"a\"}",
                       .from_ns = INT64_MIN,
                       .to_ns = INT64_MAX};
  rs->n = 0;
  CHECK_EQ_INT(collect_store_query(s, &q, collect_row, rs, err, sizeof err), 0);
  CHECK_EQ_INT(rs->n, 1);
  CHECK_EQ_INT(rs->n ? rs->rows[0].id : 0, ids[4]);
  /* One label (a tree's pid="N"): whole, after { or ,. */
  static const struct {
    const char *label;
    int n;
  } one[] = {{"env=\"prod\"", 8}, {"instance=\"h2:2\"", 1}, {"job=\"b\"", 2},
             {"nv=\"prod\"", 0},  {"job=\"\"", 0},          {"instance=\"h2:2", 1}};
  for (size_t i = 0; i < sizeof one / sizeof one[0]; i++) {
    q = (collect_query_t){.label = one[i].label, .from_ns = INT64_MIN, .to_ns = INT64_MAX};
    rs->n = 0;
    CHECK_EQ_INT(collect_store_query(s, &q, collect_row, rs, err, sizeof err), 0);
    CHECK_EQ_INT(rs->n, one[i].n);
  }
  q = (collect_query_t){.from_ns = INT64_MIN, .to_ns = INT64_MAX, .limit = 3};
  rs->n = 0;
  CHECK_EQ_INT(collect_store_query(s, &q, collect_row, rs, err, sizeof err), 0);
  CHECK_EQ_INT(rs->n, 3);

  /* Read gives back the bytes put. */
  for (int i = 0; i < n; i++) {
    void *data;
    size_t len;
    CHECK_EQ_INT(collect_store_read(s, ids[i], &data, &len, err, sizeof err), 0);
    size_t want = gen(i, buf, sizeof buf);
    CHECK_EQ_INT(len, want);
    CHECK(data && len == want && memcmp(data, buf, len) == 0);
    free(data);
  }
  void *data;
  size_t len;
  CHECK_EQ_INT(collect_store_read(s, 999999, &data, &len, err, sizeof err), -ENOENT);
  CHECK(is_one_line(err));

  char series[1024] = "";
  CHECK_EQ_INT(collect_store_series(s, collect_series, series, err, sizeof err), 0);
  CHECK_EQ_STR(series, "cpu a h1:1 4 10 86440;cpu a h2:2 1 20 20;cpu b h1:1 2 5 25;"
                       "memory a h1:1 1 15 15;");

  /* A second store on the same directory would repair away our files. */
  collect_store_t *s2;
  CHECK_EQ_INT(collect_store_open(dir, &s2, NULL, err, sizeof err), -EBUSY);
  CHECK(is_one_line(err));

  collect_store_close(s);

  /* Reopen: everything still there, nothing repaired. */
  CHECK_EQ_INT(collect_store_open(dir, &s, &rep, err, sizeof err), 0);
  if (!s) {
    free(rs);
    return;
  }
  CHECK_EQ_INT(rep.tmp_removed + rep.orphans_removed + rep.rows_removed, 0);
  collect_store_totals(s, &np, &nb);
  CHECK_EQ_INT(np, n);
  CHECK_EQ_INT(nb, bytes);
  CHECK_EQ_INT(query(s, "a", "h1:1", "cpu", T0 + 15 * SEC, T0 + 30 * SEC, rs), 0);
  CHECK_EQ_INT(rs->n, 2);
  CHECK_EQ_INT(rs->n == 2 ? rs->rows[1].id : 0, ids[0]);
  collect_store_close(s);
  free(rs);
}

/* What a crash leaves, made by hand: a temporary file, a file no row
 * names, a row whose file is gone and one whose file is short. */
static void test_repair(const char *dir) {
  collect_store_t *s;
  CHECK_EQ_INT(collect_store_open(dir, &s, NULL, err, sizeof err), 0);
  if (!s)
    return;
  rows_t *rs = malloc(sizeof *rs);
  int64_t before = all_rows(s, rs);
  CHECK(before >= 4);
  collect_store_close(s);
  if (before < 4) {
    free(rs);
    return;
  }
  char p[1024];
  snprintf(p, sizeof p, "%s.tmp", rs->rows[0].path);
  CHECK_EQ_INT(link(rs->rows[0].path, p), 0); /* same day dir, a .tmp name */
  char orphan[1024];
  snprintf(orphan, sizeof orphan, "%s", rs->rows[1].path);
  strcpy(strrchr(orphan, '/') + 1, "0123456789abcdef0123456789abcdef.pb.gz");
  int fd = open(orphan, O_WRONLY | O_CREAT | O_EXCL, 0644);
  CHECK(fd >= 0 && write(fd, "x", 1) == 1);
  close(fd);
  CHECK_EQ_INT(unlink(rs->rows[2].path), 0);
  CHECK_EQ_INT(truncate(rs->rows[3].path, 3), 0);
  int64_t gone_id[2] = {rs->rows[2].id, rs->rows[3].id};
  int64_t files = count_files(dir, ".pb.gz");

  collect_store_repair_t rep;
  CHECK_EQ_INT(collect_store_open(dir, &s, &rep, err, sizeof err), 0);
  if (!s) {
    free(rs);
    return;
  }
  CHECK_EQ_INT(rep.tmp_removed, 1);
  CHECK_EQ_INT(rep.orphans_removed, 1);
  CHECK_EQ_INT(rep.rows_removed, 2);
  CHECK_EQ_INT(file_size(p), -1);
  CHECK_EQ_INT(file_size(orphan), -1);
  CHECK_EQ_INT(file_size(rs->rows[3].path), -1); /* the short file went with its row */
  CHECK_EQ_INT(count_files(dir, ".tmp"), 0);
  CHECK_EQ_INT(count_files(dir, ".pb.gz"), files - 2);
  CHECK_EQ_INT(all_rows(s, rs), before - 2);
  for (int i = 0; i < rs->n; i++) {
    CHECK(rs->rows[i].id != gone_id[0] && rs->rows[i].id != gone_id[1]);
    CHECK_EQ_INT(file_size(rs->rows[i].path), rs->rows[i].size);
  }
  int64_t np, nb;
  collect_store_totals(s, &np, &nb);
  CHECK_EQ_INT(np, before - 2);
  collect_store_close(s);

  /* A second open has nothing left to repair. */
  CHECK_EQ_INT(collect_store_open(dir, &s, &rep, err, sizeof err), 0);
  CHECK_EQ_INT(rep.tmp_removed + rep.orphans_removed + rep.rows_removed, 0);
  collect_store_close(s);
  free(rs);
}

static void test_retain(const char *dir) {
  collect_store_t *s;
  CHECK_EQ_INT(collect_store_open(dir, &s, NULL, err, sizeof err), 0);
  if (!s)
    return;
  /* 20 profiles a minute apart; i is also the total. */
  int64_t bytes[20], all = 0;
  unsigned char buf[1024];
  for (int i = 0; i < 20; i++) {
    CHECK_EQ_INT(put_i(s, "r", "h:1", "cpu", T0 + i * 60 * SEC, i, NULL), 0);
    all += bytes[i] = (int64_t)gen(i, buf, sizeof buf);
  }
  rows_t *rs = malloc(sizeof *rs);
  CHECK_EQ_INT(all_rows(s, rs), 20);
  char paths[20][512];
  for (int i = 0; i < 20 && i < rs->n; i++)
    snprintf(paths[i], sizeof paths[i], "%s", rs->rows[i].path);

  /* By age: at T0 + 19 min, keeping 10 minutes drops 0..8 (older than 9). */
  collect_store_retained_t got;
  CHECK_EQ_INT(collect_store_retain(s, 10 * 60 * SEC, 0, T0 + 19 * 60 * SEC, &got, err, sizeof err),
               0);
  int64_t freed = 0;
  for (int i = 0; i < 9; i++)
    freed += bytes[i];
  CHECK_EQ_INT(got.profiles, 9);
  CHECK_EQ_INT(got.bytes, freed);
  CHECK_EQ_INT(all_rows(s, rs), 11);
  CHECK_EQ_INT(rs->n ? rs->rows[0].total : -1, 9);
  for (int i = 0; i < 20; i++)
    CHECK_EQ_INT(file_size(paths[i]) >= 0, i >= 9);
  int64_t np, nb;
  collect_store_totals(s, &np, &nb);
  CHECK_EQ_INT(np, 11);
  CHECK_EQ_INT(nb, all - freed);

  /* By size: keep at most the bytes of the newest three. */
  int64_t cap = bytes[17] + bytes[18] + bytes[19];
  CHECK_EQ_INT(collect_store_retain(s, 0, cap, T0, &got, err, sizeof err), 0);
  CHECK_EQ_INT(got.profiles, 8);
  CHECK_EQ_INT(all_rows(s, rs), 3);
  CHECK_EQ_INT(rs->n ? rs->rows[0].total : -1, 17);
  for (int i = 0; i < 20; i++)
    CHECK_EQ_INT(file_size(paths[i]) >= 0, i >= 17);
  collect_store_totals(s, &np, &nb);
  CHECK_EQ_INT(nb, cap);
  /* Already within both limits: nothing to do. */
  CHECK_EQ_INT(collect_store_retain(s, 3600 * SEC, cap, T0 + 19 * 60 * SEC, &got, err, sizeof err),
               0);
  CHECK_EQ_INT(got.profiles, 0);
  /* Everything older than now, with one byte allowed: all of it goes, and
   * the emptied day directory with it. */
  CHECK_EQ_INT(collect_store_retain(s, 1, 1, T0 + 3600 * SEC, &got, err, sizeof err), 0);
  CHECK_EQ_INT(got.profiles, 3);
  CHECK_EQ_INT(all_rows(s, rs), 0);
  CHECK_EQ_INT(count_files(dir, ".pb.gz"), 0);
  char day[1024];
  snprintf(day, sizeof day, "%s", paths[0]);
  *strrchr(day, '/') = '\0';
  CHECK_EQ_INT(file_size(day), -1);
  /* A put into the removed day directory makes it again. */
  CHECK_EQ_INT(put_i(s, "r", "h:1", "cpu", T0, 0, NULL), 0);
  CHECK_EQ_INT(all_rows(s, rs), 1);
  collect_store_close(s);
  free(rs);
}

/* Failing puts leave neither a row nor a file: once because the profiles
 * directory became a regular file (the tests run as root, where a chmod
 * would not stop the write), once because the insert fails (a trigger
 * added behind the store's back). */
static void test_put_fails(const char *dir) {
  collect_store_t *s;
  CHECK_EQ_INT(collect_store_open(dir, &s, NULL, err, sizeof err), 0);
  if (!s)
    return;
  rows_t *rs = malloc(sizeof *rs);
  int64_t before = all_rows(s, rs), files = count_files(dir, ".pb.gz");
  char prof[512], aside[512];
  snprintf(prof, sizeof prof, "%s/profiles", dir);
  snprintf(aside, sizeof aside, "%s/profiles.aside", dir);
  CHECK_EQ_INT(rename(prof, aside), 0);
  int fd = open(prof, O_WRONLY | O_CREAT, 0644);
  CHECK(fd >= 0);
  close(fd);
  err[0] = '\0';
  CHECK_EQ_INT(put_i(s, "f", "h:1", "cpu", T0, 1, NULL), -ENOTDIR);
  CHECK(is_one_line(err));
  CHECK(strstr(err, prof) != NULL);
  CHECK_EQ_INT(unlink(prof), 0);
  CHECK_EQ_INT(rename(aside, prof), 0);
  CHECK_EQ_INT(all_rows(s, rs), before);

  CHECK_EQ_INT(sql_exec(dir, "CREATE TRIGGER no_insert BEFORE INSERT ON profiles"
                             " BEGIN SELECT RAISE(ABORT, 'injected'); END"),
               SQLITE_OK);
  err[0] = '\0';
  CHECK(put_i(s, "f", "h:1", "cpu", T0, 1, NULL) < 0);
  CHECK(is_one_line(err));
  CHECK(strstr(err, "injected") != NULL);
  CHECK_EQ_INT(count_files(dir, ".pb.gz"), files);
  CHECK_EQ_INT(count_files(dir, ".tmp"), 0);
  CHECK_EQ_INT(sql_exec(dir, "DROP TRIGGER no_insert"), SQLITE_OK);
  CHECK_EQ_INT(all_rows(s, rs), before);
  int64_t np, nb;
  collect_store_totals(s, &np, &nb);
  CHECK_EQ_INT(np, before);

  /* A missing job is refused before anything is written. */
  collect_entry_t e = {.instance = "h:1", .type = "cpu", .time_ns = T0};
  CHECK_EQ_INT(collect_store_put(s, &e, "x", 1, NULL, err, sizeof err), -EINVAL);
  CHECK(is_one_line(err));
  CHECK_EQ_INT(put_i(s, "f", "h:1", "cpu", T0, 1, NULL), 0);
  CHECK_EQ_INT(all_rows(s, rs), before + 1);
  collect_store_close(s);
  free(rs);
}

typedef struct {
  collect_store_t *s;
  int k;
  int failed;
} worker_t;

static void *worker(void *arg) {
  worker_t *w = arg;
  char job[16];
  snprintf(job, sizeof job, "w%d", w->k);
  for (int i = 0; i < 50; i++)
    if (put_i(w->s, job, "h:1", "cpu", T0 + i * SEC, i, NULL) != 0)
      w->failed++;
  return NULL;
}

static int count_rows(void *arg, const collect_store_row_t *r) {
  (void)r;
  ++*(int *)arg;
  return 0;
}

/* Four threads put while this one queries. */
static void test_threads(const char *dir) {
  collect_store_t *s;
  CHECK_EQ_INT(collect_store_open(dir, &s, NULL, err, sizeof err), 0);
  if (!s)
    return;
  worker_t w[4];
  pthread_t th[4];
  for (int k = 0; k < 4; k++) {
    w[k] = (worker_t){.s = s, .k = k};
    CHECK_EQ_INT(pthread_create(&th[k], NULL, worker, &w[k]), 0);
  }
  char qerr[256];
  for (int i = 0; i < 20; i++) {
    collect_query_t q = {.type = "cpu", .from_ns = INT64_MIN, .to_ns = INT64_MAX};
    int n = 0;
    CHECK_EQ_INT(collect_store_query(s, &q, count_rows, &n, qerr, sizeof qerr), 0);
  }
  for (int k = 0; k < 4; k++) {
    pthread_join(th[k], NULL);
    CHECK_EQ_INT(w[k].failed, 0);
  }
  int n = 0;
  collect_query_t q = {.type = "cpu", .from_ns = INT64_MIN, .to_ns = INT64_MAX};
  CHECK_EQ_INT(collect_store_query(s, &q, count_rows, &n, err, sizeof err), 0);
  CHECK_EQ_INT(n, 200);
  int64_t np, nb;
  collect_store_totals(s, &np, &nb);
  CHECK_EQ_INT(np, 200);
  collect_store_close(s);
}

static int64_t row_count(sqlite3 *db) {
  sqlite3_stmt *st;
  int64_t n = -1;
  if (sqlite3_prepare_v2(db, "SELECT count(*) FROM profiles", -1, &st, NULL) == SQLITE_OK) {
    if (sqlite3_step(st) == SQLITE_ROW)
      n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
  }
  return n;
}

/* A child puts in a loop until SIGKILLed once 30 rows are committed (seen
 * through a connection of our own); the reopened store must hold only
 * whole, indexed profiles. */
static void test_sigkill(const char *dir) {
  int ready[2];
  CHECK_EQ_INT(pipe(ready), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(ready[0]);
    collect_store_t *s;
    if (collect_store_open(dir, &s, NULL, err, sizeof err) != 0)
      _exit(2);
    if (write(ready[1], "r", 1) != 1)
      _exit(3);
    for (int64_t i = 0;; i++)
      if (put_i(s, "k", "h:1", "cpu", T0 + i * SEC, i, NULL) != 0)
        _exit(4);
  }
  CHECK(pid > 0);
  close(ready[1]);
  char c;
  CHECK_EQ_INT(read(ready[0], &c, 1), 1);
  close(ready[0]);
  char path[512];
  snprintf(path, sizeof path, "%s/index.sqlite", dir);
  sqlite3 *db;
  CHECK_EQ_INT(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  sqlite3_busy_timeout(db, 10000);
  int64_t n;
  int status = 0;
  /* Polling, not timing: the loop ends when the rows are there, or when
   * the child died on its own (a failure reported below). */
  while ((n = row_count(db)) < 30 && waitpid(pid, &status, WNOHANG) == 0)
    usleep(1000);
  sqlite3_close(db);
  CHECK(n >= 30);
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

  collect_store_t *s;
  collect_store_repair_t rep;
  CHECK_EQ_INT(collect_store_open(dir, &s, &rep, err, sizeof err), 0);
  if (!s)
    return;
  fprintf(stderr, "after SIGKILL: %lld tmp, %lld orphans, %lld rows repaired\n",
          (long long)rep.tmp_removed, (long long)rep.orphans_removed, (long long)rep.rows_removed);
  /* The write order makes a row without its whole file impossible. */
  CHECK_EQ_INT(rep.rows_removed, 0);
  CHECK(rep.tmp_removed + rep.orphans_removed <= 1);
  rows_t *rs = malloc(sizeof *rs);
  int64_t rows = all_rows(s, rs);
  CHECK(rows >= n);
  unsigned char buf[1024];
  int bad = 0;
  for (int i = 0; i < rs->n; i++) {
    void *data;
    size_t len;
    size_t want = gen(rs->rows[i].total, buf, sizeof buf);
    if (file_size(rs->rows[i].path) != rs->rows[i].size ||
        collect_store_read(s, rs->rows[i].id, &data, &len, err, sizeof err) != 0) {
      bad++;
      continue;
    }
    bad += len != want || memcmp(data, buf, len) != 0;
    free(data);
  }
  CHECK_EQ_INT(bad, 0);
  CHECK_EQ_INT(count_files(dir, ".tmp"), 0);
  CHECK_EQ_INT(count_files(dir, ".pb.gz"), rows);
  collect_store_close(s);
  free(rs);

  CHECK_EQ_INT(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  sqlite3_stmt *st;
  const char *ok = NULL;
  char okbuf[64] = "";
  if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) == SQLITE_OK) {
    if (sqlite3_step(st) == SQLITE_ROW)
      snprintf(okbuf, sizeof okbuf, "%s", (const char *)sqlite3_column_text(st, 0));
    ok = okbuf;
    sqlite3_finalize(st);
  }
  CHECK_EQ_STR(ok, "ok");
  sqlite3_close(db);
}

static int collect_event(void *arg, const collect_scrape_event_t *e) {
  char *out = arg;
  size_t n = strlen(out);
  snprintf(out + n, 1024 - n, "%s%lld %s %s %s %s %d %s %s", n ? "|" : "",
           (long long)((e->time_ns - T0) / SEC), e->job, e->instance, e->type, e->event, e->down,
           e->reason, e->error);
  return 0;
}

/* events FROM TO JOB: the events as one line, oldest first. */
static const char *events(collect_store_t *s, int64_t from, int64_t to, const char *job) {
  static char out[1024];
  out[0] = '\0';
  collect_query_t q = {.job = job, .from_ns = from, .to_ns = to};
  CHECK_EQ_INT(collect_store_events(s, &q, collect_event, out, err, sizeof err), 0);
  return out;
}

/* Failed scrapes: kept, read by job and time, removed by retention with
 * the profiles; a store of schema 1 (before them) gains their table. */
static void test_events(const char *dir) {
  /* A store of schema 1, as the collector before issue 32 left it. */
  CHECK_EQ_INT(mkdir(dir, 0755), 0);
  CHECK_EQ_INT(sql_exec(dir, "CREATE TABLE profiles(id INTEGER PRIMARY KEY, job TEXT NOT NULL,"
                             " instance TEXT NOT NULL, type TEXT NOT NULL, labels TEXT NOT NULL,"
                             " time_ns INTEGER NOT NULL, duration_ns INTEGER NOT NULL,"
                             " size INTEGER NOT NULL, total INTEGER NOT NULL,"
                             " file TEXT NOT NULL UNIQUE); PRAGMA user_version=1;"),
               SQLITE_OK);
  collect_store_t *s;
  CHECK_EQ_INT(collect_store_open(dir, &s, NULL, err, sizeof err), 0);
  if (!s)
    return;
  collect_scrape_event_t e = {.job = "a",
                              .instance = "h:1",
                              .type = "block",
                              .labels = "{instance=\"h:1\",job=\"a\"}",
                              .event = "failure",
                              .down = 1,
                              .reason = "connection_refused",
                              .error = "refused"};
  for (int i = 0; i < 3; i++) {
    e.time_ns = T0 + i * 60 * SEC;
    e.down = i == 0;
    CHECK_EQ_INT(collect_store_put_event(s, &e, err, sizeof err), 0);
  }
  e = (collect_scrape_event_t){
      .time_ns = T0 + 3 * 60 * SEC, .job = "a", .instance = "h:1", .type = "block", .event = "up"};
  CHECK_EQ_INT(collect_store_put_event(s, &e, err, sizeof err), 0);
  e = (collect_scrape_event_t){.time_ns = T0 + 90 * SEC,
                               .job = "b",
                               .instance = "h:2",
                               .type = "memory",
                               .event = "failure",
                               .reason = "http_status",
                               .error = "server returned HTTP status 500: boom"};
  CHECK_EQ_INT(collect_store_put_event(s, &e, err, sizeof err), 0);
  CHECK_EQ_STR(events(s, 0, INT64_MAX, "a"),
               "0 a h:1 block failure 1 connection_refused refused|"
               "60 a h:1 block failure 0 connection_refused refused|"
               "120 a h:1 block failure 0 connection_refused refused|180 a h:1 block up 0  ");
  CHECK_EQ_STR(events(s, T0 + 60 * SEC, T0 + 100 * SEC, NULL),
               "60 a h:1 block failure 0 connection_refused refused|"
               "90 b h:2 memory failure 0 http_status server returned HTTP status 500: boom");
  /* Retention by age, at T0 + 4 min keeping 2: the events before 2 min go. */
  collect_store_retained_t got;
  CHECK_EQ_INT(collect_store_retain(s, 2 * 60 * SEC, 0, T0 + 4 * 60 * SEC, &got, err, sizeof err),
               0);
  CHECK_EQ_STR(events(s, 0, INT64_MAX, NULL),
               "120 a h:1 block failure 0 connection_refused refused|180 a h:1 block up 0  ");
  collect_store_close(s);
  /* Open again: schema 2 now, nothing lost. */
  CHECK_EQ_INT(collect_store_open(dir, &s, NULL, err, sizeof err), 0);
  if (!s)
    return;
  CHECK_EQ_STR(events(s, 0, INT64_MAX, "a"),
               "120 a h:1 block failure 0 connection_refused refused|180 a h:1 block up 0  ");
  collect_store_close(s);
}

int main(void) {
  char base[] = "/tmp/cprof-test-store-XXXXXX";
  if (!mkdtemp(base)) {
    perror("mkdtemp");
    return 1;
  }
  char dir[5][256];
  for (int i = 0; i < 5; i++)
    snprintf(dir[i], sizeof dir[i], "%s/s%d", base, i);
  test_labels();
  test_put_query(dir[0]);
  test_repair(dir[0]);
  test_put_fails(dir[0]);
  test_retain(dir[1]);
  test_threads(dir[2]);
  test_sigkill(dir[3]);
  test_events(dir[4]);
  rm_tree(base);
  return check_result("collect/store");
}

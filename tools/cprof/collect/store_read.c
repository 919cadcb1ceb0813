/* The store's reads (store.h): the canonical text of a label set, and the
 * rows, a profile's bytes and the series, behind the reader's mutex. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* asprintf, open_memstream */
#endif
#include "collect/store.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect/store_db.h"

/* ---- labels ------------------------------------------------------------ */

static int label_cmp(const void *a, const void *b) {
  const collect_store_label_t *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  return c ? c : strcmp(x->value, y->value);
}

static void put_escaped(FILE *f, const char *s) {
  for (; *s; s++) {
    if (*s == '\\' || *s == '"')
      fputc('\\', f), fputc(*s, f);
    else if (*s == '\n')
      fputs("\\n", f);
    else
      fputc(*s, f);
  }
}

char *collect_store_labels_text(const collect_store_label_t *labels, size_t n) {
  collect_store_label_t *sorted = NULL;
  if (n) {
    sorted = malloc(n * sizeof *sorted);
    if (!sorted)
      return NULL;
    memcpy(sorted, labels, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, label_cmp);
  }
  char *text = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&text, &size);
  if (!f) {
    free(sorted);
    return NULL;
  }
  fputc('{', f);
  for (size_t i = 0; i < n; i++) {
    if (i)
      fputc(',', f);
    fputs(sorted[i].name, f);
    fputs("=\"", f);
    put_escaped(f, sorted[i].value);
    fputc('"', f);
  }
  fputc('}', f);
  int bad = ferror(f);
  if (fclose(f) != 0 || bad) {
    free(text);
    text = NULL;
  }
  free(sorted);
  return text;
}

/* ---- query, read, series ----------------------------------------------- */

int collect_store_query(collect_store_t *s, const collect_query_t *q, collect_store_row_fn fn,
                        void *arg, char *err, size_t errlen) {
  /* Only the filters given go into the SQL, so that with a type, job and
   * instance the range is one stretch of profiles_series. */
  char sql[640];
  size_t n = (size_t)snprintf(sql, sizeof sql,
                              "SELECT id, job, instance, type, labels, time_ns, duration_ns,"
                              " size, total, file FROM profiles"
                              " WHERE time_ns >= ?1 AND time_ns <= ?2");
  if (q->type)
    n += (size_t)snprintf(sql + n, sizeof sql - n, " AND type = ?3");
  if (q->job)
    n += (size_t)snprintf(sql + n, sizeof sql - n, " AND job = ?4");
  if (q->instance)
    n += (size_t)snprintf(sql + n, sizeof sql - n, " AND instance = ?5");
  if (q->labels)
    n += (size_t)snprintf(sql + n, sizeof sql - n, " AND labels = ?6");
  /* A label is a whole name="value" after { or ,: its value's own quotes
   * are escaped in the text, so it cannot match inside another's. */
  if (q->label)
    n += (size_t)snprintf(sql + n, sizeof sql - n,
                          " AND (instr(labels, '{' || ?8) OR instr(labels, ',' || ?8))");
  n += (size_t)snprintf(sql + n, sizeof sql - n,
                        q->newest_first ? " ORDER BY time_ns DESC, id DESC"
                                        : " ORDER BY time_ns, id");
  if (q->limit > 0)
    snprintf(sql + n, sizeof sql - n, " LIMIT ?7");

  char *path = NULL;
  size_t cap = 0;
  pthread_mutex_lock(&s->rmu);
  sqlite3_stmt *st;
  int ret = 0, rc = sqlite3_prepare_v2(s->r, sql, -1, &st, NULL);
  if (rc != SQLITE_OK) {
    ret = store_sqlfail(s, s->r, rc, err, errlen, "prepare query");
    goto out;
  }
  sqlite3_bind_int64(st, 1, q->from_ns);
  sqlite3_bind_int64(st, 2, q->to_ns);
  if (q->type)
    sqlite3_bind_text(st, 3, q->type, -1, SQLITE_STATIC);
  if (q->job)
    sqlite3_bind_text(st, 4, q->job, -1, SQLITE_STATIC);
  if (q->instance)
    sqlite3_bind_text(st, 5, q->instance, -1, SQLITE_STATIC);
  if (q->labels)
    sqlite3_bind_text(st, 6, q->labels, -1, SQLITE_STATIC);
  if (q->limit > 0)
    sqlite3_bind_int64(st, 7, q->limit);
  if (q->label)
    sqlite3_bind_text(st, 8, q->label, -1, SQLITE_STATIC);
  size_t dirlen = strlen(s->dir);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *file = (const char *)sqlite3_column_text(st, 9);
    size_t need = dirlen + strlen("/profiles/") + strlen(file) + 1;
    if (need > cap) {
      char *p = realloc(path, need);
      if (!p) {
        ret = store_fail(err, errlen, -ENOMEM, "%s: out of memory", s->dir);
        break;
      }
      path = p;
      cap = need;
    }
    snprintf(path, cap, "%s/profiles/%s", s->dir, file);
    collect_store_row_t row = {
        .id = sqlite3_column_int64(st, 0),
        .job = (const char *)sqlite3_column_text(st, 1),
        .instance = (const char *)sqlite3_column_text(st, 2),
        .type = (const char *)sqlite3_column_text(st, 3),
        .labels = (const char *)sqlite3_column_text(st, 4),
        .time_ns = sqlite3_column_int64(st, 5),
        .duration_ns = sqlite3_column_int64(st, 6),
        .size = sqlite3_column_int64(st, 7),
        .total = sqlite3_column_int64(st, 8),
        .path = path,
    };
    if ((ret = fn(arg, &row)))
      break;
  }
  if (ret == 0 && rc != SQLITE_DONE)
    ret = store_sqlfail(s, s->r, rc, err, errlen, "query");
  sqlite3_finalize(st);
out:
  pthread_mutex_unlock(&s->rmu);
  free(path);
  return ret;
}

int collect_store_read(collect_store_t *s, int64_t id, void **data, size_t *len, char *err,
                       size_t errlen) {
  *data = NULL;
  *len = 0;
  char *path = NULL;
  int64_t size = 0;
  pthread_mutex_lock(&s->rmu);
  sqlite3_stmt *st;
  int ret = 0,
      rc = sqlite3_prepare_v2(s->r, "SELECT file, size FROM profiles WHERE id = ?", -1, &st, NULL);
  if (rc == SQLITE_OK) {
    sqlite3_bind_int64(st, 1, id);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
      size = sqlite3_column_int64(st, 1);
      if (asprintf(&path, "%s/profiles/%s", s->dir, (const char *)sqlite3_column_text(st, 0)) < 0)
        path = NULL, ret = store_fail(err, errlen, -ENOMEM, "%s: out of memory", s->dir);
    } else if (rc == SQLITE_DONE) {
      ret = store_fail(err, errlen, -ENOENT, "%s: no profile %lld", s->db_path, (long long)id);
    } else {
      ret = store_sqlfail(s, s->r, rc, err, errlen, "read");
    }
    sqlite3_finalize(st);
  } else {
    ret = store_sqlfail(s, s->r, rc, err, errlen, "prepare read");
  }
  pthread_mutex_unlock(&s->rmu);
  if (ret)
    return ret;

  char *buf = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    ret = store_fail(err, errlen, -errno, "%s: open: %s", path, strerror(errno));
    goto out;
  }
  buf = malloc(size ? (size_t)size : 1);
  if (!buf) {
    ret = store_fail(err, errlen, -ENOMEM, "%s: out of memory", path);
    goto out;
  }
  /* Read one byte past the indexed size to notice a file that grew. */
  size_t got = 0;
  for (;;) {
    char extra;
    ssize_t n = got < (size_t)size ? read(fd, buf + got, (size_t)size - got) : read(fd, &extra, 1);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      ret = store_fail(err, errlen, -errno, "%s: read: %s", path, strerror(errno));
      goto out;
    }
    if (n == 0 || got == (size_t)size) {
      if (n != 0 || got != (size_t)size)
        ret = store_fail(err, errlen, -EIO, "%s: size differs from the index's %lld", path,
                         (long long)size);
      break;
    }
    got += (size_t)n;
  }
out:
  if (fd >= 0)
    close(fd);
  free(path);
  if (ret) {
    free(buf);
    return ret;
  }
  *data = buf;
  *len = (size_t)size;
  return 0;
}

int collect_store_series(collect_store_t *s, collect_store_series_fn fn, void *arg, char *err,
                         size_t errlen) {
  pthread_mutex_lock(&s->rmu);
  sqlite3_stmt *st;
  int ret = 0, rc = sqlite3_prepare_v2(s->r,
                                       "SELECT type, job, instance, count(*), min(time_ns),"
                                       " max(time_ns) FROM profiles"
                                       " GROUP BY type, job, instance ORDER BY type, job, instance",
                                       -1, &st, NULL);
  if (rc != SQLITE_OK) {
    ret = store_sqlfail(s, s->r, rc, err, errlen, "prepare series");
    goto out;
  }
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    collect_series_t se = {
        .type = (const char *)sqlite3_column_text(st, 0),
        .job = (const char *)sqlite3_column_text(st, 1),
        .instance = (const char *)sqlite3_column_text(st, 2),
        .count = sqlite3_column_int64(st, 3),
        .first_ns = sqlite3_column_int64(st, 4),
        .last_ns = sqlite3_column_int64(st, 5),
    };
    if ((ret = fn(arg, &se)))
      break;
  }
  if (ret == 0 && rc != SQLITE_DONE)
    ret = store_sqlfail(s, s->r, rc, err, errlen, "series");
  sqlite3_finalize(st);
out:
  pthread_mutex_unlock(&s->rmu);
  return ret;
}

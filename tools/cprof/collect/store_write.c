/* The store's writer (store.h): putting a profile (its file written
 * durably, then its row) and retention (the oldest rows and their files
 * removed, by age or by size), both behind the writer's mutex. */
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
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "collect/store_db.h"

/* Retention deletes at most this many rows per transaction, so the writer
 * mutex is never held for long and the file list stays small. */
#define RETAIN_BATCH 512

/* ---- put --------------------------------------------------------------- */

static int write_all(int fd, const void *data, size_t len) {
  const char *p = data;
  while (len) {
    ssize_t n = write(fd, p, len);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return -errno;
    }
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

/* Writes data to final durably: temporary file, fsync, rename, fsync of
 * the day directory (made when missing, then its parent fsync'd too). On
 * failure nothing is left behind. */
static int write_file(const char *profiles, const char *day, const char *final, const void *data,
                      size_t len, char *err, size_t errlen) {
  char *tmp = NULL;
  if (asprintf(&tmp, "%s.tmp", final) < 0)
    return store_fail(err, errlen, -ENOMEM, "%s: out of memory", final);
  int fd = -1, ret;
  /* Retention may remove an emptied day directory between our mkdir and
   * our open; making it again settles that. */
  for (int attempt = 0; fd < 0; attempt++) {
    int created;
    if ((ret = store_make_dir(day, &created, err, errlen)) ||
        (created && (ret = store_fsync_dir(profiles, err, errlen))))
      goto out;
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && (errno != ENOENT || attempt == 2)) {
      ret = store_fail(err, errlen, -errno, "%s: open: %s", tmp, strerror(errno));
      goto out;
    }
  }
  if ((ret = write_all(fd, data, len))) {
    store_fail(err, errlen, ret, "%s: write: %s", tmp, strerror(-ret));
    goto fail;
  }
  if (fsync(fd) < 0) {
    ret = store_fail(err, errlen, -errno, "%s: fsync: %s", tmp, strerror(errno));
    goto fail;
  }
  int c = close(fd);
  fd = -1;
  if (c < 0) {
    ret = store_fail(err, errlen, -errno, "%s: close: %s", tmp, strerror(errno));
    goto fail;
  }
  if (rename(tmp, final) < 0) {
    ret = store_fail(err, errlen, -errno, "%s: rename: %s", final, strerror(errno));
    goto fail;
  }
  if ((ret = store_fsync_dir(day, err, errlen)))
    unlink(final);
  goto out;
fail:
  if (fd >= 0)
    close(fd);
  unlink(tmp);
out:
  free(tmp);
  return ret;
}

static int new_id(char hex[33]) {
  unsigned char b[16];
  size_t got = 0;
  while (got < sizeof b) {
    ssize_t n = getrandom(b + got, sizeof b - got, 0);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return -errno;
    }
    got += (size_t)n;
  }
  for (size_t i = 0; i < sizeof b; i++)
    snprintf(hex + 2 * i, 3, "%02x", b[i]);
  return 0;
}

int collect_store_put(collect_store_t *s, const collect_entry_t *e, const void *data, size_t len,
                      int64_t *id, char *err, size_t errlen) {
  if (!e->job || !*e->job || !e->instance || !*e->instance || !e->type || !*e->type)
    return store_fail(err, errlen, -EINVAL, "%s: a profile needs a job, an instance and a type",
                      s->dir);
  if (len > INT64_MAX)
    return store_fail(err, errlen, -EFBIG, "%s: profile too large", s->dir);
  char hex[33];
  int ret = new_id(hex);
  if (ret)
    return store_fail(err, errlen, ret, "getrandom: %s", strerror(-ret));
  /* The day of the scrape, in UTC, rounding negative times down. */
  int64_t secs = e->time_ns / 1000000000;
  if (e->time_ns < 0 && e->time_ns % 1000000000)
    secs--;
  time_t t = (time_t)secs;
  struct tm tm;
  if (!gmtime_r(&t, &tm))
    return store_fail(err, errlen, -EINVAL, "%s: time %lld out of range", s->dir,
                      (long long)e->time_ns);
  char rel[64];
  snprintf(rel, sizeof rel, "%04d%02d%02d/%s.pb.gz", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
           hex);
  char *day = NULL, *final = NULL, *labels = collect_store_labels_text(e->labels, e->nlabels);
  if (!labels || asprintf(&day, "%s/%.8s", s->profiles_dir, rel) < 0 ||
      asprintf(&final, "%s/%s", s->profiles_dir, rel) < 0) {
    ret = store_fail(err, errlen, -ENOMEM, "%s: out of memory", s->dir);
    goto out;
  }
  if ((ret = write_file(s->profiles_dir, day, final, data, len, err, errlen)))
    goto out;

  pthread_mutex_lock(&s->wmu);
  sqlite3_stmt *st = s->insert;
  sqlite3_bind_text(st, 1, e->job, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, e->instance, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 3, e->type, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 4, labels, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 5, e->time_ns);
  sqlite3_bind_int64(st, 6, e->duration_ns);
  sqlite3_bind_int64(st, 7, (int64_t)len);
  sqlite3_bind_int64(st, 8, e->total);
  sqlite3_bind_text(st, 9, rel, -1, SQLITE_STATIC);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_DONE) {
    s->profiles++;
    s->bytes += (int64_t)len;
    if (id)
      *id = sqlite3_last_insert_rowid(s->w);
  } else {
    ret = store_sqlfail(s, s->w, rc, err, errlen, "insert");
  }
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  pthread_mutex_unlock(&s->wmu);
  if (ret)
    unlink(final); /* no row names the file: take it back (the next open would too) */
out:
  free(labels);
  free(day);
  free(final);
  return ret;
}

/* ---- retention ----------------------------------------------------------- */

/* One batch: deletes up to RETAIN_BATCH of the oldest rows that are past
 * the age cutoff or still over max_bytes, in one transaction, and hands
 * back their files to unlink. *more says whether another batch may find
 * work. */
static int retain_batch(collect_store_t *s, int by_age, int64_t cutoff, int64_t max_bytes,
                        char ***files, size_t *nfiles, collect_store_retained_t *done, int *more,
                        char *err, size_t errlen) {
  *more = 0;
  *nfiles = 0;
  sqlite3_stmt *sel = NULL, *del = NULL;
  int ret = store_exec(s, s->w, "BEGIN IMMEDIATE", err, errlen);
  if (ret)
    return ret;
  int rc = sqlite3_prepare_v2(s->w,
                              "SELECT id, file, size, time_ns FROM profiles"
                              " ORDER BY time_ns, id LIMIT ?",
                              -1, &sel, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_prepare_v2(s->w, "DELETE FROM profiles WHERE id = ?", -1, &del, NULL);
  if (rc != SQLITE_OK) {
    ret = store_sqlfail(s, s->w, rc, err, errlen, "prepare retention");
    goto out;
  }
  sqlite3_bind_int(sel, 1, RETAIN_BATCH);
  int64_t bytes = s->bytes, n = 0, freed = 0;
  size_t seen = 0;
  while ((rc = sqlite3_step(sel)) == SQLITE_ROW) {
    seen++;
    int64_t size = sqlite3_column_int64(sel, 2), t = sqlite3_column_int64(sel, 3);
    /* Oldest first, so once a row is neither too old nor needed for
     * room, no later one is. */
    if (!(by_age && t < cutoff) && !(max_bytes > 0 && bytes > max_bytes))
      break;
    char *f;
    if (asprintf(&f, "%s/%s", s->profiles_dir, (const char *)sqlite3_column_text(sel, 1)) < 0) {
      ret = store_fail(err, errlen, -ENOMEM, "%s: out of memory", s->dir);
      goto out;
    }
    (*files)[(*nfiles)++] = f;
    sqlite3_bind_int64(del, 1, sqlite3_column_int64(sel, 0));
    rc = sqlite3_step(del);
    sqlite3_reset(del);
    if (rc != SQLITE_DONE) {
      ret = store_sqlfail(s, s->w, rc, err, errlen, "retention delete");
      goto out;
    }
    bytes -= size;
    freed += size;
    n++;
  }
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
    ret = store_sqlfail(s, s->w, rc, err, errlen, "retention select");
    goto out;
  }
  sqlite3_finalize(sel);
  sel = NULL;
  if ((ret = store_exec(s, s->w, "COMMIT", err, errlen)))
    goto out;
  s->profiles -= n;
  s->bytes -= freed;
  done->profiles += n;
  done->bytes += freed;
  *more = n == RETAIN_BATCH && seen == RETAIN_BATCH;
out:
  sqlite3_finalize(sel);
  sqlite3_finalize(del);
  if (ret) {
    sqlite3_exec(s->w, "ROLLBACK", NULL, NULL, NULL);
    for (size_t i = 0; i < *nfiles; i++)
      free((*files)[i]);
    *nfiles = 0;
  }
  return ret;
}

int collect_store_retain(collect_store_t *s, int64_t max_age_ns, int64_t max_bytes, int64_t now_ns,
                         collect_store_retained_t *out, char *err, size_t errlen) {
  collect_store_retained_t done = {0};
  int64_t cutoff = 0;
  int by_age = max_age_ns > 0 && !__builtin_sub_overflow(now_ns, max_age_ns, &cutoff);
  char **files = malloc(RETAIN_BATCH * sizeof *files);
  if (!files)
    return store_fail(err, errlen, -ENOMEM, "%s: out of memory", s->dir);
  int ret = 0, more = by_age || max_bytes > 0;
  while (ret == 0 && more) {
    size_t nfiles = 0;
    pthread_mutex_lock(&s->wmu);
    ret = retain_batch(s, by_age, cutoff, max_bytes, &files, &nfiles, &done, &more, err, errlen);
    pthread_mutex_unlock(&s->wmu);
    /* The rows are gone; a file we fail to unlink is an orphan the next
     * open removes, so the first error is reported and the rest go on. */
    for (size_t i = 0; i < nfiles; i++) {
      if (unlink(files[i]) < 0 && errno != ENOENT && ret == 0)
        ret = store_fail(err, errlen, -errno, "%s: unlink: %s", files[i], strerror(errno));
      free(files[i]);
    }
  }
  free(files);
  if (ret == 0 && (by_age || (max_bytes > 0 && done.profiles))) {
    pthread_mutex_lock(&s->wmu);
    ret = store_retain_events(s, by_age, cutoff, max_bytes > 0 && done.profiles, err, errlen);
    pthread_mutex_unlock(&s->wmu);
  }
  if (done.profiles)
    store_remove_empty_days(s->profiles_dir);
  if (out)
    *out = done;
  return ret;
}

void collect_store_totals(collect_store_t *s, int64_t *profiles, int64_t *bytes) {
  pthread_mutex_lock(&s->wmu);
  *profiles = s->profiles;
  *bytes = s->bytes;
  pthread_mutex_unlock(&s->wmu);
}

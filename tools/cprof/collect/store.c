/* The collector's storage: profile files plus an SQLite index. The write
 * order, the repair at open and the threading are explained in store.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* asprintf, open_memstream */
#endif
#include "collect/store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SCHEMA_VERSION 1

/* Retention deletes at most this many rows per transaction, so the writer
 * mutex is never held for long and the file list stays small. */
#define RETAIN_BATCH 512

static const char schema_sql[] =
    "CREATE TABLE profiles("
    " id INTEGER PRIMARY KEY,"
    " job TEXT NOT NULL,"
    " instance TEXT NOT NULL,"
    " type TEXT NOT NULL,"
    " labels TEXT NOT NULL,"
    " time_ns INTEGER NOT NULL,"
    " duration_ns INTEGER NOT NULL,"
    " size INTEGER NOT NULL,"
    " total INTEGER NOT NULL,"
    " file TEXT NOT NULL UNIQUE);"
    /* A series' time range is one contiguous stretch of this index. */
    "CREATE INDEX profiles_series ON profiles(type, job, instance, time_ns);"
    /* Retention walks oldest first; queries without a type use it too. */
    "CREATE INDEX profiles_time ON profiles(time_ns);";

struct collect_store {
  char *dir;
  char *profiles_dir; /* DIR/profiles */
  char *db_path;
  int lock_fd;
  sqlite3 *w; /* put, retain; behind wmu */
  sqlite3 *r; /* query, series, read; behind rmu */
  pthread_mutex_t wmu;
  pthread_mutex_t rmu;
  sqlite3_stmt *insert;
  int64_t profiles; /* rows, and the sum of their sizes; behind wmu */
  int64_t bytes;
};

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return rc;
}

static int errno_of_sqlite(int rc) {
  switch (rc & 0xff) {
  case SQLITE_NOMEM:
    return -ENOMEM;
  case SQLITE_FULL:
    return -ENOSPC;
  case SQLITE_BUSY:
  case SQLITE_LOCKED:
    return -EBUSY;
  case SQLITE_PERM:
  case SQLITE_READONLY:
  case SQLITE_AUTH:
    return -EACCES;
  case SQLITE_CANTOPEN:
    return -ENOENT;
  default:
    return -EIO;
  }
}

static int sqlfail(const collect_store_t *s, sqlite3 *db, int rc, char *err, size_t errlen,
                   const char *what) {
  return fail(err, errlen, errno_of_sqlite(rc), "%s: %s: %s", s->db_path, what,
              db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
}

static char *path_join(const char *a, const char *b) {
  char *p;
  return asprintf(&p, "%s/%s", a, b) < 0 ? NULL : p;
}

static int has_suffix(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int fsync_dir(const char *path, char *err, size_t errlen) {
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return fail(err, errlen, -errno, "%s: open: %s", path, strerror(errno));
  int rc = 0;
  if (fsync(fd) < 0)
    rc = fail(err, errlen, -errno, "%s: fsync: %s", path, strerror(errno));
  close(fd);
  return rc;
}

static int make_dir(const char *path, int *created, char *err, size_t errlen) {
  if (created)
    *created = 0;
  if (mkdir(path, 0755) == 0) {
    if (created)
      *created = 1;
    return 0;
  }
  struct stat st;
  if (errno == EEXIST && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
    return 0;
  if (errno == EEXIST)
    errno = ENOTDIR;
  return fail(err, errlen, -errno, "%s: mkdir: %s", path, strerror(errno));
}

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

/* ---- open and repair --------------------------------------------------- */

static int exec(collect_store_t *s, sqlite3 *db, const char *sql, char *err, size_t errlen) {
  int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
  return rc == SQLITE_OK ? 0 : sqlfail(s, db, rc, err, errlen, sql);
}

static int open_db(collect_store_t *s, sqlite3 **db, char *err, size_t errlen) {
  /* Each connection is used under its own mutex, so SQLite's per-connection
   * mutex would only cost; NOMUTEX still needs a library built thread-safe,
   * which collect_store_open checks with sqlite3_threadsafe(). */
  int rc = sqlite3_open_v2(s->db_path, db,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
  if (rc != SQLITE_OK)
    return sqlfail(s, *db, rc, err, errlen, "open");
  /* The writer and the reader are two connections of this process; a
   * checkpoint can briefly hold one off the other. */
  sqlite3_busy_timeout(*db, 10000);
  sqlite3_stmt *st;
  rc = sqlite3_prepare_v2(*db, "PRAGMA journal_mode=WAL", -1, &st, NULL);
  if (rc != SQLITE_OK)
    return sqlfail(s, *db, rc, err, errlen, "PRAGMA journal_mode=WAL");
  rc = sqlite3_step(st);
  int wal = rc == SQLITE_ROW && strcmp((const char *)sqlite3_column_text(st, 0), "wal") == 0;
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW)
    return sqlfail(s, *db, rc, err, errlen, "PRAGMA journal_mode=WAL");
  if (!wal)
    return fail(err, errlen, -ENOTSUP, "%s: cannot switch to WAL mode", s->db_path);
  return exec(s, *db, "PRAGMA synchronous=NORMAL", err, errlen);
}

static int schema(collect_store_t *s, char *err, size_t errlen) {
  sqlite3_stmt *st;
  int rc = sqlite3_prepare_v2(s->w, "PRAGMA user_version", -1, &st, NULL);
  if (rc != SQLITE_OK)
    return sqlfail(s, s->w, rc, err, errlen, "PRAGMA user_version");
  rc = sqlite3_step(st);
  int version = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
  sqlite3_finalize(st);
  if (version < 0)
    return sqlfail(s, s->w, rc, err, errlen, "PRAGMA user_version");
  if (version == SCHEMA_VERSION)
    return 0;
  if (version != 0)
    return fail(err, errlen, -EPROTO, "%s: schema version %d, this cprof knows %d", s->db_path,
                version, SCHEMA_VERSION);
  char sql[1024];
  snprintf(sql, sizeof sql, "BEGIN IMMEDIATE; %s PRAGMA user_version=%d; COMMIT;", schema_sql,
           SCHEMA_VERSION);
  int err_rc = exec(s, s->w, sql, err, errlen);
  if (err_rc)
    sqlite3_exec(s->w, "ROLLBACK", NULL, NULL, NULL);
  return err_rc;
}

/* Records every profile file under profiles/ in the temporary table seen,
 * deleting *.tmp files on the way. Names outside our pattern are left
 * alone: they are not ours. */
static int scan_files(collect_store_t *s, const char *profiles, collect_store_repair_t *rep,
                      char *err, size_t errlen) {
  sqlite3_stmt *ins = NULL;
  int rc =
      sqlite3_prepare_v2(s->w, "INSERT INTO temp.seen(file, size) VALUES(?, ?)", -1, &ins, NULL);
  if (rc != SQLITE_OK)
    return sqlfail(s, s->w, rc, err, errlen, "insert into seen");
  DIR *top = opendir(profiles);
  if (!top) {
    sqlite3_finalize(ins);
    return fail(err, errlen, -errno, "%s: opendir: %s", profiles, strerror(errno));
  }
  int ret = 0;
  struct dirent *d;
  while (ret == 0 && (d = readdir(top))) {
    if (d->d_name[0] == '.')
      continue;
    char *day = path_join(profiles, d->d_name);
    if (!day) {
      ret = fail(err, errlen, -ENOMEM, "%s: out of memory", profiles);
      break;
    }
    DIR *dd = opendir(day);
    if (!dd) {
      if (errno != ENOTDIR)
        ret = fail(err, errlen, -errno, "%s: opendir: %s", day, strerror(errno));
      free(day);
      continue;
    }
    struct dirent *f;
    while (ret == 0 && (f = readdir(dd))) {
      if (f->d_name[0] == '.')
        continue;
      if (has_suffix(f->d_name, ".pb.gz.tmp")) {
        if (unlinkat(dirfd(dd), f->d_name, 0) == 0)
          rep->tmp_removed++;
        else
          ret = fail(err, errlen, -errno, "%s/%s: unlink: %s", day, f->d_name, strerror(errno));
        continue;
      }
      if (!has_suffix(f->d_name, ".pb.gz"))
        continue;
      struct stat st;
      if (fstatat(dirfd(dd), f->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        ret = fail(err, errlen, -errno, "%s/%s: stat: %s", day, f->d_name, strerror(errno));
        break;
      }
      if (!S_ISREG(st.st_mode))
        continue;
      char rel[512];
      snprintf(rel, sizeof rel, "%s/%s", d->d_name, f->d_name);
      sqlite3_bind_text(ins, 1, rel, -1, SQLITE_TRANSIENT);
      sqlite3_bind_int64(ins, 2, st.st_size);
      rc = sqlite3_step(ins);
      sqlite3_reset(ins);
      if (rc != SQLITE_DONE)
        ret = sqlfail(s, s->w, rc, err, errlen, "insert into seen");
    }
    closedir(dd);
    free(day);
  }
  closedir(top);
  sqlite3_finalize(ins);
  return ret;
}

/* Removes the day directories retention or repair emptied. */
static void remove_empty_days(const char *profiles) {
  DIR *top = opendir(profiles);
  if (!top)
    return;
  struct dirent *d;
  while ((d = readdir(top)))
    if (d->d_name[0] != '.')
      unlinkat(dirfd(top), d->d_name, AT_REMOVEDIR); /* fails, as it should, when not empty */
  closedir(top);
}

static int count_of(collect_store_t *s, const char *sql, int64_t *n, char *err, size_t errlen) {
  sqlite3_stmt *st;
  int rc = sqlite3_prepare_v2(s->w, sql, -1, &st, NULL);
  if (rc != SQLITE_OK)
    return sqlfail(s, s->w, rc, err, errlen, sql);
  rc = sqlite3_step(st);
  if (rc == SQLITE_ROW)
    *n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return rc == SQLITE_ROW ? 0 : sqlfail(s, s->w, rc, err, errlen, sql);
}

/* The repair described in store.h. Rows go first (in one transaction),
 * files after, the same order as retention, so a crash during the repair
 * leaves only what the next repair removes. */
static int repair(collect_store_t *s, collect_store_repair_t *rep, char *err, size_t errlen) {
  const char *profiles = s->profiles_dir;
  sqlite3_stmt *st = NULL;
  int64_t mismatched = 0, unlinked = 0;
  int ret = exec(s, s->w,
                 "CREATE TEMP TABLE seen(file TEXT PRIMARY KEY, size INTEGER NOT NULL);"
                 "BEGIN IMMEDIATE",
                 err, errlen);
  if (ret == 0)
    ret = scan_files(s, profiles, rep, err, errlen);
  if (ret == 0)
    ret = count_of(s,
                   "SELECT count(*) FROM profiles p JOIN temp.seen s ON s.file = p.file"
                   " WHERE s.size != p.size",
                   &mismatched, err, errlen);
  if (ret == 0)
    ret = exec(s, s->w,
               "DELETE FROM profiles WHERE NOT EXISTS (SELECT 1 FROM temp.seen s"
               " WHERE s.file = profiles.file AND s.size = profiles.size)",
               err, errlen);
  if (ret == 0) {
    rep->rows_removed += sqlite3_changes(s->w);
    ret = exec(s, s->w, "COMMIT", err, errlen);
  }
  if (ret) {
    sqlite3_exec(s->w, "ROLLBACK", NULL, NULL, NULL);
    goto out;
  }
  int rc = sqlite3_prepare_v2(s->w,
                              "SELECT file FROM temp.seen s"
                              " WHERE NOT EXISTS (SELECT 1 FROM profiles p WHERE p.file = s.file)",
                              -1, &st, NULL);
  if (rc != SQLITE_OK) {
    ret = sqlfail(s, s->w, rc, err, errlen, "select orphans");
    goto out;
  }
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    char *path;
    if (asprintf(&path, "%s/%s", profiles, (const char *)sqlite3_column_text(st, 0)) < 0) {
      ret = fail(err, errlen, -ENOMEM, "%s: out of memory", profiles);
      goto out;
    }
    if (unlink(path) == 0 || errno == ENOENT)
      unlinked++;
    else
      ret = fail(err, errlen, -errno, "%s: unlink: %s", path, strerror(errno));
    free(path);
    if (ret)
      goto out;
  }
  if (rc != SQLITE_DONE)
    ret = sqlfail(s, s->w, rc, err, errlen, "select orphans");
  /* A file whose row had the wrong size was counted with the rows. */
  rep->orphans_removed += unlinked - mismatched;
  remove_empty_days(profiles);
out:
  sqlite3_finalize(st);
  sqlite3_exec(s->w, "DROP TABLE IF EXISTS temp.seen", NULL, NULL, NULL);
  return ret;
}

void collect_store_close(collect_store_t *s) {
  if (!s)
    return;
  sqlite3_finalize(s->insert);
  sqlite3_close(s->r);
  sqlite3_close(s->w);
  if (s->lock_fd >= 0)
    close(s->lock_fd);
  pthread_mutex_destroy(&s->wmu);
  pthread_mutex_destroy(&s->rmu);
  free(s->db_path);
  free(s->profiles_dir);
  free(s->dir);
  free(s);
}

int collect_store_open(const char *dir, collect_store_t **out, collect_store_repair_t *repair_out,
                       char *err, size_t errlen) {
  *out = NULL;
  collect_store_repair_t rep = {0};
  if (sqlite3_threadsafe() == 0)
    return fail(err, errlen, -ENOTSUP, "SQLite %s was built without thread safety",
                sqlite3_libversion());
  collect_store_t *s = calloc(1, sizeof *s);
  if (!s)
    return fail(err, errlen, -ENOMEM, "%s: out of memory", dir);
  s->lock_fd = -1;
  pthread_mutex_init(&s->wmu, NULL);
  pthread_mutex_init(&s->rmu, NULL);
  char *lock = NULL;
  int ret = -ENOMEM;
  s->dir = strdup(dir);
  s->db_path = path_join(dir, "index.sqlite");
  s->profiles_dir = path_join(dir, "profiles");
  lock = path_join(dir, "lock");
  if (!s->dir || !s->db_path || !s->profiles_dir || !lock) {
    fail(err, errlen, ret, "%s: out of memory", dir);
    goto fail;
  }
  if ((ret = make_dir(dir, NULL, err, errlen)) ||
      (ret = make_dir(s->profiles_dir, NULL, err, errlen)))
    goto fail;
  s->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (s->lock_fd < 0) {
    ret = fail(err, errlen, -errno, "%s: open: %s", lock, strerror(errno));
    goto fail;
  }
  if (flock(s->lock_fd, LOCK_EX | LOCK_NB) < 0) {
    ret = errno == EWOULDBLOCK
              ? fail(err, errlen, -EBUSY, "%s: another process has this store open", dir)
              : fail(err, errlen, -errno, "%s: flock: %s", lock, strerror(errno));
    goto fail;
  }
  if ((ret = open_db(s, &s->w, err, errlen)) || (ret = schema(s, err, errlen)) ||
      (ret = repair(s, &rep, err, errlen)) || (ret = open_db(s, &s->r, err, errlen)))
    goto fail;
  int64_t n = 0, bytes = 0;
  if ((ret = count_of(s, "SELECT count(*) FROM profiles", &n, err, errlen)) ||
      (ret = count_of(s, "SELECT coalesce(sum(size), 0) FROM profiles", &bytes, err, errlen)))
    goto fail;
  s->profiles = n;
  s->bytes = bytes;
  int rc = sqlite3_prepare_v3(s->w,
                              "INSERT INTO profiles(job, instance, type, labels, time_ns,"
                              " duration_ns, size, total, file) VALUES(?,?,?,?,?,?,?,?,?)",
                              -1, SQLITE_PREPARE_PERSISTENT, &s->insert, NULL);
  if (rc != SQLITE_OK) {
    ret = sqlfail(s, s->w, rc, err, errlen, "prepare insert");
    goto fail;
  }
  free(lock);
  if (repair_out)
    *repair_out = rep;
  *out = s;
  return 0;
fail:
  free(lock);
  collect_store_close(s);
  return ret;
}

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
    return fail(err, errlen, -ENOMEM, "%s: out of memory", final);
  int fd = -1, ret;
  /* Retention may remove an emptied day directory between our mkdir and
   * our open; making it again settles that. */
  for (int attempt = 0; fd < 0; attempt++) {
    int created;
    if ((ret = make_dir(day, &created, err, errlen)) ||
        (created && (ret = fsync_dir(profiles, err, errlen))))
      goto out;
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && (errno != ENOENT || attempt == 2)) {
      ret = fail(err, errlen, -errno, "%s: open: %s", tmp, strerror(errno));
      goto out;
    }
  }
  if ((ret = write_all(fd, data, len))) {
    fail(err, errlen, ret, "%s: write: %s", tmp, strerror(-ret));
    goto fail;
  }
  if (fsync(fd) < 0) {
    ret = fail(err, errlen, -errno, "%s: fsync: %s", tmp, strerror(errno));
    goto fail;
  }
  int c = close(fd);
  fd = -1;
  if (c < 0) {
    ret = fail(err, errlen, -errno, "%s: close: %s", tmp, strerror(errno));
    goto fail;
  }
  if (rename(tmp, final) < 0) {
    ret = fail(err, errlen, -errno, "%s: rename: %s", final, strerror(errno));
    goto fail;
  }
  if ((ret = fsync_dir(day, err, errlen)))
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
    return fail(err, errlen, -EINVAL, "%s: a profile needs a job, an instance and a type", s->dir);
  if (len > INT64_MAX)
    return fail(err, errlen, -EFBIG, "%s: profile too large", s->dir);
  char hex[33];
  int ret = new_id(hex);
  if (ret)
    return fail(err, errlen, ret, "getrandom: %s", strerror(-ret));
  /* The day of the scrape, in UTC, rounding negative times down. */
  int64_t secs = e->time_ns / 1000000000;
  if (e->time_ns < 0 && e->time_ns % 1000000000)
    secs--;
  time_t t = (time_t)secs;
  struct tm tm;
  if (!gmtime_r(&t, &tm))
    return fail(err, errlen, -EINVAL, "%s: time %lld out of range", s->dir, (long long)e->time_ns);
  char rel[64];
  snprintf(rel, sizeof rel, "%04d%02d%02d/%s.pb.gz", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
           hex);
  char *day = NULL, *final = NULL, *labels = collect_store_labels_text(e->labels, e->nlabels);
  if (!labels || asprintf(&day, "%s/%.8s", s->profiles_dir, rel) < 0 ||
      asprintf(&final, "%s/%s", s->profiles_dir, rel) < 0) {
    ret = fail(err, errlen, -ENOMEM, "%s: out of memory", s->dir);
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
    ret = sqlfail(s, s->w, rc, err, errlen, "insert");
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

/* ---- query, read, series ----------------------------------------------- */

int collect_store_query(collect_store_t *s, const collect_query_t *q, collect_store_row_fn fn,
                        void *arg, char *err, size_t errlen) {
  /* Only the filters given go into the SQL, so that with a type, job and
   * instance the range is one stretch of profiles_series. */
  char sql[512];
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
  n += (size_t)snprintf(sql + n, sizeof sql - n, " ORDER BY time_ns, id");
  if (q->limit > 0)
    snprintf(sql + n, sizeof sql - n, " LIMIT ?7");

  char *path = NULL;
  size_t cap = 0;
  pthread_mutex_lock(&s->rmu);
  sqlite3_stmt *st;
  int ret = 0, rc = sqlite3_prepare_v2(s->r, sql, -1, &st, NULL);
  if (rc != SQLITE_OK) {
    ret = sqlfail(s, s->r, rc, err, errlen, "prepare query");
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
  size_t dirlen = strlen(s->dir);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *file = (const char *)sqlite3_column_text(st, 9);
    size_t need = dirlen + strlen("/profiles/") + strlen(file) + 1;
    if (need > cap) {
      char *p = realloc(path, need);
      if (!p) {
        ret = fail(err, errlen, -ENOMEM, "%s: out of memory", s->dir);
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
    ret = sqlfail(s, s->r, rc, err, errlen, "query");
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
        path = NULL, ret = fail(err, errlen, -ENOMEM, "%s: out of memory", s->dir);
    } else if (rc == SQLITE_DONE) {
      ret = fail(err, errlen, -ENOENT, "%s: no profile %lld", s->db_path, (long long)id);
    } else {
      ret = sqlfail(s, s->r, rc, err, errlen, "read");
    }
    sqlite3_finalize(st);
  } else {
    ret = sqlfail(s, s->r, rc, err, errlen, "prepare read");
  }
  pthread_mutex_unlock(&s->rmu);
  if (ret)
    return ret;

  char *buf = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    ret = fail(err, errlen, -errno, "%s: open: %s", path, strerror(errno));
    goto out;
  }
  buf = malloc(size ? (size_t)size : 1);
  if (!buf) {
    ret = fail(err, errlen, -ENOMEM, "%s: out of memory", path);
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
      ret = fail(err, errlen, -errno, "%s: read: %s", path, strerror(errno));
      goto out;
    }
    if (n == 0 || got == (size_t)size) {
      if (n != 0 || got != (size_t)size)
        ret = fail(err, errlen, -EIO, "%s: size differs from the index's %lld", path,
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
    ret = sqlfail(s, s->r, rc, err, errlen, "prepare series");
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
    ret = sqlfail(s, s->r, rc, err, errlen, "series");
  sqlite3_finalize(st);
out:
  pthread_mutex_unlock(&s->rmu);
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
  int ret = exec(s, s->w, "BEGIN IMMEDIATE", err, errlen);
  if (ret)
    return ret;
  int rc = sqlite3_prepare_v2(s->w,
                              "SELECT id, file, size, time_ns FROM profiles"
                              " ORDER BY time_ns, id LIMIT ?",
                              -1, &sel, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_prepare_v2(s->w, "DELETE FROM profiles WHERE id = ?", -1, &del, NULL);
  if (rc != SQLITE_OK) {
    ret = sqlfail(s, s->w, rc, err, errlen, "prepare retention");
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
      ret = fail(err, errlen, -ENOMEM, "%s: out of memory", s->dir);
      goto out;
    }
    (*files)[(*nfiles)++] = f;
    sqlite3_bind_int64(del, 1, sqlite3_column_int64(sel, 0));
    rc = sqlite3_step(del);
    sqlite3_reset(del);
    if (rc != SQLITE_DONE) {
      ret = sqlfail(s, s->w, rc, err, errlen, "retention delete");
      goto out;
    }
    bytes -= size;
    freed += size;
    n++;
  }
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
    ret = sqlfail(s, s->w, rc, err, errlen, "retention select");
    goto out;
  }
  sqlite3_finalize(sel);
  sel = NULL;
  if ((ret = exec(s, s->w, "COMMIT", err, errlen)))
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
    return fail(err, errlen, -ENOMEM, "%s: out of memory", s->dir);
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
        ret = fail(err, errlen, -errno, "%s: unlink: %s", files[i], strerror(errno));
      free(files[i]);
    }
  }
  free(files);
  if (done.profiles)
    remove_empty_days(s->profiles_dir);
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

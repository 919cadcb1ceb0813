/* The collector's storage: profile files plus an SQLite index. The write
 * order, the repair at open and the threading are explained in store.h.
 * Here: opening (the schema, the repair of what a crash left) and closing,
 * and the helpers the store's files share (store_db.h); store_write.c puts
 * and retains, store_read.c queries and reads. */
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
#include <sys/stat.h>
#include <unistd.h>

#include "collect/store_db.h"

/* 1: profiles. 2: scrape_events, the failed scrapes and the recoveries
 * (store_events.c); a store of version 1 gains the table at open. */
#define SCHEMA_VERSION 2

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

static const char schema_v2_sql[] =
    /* A failed scrape (event 'failure', down 1 when the loop was not Bad
     * before: a target going down) or a loop good again ('up'). reason is
     * the class (fetch.h), error the whole text. */
    "CREATE TABLE scrape_events("
    " id INTEGER PRIMARY KEY,"
    " time_ns INTEGER NOT NULL,"
    " job TEXT NOT NULL,"
    " instance TEXT NOT NULL,"
    " type TEXT NOT NULL,"
    " labels TEXT NOT NULL,"
    " event TEXT NOT NULL,"
    " down INTEGER NOT NULL,"
    " reason TEXT NOT NULL,"
    " error TEXT NOT NULL);"
    "CREATE INDEX scrape_events_time ON scrape_events(time_ns);";

int store_fail(char *err, size_t errlen, int rc, const char *fmt, ...) {
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

int store_sqlfail(const collect_store_t *s, sqlite3 *db, int rc, char *err, size_t errlen,
                  const char *what) {
  return store_fail(err, errlen, errno_of_sqlite(rc), "%s: %s: %s", s->db_path, what,
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

int store_fsync_dir(const char *path, char *err, size_t errlen) {
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return store_fail(err, errlen, -errno, "%s: open: %s", path, strerror(errno));
  int rc = 0;
  if (fsync(fd) < 0)
    rc = store_fail(err, errlen, -errno, "%s: fsync: %s", path, strerror(errno));
  close(fd);
  return rc;
}

int store_make_dir(const char *path, int *created, char *err, size_t errlen) {
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
  return store_fail(err, errlen, -errno, "%s: mkdir: %s", path, strerror(errno));
}

int store_exec(collect_store_t *s, sqlite3 *db, const char *sql, char *err, size_t errlen) {
  int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
  return rc == SQLITE_OK ? 0 : store_sqlfail(s, db, rc, err, errlen, sql);
}

/* ---- open and repair --------------------------------------------------- */

static int open_db(collect_store_t *s, sqlite3 **db, char *err, size_t errlen) {
  /* Each connection is used under its own mutex, so SQLite's per-connection
   * mutex would only cost; NOMUTEX still needs a library built thread-safe,
   * which collect_store_open checks with sqlite3_threadsafe(). */
  int rc = sqlite3_open_v2(s->db_path, db,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
  if (rc != SQLITE_OK)
    return store_sqlfail(s, *db, rc, err, errlen, "open");
  /* The writer and the reader are two connections of this process; a
   * checkpoint can briefly hold one off the other. */
  sqlite3_busy_timeout(*db, 10000);
  sqlite3_stmt *st;
  rc = sqlite3_prepare_v2(*db, "PRAGMA journal_mode=WAL", -1, &st, NULL);
  if (rc != SQLITE_OK)
    return store_sqlfail(s, *db, rc, err, errlen, "PRAGMA journal_mode=WAL");
  rc = sqlite3_step(st);
  int wal = rc == SQLITE_ROW && strcmp((const char *)sqlite3_column_text(st, 0), "wal") == 0;
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW)
    return store_sqlfail(s, *db, rc, err, errlen, "PRAGMA journal_mode=WAL");
  if (!wal)
    return store_fail(err, errlen, -ENOTSUP, "%s: cannot switch to WAL mode", s->db_path);
  return store_exec(s, *db, "PRAGMA synchronous=NORMAL", err, errlen);
}

static int schema(collect_store_t *s, char *err, size_t errlen) {
  sqlite3_stmt *st;
  int rc = sqlite3_prepare_v2(s->w, "PRAGMA user_version", -1, &st, NULL);
  if (rc != SQLITE_OK)
    return store_sqlfail(s, s->w, rc, err, errlen, "PRAGMA user_version");
  rc = sqlite3_step(st);
  int version = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
  sqlite3_finalize(st);
  if (version < 0)
    return store_sqlfail(s, s->w, rc, err, errlen, "PRAGMA user_version");
  if (version == SCHEMA_VERSION)
    return 0;
  if (version != 0 && version != 1)
    return store_fail(err, errlen, -EPROTO, "%s: schema version %d, this cprof knows %d",
                      s->db_path, version, SCHEMA_VERSION);
  char sql[2048];
  snprintf(sql, sizeof sql, "BEGIN IMMEDIATE; %s %s PRAGMA user_version=%d; COMMIT;",
           version == 0 ? schema_sql : "", schema_v2_sql, SCHEMA_VERSION);
  int err_rc = store_exec(s, s->w, sql, err, errlen);
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
    return store_sqlfail(s, s->w, rc, err, errlen, "insert into seen");
  DIR *top = opendir(profiles);
  if (!top) {
    sqlite3_finalize(ins);
    return store_fail(err, errlen, -errno, "%s: opendir: %s", profiles, strerror(errno));
  }
  int ret = 0;
  struct dirent *d;
  while (ret == 0 && (d = readdir(top))) {
    if (d->d_name[0] == '.')
      continue;
    char *day = path_join(profiles, d->d_name);
    if (!day) {
      ret = store_fail(err, errlen, -ENOMEM, "%s: out of memory", profiles);
      break;
    }
    DIR *dd = opendir(day);
    if (!dd) {
      if (errno != ENOTDIR)
        ret = store_fail(err, errlen, -errno, "%s: opendir: %s", day, strerror(errno));
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
          ret =
              store_fail(err, errlen, -errno, "%s/%s: unlink: %s", day, f->d_name, strerror(errno));
        continue;
      }
      if (!has_suffix(f->d_name, ".pb.gz"))
        continue;
      struct stat st;
      if (fstatat(dirfd(dd), f->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        ret = store_fail(err, errlen, -errno, "%s/%s: stat: %s", day, f->d_name, strerror(errno));
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
        ret = store_sqlfail(s, s->w, rc, err, errlen, "insert into seen");
    }
    closedir(dd);
    free(day);
  }
  closedir(top);
  sqlite3_finalize(ins);
  return ret;
}

void store_remove_empty_days(const char *profiles) {
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
    return store_sqlfail(s, s->w, rc, err, errlen, sql);
  rc = sqlite3_step(st);
  if (rc == SQLITE_ROW)
    *n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return rc == SQLITE_ROW ? 0 : store_sqlfail(s, s->w, rc, err, errlen, sql);
}

/* The repair described in store.h. Rows go first (in one transaction),
 * files after, the same order as retention, so a crash during the repair
 * leaves only what the next repair removes. */
static int repair(collect_store_t *s, collect_store_repair_t *rep, char *err, size_t errlen) {
  const char *profiles = s->profiles_dir;
  sqlite3_stmt *st = NULL;
  int64_t mismatched = 0, unlinked = 0;
  int ret = store_exec(s, s->w,
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
    ret = store_exec(s, s->w,
                     "DELETE FROM profiles WHERE NOT EXISTS (SELECT 1 FROM temp.seen s"
                     " WHERE s.file = profiles.file AND s.size = profiles.size)",
                     err, errlen);
  if (ret == 0) {
    rep->rows_removed += sqlite3_changes(s->w);
    ret = store_exec(s, s->w, "COMMIT", err, errlen);
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
    ret = store_sqlfail(s, s->w, rc, err, errlen, "select orphans");
    goto out;
  }
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    char *path;
    if (asprintf(&path, "%s/%s", profiles, (const char *)sqlite3_column_text(st, 0)) < 0) {
      ret = store_fail(err, errlen, -ENOMEM, "%s: out of memory", profiles);
      goto out;
    }
    if (unlink(path) == 0 || errno == ENOENT)
      unlinked++;
    else
      ret = store_fail(err, errlen, -errno, "%s: unlink: %s", path, strerror(errno));
    free(path);
    if (ret)
      goto out;
  }
  if (rc != SQLITE_DONE)
    ret = store_sqlfail(s, s->w, rc, err, errlen, "select orphans");
  /* A file whose row had the wrong size was counted with the rows. */
  rep->orphans_removed += unlinked - mismatched;
  store_remove_empty_days(profiles);
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
    return store_fail(err, errlen, -ENOTSUP, "SQLite %s was built without thread safety",
                      sqlite3_libversion());
  collect_store_t *s = calloc(1, sizeof *s);
  if (!s)
    return store_fail(err, errlen, -ENOMEM, "%s: out of memory", dir);
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
    store_fail(err, errlen, ret, "%s: out of memory", dir);
    goto fail;
  }
  if ((ret = store_make_dir(dir, NULL, err, errlen)) ||
      (ret = store_make_dir(s->profiles_dir, NULL, err, errlen)))
    goto fail;
  s->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (s->lock_fd < 0) {
    ret = store_fail(err, errlen, -errno, "%s: open: %s", lock, strerror(errno));
    goto fail;
  }
  if (flock(s->lock_fd, LOCK_EX | LOCK_NB) < 0) {
    ret = errno == EWOULDBLOCK
              ? store_fail(err, errlen, -EBUSY, "%s: another process has this store open", dir)
              : store_fail(err, errlen, -errno, "%s: flock: %s", lock, strerror(errno));
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
    ret = store_sqlfail(s, s->w, rc, err, errlen, "prepare insert");
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

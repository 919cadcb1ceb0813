/* What the files of cprof collect's store (store.c, store_write.c,
 * store_read.c) share: the handle and the helpers of store.c. Each helper
 * returns 0 or a negative errno, after one line in err. */
#ifndef CPROF_COLLECT_STORE_DB_H
#define CPROF_COLLECT_STORE_DB_H

#include <pthread.h>
#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "collect/store.h"

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

/* Writes fmt's line into err (when there is room), and returns rc. */
int store_fail(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* An SQLite error rc of db (or of opening it, db NULL) as an errno, with
 * "DB: what: SQLite's message" in err. */
int store_sqlfail(const collect_store_t *s, sqlite3 *db, int rc, char *err, size_t errlen,
                  const char *what);
/* Runs sql on db. */
int store_exec(collect_store_t *s, sqlite3 *db, const char *sql, char *err, size_t errlen);
/* fsync(2) of a directory, for a rename or unlink in it to last. */
int store_fsync_dir(const char *path, char *err, size_t errlen);
/* mkdir(2) that takes a directory already there; *created (may be NULL)
 * says whether it was made. */
int store_make_dir(const char *path, int *created, char *err, size_t errlen);
/* Retention of the scrape events (store_events.c): those before cutoff
 * when by_age, and, when sized, those before the oldest profile. Behind
 * the writer's mutex. */
int store_retain_events(collect_store_t *s, int by_age, int64_t cutoff, int sized, char *err,
                        size_t errlen);
/* Removes the day directories retention or repair emptied. */
void store_remove_empty_days(const char *profiles);

#endif

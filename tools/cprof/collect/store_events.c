/* The store's scrape events (store.h): failed scrapes and recoveries, a
 * row each in scrape_events, written behind the writer's mutex and read
 * behind the reader's. Failures are rare beside profiles, so each insert
 * prepares its statement. */
#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "collect/store.h"
#include "collect/store_db.h"

int collect_store_put_event(collect_store_t *s, const collect_scrape_event_t *e, char *err,
                            size_t errlen) {
  pthread_mutex_lock(&s->wmu);
  sqlite3_stmt *st;
  int ret = 0,
      rc = sqlite3_prepare_v2(s->w,
                              "INSERT INTO scrape_events(time_ns, job, instance, type, labels,"
                              " event, down, reason, error) VALUES(?,?,?,?,?,?,?,?,?)",
                              -1, &st, NULL);
  if (rc != SQLITE_OK) {
    ret = store_sqlfail(s, s->w, rc, err, errlen, "prepare event insert");
    goto out;
  }
  sqlite3_bind_int64(st, 1, e->time_ns);
  sqlite3_bind_text(st, 2, e->job, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 3, e->instance, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 4, e->type, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 5, e->labels ? e->labels : "{}", -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 6, e->event, -1, SQLITE_STATIC);
  sqlite3_bind_int(st, 7, e->down);
  sqlite3_bind_text(st, 8, e->reason ? e->reason : "", -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 9, e->error ? e->error : "", -1, SQLITE_STATIC);
  rc = sqlite3_step(st);
  if (rc != SQLITE_DONE)
    ret = store_sqlfail(s, s->w, rc, err, errlen, "event insert");
  sqlite3_finalize(st);
out:
  pthread_mutex_unlock(&s->wmu);
  return ret;
}

int collect_store_events(collect_store_t *s, const collect_query_t *q, collect_store_event_fn fn,
                         void *arg, char *err, size_t errlen) {
  char sql[512];
  size_t n = (size_t)snprintf(sql, sizeof sql,
                              "SELECT time_ns, job, instance, type, labels, event, down, reason,"
                              " error FROM scrape_events WHERE time_ns >= ?1 AND time_ns <= ?2");
  if (q->job)
    n += (size_t)snprintf(sql + n, sizeof sql - n, " AND job = ?3");
  if (q->instance)
    n += (size_t)snprintf(sql + n, sizeof sql - n, " AND instance = ?4");
  if (q->type)
    n += (size_t)snprintf(sql + n, sizeof sql - n, " AND type = ?5");
  n += (size_t)snprintf(sql + n, sizeof sql - n, " ORDER BY time_ns, id");
  if (q->limit > 0)
    snprintf(sql + n, sizeof sql - n, " LIMIT ?6");
  pthread_mutex_lock(&s->rmu);
  sqlite3_stmt *st;
  int ret = 0, rc = sqlite3_prepare_v2(s->r, sql, -1, &st, NULL);
  if (rc != SQLITE_OK) {
    ret = store_sqlfail(s, s->r, rc, err, errlen, "prepare events");
    goto out;
  }
  sqlite3_bind_int64(st, 1, q->from_ns);
  sqlite3_bind_int64(st, 2, q->to_ns);
  if (q->job)
    sqlite3_bind_text(st, 3, q->job, -1, SQLITE_STATIC);
  if (q->instance)
    sqlite3_bind_text(st, 4, q->instance, -1, SQLITE_STATIC);
  if (q->type)
    sqlite3_bind_text(st, 5, q->type, -1, SQLITE_STATIC);
  if (q->limit > 0)
    sqlite3_bind_int64(st, 6, q->limit);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    collect_scrape_event_t e = {
        .time_ns = sqlite3_column_int64(st, 0),
        .job = (const char *)sqlite3_column_text(st, 1),
        .instance = (const char *)sqlite3_column_text(st, 2),
        .type = (const char *)sqlite3_column_text(st, 3),
        .labels = (const char *)sqlite3_column_text(st, 4),
        .event = (const char *)sqlite3_column_text(st, 5),
        .down = sqlite3_column_int(st, 6),
        .reason = (const char *)sqlite3_column_text(st, 7),
        .error = (const char *)sqlite3_column_text(st, 8),
    };
    if ((ret = fn(arg, &e)))
      break;
  }
  if (ret == 0 && rc != SQLITE_DONE)
    ret = store_sqlfail(s, s->r, rc, err, errlen, "events");
  sqlite3_finalize(st);
out:
  pthread_mutex_unlock(&s->rmu);
  return ret;
}

int store_retain_events(collect_store_t *s, int by_age, int64_t cutoff, int sized, char *err,
                        size_t errlen) {
  const char *sql = "DELETE FROM scrape_events WHERE time_ns < ?1 OR (?2 AND time_ns <"
                    " (SELECT coalesce(min(time_ns), 0) FROM profiles))";
  sqlite3_stmt *st;
  int rc = sqlite3_prepare_v2(s->w, sql, -1, &st, NULL);
  if (rc != SQLITE_OK)
    return store_sqlfail(s, s->w, rc, err, errlen, "prepare event retention");
  sqlite3_bind_int64(st, 1, by_age ? cutoff : INT64_MIN);
  sqlite3_bind_int(st, 2, sized);
  rc = sqlite3_step(st);
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? 0 : store_sqlfail(s, s->w, rc, err, errlen, "event retention");
}

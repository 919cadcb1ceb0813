/* The collector's storage: scraped profiles as files under one directory,
 * with an SQLite index so the UI's time-range queries read only the rows
 * they need.
 *
 * Layout of DIR:
 *
 *   DIR/index.sqlite                  the index (WAL mode, so -wal and -shm too)
 *   DIR/lock                          flock'd while a store is open
 *   DIR/profiles/YYYYMMDD/ID.pb.gz    one profile.proto per scrape, bytes as scraped
 *
 * ID is 32 hex digits from getrandom(2), so names never collide and never
 * need the index to be chosen; YYYYMMDD is the scrape's UTC day, which keeps
 * directories to one day's scrapes and makes the tree easy to browse.
 *
 * Crash safety. A put writes ID.pb.gz.tmp, fsyncs it, renames it to
 * ID.pb.gz, fsyncs the directory, and only then inserts the index row in a
 * transaction. So at every instant a row's file is already durable, and a
 * crash leaves at worst a .tmp file or a file no row names. Retention does
 * the reverse: it deletes rows in a transaction, then unlinks their files,
 * so a crash between leaves files without rows. collect_store_open repairs
 * both: it removes every *.tmp, every profile file no row names, and every
 * row whose file is missing or has another size than the row says (which
 * the write order rules out except after damage from outside, or after a
 * power loss that takes back a retention commit whose unlinks had already
 * happened). The repair walks the whole tree once per open.
 *
 * synchronous=NORMAL. In WAL mode NORMAL never corrupts the database and
 * never loses a commit when the process dies; a power loss may take back
 * the last commits. That is harmless here: a taken-back put leaves a file
 * without a row (removed at the next open), a taken-back retention leaves
 * rows without files (removed too). FULL would add an fsync of the WAL to
 * every put for no gain in consistency.
 *
 * Threads. The store has two SQLite connections: a writer (put, retain)
 * and a reader (query, series, read), each behind its own mutex, so the
 * web UI's queries do not wait behind scrapes and WAL lets them run
 * side by side. A put writes and fsyncs its file without any lock; only the
 * insert is serialized. Callbacks of query and series run with the reader
 * mutex held: they must not call back into the store (they may copy what
 * they need and read the profile after the query returns).
 *
 * One process at a time: open takes an exclusive flock on DIR/lock, since
 * a second collector's repair would delete the first one's files in flight.
 *
 * Every function returns 0 or a negative errno and, on failure, writes one
 * line naming the file or the SQLite step to err. */
#ifndef CPROF_COLLECT_STORE_H
#define CPROF_COLLECT_STORE_H

#include <stddef.h>
#include <stdint.h>

typedef struct collect_store collect_store_t;

/* What collect_store_open repaired; the caller logs it. */
typedef struct {
  int64_t tmp_removed;     /* leftover *.tmp files deleted */
  int64_t orphans_removed; /* profile files without a row deleted */
  int64_t rows_removed;    /* rows whose file was missing or of the wrong size deleted */
} collect_store_repair_t;

typedef struct {
  const char *name;
  const char *value;
} collect_store_label_t;

/* One scraped profile. job, instance (the target, "host:port") and type
 * (the profile's name: "process_cpu", "memory", ...) are required. labels
 * are stored as canonical text (see collect_store_labels_text), so the
 * caller decides whether job and instance appear among them too. total is
 * the sum of the default sample type's values, which the UI draws as a
 * line over time. */
typedef struct {
  const char *job;
  const char *instance;
  const char *type;
  const collect_store_label_t *labels;
  size_t nlabels;
  int64_t time_ns;     /* the scrape's start, Unix nanoseconds */
  int64_t duration_ns; /* the profile's duration (0 when it has none) */
  int64_t total;
} collect_entry_t;

/* A stored row as query hands it over. The strings live only until the
 * callback returns. path is the file's full path. */
typedef struct {
  int64_t id;
  const char *job;
  const char *instance;
  const char *type;
  const char *labels;
  int64_t time_ns;
  int64_t duration_ns;
  int64_t size;
  int64_t total;
  const char *path;
} collect_store_row_t;

/* Rows with time_ns in [from_ns, to_ns], oldest first. NULL job, instance,
 * type, labels or label matches all; labels compares canonical text
 * exactly; label is one label as the canonical text writes it,
 * pid="812", and matches the rows that have it (a process of a tree,
 * scraped with process_tree: each). limit 0 means no limit. */
typedef struct {
  const char *job;
  const char *instance;
  const char *type;
  const char *labels;
  const char *label;
  int64_t from_ns;
  int64_t to_ns;
  int64_t limit;
  int newest_first; /* order by time descending: with limit 1, the last row before to_ns */
} collect_query_t;

/* One (type, job, instance) series for the UI's pickers. */
typedef struct {
  const char *job;
  const char *instance;
  const char *type;
  int64_t count;
  int64_t first_ns;
  int64_t last_ns;
} collect_series_t;

/* A callback returns 0 to go on; anything else stops the walk, and the
 * walking function returns that value. */
typedef int (*collect_store_row_fn)(void *arg, const collect_store_row_t *row);
typedef int (*collect_store_series_fn)(void *arg, const collect_series_t *series);

typedef struct {
  int64_t profiles; /* rows deleted, and their files */
  int64_t bytes;    /* sum of their sizes */
} collect_store_retained_t;

/* Opens (creating when missing) the store in dir and repairs what a crash
 * left; repair may be NULL. */
int collect_store_open(const char *dir, collect_store_t **out, collect_store_repair_t *repair,
                       char *err, size_t errlen);
void collect_store_close(collect_store_t *s);

/* Stores one profile's bytes (the profile.proto as scraped, gzipped or
 * not) durably. On failure no row and no file remain. id, when not NULL,
 * receives the new row's id. */
int collect_store_put(collect_store_t *s, const collect_entry_t *e, const void *data, size_t len,
                      int64_t *id, char *err, size_t errlen);

int collect_store_query(collect_store_t *s, const collect_query_t *q, collect_store_row_fn fn,
                        void *arg, char *err, size_t errlen);

/* Reads profile id's bytes into a malloc'd buffer the caller frees.
 * -ENOENT when no such row (retention may just have taken it). */
int collect_store_read(collect_store_t *s, int64_t id, void **data, size_t *len, char *err,
                       size_t errlen);

/* Every (type, job, instance) with its count and time span, ordered by
 * type, job, instance. */
int collect_store_series(collect_store_t *s, collect_store_series_fn fn, void *arg, char *err,
                         size_t errlen);

/* Deletes the profiles older than now_ns - max_age_ns, then the oldest
 * until the stored bytes are at most max_bytes. A limit <= 0 is no limit.
 * out, when not NULL, receives what was deleted. */
int collect_store_retain(collect_store_t *s, int64_t max_age_ns, int64_t max_bytes, int64_t now_ns,
                         collect_store_retained_t *out, char *err, size_t errlen);

/* Profiles and bytes stored now, for the collector's /metrics; kept as
 * counters, so this does not touch the database. */
void collect_store_totals(collect_store_t *s, int64_t *profiles, int64_t *bytes);

/* A scrape that failed, or a loop good again after failures: what
 * /api/scrapes gives for the query page's gap marks. event is "failure"
 * or "up"; down is 1 on the failure that turned a loop Bad (a target
 * going down); reason the class (fetch.h's collect_reason_name), error
 * the whole text ("" for up). Kept as long as the profiles: retention
 * removes the events older than its age, and those older than the oldest
 * profile left after a retention by size. */
typedef struct {
  int64_t time_ns;
  const char *job;
  const char *instance;
  const char *type;
  const char *labels;
  const char *event;
  int down;
  const char *reason;
  const char *error;
} collect_scrape_event_t;

int collect_store_put_event(collect_store_t *s, const collect_scrape_event_t *e, char *err,
                            size_t errlen);

/* Events with time_ns in [from_ns, to_ns], oldest first, NULL job,
 * instance or type matching all; limit 0 is no limit. */
typedef int (*collect_store_event_fn)(void *arg, const collect_scrape_event_t *e);
int collect_store_events(collect_store_t *s, const collect_query_t *q, collect_store_event_fn fn,
                         void *arg, char *err, size_t errlen);

/* The canonical text of a label set: sorted by name, then value,
 * {a="x",b="y"}, with \, " and newline escaped as in Prometheus's text
 * format; "{}" when empty. Malloc'd; NULL when out of memory. */
char *collect_store_labels_text(const collect_store_label_t *labels, size_t n);

#endif

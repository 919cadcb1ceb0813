/* The registry: cprof's profiles as objects, as Go's pprof.Profile, for
 * every consumer (the HTTP routes and index, CPROF_OUTPUT,
 * cprof_profile_write, and the command, pages and collector to come).
 * It knows nothing of HTTP.
 *
 * A profile has a name, a description, a count, and four operations: take
 * a snapshot, release one, write a snapshot (or the change between two)
 * in a format, and say how to turn the profile on when it is off. The
 * built-in ones (registry/builtin.c: goroutine, threadcreate, heap, allocs,
 * block, mutex) read the samplers' tables; custom ones (registry/custom.c,
 * cprof_profile_new) keep a table of their own. The CPU profile is not a
 * snapshot but a recording (registry/cpu.h).
 *
 * cprof__profile_collect is the one delta controller: a snapshot, a wait,
 * a second snapshot, the difference written. */
#ifndef CPROF_REGISTRY_REGISTRY_H
#define CPROF_REGISTRY_REGISTRY_H

#include <stdint.h>

#include "core/buf.h"

typedef struct cprof__profile cprof__profile_t;

typedef struct cprof__profile_ops {
  /* What the index shows beside the name: records, threads, keys. */
  long (*count)(const cprof__profile_t *p);
  /* Takes a snapshot into *out. 0 or a negative errno. */
  int (*snapshot)(const cprof__profile_t *p, void **out);
  void (*release)(const cprof__profile_t *p, void *snap);
  /* Appends `now`, minus `base` when base is not NULL (a delta over
   * duration_ns), to out: debug 0 gzip-compressed profile.proto; 1 Go's
   * legacy text; 2 and more the profile's fullest text where it has one
   * (goroutine: every thread's stack), else as 1. A delta is written with
   * debug 0 only. 0 or a negative errno. */
  int (*write)(const cprof__profile_t *p, void *now, void *base, int debug, int64_t duration_ns,
               cprof__buf_t *out);
  /* NULL, or when the profile is off, how to turn it on (NULL when on). */
  const char *(*off)(const cprof__profile_t *p);
} cprof__profile_ops_t;

struct cprof__profile {
  const char *name;    /* [A-Za-z0-9._-]+, as in /debug/pprof/NAME */
  const char *desc;    /* one line, for the index */
  const char *failure; /* what a failed write says: "could not write the heap profile" */
  const cprof__profile_ops_t *ops;
  const void *arg; /* the profile's own: the heap's default sample type, a custom table */
};

#define CPROF_MAX_PROFILES_REGISTERED 64

/* Adds a profile; p must live for the rest of the process (profiles are
 * never removed, as in Go). 0, -EEXIST when the name is taken (also by
 * the endpoints that are not profiles: cmdline, profile, symbol, threads,
 * trace, wall), -EINVAL for a bad name, -ENOSPC when the registry is full.
 * Thread-safe. */
int cprof__registry_add(const cprof__profile_t *p);

/* The profile of that name (and "threads" for "goroutine"), or NULL. */
const cprof__profile_t *cprof__registry_lookup(const char *name);

/* Up to max profiles into out, sorted by name; returns how many. */
int cprof__registry_list(const cprof__profile_t **out, int max);

/* Whether name may be a profile's name: 1..64 of [A-Za-z0-9._-], not "."
 * or "..". */
int cprof__registry_name_ok(const char *name);

typedef struct cprof__collect {
  int debug;    /* the format, as in write */
  long seconds; /* 0: the profile now; N: the change over N seconds (debug 0 only) */
  /* Sleeps ms between the two snapshots of a delta, returning non-zero if
   * the wait was cut short (the client went away); NULL sleeps plainly. */
  int (*wait)(void *ctx, long ms);
  void *ctx;
} cprof__collect_t;

/* The delta controller: writes the profile now, or its change over
 * c->seconds, to out. 0; -EINVAL for a delta asked with debug != 0 or a
 * negative argument; -ECANCELED when the wait was cut short; or the
 * snapshot's or the writer's error (out is then incomplete). */
int cprof__profile_collect(const cprof__profile_t *p, const cprof__collect_t *c,
                           cprof__buf_t *out);

/* The end of a snapshot operation whose snapshot s is a struct on the
 * heap (NULL when it could not be allocated) that the operation filled
 * with the result err: 0 with *out = s, or the error, s then released
 * through p's own release operation. */
int cprof__snapshot_done(const cprof__profile_t *p, void *s, int err, void **out);

/* The built-in profiles (builtin.c), registered once, before the first
 * lookup, through cprof__registry_add_builtin: cprof__registry_add waits
 * for that once. */
void cprof__builtin_register(void);
int cprof__registry_add_builtin(const cprof__profile_t *p);

#endif

/* A bump allocator with a budget, for the profiles cprof reads (model/model.h):
 * a decoded profile's many small objects are carved from large blocks and
 * freed at once, and no input can make it take more than it was allowed.
 * Blocks come from malloc: the reading side runs in the cprof command and
 * the collector, and in a profiled process only from serving threads under
 * the re-entrancy guard. */
#ifndef CPROF_PROFILE_ARENA_H
#define CPROF_PROFILE_ARENA_H

#include <stddef.h>

typedef struct cprof__arena cprof__arena_t;

/* An arena that will hand out at most `budget` bytes in all (0: no limit).
 * NULL when out of memory. */
cprof__arena_t *cprof__arena_new(size_t budget);
void cprof__arena_free(cprof__arena_t *a);

/* n bytes aligned for any type, zeroed; NULL when out of memory or past the
 * budget (cprof__arena_over says which). */
void *cprof__arena_alloc(cprof__arena_t *a, size_t n);
/* count * size bytes, NULL on overflow too. */
void *cprof__arena_array(cprof__arena_t *a, size_t count, size_t size);
/* A NUL-terminated copy of s[0..n). */
char *cprof__arena_strndup(cprof__arena_t *a, const char *s, size_t n);
char *cprof__arena_strdup(cprof__arena_t *a, const char *s);
/* Whether an allocation failed for the budget rather than for memory. */
int cprof__arena_over(const cprof__arena_t *a);
/* Bytes handed out so far. */
size_t cprof__arena_used(const cprof__arena_t *a);

/* For the arrays that grow while a profile is read (not from an arena):
 * makes *buf (of *cap elements of size bytes, malloc'd or NULL) hold at
 * least `want`, doubling. 0 or -ENOMEM (then *buf is as it was). */
int cprof__grow(void **buf, size_t *cap, size_t want, size_t size);

#endif

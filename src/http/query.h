/* URL query strings: "a=1&debug=2&seconds=30". */
#ifndef CPROF_HTTP_QUERY_H
#define CPROF_HTTP_QUERY_H

#include <stddef.h>

/* Finds key in query (may be NULL) and copies its percent-decoded value
 * ('+' is a space) into out. Returns 1 if present (value may be ""), 0 if
 * absent, -1 if the value does not fit or is badly encoded. The first
 * occurrence wins, as Go's r.FormValue. */
int cprof__query_get(const char *query, const char *key, char *out, size_t outlen);

/* Parses a query value as a decimal integer in [min, max]. Returns 0 or -1. */
int cprof__query_int(const char *s, long min, long max, long *out);

#endif

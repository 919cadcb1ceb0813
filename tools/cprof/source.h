/* Where every cprof command gets a profile's bytes from: a SOURCE, which is
 * a file, "-" for standard input, or a URL fetched with libcurl. The bytes
 * are returned as they came (gzip or not): decoding is the profile
 * library's job (cprof__pf_decode).
 *
 * A SOURCE is read as go tool pprof reads it (cmd/pprof's adjustURL):
 *   http://... and https://...   a URL;
 *   HOST:PORT[/PATH][?QUERY]     a URL too, with http:// added (":6060"
 *                                means localhost:6060), which is how pprof
 *                                takes "localhost:6060/debug/pprof/heap";
 *   file://PATH, anything else   a file.
 * A URL with no path, or "/", gets /debug/pprof/profile (the CPU profile),
 * as in pprof. user:password@ in a URL is sent as HTTP Basic auth. */
#ifndef CPROF_TOOLS_SOURCE_H
#define CPROF_TOOLS_SOURCE_H

#include <stddef.h>

/* More than this is refused, so that a wrong URL or a hostile server cannot
 * make the command exhaust the machine's memory. */
#define SOURCE_MAX_BYTES ((size_t)1 << 30)

typedef struct source {
  unsigned char *data; /* malloc'd, len bytes (plus a NUL not counted) */
  size_t len;
  /* For messages: the path, "standard input", or the URL as fetched with
   * any password replaced by "xxxxx" (Go's url.Redacted). Malloc'd. */
  char *name;
  int is_url;
} source_t;

typedef struct source_options {
  /* > 0: ask a URL for a profile over this many seconds, replacing any
   * ?seconds= it has (pprof's -seconds). Ignored for files. */
  int seconds;
  /* Nonzero: print nothing on stderr while fetching. By default a URL
   * fetch says "Fetching profile over HTTP from URL" as pprof does, and on
   * a terminal counts down a ?seconds= profile's remaining time. */
  int quiet;
} source_options_t;

/* Reads SOURCE into *out (which source_free releases). Returns 0, or a
 * negative errno-style code with a one-line reason in err (no "cprof
 * NAME:" prefix: the caller adds its own), *out then being empty. */
int source_read(const char *source, source_t *out, char *err, size_t errlen);
int source_read_opts(const char *source, const source_options_t *opts, source_t *out, char *err,
                     size_t errlen);

void source_free(source_t *s);

/* Whether SOURCE names a URL (by the rules above) rather than a file. */
int source_is_url(const char *source);

#endif

/* The profile builder: stacks and values in, a symbolized profile out.
 *
 * Mirrors Go's runtime/pprof profileBuilder: samples with identical stacks
 * and labels are merged (values summed); each distinct address becomes one
 * Location (with one Line per inlined frame), each distinct function one
 * Function, and strings are interned with string_table[0] == "". IDs run
 * 1..N in order. Symbolization happens when the profile is written.
 *
 * Stacks follow one convention everywhere in cprof: pcs[0] is the exact pc
 * of the innermost frame, pcs[1..] are return addresses. The builder stores
 * and symbolizes return addresses as pc - 1, the address inside the call
 * instruction, so file:line and inlining come out for the call site. */
#ifndef CPROF_PROFILE_BUILDER_H
#define CPROF_PROFILE_BUILDER_H

#include <stdint.h>

#include "core/buf.h"

#define CPROF_MAX_SAMPLE_TYPES 4


typedef struct cprof__value_type {
  const char *type; /* "goroutine", "samples", "inuse_space" */
  const char *unit; /* "count", "nanoseconds", "bytes" */
} cprof__value_type_t;

typedef struct cprof__label {
  const char *key;
  const char *str;      /* string value, or NULL for a numeric label */
  int64_t num;
  const char *num_unit; /* NULL for none */
} cprof__label_t;

typedef struct cprof__profile_desc {
  cprof__value_type_t sample_types[CPROF_MAX_SAMPLE_TYPES];
  int n_sample_types;
  cprof__value_type_t period_type;
  int64_t period;
  int64_t time_nanos;          /* wall-clock time of collection */
  int64_t duration_nanos;      /* 0 for point-in-time profiles */
  const char *default_sample_type; /* NULL: the last sample type, as pprof assumes */
} cprof__profile_desc_t;

typedef struct cprof__builder cprof__builder_t;

/* Copies the description. NULL on allocation failure. */
cprof__builder_t *cprof__builder_new(const cprof__profile_desc_t *desc);
void cprof__builder_free(cprof__builder_t *b);

/* Adds one sample: n_sample_types values. Strings are copied. 0 or -ENOMEM. */
int cprof__builder_add(cprof__builder_t *b, const uintptr_t *pcs, int depth, const int64_t *values,
                       const cprof__label_t *labels, int nlabels);
/* Adds a sample whose only frame is a pseudo-function called `name` (no
 * mapping, address 0), e.g. "[thread did not answer]": what Go does for
 * lost samples instead of dropping them. */
int cprof__builder_add_pseudo(cprof__builder_t *b, const char *name, const int64_t *values,
                              const cprof__label_t *labels, int nlabels);

/* Sets duration_nanos, for profiles whose length is known only at the end. */
void cprof__builder_set_duration(cprof__builder_t *b, int64_t duration_nanos);
/* Sets time_nanos, for profiles whose window begins after the builder was
 * made (a CPU reader's: registry/cpu.c). */
void cprof__builder_set_time(cprof__builder_t *b, int64_t time_nanos);
/* Sets the period, for profiles whose rate is settled only at the end (the
 * wall profile's, lowered to keep its budget). */
void cprof__builder_set_period(cprof__builder_t *b, int64_t period);

/* Total of value `index` over all samples, and the number of samples added
 * (before merging). */
int64_t cprof__builder_total(const cprof__builder_t *b, int index);
int64_t cprof__builder_count(const cprof__builder_t *b);

/* Symbolizes and appends the gzip-compressed profile.proto to out. 0 or a
 * negative errno. */
int cprof__builder_write_proto(cprof__builder_t *b, cprof__buf_t *out);
/* Symbolizes and appends Go's legacy text count profile (debug=1), which
 * `go tool pprof` parses:
 *   NAME profile: total N
 *   COUNT @ 0xPC 0xPC ...
 *   #	0xADDR	func+0xOFF	file:line
 * Stacks sorted by count, highest first; value 0 is the count. */
int cprof__builder_write_count_text(cprof__builder_t *b, const char *name, cprof__buf_t *out);

/* Appends the process's memory map after a sentinel pprof's legacy parsers
 * look for ("--- Memory map: ---", as gperftools' profiles end; the
 * contention parser stops its samples only at a line starting "---"):
 * with it, `go tool pprof FILE` finds the binaries and symbolizes a text
 * profile's addresses itself. */
void cprof__text_append_maps(cprof__buf_t *out);

/* Symbolizes and appends Go's legacy text contention profile (debug=1 of
 * block and mutex), which `go tool pprof` parses: `header` ("---
 * contention:\ncycles/second=N\n", and for mutex "sampling period=N\n"),
 * then per sample, most delay first,
 *   DELAY COUNT @ 0xPC 0xPC ...
 *   #	0xADDR	func+0xOFF	file:line
 * with value 0 the count and value 1 the delay in cycles. */
int cprof__builder_write_contention_text(cprof__builder_t *b, const char *header,
                                         cprof__buf_t *out);

/* Symbolizes and appends Go's legacy text heap profile (debug=1), which
 * `go tool pprof` parses: the four values of a heap profile per sample
 * (alloc_objects, alloc_space, inuse_objects, inuse_space, unscaled), as
 *   heap profile: INUSE_N: INUSE_B [ALLOC_N: ALLOC_B] @ heap/2*RATE
 *   INUSE_N: INUSE_B [ALLOC_N: ALLOC_B] @ 0xPC 0xPC ...
 *   #	0xADDR	func+0xOFF	file:line
 * most bytes in use first, then `trailer` (lines starting "#") as is. */
int cprof__builder_write_heap_text(cprof__builder_t *b, long rate, const char *trailer,
                                   cprof__buf_t *out);

/* Appends one stack, symbolized, the way Go's debug=2 goroutine dump prints
 * a goroutine: for each frame "func()\n\tfile:line +0xOFF\n", unknown frames
 * as "0xADDR (path+0xFILEOFF)" or "0xADDR ?", frames elided as Go's
 * traceback says it, "...N frames elided...". Same pc convention as above. */
void cprof__format_stack(cprof__buf_t *out, const uintptr_t *pcs, int depth);

/* Go's %q for a string, enough of it for label keys and values: quotes,
 * backslashes and control characters escaped, UTF-8 passed through. */
void cprof__quote(cprof__buf_t *out, const char *s);

#endif

/* What the cprof command's reports share, as pprof's driver and report
 * packages do it: the options every report takes (which value, which
 * unit, which frames), loading SOURCEs into one profile, and the header
 * lines above a report ("File:", "Type:", "Showing nodes accounting
 * for ..."). */
#ifndef CPROF_TOOLS_REPORT_H
#define CPROF_TOOLS_REPORT_H

#include <regex.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/buf.h"
#include "model/demangle.h"
#include "model/model.h"

typedef struct report_opts {
  const char *sample_index; /* a type's name or its index; NULL: pprof's default */
  const char *unit;         /* "minimum" (pprof's default), "auto", "ms", "MB"... */
  int cum_sort;             /* --cum: sort by cum */
  long nodecount;           /* -n / --nodecount; -1: the report's default */
  double nodefraction, edgefraction;
  cprof__pf_granularity_t granularity;
  int mean;
  cprof__pf_demangle_t demangle; /* --symbolize=none, =demangle=full...: as pprof */
  /* pprof's compact_labels, which its prompt sets: no File/Type/Time lines
   * above a top or peek table. */
  int compact_labels;
  cprof__pf_filter_t filter;
  const char *tagroot, *tagleaf; /* label keys as frames at the root / leaf (pprof's) */
  /* Set by report_prepare. */
  size_t index;
  int64_t total; /* what percentages are of: all samples, before filtering, as pprof */
  const char *type, *sample_unit; /* the chosen sample type and its unit */
} report_opts_t;

/* pprof's defaults: last or default sample type, unit "minimum", node
 * fraction 0.005, edge fraction 0.001, functions (options.c, from the
 * table of report options). */
void report_opts_init(report_opts_t *o);

/* If argv[*i] is one of the report options, takes it (and its value,
 * "--focus RE" or "--focus=RE"), advances *i and returns 1; 0 when it is
 * not one; -1 after a line on stderr for a bad value. In options.c,
 * which reads the flags from the table the prompt's settings share. */
int report_flag(report_opts_t *o, const char *cmd, int argc, char **argv, int *i);
/* Usage lines for those options, for a command's --help. */
extern const char report_flags_help[];

/* A command's own option: takes argv[*i] (and advances *i past a value)
 * and returns 1, returns 0 if it is not one of the command's, or -1 after
 * a line on stderr. */
typedef int (*report_extra_fn)(void *ctx, int argc, char **argv, int *i);

/* Parses a report command's arguments: --help (prints `usage` and the
 * report options), the report options, the command's own (extra, may be
 * NULL), and the rest as positional arguments into pos (room for argc).
 * 0 to go on; otherwise the exit status: 0 after --help, 2 after a usage
 * error on stderr. */
int report_args(const char *cmd, const char *usage, report_opts_t *o, report_extra_fn extra,
                void *ctx, int argc, char **argv, char **pos, int *n_pos, int *status);

/* A report: writes into out what it shows of p (already prepared: sample
 * type chosen, filters applied) under options o; arg is the command's
 * REGEX for those that take one, else NULL. 0, or 1 with a line in err
 * (what the report wrote is then not printed, as pprof prints nothing of a
 * report that failed). */
typedef int (*report_fn)(cprof__buf_t *out, cprof__pf_t *p, report_opts_t *o, const char *arg,
                         char *err, size_t errlen);

/* A command's own check once its arguments are read, before any SOURCE is
 * (a missing -o): 0, or 2 after a line on stderr. */
typedef int (*report_check_fn)(void *ctx);

/* The start every report command shares: its arguments (report_args;
 * with `wants_arg`, a REGEX before the SOURCEs, into *arg), the command's
 * check (may be NULL), then the SOURCEs loaded and prepared into *p under
 * *o. Returns -1 with *p ready (cprof__pf_free it), or else the exit
 * status to end with (0 after --help). An extra option without ctx gets o
 * as its ctx. */
int report_open(const char *cmd, const char *usage, int wants_arg, report_extra_fn extra,
                report_check_fn check, void *ctx, int argc, char **argv, report_opts_t *o,
                const char **arg, cprof__pf_t **p);

/* The whole of a report command: its arguments (with `wants_arg`, a REGEX
 * before the SOURCEs), loading, preparing, the report, standard output.
 * Returns the exit status. */
int report_main(const char *cmd, const char *usage, int wants_arg, report_extra_fn extra, void *ctx,
                report_fn fn, int argc, char **argv);

/* The reports (top.c, peek.c, list.c, traces.c, folded.c). */
int report_top(cprof__buf_t *out, cprof__pf_t *p, report_opts_t *o, const char *arg, char *err,
               size_t errlen);
int report_peek(cprof__buf_t *out, cprof__pf_t *p, report_opts_t *o, const char *arg, char *err,
                size_t errlen);
int report_list(cprof__buf_t *out, cprof__pf_t *p, report_opts_t *o, const char *arg, char *err,
                size_t errlen);
int report_traces(cprof__buf_t *out, cprof__pf_t *p, report_opts_t *o, const char *arg, char *err,
                  size_t errlen);
int report_folded(cprof__buf_t *out, cprof__pf_t *p, report_opts_t *o, const char *arg, char *err,
                  size_t errlen);

/* Reads and decodes each SOURCE (a file, "-", a URL) and merges them into
 * one profile, as pprof does with several. 0, or 1 after a line on stderr. */
int report_load(const char *cmd, char **sources, int n, cprof__pf_t **out);

/* pprof's SampleIndexByName: name is a sample type's name (with or
 * without "inuse_"), its index, or NULL or "" for the profile's default
 * type (else the last). 0, or -1 with a line in err. */
int report_sample_index(const cprof__pf_t *p, const char *name, size_t *index, char *err,
                        size_t errlen);

/* Chooses the sample type (o->index, o->type, o->sample_unit) and applies
 * the filters, warning as pprof does when one matches nothing. 0, or 1
 * after a line on stderr. */
int report_prepare(const char *cmd, cprof__pf_t *p, report_opts_t *o);

/* pprof's header lines for the profile: File, Build ID, comments, Type,
 * Time, Duration. */
void report_profile_labels(cprof__buf_t *out, const cprof__pf_t *p, const report_opts_t *o);

/* p's graph under o (sample type, granularity, mean), trimmed as t says:
 * what top, peek and graph draw from. 0 with *g (cprof__pf_graph_free
 * it), or 1 with a line in err. */
int report_graph(const cprof__pf_t *p, const report_opts_t *o, const cprof__pf_trim_t *t,
                 cprof__pf_graph_t **g, cprof__pf_trimmed_t *r, char *err, size_t errlen);

/* pprof's reportLabels: the profile's labels, then "Showing nodes
 * accounting for ...", "Dropped N nodes (cum <= X)", "Dropped N edges",
 * "Showing top N nodes out of M", with values in `unit`. */
void report_labels(cprof__buf_t *out, const cprof__pf_t *p, const report_opts_t *o,
                   const cprof__pf_graph_t *g, const cprof__pf_trimmed_t *r, const char *unit);

/* The unit a report shows values in: o->unit, or for "minimum" the one
 * pprof's selectOutputUnit picks for these nodes. */
const char *report_output_unit(const report_opts_t *o, const cprof__pf_graph_t *g);

/* value formatted in the report's unit ("1.50MB"). */
void report_value(char *buf, size_t len, int64_t value, const report_opts_t *o,
                  const char *out_unit);

/* The main binary's mapping, as pprof's Parse picks it: the first whose
 * file is not a shared library or a [pseudo] one; NULL if none. */
const cprof__pf_mapping_t *report_main_mapping(const cprof__pf_t *p);

/* The table of top.c, with its header lines, for graph g of p trimmed as
 * r says (top, diff and the prompt print it). */
void top_write(cprof__buf_t *out, const cprof__pf_t *p, const report_opts_t *o,
               const cprof__pf_graph_t *g, const cprof__pf_trimmed_t *r);

/* Compiles a report's REGEX (POSIX extended, no subexpressions): 0, or 1
 * with "bad regexp RE: why" in err. */
int report_regex(regex_t *rx, const char *re, char *err, size_t errlen);

/* Writes s to f with control characters, and bytes that are not UTF-8,
 * escaped ("\n", "\x01"): names are the program's bytes, and a terminal
 * must show them, not obey them. */
void report_put_name(cprof__buf_t *out, const char *s);
/* The same for a line of source text, whose tabs are kept. */
void report_put_text(cprof__buf_t *out, const char *s);

#endif

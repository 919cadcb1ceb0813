/* A Prometheus label selector, {job="backend", instance=~"127.0.0.1:.*",
 * thread="worker"}, as /api/profiles, /api/merge and /view take it in
 * selector=: matchers joined by commas, each a label name, an operator
 * (= equal, != not equal, =~ matches, !~ does not match) and a quoted
 * value ("...", '...' or `...`, with \\, \", \' , \n and \t escapes).
 * A regex is POSIX extended (regcomp(3), REG_EXTENDED; close to the RE2
 * Prometheus uses for what people type) and anchored at both ends as
 * Prometheus anchors it: =~"a.*" is ^(a.*)$. A label a set does not have
 * reads as "", as in Prometheus: {pid=""} selects what has no pid.
 *
 * A matcher is one of two kinds, by its name: a series label (job,
 * instance, the config's target labels, and pid and process in a job
 * scraped with process_tree: each) selects stored profiles by their
 * labels; any other name filters the samples inside them by the labels
 * the program gave them (cprof_do's, a merged tree's pid), and a sample
 * without the label reads "" too. The caller says which is which
 * (collect_selector_split). */
#ifndef CPROF_COLLECT_SELECTOR_H
#define CPROF_COLLECT_SELECTOR_H

#include <regex.h>
#include <stddef.h>

#include "model/model.h"

typedef enum {
  COLLECT_MATCH_EQ,
  COLLECT_MATCH_NE,
  COLLECT_MATCH_RE,
  COLLECT_MATCH_NRE
} collect_match_op_t;

typedef struct collect_matcher {
  char *name, *value;
  collect_match_op_t op;
  regex_t re; /* for =~ and !~ */
  int series; /* 1: a series label; 0: a sample label */
} collect_matcher_t;

typedef struct collect_selector {
  collect_matcher_t *m;
  size_t n;
  size_t nseries, nsamples; /* after collect_selector_split */
} collect_selector_t;

/* Parses text ("" or blanks: no matchers). 0 with *out, -ENOMEM, or
 * -EINVAL with one line in err saying where and what is wrong. Every
 * matcher starts as a sample matcher. */
int collect_selector_parse(const char *text, collect_selector_t **out, char *err, size_t errlen);
void collect_selector_free(collect_selector_t *s);

/* Marks each matcher whose name is_series says is a series label. */
void collect_selector_split(collect_selector_t *s, int (*is_series)(void *arg, const char *name),
                            void *arg);

/* Whether labels, a series' canonical label text ({a="x",b="y"}, store.h),
 * satisfies every series matcher. */
int collect_selector_match_series(const collect_selector_t *s, const char *labels);

/* Whether one value satisfies a matcher. */
int collect_matcher_match(const collect_matcher_t *m, const char *value);

/* Drops p's samples that do not satisfy every sample matcher (a numeric
 * label compared as its decimal). Returns how many are kept. */
size_t collect_selector_filter(const collect_selector_t *s, cprof__pf_t *p);

/* Label name's value in canonical label text into out (unescaped); ""
 * when absent. */
void collect_labels_get(const char *labels, const char *name, char *out, size_t outlen);

#endif

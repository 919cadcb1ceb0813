/* The /debug/pprof/ index page's bytes, from a list of rows; which rows,
 * and who may see them, is src/http/'s to decide. */
#ifndef CPROF_UI_INDEX_H
#define CPROF_UI_INDEX_H

#include "core/buf.h"
#include "tree/tree.h"

typedef struct cprof__index_row {
  const char *name;       /* the path under /debug/pprof/ */
  const char *desc;       /* one line */
  long count;             /* records, threads; 0 for what is not a profile */
  const char *link_query; /* the link's query, e.g. "debug=1", or NULL */
  const char *off;        /* NULL, or when the profile is off how to turn it on */
} cprof__index_row_t;

/* Appends the page: rows in the order given (Go's index sorts by name),
 * and, for a process tree (nprocs > 1), its processes, this one first. */
void cprof__index_page(const cprof__index_row_t *rows, int n, const cprof__tree_proc_t *procs,
                       int nprocs, cprof__buf_t *out);

#endif

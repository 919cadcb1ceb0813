/* The tree's profiles as one (tree.h): each process's profile.proto
 * decoded into the model, every sample labelled with its pid, merged as
 * pprof merges, and encoded again. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/model.h"
#include "tree/tree.h"

/* The comments of p with more after them, in p's arena. */
static int add_comments(cprof__pf_t *p, const char *const *more, int n) {
  if (n <= 0)
    return 0;
  const char **all = cprof__arena_array(p->arena, p->n_comments + (size_t)n, sizeof *all);
  if (!all)
    return -ENOMEM;
  memcpy(all, p->comments, p->n_comments * sizeof *all);
  for (int i = 0; i < n; i++)
    if (!(all[p->n_comments + (size_t)i] = cprof__arena_strdup(p->arena, more[i])))
      return -ENOMEM;
  p->comments = all;
  p->n_comments += (size_t)n;
  return 0;
}

int cprof__tree_merge(const cprof__tree_part_t *parts, int n, const char *const *missing,
                      int nmissing, cprof__buf_t *out, char *err, size_t errlen) {
  cprof__pf_t **ps = calloc((size_t)(n > 0 ? n : 1), sizeof *ps);
  if (!ps)
    return -ENOMEM;
  int rc = 0;
  for (int i = 0; i < n && rc == 0; i++) {
    char why[200], pid[16];
    snprintf(pid, sizeof pid, "%d", (int)parts[i].pid);
    rc = cprof__pf_decode(parts[i].data, parts[i].len, &ps[i], why, sizeof why);
    if (rc == -EINVAL)
      snprintf(err, errlen, "pid %s: %s", pid, why);
    else if (rc == 0 && parts[i].pid != getpid())
      rc = cprof__tree_symbolize(ps[i]); /* a member's: addresses only */
    if (rc == 0)
      rc = cprof__pf_set_num_label(ps[i], "pid", parts[i].pid, NULL);
  }
  /* Checked here first, as cprof__pf_merge will, so that the reason
   * names the processes by pid rather than by their place in parts
   * ("profile 3"), which nobody reading the owner's answer can know. */
  for (int i = 1; i < n && rc == 0; i++) {
    char a[24], b[24];
    snprintf(a, sizeof a, "pid %d", (int)parts[0].pid);
    snprintf(b, sizeof b, "pid %d", (int)parts[i].pid);
    rc = cprof__pf_compatible(ps[0], ps[i], a, b, err, errlen);
  }
  cprof__pf_t *merged = NULL;
  if (rc == 0)
    rc = cprof__pf_merge(ps, (size_t)n, &merged, err, errlen);
  if (rc == 0) {
    /* The processes were profiled over the same window, side by side:
     * the merged profile covers the window, not the sum of its parts (as
     * pprof's merge of one process's profiles, made one after another,
     * would have it). */
    int64_t window = 0;
    for (int i = 0; i < n; i++)
      if (ps[i]->duration_nanos > window)
        window = ps[i]->duration_nanos;
    merged->duration_nanos = window;
    rc = add_comments(merged, missing, nmissing);
  }
  if (rc == 0)
    rc = cprof__pf_encode(merged, 1, out, err, errlen);
  if (rc == -ENOMEM)
    snprintf(err, errlen, "out of memory");
  cprof__pf_free(merged);
  for (int i = 0; i < n; i++)
    cprof__pf_free(ps[i]);
  free(ps);
  return rc;
}

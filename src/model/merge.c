/* Merging profiles and subtracting one from another, as pprof's
 * profile.Merge (github.com/google/pprof/profile/merge.go) and its
 * -diff_base.
 *
 * Every mapping, function, location and sample of the sources is mapped to
 * one of the output's, found by its key or added with the next ID:
 *   mapping   size rounded up to 4 KiB, offset, and build ID or else file
 *             (two runs of a program load it at different addresses);
 *   function  name, system name, file name and start line;
 *   location  mapping, address less the mapping's start, lines (function and
 *             line number) and is_folded;
 *   sample    its locations and its labels, whatever their order across
 *             keys (pprof keeps labels in maps), values summed.
 * A location in a mapping met before at another start is moved by the
 * difference, as pprof does, so that the addresses stay in the mapping.
 *
 * The output's arrays are allocated at once for the sum of the sources'
 * counts, which bounds what the merge can produce: the pointers between
 * them are then final as soon as they are made. Samples whose values are
 * all zero are skipped; if summing left some at zero, the output is merged
 * once more on its own, which drops them and everything only they used
 * (pprof's Merge does the same).
 *
 * This file merges whole profiles; each object is mapped in merge_map.c
 * (merge_internal.h is what they share). */
#include "model/model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/merge_internal.h"

/* ---- profiles ---------------------------------------------------------- */

static int same_type(const cprof__value_type_t *a, const cprof__value_type_t *b) {
  return str_eq(a->type, b->type) && str_eq(a->unit, b->unit);
}

/* "samples/count, cpu/nanoseconds", cut to fit. */
static void format_types(char *buf, size_t len, const cprof__pf_t *p) {
  size_t at = 0;
  buf[0] = 0;
  for (size_t i = 0; i < p->n_sample_types && at < len; i++) {
    int n = snprintf(buf + at, len - at, "%s%s/%s", i ? ", " : "",
                     p->sample_types[i].type ? p->sample_types[i].type : "",
                     p->sample_types[i].unit ? p->sample_types[i].unit : "");
    if (n < 0)
      break;
    at += (size_t)n;
  }
}

/* Whether b can be merged with a (pprof's Profile.compatible): the same
 * period type and the same sample types in the same order. */
static int compatible(const cprof__pf_t *a, const cprof__pf_t *b, const char *a_name,
                      const char *b_name, char *err, size_t errlen) {
  if (!same_type(&a->period_type, &b->period_type)) {
    snprintf(err, errlen, "%s's period type (%s/%s) differs from %s's (%s/%s)", b_name,
             b->period_type.type ? b->period_type.type : "",
             b->period_type.unit ? b->period_type.unit : "", a_name,
             a->period_type.type ? a->period_type.type : "",
             a->period_type.unit ? a->period_type.unit : "");
    return 0;
  }
  int ok = a->n_sample_types == b->n_sample_types;
  for (size_t i = 0; ok && i < a->n_sample_types; i++)
    ok = same_type(&a->sample_types[i], &b->sample_types[i]);
  if (!ok) {
    char ta[120], tb[120];
    format_types(ta, sizeof ta, a);
    format_types(tb, sizeof tb, b);
    snprintf(err, errlen, "%s's sample types (%s) differ from %s's (%s)", b_name, tb, a_name, ta);
  }
  return ok;
}

int cprof__pf_compatible(const cprof__pf_t *a, const cprof__pf_t *b, const char *a_name,
                         const char *b_name, char *err, size_t errlen) {
  return compatible(a, b, a_name, b_name, err, errlen) ? 0 : -EINVAL;
}

/* pprof's combineHeaders: the first profile's types, drop and keep frames
 * and period type; the earliest time (a zero met first is replaced), the
 * durations summed, the largest period, every distinct comment once, the
 * first default sample type given. */
static int combine_headers(merger_t *m, cprof__pf_t *const *ps, size_t n) {
  cprof__pf_t *p = m->p;
  const cprof__pf_t *first = ps[0];
  size_t n_comments = 0;
  for (size_t i = 0; i < n; i++)
    n_comments += ps[i]->n_comments;
  p->n_sample_types = first->n_sample_types;
  p->sample_types =
      cprof__arena_array(m->a, p->n_sample_types ? p->n_sample_types : 1, sizeof *p->sample_types);
  p->comments = cprof__arena_array(m->a, n_comments ? n_comments : 1, sizeof *p->comments);
  if (!p->sample_types || !p->comments)
    return -ENOMEM;
  for (size_t i = 0; i < p->n_sample_types; i++) {
    p->sample_types[i].type = copy_str(m, first->sample_types[i].type);
    p->sample_types[i].unit = copy_str(m, first->sample_types[i].unit);
    if (!p->sample_types[i].type || !p->sample_types[i].unit)
      return -ENOMEM;
  }
  p->drop_frames = copy_str(m, first->drop_frames);
  p->keep_frames = copy_str(m, first->keep_frames);
  p->period_type.type = copy_str(m, first->period_type.type);
  p->period_type.unit = copy_str(m, first->period_type.unit);
  p->default_sample_type = "";
  p->ids_sequential = 1; /* IDs run 1..N, in order */
  for (size_t i = 0; i < n; i++) {
    const cprof__pf_t *s = ps[i];
    if (p->time_nanos == 0 || s->time_nanos < p->time_nanos)
      p->time_nanos = s->time_nanos;
    p->duration_nanos = (int64_t)((uint64_t)p->duration_nanos + (uint64_t)s->duration_nanos);
    if (p->period == 0 || p->period < s->period)
      p->period = s->period;
    /* Comments are few (a handful a profile), so a linear search does. */
    for (size_t c = 0; c < s->n_comments; c++) {
      size_t k = 0;
      while (k < p->n_comments && !str_eq(p->comments[k], s->comments[c]))
        k++;
      if (k == p->n_comments && !(p->comments[p->n_comments++] = copy_str(m, s->comments[c])))
        return -ENOMEM;
    }
    if (!*p->default_sample_type && s->default_sample_type)
      p->default_sample_type = s->default_sample_type;
  }
  p->default_sample_type = copy_str(m, p->default_sample_type);
  if (!p->drop_frames || !p->keep_frames || !p->period_type.type || !p->period_type.unit ||
      !p->default_sample_type)
    return -ENOMEM;
  return 0;
}

static void merger_free(merger_t *m) {
  cprof__table_free(&m->mappings);
  cprof__table_free(&m->functions);
  cprof__table_free(&m->locations);
  cprof__table_free(&m->samples);
  free(m->map_memo);
  free(m->fn_memo);
  free(m->loc_memo);
  free(m->lines);
  free(m->locs);
  free(m->labels);
}

/* Sums of the sources' counts, which the output cannot exceed; -EOVERFLOW
 * past what the tables index. */
static int add_count(size_t *sum, size_t n) {
  if (n > UINT32_MAX - 1 - *sum)
    return -EOVERFLOW;
  *sum += n;
  return 0;
}

/* Merges ps[0..n), the values of ps[i] multiplied by signs[i] (1 or -1);
 * with a sign of -1, ps[i] is a diff's BASE and its samples are labelled
 * pprof::base=true. The profiles are compatible. */
static int merge_signed(cprof__pf_t *const *ps, const int *signs, size_t n, cprof__pf_t **out) {
  merger_t m = {0};
  size_t n_mappings = 0, n_functions = 0, n_locations = 0, n_samples = 0;
  size_t max_mappings = 0, max_functions = 0, max_locations = 0;
  int err = 0;
  *out = NULL;
  for (size_t i = 0; i < n && !err; i++) {
    err = add_count(&n_mappings, ps[i]->n_mappings);
    if (!err)
      err = add_count(&n_functions, ps[i]->n_functions);
    if (!err)
      err = add_count(&n_locations, ps[i]->n_locations);
    if (!err)
      err = add_count(&n_samples, ps[i]->n_samples);
    max_mappings = ps[i]->n_mappings > max_mappings ? ps[i]->n_mappings : max_mappings;
    max_functions = ps[i]->n_functions > max_functions ? ps[i]->n_functions : max_functions;
    max_locations = ps[i]->n_locations > max_locations ? ps[i]->n_locations : max_locations;
  }
  if (err)
    return err;

  cprof__pf_t *p = NULL;
  cprof__arena_t *a = cprof__arena_new(0);
  if (!a || !(p = cprof__arena_alloc(a, sizeof *p)))
    goto nomem;
  p->arena = m.a = a;
  m.p = p;
  p->mappings = cprof__arena_array(a, n_mappings + 1, sizeof *p->mappings);
  p->functions = cprof__arena_array(a, n_functions + 1, sizeof *p->functions);
  p->locations = cprof__arena_array(a, n_locations + 1, sizeof *p->locations);
  p->samples = cprof__arena_array(a, n_samples + 1, sizeof *p->samples);
  m.map_memo = malloc((max_mappings + 1) * sizeof *m.map_memo);
  m.fn_memo = malloc((max_functions + 1) * sizeof *m.fn_memo);
  m.loc_memo = malloc((max_locations + 1) * sizeof *m.loc_memo);
  if (!p->mappings || !p->functions || !p->locations || !p->samples || !m.map_memo || !m.fn_memo ||
      !m.loc_memo)
    goto nomem;
  if ((err = combine_headers(&m, ps, n)))
    goto fail;

  for (size_t i = 0; i < n; i++) {
    const cprof__pf_t *src = ps[i];
    m.src = src;
    for (size_t k = 0; k < src->n_mappings; k++)
      m.map_memo[k] = (map_info_t){NONE, 0};
    memset(m.fn_memo, 0xff, src->n_functions * sizeof *m.fn_memo);
    memset(m.loc_memo, 0xff, src->n_locations * sizeof *m.loc_memo);
    /* The first mapping is the main binary's (profile.proto says so), so
     * it goes first, whatever the samples meet first. */
    if (p->n_mappings == 0 && src->n_mappings > 0) {
      map_info_t mi;
      if ((err = cprof__merge_mapping(&m, &src->mappings[0], &mi)))
        goto fail;
    }
    for (size_t k = 0; k < src->n_samples; k++)
      if ((err = cprof__merge_sample(&m, &src->samples[k], signs[i], signs[i] < 0)))
        goto fail;
  }
  merger_free(&m);
  *out = p;
  return 0;
nomem:
  err = -ENOMEM;
fail:
  merger_free(&m);
  cprof__arena_free(a);
  return err;
}

static int has_zero_sample(const cprof__pf_t *p) {
  for (size_t i = 0; i < p->n_samples; i++)
    if (is_zero(p->samples[i].values, p->n_sample_types))
      return 1;
  return 0;
}

/* Merges, then merges the result alone when samples summed to zero, to
 * drop them and what only they referred to. */
static int merge_and_compact(cprof__pf_t *const *ps, const int *signs, size_t n,
                             cprof__pf_t **out) {
  int err = merge_signed(ps, signs, n, out);
  if (err || !has_zero_sample(*out))
    return err;
  cprof__pf_t *first = *out;
  int one = 1;
  err = merge_signed(&first, &one, 1, out);
  cprof__pf_free(first);
  return err;
}

static int fail_errno(int err, char *err_buf, size_t errlen) {
  if (err == -ENOMEM)
    snprintf(err_buf, errlen, "out of memory");
  else if (err == -EOVERFLOW)
    snprintf(err_buf, errlen, "too many objects to merge (more than 2^32)");
  return err;
}

int cprof__pf_merge(cprof__pf_t *const *ps, size_t n, cprof__pf_t **out, char *err, size_t errlen) {
  *out = NULL;
  if (n == 0) {
    snprintf(err, errlen, "no profiles to merge");
    return -EINVAL;
  }
  char a_name[32], b_name[32];
  for (size_t i = 1; i < n; i++) {
    snprintf(a_name, sizeof a_name, "profile 1");
    snprintf(b_name, sizeof b_name, "profile %zu", i + 1);
    if (!compatible(ps[0], ps[i], a_name, b_name, err, errlen))
      return -EINVAL;
  }
  int *signs = malloc(n * sizeof *signs);
  if (!signs)
    return fail_errno(-ENOMEM, err, errlen);
  for (size_t i = 0; i < n; i++)
    signs[i] = 1;
  int rc = merge_and_compact(ps, signs, n, out);
  free(signs);
  return fail_errno(rc, err, errlen);
}

int cprof__pf_diff(const cprof__pf_t *base, const cprof__pf_t *new_, cprof__pf_t **out, char *err,
                   size_t errlen) {
  *out = NULL;
  if (!compatible(new_, base, "NEW", "BASE", err, errlen))
    return -EINVAL;
  /* NEW first, as pprof merges [NEW, BASE]: NEW's header wins. BASE's
   * samples are negated and labelled pprof::base=true (merge_signed), so
   * a stack in both stays two samples and reports take their total from
   * BASE's, as pprof's -diff_base. */
  cprof__pf_t *ps[2] = {(cprof__pf_t *)new_, (cprof__pf_t *)base};
  int signs[2] = {1, -1};
  return fail_errno(merge_and_compact(ps, signs, 2, out), err, errlen);
}

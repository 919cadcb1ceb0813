/* A range of stored profiles reduced by kind (collect/range.h). */
#include "collect/range.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"

const char *collect_kind_name(collect_kind_t k) {
  return k == COLLECT_CUMULATIVE ? "cumulative" : k == COLLECT_SNAPSHOT ? "snapshot" : "delta";
}

static const char *const mode_names[] = {"auto", "sum", "delta", "avg", "latest"};

const char *collect_mode_name(collect_mode_t m) {
  return (size_t)m < sizeof mode_names / sizeof *mode_names ? mode_names[m] : "?";
}

int collect_mode_parse(const char *s, collect_mode_t *m) {
  for (size_t i = 0; i < sizeof mode_names / sizeof *mode_names; i++)
    if (s && strcmp(s, mode_names[i]) == 0) {
      *m = (collect_mode_t)i;
      return 0;
    }
  return -EINVAL;
}

collect_kind_t collect_sample_kind(const char *name, int64_t duration_ns) {
  if (duration_ns > 0)
    return COLLECT_DELTA;
  if (strncmp(name, "alloc_", 6) == 0 || !strcmp(name, "contentions") || !strcmp(name, "delay") ||
      !strcmp(name, "threadcreate"))
    return COLLECT_CUMULATIVE;
  if (strncmp(name, "inuse_", 6) == 0 || !strcmp(name, "goroutine") || !strcmp(name, "threads"))
    return COLLECT_SNAPSHOT;
  return COLLECT_DELTA;
}

void collect_quantity_of(const char *name, int delta_scrape, collect_quantity_t *q) {
  /* The units of the default sample types: cpu and delay nanoseconds,
   * inuse_space and alloc_space bytes, goroutine and threadcreate counts. */
  static const struct {
    const char *name;
    collect_quantity_t q;
  } known[] = {
      {"process_cpu", {COLLECT_DELTA, "cores", "CPU cores", 0, 1, 1e-9, 1}},
      {"profile", {COLLECT_DELTA, "cores", "CPU cores", 0, 1, 1e-9, 1}},
      {"wall", {COLLECT_DELTA, "threads", "threads (wall seconds per second)", 0, 1, 1e-9, 1}},
      {"memory", {COLLECT_SNAPSHOT, "bytes", "bytes in use", 0, 0, 1, 1}},
      {"heap", {COLLECT_SNAPSHOT, "bytes", "bytes in use", 0, 0, 1, 1}},
      {"allocs", {COLLECT_CUMULATIVE, "bytes/s", "bytes allocated per second", 1, 0, 1, 1}},
      {"block", {COLLECT_CUMULATIVE, "s/s", "contention seconds per second", 1, 0, 1e-9, 1}},
      {"mutex", {COLLECT_CUMULATIVE, "s/s", "contention seconds per second", 1, 0, 1e-9, 1}},
      {"goroutine", {COLLECT_SNAPSHOT, "threads", "threads", 0, 0, 1, 1}},
      {"threadcreate", {COLLECT_CUMULATIVE, "threads/s", "threads created per second", 1, 0, 1, 1}},
  };
  *q = (collect_quantity_t){COLLECT_DELTA, "", "", 0, 0, 1, 0};
  for (size_t i = 0; i < sizeof known / sizeof *known; i++)
    if (!strcmp(name, known[i].name))
      *q = known[i].q;
  /* Scraped with ?seconds=: each profile is its window's change already. */
  if (delta_scrape && q->kind == COLLECT_CUMULATIVE)
    q->kind = COLLECT_DELTA;
}

int collect_row_value(const collect_quantity_t *q, int64_t total, int64_t time_ns,
                      int64_t duration_ns, int has_prev, int64_t prev_total, int64_t prev_ns,
                      double *v) {
  if (q->cpu || (q->per_second && q->kind == COLLECT_DELTA)) {
    if (duration_ns <= 0)
      return -ENODATA;
    *v = (double)total * q->scale / ((double)duration_ns / 1e9);
    return 0;
  }
  if (q->per_second) {
    if (!has_prev || time_ns <= prev_ns)
      return -ENODATA;
    int64_t d = total - prev_total;
    if (d < 0) /* restarted: counted from zero */
      d = total;
    *v = (double)d * q->scale / ((double)(time_ns - prev_ns) / 1e9);
    return 0;
  }
  *v = (double)total * q->scale;
  return 0;
}

/* floor(a / b) and its remainder (0 <= rem < b) for b > 0. */
static __int128 floor_div(__int128 a, __int128 b, __int128 *rem) {
  __int128 q = a / b, r = a % b;
  if (r < 0)
    q--, r += b;
  *rem = r;
  return q;
}

typedef struct {
  size_t i;
  __int128 rem;
} rem_t;

static int by_rem(const void *a, const void *b) {
  const rem_t *x = a, *y = b;
  return x->rem < y->rem ? 1 : x->rem > y->rem ? -1 : (x->i > y->i) - (x->i < y->i);
}

void collect_scale(cprof__pf_t *p, int64_t num, int64_t den) {
  /* Rounding each sample on its own would move the total: three scrapes
   * of 20 threads, one of them each, average 0.67 a sample and 13.3 in
   * all, but round to 1 and 20. So each value is rounded down, then the
   * samples with the largest remainders get one more until the total is
   * the scaled total rounded (the largest remainder method). */
  rem_t *rems = den > 1 && p->n_samples ? calloc(p->n_samples, sizeof *rems) : NULL;
  for (size_t t = 0; t < p->n_sample_types; t++) {
    __int128 total = 0, floors = 0, r;
    for (size_t i = 0; i < p->n_samples; i++) {
      __int128 v = (__int128)p->samples[i].values[t] * num;
      total += v;
      __int128 q = floor_div(v, den, &r);
      floors += q;
      p->samples[i].values[t] = (int64_t)q;
      if (rems)
        rems[i] = (rem_t){i, r};
    }
    if (den <= 1)
      continue;
    __int128 want = floor_div(total + den / 2, den, &r), extra = want - floors;
    if (!rems) /* out of memory: each rounded down */
      continue;
    qsort(rems, p->n_samples, sizeof *rems, by_rem);
    for (size_t k = 0; k < p->n_samples && extra > 0; k++, extra--)
      p->samples[rems[k].i].values[t]++;
  }
  free(rems);
}

int64_t collect_type_total(const cprof__pf_t *p, size_t i) {
  int64_t sum = 0;
  for (size_t s = 0; s < p->n_samples; s++)
    if (i < p->n_sample_types)
      sum += p->samples[s].values[i];
  return sum;
}

/* ---- the range --------------------------------------------------------- */

#define MAX_TYPES 32
/* Profiles merged into a series' sum at a time: merging each into the sum
 * on its own would copy the sum once per profile. */
#define BATCH 64

/* A series is reduced as its profiles come, so that a range holds a few
 * profiles per series, not all of them: a day at 3 s is 28,800 profiles
 * of about 20 KB each once decoded (624 MB when they were all kept). A
 * profile added is referenced by first, last and pending until each lets
 * it go (release). */
typedef struct series {
  char *name;
  cprof__pf_t *before; /* the last profile before the range, or NULL (until the first add) */
  cprof__pf_t *first;  /* the first in the range: the first stretch's baseline */
  cprof__pf_t *last;   /* the latest: the current stretch's end */
  cprof__pf_t *sum;    /* every profile before pending, merged (SUM and AVG) */
  cprof__pf_t *pending[BATCH];
  size_t npending;
  cprof__pf_t *delta; /* the stretches ended so far (DELTA) */
  size_t n;
  int in_first; /* the current stretch is the first, whose first profile is its baseline */
  size_t nt;
  collect_kind_t kind[MAX_TYPES];
  collect_mode_t treat[MAX_TYPES];
  unsigned want; /* 1 << each treatment the series' types get */
} series_t;

struct collect_range {
  collect_mode_t mode;
  series_t *series;
  size_t n, cap;
  size_t profiles, restarts;
  unsigned used; /* the treatments applied, over every series */
};

int collect_range_new(collect_mode_t mode, collect_range_t **out) {
  *out = calloc(1, sizeof **out);
  if (!*out)
    return -ENOMEM;
  (*out)->mode = mode;
  return 0;
}

/* Frees p unless one of s's references still holds it. */
static void release(series_t *s, cprof__pf_t *p) {
  if (!p || p == s->first || p == s->last)
    return;
  for (size_t i = 0; i < s->npending; i++)
    if (s->pending[i] == p)
      return;
  cprof__pf_free(p);
}

void collect_range_free(collect_range_t *r) {
  if (!r)
    return;
  for (size_t i = 0; i < r->n; i++) {
    series_t *s = &r->series[i];
    /* Each profile once: pending ones are distinct, and may be first or last. */
    for (size_t j = 0; j < s->npending; j++)
      if (s->pending[j] != s->first && s->pending[j] != s->last)
        cprof__pf_free(s->pending[j]);
    if (s->last != s->first)
      cprof__pf_free(s->last);
    cprof__pf_free(s->first);
    cprof__pf_free(s->sum);
    cprof__pf_free(s->delta);
    cprof__pf_free(s->before);
    free(s->name);
  }
  free(r->series);
  free(r);
}

size_t collect_range_count(const collect_range_t *r) { return r->profiles; }
size_t collect_range_restarts(const collect_range_t *r) { return r->restarts; }

/* The series named name, made when new; NULL when out of memory. */
static series_t *series_of(collect_range_t *r, const char *name) {
  /* Rows come ordered by time, series interleaved; a linear walk is fine
   * for the few a range holds. */
  for (size_t i = r->n; i-- > 0;)
    if (strcmp(r->series[i].name, name) == 0)
      return &r->series[i];
  if (cprof__grow((void **)&r->series, &r->cap, r->n + 1, sizeof *r->series) != 0)
    return NULL;
  series_t *s = &r->series[r->n];
  *s = (series_t){.name = strdup(name)};
  if (!s->name)
    return NULL;
  r->n++;
  return s;
}

int collect_range_before(collect_range_t *r, const char *name, cprof__pf_t *p, char *err,
                         size_t errlen) {
  series_t *s = series_of(r, name);
  if (!s) {
    cprof__pf_free(p);
    snprintf(err, errlen, "out of memory");
    return -ENOMEM;
  }
  cprof__pf_free(s->before);
  s->before = p;
  return 0;
}

/* What each sample type of a series gets. */
static collect_mode_t treatment(collect_mode_t mode, collect_kind_t k) {
  if (mode != COLLECT_MODE_AUTO)
    return mode;
  return k == COLLECT_CUMULATIVE ? COLLECT_MODE_DELTA
         : k == COLLECT_SNAPSHOT ? COLLECT_MODE_AVG
                                 : COLLECT_MODE_SUM;
}

/* Zeroes the values of the types whose treatment is not m. */
static void keep_only(cprof__pf_t *p, const collect_mode_t *treat, collect_mode_t m) {
  for (size_t i = 0; i < p->n_samples; i++)
    for (size_t t = 0; t < p->n_sample_types; t++)
      if (treat[t] != m)
        p->samples[i].values[t] = 0;
}

/* Whether cur's cumulative counters went down from prev's: the target
 * restarted between them (its counters began again from zero). */
static int restarted(const cprof__pf_t *prev, const cprof__pf_t *cur, const collect_kind_t *kind) {
  if (prev->n_sample_types != cur->n_sample_types)
    return 0;
  for (size_t t = 0; t < cur->n_sample_types; t++)
    if (kind[t] == COLLECT_CUMULATIVE && collect_type_total(cur, t) < collect_type_total(prev, t))
      return 1;
  return 0;
}

/* *acc becomes the merge of *acc (when any) and ps[0..n). */
static int merge_into(cprof__pf_t **acc, cprof__pf_t *const *ps, size_t n, char *err,
                      size_t errlen) {
  cprof__pf_t *v[BATCH + 2];
  size_t k = 0;
  if (*acc)
    v[k++] = *acc;
  for (size_t i = 0; i < n; i++)
    v[k++] = ps[i];
  cprof__pf_t *m = NULL;
  int rc = cprof__pf_merge(v, k, &m, err, errlen);
  if (rc == 0) {
    cprof__pf_free(*acc);
    *acc = m;
  }
  return rc;
}

/* The pending profiles merged into the sum, and let go. */
static int flush_sum(series_t *s, char *err, size_t errlen) {
  if (!s->npending)
    return 0;
  int rc = merge_into(&s->sum, s->pending, s->npending, err, errlen);
  if (rc != 0)
    return rc;
  cprof__pf_t *done[BATCH];
  size_t n = s->npending;
  memcpy(done, s->pending, n * sizeof *done);
  s->npending = 0;
  for (size_t i = 0; i < n; i++)
    release(s, done[i]);
  return 0;
}

/* The stretch that ends at s->last added to s->delta: its last profile
 * minus its first (the baseline) for the series' first stretch, the last
 * whole for a later one, whose first counts from zero. A first stretch of
 * one profile is only the baseline. */
static int end_stretch(series_t *s, char *err, size_t errlen) {
  int rc = 0;
  if (!s->in_first) {
    rc = merge_into(&s->delta, &s->last, 1, err, errlen);
  } else if (s->last != s->first) {
    cprof__pf_t *neg = NULL;
    rc = cprof__pf_merge(&s->first, 1, &neg, err, errlen);
    if (rc == 0) {
      collect_scale(neg, -1, 1);
      cprof__pf_t *ends[2] = {s->last, neg};
      rc = merge_into(&s->delta, ends, 2, err, errlen);
      cprof__pf_free(neg);
    }
  }
  s->in_first = 0;
  return rc;
}

/* The series' first profile: what its types get, and whether the target
 * restarted since the scrape before the range (then there is no baseline). */
static int start_series(collect_range_t *r, series_t *s, cprof__pf_t *p, char *err, size_t errlen) {
  s->nt = p->n_sample_types;
  if (s->nt > MAX_TYPES) {
    snprintf(err, errlen, "a profile with %zu sample types: at most %d", s->nt, MAX_TYPES);
    return -EINVAL;
  }
  for (size_t t = 0; t < s->nt; t++) {
    s->kind[t] = collect_sample_kind(p->sample_types[t].type, p->duration_nanos);
    s->treat[t] = treatment(r->mode, s->kind[t]);
    s->want |= 1u << s->treat[t];
  }
  r->used |= s->want;
  s->in_first = !(s->before && restarted(s->before, p, s->kind));
  if (!s->in_first && (s->want & (1u << COLLECT_MODE_DELTA)))
    r->restarts++;
  cprof__pf_free(s->before);
  s->before = NULL;
  s->first = p;
  return 0;
}

int collect_range_add(collect_range_t *r, const char *name, cprof__pf_t *p, char *err,
                      size_t errlen) {
  series_t *s = series_of(r, name);
  int rc = 0;
  if (!s) {
    cprof__pf_free(p);
    snprintf(err, errlen, "out of memory");
    return -ENOMEM;
  }
  if (!s->first) {
    if ((rc = start_series(r, s, p, err, errlen)) != 0) {
      cprof__pf_free(p);
      return rc;
    }
  } else if (cprof__pf_compatible(s->first, p, "the series' first profile", "a later one", err,
                                  errlen) != 0) {
    cprof__pf_free(p);
    return -EINVAL;
  } else if ((s->want & (1u << COLLECT_MODE_DELTA)) && restarted(s->last, p, s->kind)) {
    r->restarts++;
    if ((rc = end_stretch(s, err, errlen)) != 0) {
      release(s, p);
      return rc;
    }
  }
  if (s->want & (1u << COLLECT_MODE_SUM | 1u << COLLECT_MODE_AVG))
    s->pending[s->npending++] = p;
  cprof__pf_t *old = s->last;
  s->last = p;
  release(s, old);
  s->n++;
  r->profiles++;
  if (s->npending == BATCH)
    rc = flush_sum(s, err, errlen);
  return rc;
}

/* A copy of p with only the types treated m, into parts. */
static int part(const series_t *s, cprof__pf_t *p, collect_mode_t m, cprof__pf_t **parts,
                size_t *nparts, char *err, size_t errlen) {
  cprof__pf_t *c = NULL;
  int rc = cprof__pf_merge(&p, 1, &c, err, errlen);
  if (rc != 0)
    return rc;
  if (m == COLLECT_MODE_AVG)
    collect_scale(c, 1, (int64_t)s->n);
  keep_only(c, s->treat, m);
  parts[(*nparts)++] = c;
  return 0;
}

/* One series reduced into parts[*nparts] (at most 4 new profiles). */
static int reduce_series(series_t *s, cprof__pf_t **parts, size_t *nparts, char *err,
                         size_t errlen) {
  if (!s->n) /* only a profile before the range */
    return 0;
  int rc = flush_sum(s, err, errlen);
  if (rc == 0 && (s->want & (1u << COLLECT_MODE_SUM)))
    rc = part(s, s->sum, COLLECT_MODE_SUM, parts, nparts, err, errlen);
  if (rc == 0 && (s->want & (1u << COLLECT_MODE_AVG)))
    rc = part(s, s->sum, COLLECT_MODE_AVG, parts, nparts, err, errlen);
  if (rc == 0 && (s->want & (1u << COLLECT_MODE_LATEST)))
    rc = part(s, s->last, COLLECT_MODE_LATEST, parts, nparts, err, errlen);
  if (rc == 0 && (s->want & (1u << COLLECT_MODE_DELTA)))
    rc = end_stretch(s, err, errlen);
  if (rc == 0 && s->delta) {
    keep_only(s->delta, s->treat, COLLECT_MODE_DELTA);
    parts[(*nparts)++] = s->delta;
    s->delta = NULL;
  }
  return rc;
}

/* "cprof collect: range of N profiles of S series; alloc_space: delta
 * between scrapes, summed; inuse_space: averaged; ..." on p. */
static int comment(collect_range_t *r, const cprof__pf_t *first, cprof__pf_t *p) {
  cprof__buf_t b;
  cprof__buf_init(&b);
  cprof__buf_printf(&b, "cprof collect: a range of %zu profiles of %zu series", r->profiles, r->n);
  static const char *const says[] = {
      "", "summed", "delta between consecutive scrapes (the first a baseline), summed",
      "averaged over the scrapes", "the latest scrape"};
  for (size_t t = 0; t < p->n_sample_types; t++) {
    collect_mode_t m =
        treatment(r->mode, collect_sample_kind(p->sample_types[t].type, first->duration_nanos));
    cprof__buf_printf(&b, "; %s: %s", p->sample_types[t].type, says[m]);
  }
  if (r->restarts)
    cprof__buf_printf(&b, "; %zu restarts (counted from zero)", r->restarts);
  cprof__buf_putc(&b, '\0');
  if (b.failed)
    return -ENOMEM;
  const char **cs = cprof__arena_array(p->arena, p->n_comments + 1, sizeof *cs);
  char *c = cprof__arena_strdup(p->arena, b.data);
  cprof__buf_free(&b);
  if (!cs || !c)
    return -ENOMEM;
  if (p->n_comments)
    memcpy(cs, p->comments, p->n_comments * sizeof *cs);
  cs[p->n_comments++] = c;
  p->comments = cs;
  return 0;
}

int collect_range_finish(collect_range_t *r, cprof__pf_t **out, char *applied, size_t appliedlen,
                         char *err, size_t errlen) {
  *out = NULL;
  if (appliedlen)
    applied[0] = '\0';
  if (!r->profiles)
    return 0;
  cprof__pf_t **parts = calloc(4 * r->n, sizeof *parts);
  if (!parts) {
    snprintf(err, errlen, "out of memory");
    return -ENOMEM;
  }
  size_t np = 0;
  int rc = 0;
  cprof__pf_t *first = NULL; /* the first series' first profile: what the sample types are */
  for (size_t i = 0; i < r->n && rc == 0; i++) {
    if (!first)
      first = r->series[i].first;
    rc = reduce_series(&r->series[i], parts, &np, err, errlen);
  }
  if (rc == 0 && np == 0) {
    /* Only baselines (one cumulative profile per series): an empty
     * range, with the sample types: the first profile with no samples. */
    rc = cprof__pf_merge(&first, 1, out, err, errlen);
    if (rc == 0)
      (*out)->n_samples = 0;
  } else if (rc == 0) {
    rc = cprof__pf_merge(parts, np, out, err, errlen);
  }
  for (size_t i = 0; i < np; i++)
    cprof__pf_free(parts[i]);
  free(parts);
  if (rc == 0) {
    /* The order a person reads them in: the kind's own first. */
    static const collect_mode_t order[] = {COLLECT_MODE_SUM, COLLECT_MODE_DELTA, COLLECT_MODE_AVG,
                                           COLLECT_MODE_LATEST};
    size_t n = 0;
    for (size_t i = 0; i < 4; i++)
      if (r->used & (1u << order[i]) && n < appliedlen)
        n += (size_t)snprintf(applied + n, appliedlen - n, "%s%s", n ? "+" : "",
                              collect_mode_name(order[i]));
    if (comment(r, first, *out) != 0) {
      cprof__pf_free(*out);
      *out = NULL;
      snprintf(err, errlen, "out of memory");
      rc = -ENOMEM;
    }
  }
  return rc;
}

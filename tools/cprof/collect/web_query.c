/* The query page's data (collect/web.h): the stored series, one series'
 * rows for the line, and the profiles of a range merged for the viewer. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/range.h"
#include "collect/selector.h"
#include "collect/validate.h"
#include "collect/web_pages.h"
#include "model/model.h"
#include "ui/viewer.h"

/* Whether job's profile type is scraped with ?seconds= (delta: true). */
static int delta_scrape(const web_ctx_t *ctx, const char *job, const char *type) {
  for (size_t j = 0; j < ctx->cfg->njobs; j++)
    if (!strcmp(ctx->cfg->jobs[j].name, job))
      for (size_t i = 0; i < ctx->cfg->jobs[j].nprofiles; i++)
        if (!strcmp(ctx->cfg->jobs[j].profiles[i].name, type))
          return ctx->cfg->jobs[j].profiles[i].delta;
  return 0;
}

static int row_newest(void *arg, const collect_store_row_t *row) {
  *(int64_t *)arg = row->id;
  return 0;
}

/* The quantity of a series (collect/range.h). A profile name it does not
 * know (a custom path) takes its default sample type's name and unit from
 * the series' newest profile, and the kind that type has. */
static void series_quantity(const web_ctx_t *ctx, const char *job, const char *type,
                            collect_quantity_t *q, char *unit, size_t unitlen, char *name,
                            size_t namelen) {
  collect_quantity_of(type, delta_scrape(ctx, job, type), q);
  if (q->known)
    return;
  int64_t id = 0;
  char err[256];
  collect_query_t qq = {
      .job = job, .type = type, .to_ns = INT64_MAX, .limit = 1, .newest_first = 1};
  void *data = NULL;
  size_t len;
  cprof__pf_t *p = NULL;
  if (collect_store_query(ctx->store, &qq, row_newest, &id, err, sizeof err) == 0 && id &&
      collect_store_read(ctx->store, id, &data, &len, err, sizeof err) == 0 &&
      cprof__pf_decode(data, len, &p, err, sizeof err) == 0 && p->n_sample_types) {
    const cprof__value_type_t *vt = &p->sample_types[cprof__pf_default_index(p)];
    q->kind = collect_sample_kind(vt->type, p->duration_nanos);
    q->per_second = q->kind == COLLECT_CUMULATIVE;
    snprintf(unit, unitlen, "%s%s", vt->unit, q->per_second ? "/s" : "");
    snprintf(name, namelen, "%s%s", vt->type, q->per_second ? " per second" : "");
    q->unit = unit;
    q->quantity = name;
  }
  cprof__pf_free(p);
  free(data);
}

typedef struct series_list {
  collect_series_t *v;
  size_t n, cap;
} series_list_t;

/* Copies a series (the store's strings live only in the callback). */
static int series_keep(void *arg, const collect_series_t *s) {
  series_list_t *l = arg;
  if (cprof__grow((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v) != 0)
    return -ENOMEM;
  collect_series_t c = *s;
  c.job = strdup(s->job);
  c.instance = strdup(s->instance);
  c.type = strdup(s->type);
  l->v[l->n++] = c;
  return c.job && c.instance && c.type ? 0 : -ENOMEM;
}

static void series_one(const web_ctx_t *ctx, cprof__buf_t *b, const collect_series_t *s) {
  cprof__buf_puts(b, b->len > 1 ? ",\n{\"job\":" : "\n{\"job\":");
  cprof__viewer_json_string(b, s->job);
  cprof__buf_puts(b, ",\"instance\":");
  cprof__viewer_json_string(b, s->instance);
  cprof__buf_puts(b, ",\"type\":");
  cprof__viewer_json_string(b, s->type);
  cprof__buf_printf(
      b, ",\"count\":%" PRId64 ",\"first_ns\":\"%" PRId64 "\",\"last_ns\":\"%" PRId64 "\"",
      s->count, s->first_ns, s->last_ns);
  collect_quantity_t q;
  char unit[64] = "", name[96] = "";
  series_quantity(ctx, s->job, s->type, &q, unit, sizeof unit, name, sizeof name);
  cprof__buf_printf(b, ",\"kind\":\"%s\",\"unit\":", collect_kind_name(q.kind));
  cprof__viewer_json_string(b, q.unit);
  cprof__buf_puts(b, ",\"quantity\":");
  cprof__viewer_json_string(b, q.quantity);
  cprof__buf_putc(b, '}');
}

void web_series(const web_ctx_t *ctx, web_reply_t *r) {
  char err[512];
  series_list_t l = {0};
  int rc = collect_store_series(ctx->store, series_keep, &l, err, sizeof err);
  if (rc == 0) {
    cprof__buf_putc(&r->body, '[');
    for (size_t i = 0; i < l.n; i++)
      series_one(ctx, &r->body, &l.v[i]);
    cprof__buf_puts(&r->body, "\n]\n");
    r->status = 200;
    r->type = WEB_JSON;
  } else {
    web_reply_error(r, 500, "500 %s", rc == -ENOMEM ? "out of memory" : err);
  }
  for (size_t i = 0; i < l.n; i++) {
    free((char *)l.v[i].job);
    free((char *)l.v[i].instance);
    free((char *)l.v[i].type);
  }
  free(l.v);
}

/* A decimal int64 in s; 0 or -EINVAL. */
static int parse_ns(const char *s, int64_t *v) {
  if (!s || !*s)
    return -EINVAL;
  char *end;
  errno = 0;
  long long x = strtoll(s, &end, 10);
  if (*end || errno)
    return -EINVAL;
  *v = x;
  return 0;
}

/* What a request asks for: a series (instance may be NULL: every one) and
 * a range, and maybe a base range. */
typedef struct ask {
  const char *job, *instance, *type;
  int64_t from, to;
  int diff;
  int64_t base_from, base_to;
  char pid[32]; /* pid="N" (store.h's label), "" for every process */
  collect_mode_t mode; /* mode=: how the range is reduced (collect/range.h) */
  int pprof;           /* format=pprof: the merged profile.proto, for go tool pprof */
  collect_selector_t *sel; /* selector=, or NULL */
} ask_t;

/* Series labels: what the store's rows carry: job, instance, a target's
 * labels from the config, and a tree's pid and process when the job asked
 * for is scraped with process_tree: each (one series per process); in a
 * merged tree's profile pid is a label of the samples. */
typedef struct series_names {
  const collect_config_t *cfg;
  const char *job;
} series_names_t;

static int is_series_label(void *arg, const char *name) {
  const series_names_t *sn = arg;
  const collect_config_t *cfg = sn->cfg;
  if (!strcmp(name, "job") || !strcmp(name, "instance"))
    return 1;
  if (!strcmp(name, "pid") || !strcmp(name, "process")) {
    for (size_t j = 0; j < cfg->njobs; j++)
      if (sn->job && !strcmp(cfg->jobs[j].name, sn->job))
        return cfg->jobs[j].process_tree_each;
    return 1;
  }
  for (size_t j = 0; j < cfg->njobs; j++)
    for (size_t t = 0; t < cfg->jobs[j].ntargets; t++)
      for (size_t l = 0; l < cfg->jobs[j].targets[t].nlabels; l++)
        if (!strcmp(cfg->jobs[j].targets[t].labels[l].name, name))
          return 1;
  return 0;
}

/* A time parameter into *v; absent leaves *v when optional. 0 or -1 after
 * a 400. */
static int time_param(web_param_fn param, void *req, const char *name, int optional, int64_t *v,
                      web_reply_t *r) {
  const char *s = param(req, name);
  if (!s && optional)
    return 0;
  if (!s) {
    web_reply_error(r, 400, "400 missing parameter %s (Unix nanoseconds)", name);
    return -1;
  }
  if (parse_ns(s, v) != 0 || *v < 0) {
    web_reply_error(r, 400, "400 bad parameter %s=%s: want Unix nanoseconds", name, s);
    return -1;
  }
  return 0;
}

static int parse_ask(const web_ctx_t *ctx, web_param_fn param, void *req, int times_optional,
                     ask_t *a, web_reply_t *r) {
  *a = (ask_t){.job = param(req, "job"),
               .instance = param(req, "instance"),
               .type = param(req, "type"),
               .to = INT64_MAX};
  const char *selector = param(req, "selector");
  if (selector && *selector) {
    char err[300];
    int rc = collect_selector_parse(selector, &a->sel, err, sizeof err);
    if (rc != 0) {
      web_reply_error(r, rc == -EINVAL ? 400 : 500, "%d %s", rc == -EINVAL ? 400 : 500, err);
      return -1;
    }
    series_names_t sn = {ctx->cfg, a->job};
    collect_selector_split(a->sel, is_series_label, &sn);
  }
  if (a->instance && !*a->instance)
    a->instance = NULL;
  /* pid: one process of a tree scraped with process_tree: each. */
  const char *pid = param(req, "pid");
  a->pid[0] = '\0';
  if (pid && *pid) {
    char *end;
    long v = strtol(pid, &end, 10);
    if (*end || v <= 0 || v > 0x7fffffff || pid[0] == '+' || pid[0] == ' ') {
      web_reply_error(r, 400, "400 bad parameter pid=%s: want a process id", pid);
      return -1;
    }
    snprintf(a->pid, sizeof a->pid, "pid=\"%ld\"", v);
  }
  const char *mode = param(req, "mode");
  a->mode = COLLECT_MODE_AUTO;
  if (mode && *mode && collect_mode_parse(mode, &a->mode) != 0) {
    web_reply_error(r, 400, "400 bad parameter mode=%s: want sum, delta, avg, latest or auto",
                    mode);
    return -1;
  }
  const char *format = param(req, "format");
  a->pprof = format && strcmp(format, "pprof") == 0;
  if (format && *format && !a->pprof && strcmp(format, "json") != 0) {
    web_reply_error(r, 400, "400 bad parameter format=%s: want json or pprof", format);
    return -1;
  }
  if (!a->job || !*a->job || !a->type || !*a->type) {
    web_reply_error(r, 400, "400 missing parameter %s", !a->job || !*a->job ? "job" : "type");
    return -1;
  }
  if (time_param(param, req, "from", times_optional, &a->from, r) ||
      time_param(param, req, "to", times_optional, &a->to, r))
    return -1;
  if (a->from > a->to) {
    web_reply_error(r, 400, "400 bad range: from is after to");
    return -1;
  }
  const char *bf = param(req, "base_from"), *bt = param(req, "base_to");
  if (!bf != !bt) {
    web_reply_error(r, 400, "400 base_from and base_to go together");
    return -1;
  }
  if (bf) {
    a->diff = 1;
    if (time_param(param, req, "base_from", 0, &a->base_from, r) ||
        time_param(param, req, "base_to", 0, &a->base_to, r))
      return -1;
    if (a->base_from > a->base_to) {
      web_reply_error(r, 400, "400 bad range: base_from is after base_to");
      return -1;
    }
  }
  return 0;
}

/* A row as /api/profiles gives it, kept until the series' rows before
 * the range are known (the store's strings live only in its callback). */
typedef struct prow {
  collect_store_row_t row; /* path NULL; job, instance, type not kept */
  char *instance, *labels;
} prow_t;

typedef struct prows {
  prow_t *v;
  size_t n, cap;
  const collect_selector_t *sel; /* series matchers pick rows */
} prows_t;

static int row_keep(void *arg, const collect_store_row_t *row) {
  prows_t *l = arg;
  if (!collect_selector_match_series(l->sel, row->labels))
    return 0;
  if (cprof__grow((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v) != 0)
    return -ENOMEM;
  prow_t *p = &l->v[l->n++];
  p->row = *row;
  p->row.path = p->row.job = p->row.type = NULL;
  p->instance = strdup(row->instance);
  p->labels = strdup(row->labels);
  return p->instance && p->labels ? 0 : -ENOMEM;
}

static void prows_free(prows_t *l) {
  for (size_t i = 0; i < l->n; i++) {
    free(l->v[i].instance);
    free(l->v[i].labels);
  }
  free(l->v);
}

/* row's total made that of its samples that satisfy sel's sample
 * matchers. 0, or a negative errno (the row gone, unreadable). */
static int sample_total(const web_ctx_t *ctx, const collect_selector_t *sel,
                        collect_store_row_t *row) {
  void *data;
  size_t len;
  char err[256];
  cprof__pf_t *p = NULL;
  int rc = collect_store_read(ctx->store, row->id, &data, &len, err, sizeof err);
  if (rc != 0)
    return rc;
  rc = cprof__pf_decode(data, len, &p, err, sizeof err);
  free(data);
  if (rc != 0)
    return rc;
  collect_selector_filter(sel, p);
  row->total = collect_total(p);
  cprof__pf_free(p);
  return 0;
}

static int row_prev(void *arg, const collect_store_row_t *row) {
  collect_store_row_t *prev = arg;
  prev->time_ns = row->time_ns;
  prev->total = row->total;
  prev->id = row->id;
  return 0;
}

static void row_json(cprof__buf_t *b, const prow_t *p, int has_value, double value) {
  const collect_store_row_t *row = &p->row;
  cprof__buf_puts(b, b->len > 1 ? ",\n{\"instance\":" : "\n{\"instance\":");
  cprof__viewer_json_string(b, p->instance);
  cprof__buf_puts(b, ",\"labels\":");
  cprof__viewer_json_string(b, p->labels);
  /* A tree's process (process_tree: each): its pid, for the page's lines. */
  const char *pid = strstr(p->labels, ",pid=\"");
  if (!pid)
    pid = strstr(p->labels, "{pid=\"");
  if (pid)
    cprof__buf_printf(b, ",\"pid\":%ld", strtol(pid + 6, NULL, 10));
  cprof__buf_printf(b,
                    ",\"id\":%" PRId64 ",\"time_ns\":\"%" PRId64 "\",\"t\":%" PRId64
                    ",\"duration_ns\":%" PRId64 ",\"size\":%" PRId64 ",\"total\":%" PRId64,
                    row->id, row->time_ns, row->time_ns / 1000000, row->duration_ns, row->size,
                    row->total);
  if (has_value)
    cprof__buf_printf(b, ",\"value\":%.9g}", value);
  else
    cprof__buf_puts(b, ",\"value\":null}");
}

static void profiles(const web_ctx_t *ctx, ask_t a, web_reply_t *r);

void web_profiles(const web_ctx_t *ctx, web_param_fn param, void *req, web_reply_t *r) {
  ask_t a;
  if (parse_ask(ctx, param, req, 1, &a, r) == 0)
    profiles(ctx, a, r);
  collect_selector_free(a.sel);
}

static void profiles(const web_ctx_t *ctx, ask_t a, web_reply_t *r) {
  collect_query_t q = {.job = a.job,
                       .instance = a.instance,
                       .type = a.type,
                       .label = a.pid[0] ? a.pid : NULL,
                       .from_ns = a.from,
                       .to_ns = a.to,
                       .limit = 100000};
  char err[512];
  prows_t l = {.sel = a.sel};
  int rc = collect_store_query(ctx->store, &q, row_keep, &l, err, sizeof err);
  if (rc != 0) {
    prows_free(&l);
    web_reply_error(r, 500, "500 %s", rc == -ENOMEM ? "out of memory" : err);
    return;
  }
  collect_quantity_t qt;
  char unit[64] = "", name[96] = "";
  series_quantity(ctx, a.job, a.type, &qt, unit, sizeof unit, name, sizeof name);
  /* value: a cumulative series' row needs the row before it, the first
   * one in the range the series' last row before the range. */
  size_t *last = calloc(l.n ? l.n : 1, sizeof *last), nseries = 0; /* each series' last row */
  if (!last) {
    prows_free(&l);
    web_reply_error(r, 500, "500 out of memory");
    return;
  }
  /* Sample matchers: each row's total is that of its samples that match,
   * read from its profile. */
  int sampled = a.sel && a.sel->nsamples;
  cprof__buf_putc(&r->body, '[');
  for (size_t i = 0; i < l.n; i++) {
    prow_t *p = &l.v[i];
    collect_store_row_t prev = {0};
    int has_prev = 0;
    size_t k = 0;
    while (k < nseries && strcmp(l.v[last[k]].labels, p->labels))
      k++;
    if (k < nseries) {
      prev = l.v[last[k]].row;
      has_prev = 1;
    } else {
      nseries++;
    }
    last[k] = i;
    if (sampled && sample_total(ctx, a.sel, &p->row) != 0) {
      row_json(&r->body, p, 0, 0); /* retention took it since the query */
      continue;
    }
    if (!has_prev && qt.per_second && qt.kind == COLLECT_CUMULATIVE && p->row.time_ns > 0) {
      collect_query_t pq = {.job = a.job,
                            .type = a.type,
                            .labels = p->labels,
                            .from_ns = 0,
                            .to_ns = p->row.time_ns - 1,
                            .limit = 1,
                            .newest_first = 1};
      if (collect_store_query(ctx->store, &pq, row_prev, &prev, err, sizeof err) == 0 && prev.id)
        has_prev = !sampled || sample_total(ctx, a.sel, &prev) == 0;
    }
    double v = 0;
    int has = collect_row_value(&qt, p->row.total, p->row.time_ns, p->row.duration_ns, has_prev,
                                prev.total, prev.time_ns, &v) == 0;
    row_json(&r->body, p, has, v);
  }
  free(last);
  prows_free(&l);
  cprof__buf_puts(&r->body, "\n]\n");
  r->status = 200;
  r->type = WEB_JSON;
}

typedef struct ids {
  struct {
    int64_t id;
    char *series; /* the row's canonical labels: which series it is of */
  } * v;
  size_t n, cap;
  const collect_selector_t *sel; /* series matchers pick rows */
  size_t most;                   /* more rows than this: -E2BIG */
} ids_t;

static void ids_free(ids_t *ids) {
  for (size_t i = 0; i < ids->n; i++)
    free(ids->v[i].series);
  free(ids->v);
}

static int row_id(void *arg, const collect_store_row_t *row) {
  ids_t *ids = arg;
  if (!collect_selector_match_series(ids->sel, row->labels))
    return 0;
  if (ids->n == ids->most)
    return -E2BIG;
  if (cprof__grow((void **)&ids->v, &ids->cap, ids->n + 1, sizeof *ids->v) != 0)
    return -ENOMEM;
  if (!(ids->v[ids->n].series = strdup(row->labels)))
    return -ENOMEM;
  ids->v[ids->n++].id = row->id;
  return 0;
}

/* The profiles of a series in [from, to] reduced by kind (collect/range.h)
 * into *out (NULL when the range has none), with how many and what was
 * applied. 0, or -1 after an error reply. */
static int merged(const web_ctx_t *ctx, const ask_t *a, int64_t from, int64_t to, cprof__pf_t **out,
                  size_t *count, char *applied, size_t appliedlen, web_reply_t *r) {
  *out = NULL;
  *count = 0;
  char err[512];
  /* More profiles than this is a 400: a shorter range. */
  long most = ctx->cfg->merge_limit > 0 ? ctx->cfg->merge_limit : COLLECT_DEFAULT_MERGE_LIMIT;
  ids_t ids = {.sel = a->sel, .most = (size_t)most};
  collect_range_t *range = NULL;
  collect_query_t q = {.job = a->job,
                       .instance = a->instance,
                       .type = a->type,
                       .label = a->pid[0] ? a->pid : NULL,
                       .from_ns = from,
                       .to_ns = to};
  int rc = collect_store_query(ctx->store, &q, row_id, &ids, err, sizeof err);
  if (rc != 0 && rc != -E2BIG) {
    ids_free(&ids);
    web_reply_error(r, 500, "500 %s", rc == -ENOMEM ? "out of memory" : err);
    return -1;
  }
  if (rc == -E2BIG) {
    ids_free(&ids);
    web_reply_error(r, 400,
                    "400 the range holds more than %ld profiles (cprof collect --merge-limit): "
                    "choose a shorter one",
                    most);
    return -1;
  }
  if ((rc = collect_range_new(a->mode, &range)) != 0)
    snprintf(err, sizeof err, "out of memory");
  /* Each series' last profile before the range, for a restart between it
   * and the range's first (collect/range.h). */
  size_t *seen = calloc(ids.n ? ids.n : 1, sizeof *seen), nseen = 0;
  if (!seen && rc == 0) {
    snprintf(err, sizeof err, "out of memory");
    rc = -ENOMEM;
  }
  for (size_t i = 0; i < ids.n && rc == 0 && from > 0; i++) {
    if (a->mode != COLLECT_MODE_AUTO && a->mode != COLLECT_MODE_DELTA)
      break;
    size_t j = 0;
    while (j < nseen && strcmp(ids.v[seen[j]].series, ids.v[i].series))
      j++;
    if (j < nseen)
      continue; /* a series seen already */
    seen[nseen++] = i;
    collect_store_row_t prev = {0};
    collect_query_t pq = {.job = a->job,
                          .type = a->type,
                          .labels = ids.v[i].series,
                          .to_ns = from - 1,
                          .limit = 1,
                          .newest_first = 1};
    void *data = NULL;
    size_t len;
    cprof__pf_t *p = NULL;
    if (collect_store_query(ctx->store, &pq, row_prev, &prev, err, sizeof err) == 0 && prev.id &&
        collect_store_read(ctx->store, prev.id, &data, &len, err, sizeof err) == 0 &&
        cprof__pf_decode(data, len, &p, err, sizeof err) == 0)
      rc = collect_range_before(range, ids.v[i].series, p, err, sizeof err);
    free(data);
  }
  free(seen);
  for (size_t i = 0; i < ids.n && rc == 0; i++) {
    void *data;
    size_t len;
    cprof__pf_t *p = NULL;
    rc = collect_store_read(ctx->store, ids.v[i].id, &data, &len, err, sizeof err);
    if (rc == -ENOENT) { /* retention took it since the query */
      rc = 0;
      continue;
    }
    if (rc != 0)
      break;
    rc = cprof__pf_decode(data, len, &p, err, sizeof err);
    free(data);
    if (rc == 0)
      rc = collect_range_add(range, ids.v[i].series, p, err, sizeof err);
  }
  if (rc == 0) {
    *count = collect_range_count(range);
    rc = collect_range_finish(range, out, applied, appliedlen, err, sizeof err);
  }
  /* Sample matchers: the samples the program labelled so. The range's
   * reduction keys on labels too, so filtering after it is the same as
   * filtering each profile before. */
  if (rc == 0 && *out)
    collect_selector_filter(a->sel, *out);
  collect_range_free(range);
  ids_free(&ids);
  if (rc != 0) {
    web_reply_error(r, 500, "500 %s", rc == -ENOMEM ? "out of memory" : err);
    return -1;
  }
  return 0;
}

static void merge(const web_ctx_t *ctx, ask_t a, int page, web_reply_t *r);

void web_merge(const web_ctx_t *ctx, web_param_fn param, void *req, int page, web_reply_t *r) {
  ask_t a;
  if (parse_ask(ctx, param, req, 0, &a, r) == 0)
    merge(ctx, a, page, r);
  collect_selector_free(a.sel);
}

static void merge(const web_ctx_t *ctx, ask_t a, int page, web_reply_t *r) {
  cprof__pf_t *p = NULL, *base = NULL;
  size_t n = 0, nbase = 0;
  char applied[64] = "", base_applied[64] = "";
  if (merged(ctx, &a, a.from, a.to, &p, &n, applied, sizeof applied, r) != 0)
    return;
  if (a.diff &&
      merged(ctx, &a, a.base_from, a.base_to, &base, &nbase, base_applied, sizeof base_applied, r))
    goto done;
  if (!p || (a.diff && !base)) {
    web_reply_error(r, 404, "404 no %s profiles of job %s%s%s in the %srange", a.type, a.job,
                    a.instance ? " instance " : "", a.instance ? a.instance : "", p ? "base " : "");
    goto done;
  }
  /* What the range means, said in a header for every format. */
  web_reply_header(r, "X-Cprof-Mode", applied);
  char err[512] = "out of memory";
  if (a.pprof && !a.diff) {
    int rc = cprof__pf_encode(p, 1, &r->body, err, sizeof err);
    if (rc != 0)
      web_reply_error(r, 500, "500 %s", err);
    else {
      r->status = 200;
      r->type = "application/octet-stream";
    }
    goto done;
  }
  if (a.pprof) {
    cprof__pf_t *d = NULL;
    int rc = cprof__pf_diff(base, p, &d, err, sizeof err);
    if (rc == 0)
      rc = cprof__pf_encode(d, 1, &r->body, err, sizeof err);
    cprof__pf_free(d);
    if (rc != 0)
      web_reply_error(r, rc == -EINVAL ? 400 : 500, "%d %s", rc == -EINVAL ? 400 : 500, err);
    else {
      r->status = 200;
      r->type = "application/octet-stream";
    }
    goto done;
  }
  char title[512];
  snprintf(title, sizeof title, "%s %s of %s%s%s%s%s: %zu profiles, %s%s",
           a.diff ? "diff of" : "merged", a.type, a.job, a.instance ? " " : "",
           a.instance ? a.instance : "", a.pid[0] ? " " : "", a.pid, n, applied,
           a.diff ? " against a base range" : "");
  cprof__pf_tree_t *t = NULL;
  int rc = a.diff ? cprof__pf_tree_diff(base, p, &t) : cprof__pf_tree(p, &t);
  if (rc == -EINVAL)
    snprintf(err, sizeof err, "the two ranges' profiles have different sample types");
  cprof__buf_t json;
  cprof__buf_init(&json);
  if (rc == 0)
    rc = cprof__viewer_json(t, p, title, a.diff, &json);
  cprof__pf_tree_free(t);
  if (rc == 0 && json.failed)
    rc = -ENOMEM;
  if (rc == 0 && page) {
    rc = cprof__viewer_page(json.data, json.len, title, &r->body);
    r->type = WEB_HTML;
  } else if (rc == 0) {
    /* The figures the tests and the page check, in front of the viewer's
     * own fields (json starts with its "{"). */
    cprof__buf_printf(&r->body, "{\"profiles\":%zu,\"total\":%" PRId64 ",\"mode\":\"%s\"", n,
                      collect_total(p), applied);
    if (a.diff)
      cprof__buf_printf(&r->body, ",\"base_profiles\":%zu,\"base_total\":%" PRId64, nbase,
                        collect_total(base));
    cprof__buf_putc(&r->body, ',');
    cprof__buf_append(&r->body, json.data + 1, json.len - 1);
    r->type = WEB_JSON;
  }
  cprof__buf_free(&json);
  if (rc != 0)
    web_reply_error(r, rc == -EINVAL ? 400 : 500, "%d %s", rc == -EINVAL ? 400 : 500, err);
  else
    r->status = 200;
done:
  cprof__pf_free(p);
  cprof__pf_free(base);
}

/* ---- /api/scrapes ------------------------------------------------------ */

typedef struct scrapes_out {
  cprof__buf_t failures, transitions;
} scrapes_out_t;

static int event_json(void *arg, const collect_scrape_event_t *e) {
  scrapes_out_t *o = arg;
  int failure = strcmp(e->event, "failure") == 0;
  cprof__buf_t *bs[2] = {failure ? &o->failures : NULL,
                         failure && !e->down ? NULL : &o->transitions};
  for (int i = 0; i < 2; i++) {
    cprof__buf_t *b = bs[i];
    if (!b)
      continue;
    cprof__buf_puts(b, b->len ? ",\n{\"time_ns\":" : "\n{\"time_ns\":");
    cprof__buf_printf(b, "\"%" PRId64 "\",\"t\":%" PRId64 ",\"job\":", e->time_ns,
                      e->time_ns / 1000000);
    cprof__viewer_json_string(b, e->job);
    cprof__buf_puts(b, ",\"instance\":");
    cprof__viewer_json_string(b, e->instance);
    cprof__buf_puts(b, ",\"type\":");
    cprof__viewer_json_string(b, e->type);
    cprof__buf_puts(b, ",\"labels\":");
    cprof__viewer_json_string(b, e->labels);
    if (i == 1)
      cprof__buf_printf(b, ",\"up\":%s", failure ? "false" : "true");
    if (failure) {
      cprof__buf_puts(b, ",\"reason\":");
      cprof__viewer_json_string(b, e->reason);
      cprof__buf_puts(b, ",\"error\":");
      cprof__viewer_json_string(b, e->error);
    }
    cprof__buf_putc(b, '}');
  }
  return o->failures.failed || o->transitions.failed ? -ENOMEM : 0;
}

void web_scrapes(const web_ctx_t *ctx, web_param_fn param, void *req, web_reply_t *r) {
  collect_query_t q = {.job = param(req, "job"),
                       .instance = param(req, "instance"),
                       .type = param(req, "type"),
                       .to_ns = INT64_MAX,
                       .limit = 100000};
  if (q.job && !*q.job)
    q.job = NULL;
  if (q.instance && !*q.instance)
    q.instance = NULL;
  if (q.type && !*q.type)
    q.type = NULL;
  if (time_param(param, req, "from", 1, &q.from_ns, r) ||
      time_param(param, req, "to", 1, &q.to_ns, r))
    return;
  scrapes_out_t o;
  cprof__buf_init(&o.failures);
  cprof__buf_init(&o.transitions);
  char err[512];
  int rc = collect_store_events(ctx->store, &q, event_json, &o, err, sizeof err);
  if (rc != 0) {
    web_reply_error(r, 500, "500 %s", rc == -ENOMEM ? "out of memory" : err);
  } else {
    cprof__buf_puts(&r->body, "{\"failures\":[");
    cprof__buf_append(&r->body, o.failures.data, o.failures.len);
    cprof__buf_puts(&r->body, "\n],\"transitions\":[");
    cprof__buf_append(&r->body, o.transitions.data, o.transitions.len);
    cprof__buf_puts(&r->body, "\n]}\n");
    r->status = 200;
    r->type = WEB_JSON;
  }
  cprof__buf_free(&o.failures);
  cprof__buf_free(&o.transitions);
}

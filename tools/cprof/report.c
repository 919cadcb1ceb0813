#include "report.h"

#include <errno.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/measure.h"
#include "source.h"

int report_args(const char *cmd, const char *usage, report_opts_t *o, report_extra_fn extra,
                void *ctx, int argc, char **argv, char **pos, int *n_pos, int *status) {
  *n_pos = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      printf("%s\nReport options:\n%s", usage, report_flags_help);
      *status = 0;
      return -1;
    }
    int r = extra ? extra(ctx, argc, argv, &i) : 0;
    if (r == 0)
      r = report_flag(o, cmd, argc, argv, &i);
    if (r < 0) {
      *status = 2;
      return -1;
    }
    if (r > 0)
      continue;
    if (argv[i][0] == '-' && argv[i][1]) {
      fprintf(stderr, "cprof %s: unknown option %s (cprof %s --help)\n", cmd, argv[i], cmd);
      *status = 2;
      return -1;
    }
    pos[(*n_pos)++] = argv[i];
  }
  return 0;
}

int report_open(const char *cmd, const char *usage, int wants_arg, report_extra_fn extra,
                report_check_fn check, void *ctx, int argc, char **argv, report_opts_t *o,
                const char **arg, cprof__pf_t **p) {
  report_opts_init(o);
  *p = NULL;
  *arg = NULL;
  if (extra && ctx == NULL)
    ctx = o; /* an extra option that only sets report options */
  char **pos = calloc((size_t)argc + 1, sizeof *pos);
  int n, rc;
  if (!pos) {
    fprintf(stderr, "cprof %s: out of memory\n", cmd);
    return 1;
  }
  if (report_args(cmd, usage, o, extra, ctx, argc, argv, pos, &n, &rc) != 0)
    goto done;
  rc = 2;
  if (n < 1 + wants_arg) {
    fprintf(stderr, "cprof %s: wants %sa profile (cprof %s --help)\n", cmd,
            wants_arg ? "a REGEX and " : "", cmd);
    goto done;
  }
  if (check && (rc = check(ctx)) != 0)
    goto done;
  *arg = wants_arg ? pos[0] : NULL;
  rc = report_load(cmd, pos + wants_arg, n - wants_arg, p);
  if (rc == 0)
    rc = report_prepare(cmd, *p, o);
  if (rc == 0)
    rc = -1;
done:
  if (rc != -1) {
    cprof__pf_free(*p);
    *p = NULL;
  }
  free(pos);
  return rc;
}

int report_main(const char *cmd, const char *usage, int wants_arg, report_extra_fn extra, void *ctx,
                report_fn fn, int argc, char **argv) {
  report_opts_t o;
  const char *arg;
  cprof__pf_t *p;
  int rc = report_open(cmd, usage, wants_arg, extra, NULL, ctx, argc, argv, &o, &arg, &p);
  if (rc != -1)
    return rc;
  cprof__buf_t out;
  char err[512] = "";
  cprof__buf_init(&out);
  rc = fn(&out, p, &o, arg, err, sizeof err);
  /* A report that failed prints nothing of what it wrote, as pprof (its
   * report goes to a buffer that is dropped on an error): peek's header
   * without rows would only hide the error line. */
  if (rc != 0) {
    fprintf(stderr, "cprof %s: %s\n", cmd, err);
  } else if (out.failed || fwrite(out.data, 1, out.len, stdout) != out.len || fflush(stdout) != 0) {
    fprintf(stderr, "cprof %s: writing the report failed\n", cmd);
    rc = 1;
  }
  cprof__buf_free(&out);
  cprof__pf_free(p);
  return rc;
}

int report_load(const char *cmd, char **sources, int n, cprof__pf_t **out) {
  cprof__pf_t **ps = calloc((size_t)n, sizeof *ps);
  int rc = 1;
  char err[512];
  if (!ps) {
    fprintf(stderr, "cprof %s: out of memory\n", cmd);
    return 1;
  }
  int i;
  for (i = 0; i < n; i++) {
    source_t s;
    if (source_read(sources[i], &s, err, sizeof err) != 0) {
      fprintf(stderr, "cprof %s: %s\n", cmd, err);
      goto done;
    }
    int d = cprof__pf_decode(s.data, s.len, &ps[i], err, sizeof err);
    source_free(&s);
    if (d != 0) {
      fprintf(stderr, "cprof %s: %s: %s\n", cmd, sources[i], err);
      goto done;
    }
  }
  /* One profile is merged too, as pprof's combineProfiles merges
   * whatever it fetched: that drops samples whose values are all zero (Go's
   * heap profiles have them) and joins samples with the same stack and
   * labels, which every report then shows as pprof does. */
  if (cprof__pf_merge(ps, (size_t)n, out, err, sizeof err) != 0) {
    fprintf(stderr, "cprof %s: merging the profiles: %s\n", cmd, err);
  } else {
    rc = 0;
  }
done:
  for (int k = 0; k < n; k++)
    cprof__pf_free(ps[k]);
  free(ps);
  return rc;
}

int report_sample_index(const cprof__pf_t *p, const char *name, size_t *index, char *err,
                        size_t errlen) {
  if (p->n_sample_types == 0) {
    snprintf(err, errlen, "profile has no samples");
    return -1;
  }
  if (!name || !name[0]) {
    *index = cprof__pf_default_index(p);
    return 0;
  }
  char *end;
  long k = strtol(name, &end, 10);
  if (end != name && !*end) {
    if (k < 0 || (size_t)k >= p->n_sample_types) {
      snprintf(err, errlen, "sample_index %s is outside the range [0..%zu]", name,
               p->n_sample_types - 1);
      return -1;
    }
    *index = (size_t)k;
    return 0;
  }
  const char *no_inuse = strncmp(name, "inuse_", 6) == 0 ? name + 6 : name;
  for (size_t i = 0; i < p->n_sample_types; i++)
    if (strcmp(p->sample_types[i].type, name) == 0 ||
        strcmp(p->sample_types[i].type, no_inuse) == 0) {
      *index = i;
      return 0;
    }
  cprof__buf_t b;
  cprof__buf_init(&b);
  for (size_t i = 0; i < p->n_sample_types; i++)
    cprof__buf_printf(&b, "%s%s", i ? " " : "", p->sample_types[i].type);
  snprintf(err, errlen, "sample_index \"%s\" must be one of: [%s]", name, b.failed ? "" : b.data);
  cprof__buf_free(&b);
  return -1;
}

/* The filters' names, and their values in o, in the order of
 * cprof__pf_filter's matched[]. */
static const char *const filter_names[CPROF_PF_FILTER_N] = {"focus", "ignore",   "hide",
                                                            "show",  "tagfocus", "tagignore"};

static void filter_values(const report_opts_t *o, const char *values[CPROF_PF_FILTER_N]) {
  values[CPROF_PF_FILTER_FOCUS] = o->filter.focus;
  values[CPROF_PF_FILTER_IGNORE] = o->filter.ignore;
  values[CPROF_PF_FILTER_HIDE] = o->filter.hide;
  values[CPROF_PF_FILTER_SHOW] = o->filter.show;
  values[CPROF_PF_FILTER_TAGFOCUS] = o->filter.tagfocus;
  values[CPROF_PF_FILTER_TAGIGNORE] = o->filter.tagignore;
}

int report_prepare(const char *cmd, cprof__pf_t *p, report_opts_t *o) {
  char err[512];
  if (cprof__pf_demangle(p, o->demangle) != 0) {
    fprintf(stderr, "cprof %s: out of memory\n", cmd);
    return 1;
  }
  if (report_sample_index(p, o->sample_index, &o->index, err, sizeof err) != 0) {
    fprintf(stderr, "cprof %s: %s\n", cmd, err);
    return 1;
  }
  o->type = p->sample_types[o->index].type;
  o->sample_unit = p->sample_types[o->index].unit;
  /* Percentages are of everything, the filters' leavings included. */
  cprof__pf_graph_options_t go = {.sample_index = o->index, .mean = o->mean};
  o->total = cprof__pf_total(p, &go);
  /* Label frames before the filters, as pprof, so that they see them. */
  int rootm, leafm;
  int rc = cprof__pf_tagroot(p, o->tagroot, o->tagleaf, o->unit, &rootm, &leafm);
  if (rc != 0) {
    fprintf(stderr, "cprof %s: %s\n", cmd,
            rc == -EINVAL ? "--tagroot and --tagleaf take at most 32 keys" : "out of memory");
    return 1;
  }
  if (o->tagroot && o->tagroot[0] && !rootm)
    fprintf(stderr, "cprof %s: TagRoot expression matched no samples\n", cmd);
  if (o->tagleaf && o->tagleaf[0] && !leafm)
    fprintf(stderr, "cprof %s: TagLeaf expression matched no samples\n", cmd);
  int matched[CPROF_PF_FILTER_N];
  if (cprof__pf_filter(p, &o->filter, matched, err, sizeof err) != 0) {
    fprintf(stderr, "cprof %s: %s\n", cmd, err);
    return 1;
  }
  const char *values[CPROF_PF_FILTER_N];
  filter_values(o, values);
  for (int k = 0; k < CPROF_PF_FILTER_N; k++)
    if (values[k] && values[k][0] && !matched[k])
      fprintf(stderr, "cprof %s: no matches found for %s regexp: %s\n", cmd, filter_names[k],
              values[k]);
  return 0;
}

const cprof__pf_mapping_t *report_main_mapping(const cprof__pf_t *p) {
  for (size_t i = 0; i < p->n_mappings; i++) {
    const char *f = p->mappings[i].file;
    while (*f == ' ' || *f == '\t' || *f == '\n')
      f++;
    if (!*f || *f == '[')
      continue;
    /* pprof's libRx: ([.]so$|[.]so[._][0-9]+) */
    int lib = 0;
    for (const char *s = strstr(f, ".so"); s && !lib; s = strstr(s + 1, ".so"))
      lib = s[3] == '\0' || ((s[3] == '.' || s[3] == '_') && s[4] >= '0' && s[4] <= '9');
    if (!lib)
      return &p->mappings[i];
  }
  return p->n_mappings ? &p->mappings[0] : NULL;
}

void report_value(char *buf, size_t len, int64_t value, const report_opts_t *o,
                  const char *out_unit) {
  cprof__measure_label(value, o->sample_unit, out_unit, buf, len);
}

void report_profile_labels(cprof__buf_t *out, const cprof__pf_t *p, const report_opts_t *o) {
  int64_t total = o->total;
  const cprof__pf_mapping_t *m = report_main_mapping(p);
  if (m && m->file[0]) {
    const char *base = strrchr(m->file, '/');
    cprof__buf_puts(out, "File: ");
    report_put_name(out, base && base[1] ? base + 1 : m->file);
    cprof__buf_putc(out, '\n');
  }
  if (m && m->build_id[0]) {
    cprof__buf_puts(out, "Build ID: ");
    report_put_name(out, m->build_id);
    cprof__buf_putc(out, '\n');
  }
  for (size_t i = 0; i < p->n_comments; i++)
    if (p->comments[i][0] != '#') {
      report_put_name(out, p->comments[i]);
      cprof__buf_putc(out, '\n');
    }
  cprof__buf_printf(out, "Type: %s%s\n", o->mean ? "mean_" : "", o->type);
  if (p->time_nanos) {
    time_t t = (time_t)(p->time_nanos / 1000000000);
    struct tm tm;
    char when[64];
    localtime_r(&t, &tm);
    strftime(when, sizeof when, "%b %-d, %Y at %-I:%M%P (%Z)", &tm);
    cprof__buf_printf(out, "Time: %s\n", when);
  }
  if (p->duration_nanos) {
    char dur[64], tot[64], ratio[40] = "";
    cprof__measure_label(p->duration_nanos, "nanoseconds", "auto", dur, sizeof dur);
    report_value(tot, sizeof tot, total, o, o->unit);
    const char *u;
    double nanos = cprof__measure_scale(total, o->sample_unit, "nanoseconds", &u);
    if (strcmp(u, "ns") == 0 && (int64_t)nanos != 0) {
      char pc[32];
      cprof__measure_percentage((int64_t)nanos, p->duration_nanos, pc, sizeof pc);
      snprintf(ratio, sizeof ratio, "(%s)", pc);
    }
    cprof__buf_printf(out, "Duration: %s, Total samples = %s %s\n", dur, tot, ratio);
  }
}

const char *report_output_unit(const report_opts_t *o, const cprof__pf_graph_t *g) {
  int64_t total = o->total;
  if (strcmp(o->unit, "minimum") != 0 || g->n_nodes == 0)
    return o->unit;
  int64_t min = 0;
  for (size_t i = 0; i < g->n_nodes; i++) {
    int64_t v = llabs(cprof__pf_flat(g->nodes[i]));
    if (v == 0)
      v = llabs(cprof__pf_cum(g->nodes[i]));
    if (v > 0 && (min == 0 || v < min))
      min = v;
  }
  int64_t max = total;
  if (min == 0)
    min = max;
  const char *min_unit, *max_unit, *unit;
  cprof__measure_scale(min, o->sample_unit, "minimum", &min_unit);
  cprof__measure_scale(max, o->sample_unit, "minimum", &max_unit);
  unit = min_unit;
  if (strcmp(min_unit, max_unit) != 0 && min * 100 < max)
    cprof__measure_scale(100 * min, o->sample_unit, "minimum", &unit);
  return unit;
}

static void put_escaped(cprof__buf_t *out, const char *s, int tabs);

void report_put_name(cprof__buf_t *out, const char *s) { put_escaped(out, s, 0); }
void report_put_text(cprof__buf_t *out, const char *s) { put_escaped(out, s, 1); }

static void put_escaped(cprof__buf_t *out, const char *s, int tabs) {
  const unsigned char *c = (const unsigned char *)s;
  while (*c) {
    /* A valid UTF-8 sequence passes whole; anything else is escaped. */
    int n = *c < 0x80             ? 1
            : (*c & 0xe0) == 0xc0 ? 2
            : (*c & 0xf0) == 0xe0 ? 3
            : (*c & 0xf8) == 0xf0 ? 4
                                  : 0;
    int ok = n > 0 && !(n == 2 && *c < 0xc2) && !(n == 4 && *c > 0xf4);
    for (int k = 1; ok && k < n; k++)
      ok = (c[k] & 0xc0) == 0x80;
    if (n == 1 && *c == '\t' && tabs) {
      cprof__buf_putc(out, '\t');
      c++;
    } else if (n == 1 && (*c < 0x20 || *c == 0x7f)) {
      const char *esc = *c == '\n' ? "\\n" : *c == '\t' ? "\\t" : *c == '\r' ? "\\r" : NULL;
      if (esc)
        cprof__buf_puts(out, esc);
      else
        cprof__buf_printf(out, "\\x%02x", *c);
      c++;
    } else if (!ok || (n == 2 && c[0] == 0xc2 && c[1] < 0xa0)) {
      /* not UTF-8, or a C1 control (U+0080..U+009F: 0x9b is a CSI to a terminal) */
      cprof__buf_printf(out, "\\x%02x", *c);
      c++;
    } else {
      cprof__buf_append(out, c, (size_t)n);
      c += n;
    }
  }
}

void report_labels(cprof__buf_t *out, const cprof__pf_t *p, const report_opts_t *o,
                   const cprof__pf_graph_t *g, const cprof__pf_trimmed_t *r, const char *unit) {
  int64_t total = o->total;
  report_opts_t shown = *o;
  shown.unit = unit;
  if (!o->compact_labels)
    report_profile_labels(out, p, &shown);
  /* pprof's legendActiveFilters. */
  const char *values[CPROF_PF_FILTER_N];
  filter_values(o, values);
  int any = 0;
  for (int k = 0; k < CPROF_PF_FILTER_N; k++) {
    if (!values[k] || !values[k][0])
      continue;
    if (!any++)
      cprof__buf_puts(out, "Active filters:\n");
    cprof__buf_printf(out, "   %s=", filter_names[k]);
    /* Cut at 80 bytes, as pprof cuts the Go string. */
    char cut[81];
    size_t len = strlen(filter_names[k]) + 1 + strlen(values[k]);
    snprintf(cut, sizeof cut, "%s=%s", filter_names[k], values[k]);
    report_put_name(out, cut + strlen(filter_names[k]) + 1);
    cprof__buf_puts(out, len > 80 ? "\xe2\x80\xa6\n" : "\n");
  }
  int64_t flat_sum = 0;
  for (size_t i = 0; i < g->n_nodes; i++)
    flat_sum += cprof__pf_flat(g->nodes[i]);
  char a[64], b[64], pc[32];
  report_value(a, sizeof a, flat_sum, o, unit);
  report_value(b, sizeof b, total, o, unit);
  cprof__measure_percentage(flat_sum, total, pc, sizeof pc);
  cprof__buf_printf(out, "Showing nodes accounting for %s, %s of %s total\n", a,
                    pc + strspn(pc, " "), b);
  if (total == 0)
    return;
  if (r->dropped_nodes > 0) {
    int64_t cut = (int64_t)((double)total * o->nodefraction);
    report_value(a, sizeof a, cut < 0 ? -cut : cut, o, unit);
    cprof__buf_printf(out, "Dropped %zu node%s (cum <= %s)\n", r->dropped_nodes,
                      r->dropped_nodes > 1 ? "s" : "", a);
  }
  if (r->dropped_edges > 0) {
    int64_t cut = (int64_t)((double)total * o->edgefraction);
    report_value(a, sizeof a, cut < 0 ? -cut : cut, o, unit);
    cprof__buf_printf(out, "Dropped %zu edge%s (freq <= %s)\n", r->dropped_edges,
                      r->dropped_edges > 1 ? "s" : "", a);
  }
  if (g->n_nodes > 0 && g->n_nodes < r->orig_count)
    cprof__buf_printf(out, "Showing top %zu nodes out of %zu\n", g->n_nodes, r->orig_count);
}

int report_regex(regex_t *rx, const char *re, char *err, size_t errlen) {
  int e = regcomp(rx, re, REG_EXTENDED | REG_NOSUB);
  if (e == 0)
    return 0;
  char why[128];
  regerror(e, rx, why, sizeof why);
  snprintf(err, errlen, "bad regexp %s: %s", re, why);
  return 1;
}

int report_graph(const cprof__pf_t *p, const report_opts_t *o, const cprof__pf_trim_t *t,
                 cprof__pf_graph_t **g, cprof__pf_trimmed_t *r, char *err, size_t errlen) {
  cprof__pf_graph_options_t go = {
      .sample_index = o->index, .granularity = o->granularity, .mean = o->mean};
  *g = NULL;
  int rc = cprof__pf_graph(p, &go, g);
  if (rc == 0)
    rc = cprof__pf_graph_trim(*g, t, r);
  if (rc == 0)
    return 0;
  snprintf(err, errlen, "%s", strerror(-rc));
  cprof__pf_graph_free(*g);
  *g = NULL;
  return 1;
}

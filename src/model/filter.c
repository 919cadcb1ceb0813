/* pprof's sample filters: -focus, -ignore, -hide and -show on frames
 * (profile.FilterSamplesByName in github.com/google/pprof/profile/filter.go)
 * and -tagfocus and -tagignore on labels (internal/driver's
 * compileTagFilter and profile.FilterSamplesByTag).
 *
 * A tag option is "key=value" or a bare value. A value that reads as a
 * number range ("10", "1kb:", ":100ms", "10:20") compares the samples'
 * numeric labels, scaled to the range's unit the way pprof does (the unit
 * of a label is the one its key has across the profile, as pprof's
 * NumLabelUnits finds it). Any other value is a comma-separated list of
 * regular expressions: with a key, a sample matches when one of that key's
 * string values matches one of them; bare, when every one of them matches
 * some "key:value" of the sample's string labels. */
#include "model/model.h"

#include <errno.h>
#include <inttypes.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/measure.h"
#include "profile/table.h"

/* ---- regular expressions ----------------------------------------------- */

static int compile(regex_t *rx, const char *what, const char *pattern, char *err, size_t errlen) {
  int rc = regcomp(rx, pattern, REG_EXTENDED | REG_NOSUB);
  if (rc == 0)
    return 0;
  char why[128];
  regerror(rc, rx, why, sizeof why);
  snprintf(err, errlen, "parsing %s regexp: %s: %s", what, why, pattern);
  return rc == REG_ESPACE ? -ENOMEM : -EINVAL;
}

static int matches(const regex_t *rx, const char *s) {
  return regexec(rx, s ? s : "", 0, NULL, 0) == 0;
}

static int set(const char *s) { return s && *s; }

/* ---- -focus, -ignore, -hide, -show ------------------------------------- */

static int line_matches(const cprof__pf_line_t *ln, const regex_t *rx) {
  const cprof__pf_function_t *f = ln->function;
  return f && (matches(rx, f->name) || matches(rx, f->filename));
}

static int mapping_matches(const cprof__pf_location_t *l, const regex_t *rx) {
  return l->mapping && matches(rx, l->mapping->file);
}

/* pprof's Location.matchesName: a line's function or file, or the
 * mapping's file. */
static int location_matches(const cprof__pf_location_t *l, const regex_t *rx) {
  for (size_t i = 0; i < l->n_lines; i++)
    if (line_matches(&l->lines[i], rx))
      return 1;
  return mapping_matches(l, rx);
}

/* Keeps the lines that match rx (keep = 1) or those that do not (0);
 * lines without a function are kept either way, as pprof's matchedLines
 * and unmatchedLines do. A matching mapping matches every line. The lines
 * are the profile's own, so they are compacted where they are. */
static void keep_lines(cprof__pf_location_t *l, const regex_t *rx, int keep) {
  if (mapping_matches(l, rx)) {
    if (!keep)
      l->n_lines = 0;
    return;
  }
  cprof__pf_line_t *lines = (cprof__pf_line_t *)l->lines;
  size_t n = 0;
  for (size_t i = 0; i < l->n_lines; i++)
    if (!lines[i].function || line_matches(&lines[i], rx) == keep)
      lines[n++] = lines[i];
  l->n_lines = n;
}

enum { UNSEEN, FOCUSED, IGNORED };

static size_t location_index(const cprof__pf_t *p, const cprof__pf_location_t *l) {
  uintptr_t x = (uintptr_t)l, b = (uintptr_t)p->locations;
  if (!p->locations || x < b || (x - b) % sizeof *l || (x - b) / sizeof *l >= p->n_locations)
    return SIZE_MAX;
  return (x - b) / sizeof *l;
}

static int filter_by_name(cprof__pf_t *p, const regex_t *focus, const regex_t *ignore,
                          const regex_t *hide, const regex_t *show, int *matched) {
  unsigned char *state = calloc(p->n_locations + 1, 1);
  unsigned char *hidden = calloc(p->n_locations + 1, 1);
  int any_hidden = 0;
  if (!state || !hidden) {
    free(state);
    free(hidden);
    return -ENOMEM;
  }
  for (size_t i = 0; i < p->n_locations; i++) {
    cprof__pf_location_t *l = &p->locations[i];
    if (ignore && location_matches(l, ignore)) {
      matched[CPROF_PF_FILTER_IGNORE] = 1;
      state[i] = IGNORED;
    } else if (!focus || location_matches(l, focus)) {
      matched[CPROF_PF_FILTER_FOCUS] = 1;
      state[i] = FOCUSED;
    }
    if (hide && location_matches(l, hide)) {
      matched[CPROF_PF_FILTER_HIDE] = 1;
      keep_lines(l, hide, 0);
      if (l->n_lines == 0)
        hidden[i] = 1;
    }
    if (show) {
      keep_lines(l, show, 1);
      if (l->n_lines == 0)
        hidden[i] = 1;
      else
        matched[CPROF_PF_FILTER_SHOW] = 1;
    }
    any_hidden |= hidden[i];
  }

  size_t kept = 0;
  for (size_t s = 0; s < p->n_samples; s++) {
    cprof__pf_sample_t *sample = &p->samples[s];
    /* pprof's focusedAndNotIgnored: some frame focused, none ignored. */
    int focused = 0, ignored = 0;
    for (size_t k = 0; k < sample->n_locations && !ignored; k++) {
      size_t i = location_index(p, sample->locations[k]);
      if (i != SIZE_MAX) {
        focused |= state[i] == FOCUSED;
        ignored |= state[i] == IGNORED;
      }
    }
    if (!focused || ignored)
      continue;
    if (any_hidden) {
      size_t n = 0;
      for (size_t k = 0; k < sample->n_locations; k++) {
        size_t i = location_index(p, sample->locations[k]);
        if (i == SIZE_MAX || !hidden[i])
          sample->locations[n++] = sample->locations[k];
      }
      sample->n_locations = n;
      if (n == 0)
        continue;
    }
    p->samples[kept++] = *sample;
  }
  p->n_samples = kept;
  free(state);
  free(hidden);
  return 0;
}

/* ---- the units of numeric labels --------------------------------------- */

typedef struct key_unit {
  const char *key, *unit;
} key_unit_t;

typedef struct label_units {
  key_unit_t *v;
  size_t n, cap;
  cprof__table_t index;
} label_units_t;

static uint64_t key_hash(const char *key) {
  return cprof__hash_bytes(CPROF_HASH_SEED, key, strlen(key));
}

static int key_eq(const void *ctx, uint32_t value, const void *key) {
  return strcmp(((const label_units_t *)ctx)->v[value].key, key) == 0;
}

static const char *label_unit(const label_units_t *u, const char *key) {
  int64_t i = cprof__table_find(&u->index, key_hash(key), key_eq, u, key);
  return i >= 0 ? u->v[i].unit : key;
}

/* pprof's Profile.NumLabelUnits: a key's unit is the first one its labels
 * give; without any, "bytes" for "alignment" and "request" (Go's heap
 * profiles' legacy keys) and the key itself otherwise. */
static int find_label_units(const cprof__pf_t *p, label_units_t *u) {
  for (size_t s = 0; s < p->n_samples; s++) {
    const cprof__pf_sample_t *sample = &p->samples[s];
    for (size_t k = 0; k < sample->n_labels; k++) {
      const cprof__label_t *l = &sample->labels[k];
      if (l->str)
        continue;
      const char *key = l->key ? l->key : "";
      const char *unit = l->num_unit ? l->num_unit : "";
      uint64_t h = key_hash(key);
      int64_t i = cprof__table_find(&u->index, h, key_eq, u, key);
      if (i >= 0) {
        if (!*u->v[i].unit)
          u->v[i].unit = unit;
        continue;
      }
      if (u->n == u->cap) {
        size_t cap = u->cap ? 2 * u->cap : 16;
        key_unit_t *v = realloc(u->v, cap * sizeof *v);
        if (!v)
          return -ENOMEM;
        u->v = v;
        u->cap = cap;
      }
      u->v[u->n] = (key_unit_t){key, unit};
      int err = cprof__table_insert(&u->index, h, (uint32_t)u->n);
      if (err)
        return err;
      u->n++;
    }
  }
  for (size_t i = 0; i < u->n; i++)
    if (!*u->v[i].unit)
      u->v[i].unit = !strcmp(u->v[i].key, "alignment") || !strcmp(u->v[i].key, "request")
                         ? "bytes"
                         : u->v[i].key;
  return 0;
}

/* ---- -tagfocus, -tagignore --------------------------------------------- */

typedef struct tag_filter {
  char *copy;      /* the option, split in place; owns what follows */
  const char *key; /* "" for any key */
  /* A range: lo <= value <= hi in unit, each bound when has_lo/has_hi. */
  int is_range, has_lo, has_hi;
  double lo, hi;
  const char *unit;
  char *unit_copy; /* owns unit */
  /* Or regular expressions. */
  regex_t *rx;
  size_t n_rx;
} tag_filter_t;

static void tag_filter_free(tag_filter_t *t) {
  for (size_t i = 0; i < t->n_rx; i++)
    regfree(&t->rx[i]);
  free(t->rx);
  free(t->copy);
  free(t->unit_copy);
  memset(t, 0, sizeof *t);
}

/* One number of a range as pprof's tagFilterRangeRx reads it:
 * [+-]?[0-9]+ then letters, the unit. *s moves past it; the unit is cut
 * off in place by the caller. 0, 1 when *s holds none, -EINVAL when the
 * number does not fit in 64 bits. */
static int parse_number(char **s, int64_t *v, char **unit, size_t *unit_len) {
  char *c = *s;
  int neg = 0;
  if (*c == '+' || *c == '-')
    neg = *c++ == '-';
  if (*c < '0' || *c > '9')
    return 1;
  uint64_t x = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  int over = 0;
  for (; *c >= '0' && *c <= '9'; c++) {
    unsigned d = (unsigned)(*c - '0');
    if (x > (limit - d) / 10)
      over = 1;
    else
      x = x * 10 + d;
  }
  if (over)
    return -EINVAL;
  *v = neg ? (int64_t)(0 - x) : (int64_t)x;
  *unit = c;
  while ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z'))
    c++;
  *unit_len = (size_t)(c - *unit);
  *s = c;
  return 0;
}

/* pprof's parseTagFilterRange: "A", "A:", ":A" or "A:B", where A and B are
 * numbers with an optional unit, and B's unit converts to A's. 1 when value
 * is a range (t filled in), 0 when it is not, -EINVAL for a number that
 * does not fit. value is cut up in place. */
static int parse_range(char *value, tag_filter_t *t, const char *what, char *err, size_t errlen) {
  char *s = value, *unit[2];
  size_t unit_len[2];
  int64_t v[2];
  int colon_first = *s == ':';
  if (colon_first)
    s++;
  int rc = parse_number(&s, &v[0], &unit[0], &unit_len[0]);
  if (rc == 1)
    return 0;
  if (rc < 0)
    goto range_error;
  int colon_after = 0, second = 0;
  if (!colon_first && *s == ':') {
    colon_after = 1;
    s++;
    if (*s) {
      if ((rc = parse_number(&s, &v[1], &unit[1], &unit_len[1])) == 1)
        return 0;
      if (rc < 0)
        goto range_error;
      second = 1;
    }
  }
  if (*s)
    return 0;
  unit[0][unit_len[0]] = 0;
  const char *u;
  double a = cprof__measure_scale(v[0], unit[0], unit[0], &u);
  if (second) {
    unit[1][unit_len[1]] = 0;
    const char *u2;
    double b = cprof__measure_scale(v[1], unit[1], u, &u2);
    if (strcmp(u, u2) != 0)
      return 0;
    *t = (tag_filter_t){.has_lo = 1, .lo = a, .has_hi = 1, .hi = b};
  } else if (colon_first) {
    *t = (tag_filter_t){.has_hi = 1, .hi = a};
  } else if (colon_after) {
    *t = (tag_filter_t){.has_lo = 1, .lo = a};
  } else {
    *t = (tag_filter_t){.has_lo = 1, .lo = a, .has_hi = 1, .hi = a};
  }
  t->is_range = 1;
  t->unit = u;
  return 1;
range_error:
  snprintf(err, errlen, "%s: a number in %s is out of range", what, value);
  return -EINVAL;
}

static int compile_tag_filter(const char *option, const char *what, tag_filter_t *t, char *err,
                              size_t errlen) {
  memset(t, 0, sizeof *t);
  char *copy = strdup(option);
  if (!copy)
    return -ENOMEM;
  char *value = copy;
  const char *key = "";
  char *eq = strchr(copy, '=');
  if (eq) {
    *eq = 0;
    key = copy;
    value = eq + 1;
  }
  /* The range parser cuts units off in place; it works on a copy so that
   * the value is whole for the regexes when it is not a range. The unit
   * the range compares in may point into that copy, so it is copied. */
  char *scratch = strdup(value);
  if (!scratch) {
    free(copy);
    return -ENOMEM;
  }
  tag_filter_t range;
  int rc = parse_range(scratch, &range, what, err, errlen);
  if (rc == 1 && !(range.unit_copy = strdup(range.unit)))
    rc = -ENOMEM;
  free(scratch);
  if (rc < 0) {
    free(copy);
    return rc;
  }
  if (rc == 1) {
    *t = range;
    t->unit = t->unit_copy;
    t->copy = copy;
    t->key = key;
    return 0;
  }
  t->copy = copy;
  t->key = key;
  size_t n = 1;
  for (const char *c = value; *c; c++)
    n += *c == ',';
  t->rx = calloc(n, sizeof *t->rx);
  if (!t->rx) {
    tag_filter_free(t);
    return -ENOMEM;
  }
  for (char *part = value;; part++) {
    char *comma = strchr(part, ',');
    if (comma)
      *comma = 0;
    int e = compile(&t->rx[t->n_rx], what, part, err, errlen);
    if (e) {
      tag_filter_free(t);
      return e;
    }
    t->n_rx++;
    if (!comma)
      break;
    part = comma;
  }
  return 0;
}

static int number_in_range(const tag_filter_t *t, int64_t v, const char *unit) {
  const char *u;
  double x = cprof__measure_scale(v, unit, t->unit, &u);
  return strcmp(u, t->unit) == 0 && (!t->has_lo || x >= t->lo) && (!t->has_hi || x <= t->hi);
}

/* Whether "key:value" matches rx, built in buf (grown as needed). */
static int key_value_matches(const regex_t *rx, const cprof__label_t *l, char **buf, size_t *cap) {
  const char *key = l->key ? l->key : "";
  size_t kn = strlen(key), vn = strlen(l->str), need = kn + vn + 2;
  if (need > *cap) {
    char *b = realloc(*buf, need);
    if (!b)
      return -ENOMEM;
    *buf = b;
    *cap = need;
  }
  memcpy(*buf, key, kn);
  (*buf)[kn] = ':';
  memcpy(*buf + kn + 1, l->str, vn + 1);
  return matches(rx, *buf);
}

/* 1 when the sample matches t, 0 when not, -ENOMEM. */
static int tag_matches(const tag_filter_t *t, const label_units_t *units,
                       const cprof__pf_sample_t *s, char **buf, size_t *cap) {
  if (t->is_range) {
    for (size_t i = 0; i < s->n_labels; i++) {
      const cprof__label_t *l = &s->labels[i];
      const char *key = l->key ? l->key : "";
      if (!l->str && (!*t->key || !strcmp(key, t->key)) &&
          number_in_range(t, l->num, label_unit(units, key)))
        return 1;
    }
    return 0;
  }
  if (*t->key) {
    for (size_t i = 0; i < s->n_labels; i++) {
      const cprof__label_t *l = &s->labels[i];
      if (!l->str || strcmp(l->key ? l->key : "", t->key) != 0)
        continue;
      for (size_t r = 0; r < t->n_rx; r++)
        if (matches(&t->rx[r], l->str))
          return 1;
    }
    return 0;
  }
  /* Every expression matches some "key:value". */
  for (size_t r = 0; r < t->n_rx; r++) {
    int found = 0;
    for (size_t i = 0; i < s->n_labels && !found; i++) {
      if (!s->labels[i].str)
        continue;
      found = key_value_matches(&t->rx[r], &s->labels[i], buf, cap);
      if (found < 0)
        return found;
    }
    if (!found)
      return 0;
  }
  return 1;
}

/* pprof's FilterSamplesByTag: keep samples that match focus (when given)
 * and not ignore. */
static int filter_by_tag(cprof__pf_t *p, const tag_filter_t *focus, const tag_filter_t *ignore,
                         const label_units_t *units, int *matched) {
  char *buf = NULL;
  size_t cap = 0, kept = 0;
  int err = 0;
  for (size_t s = 0; s < p->n_samples; s++) {
    int focused = 1, ignored = 0;
    if (focus && (focused = tag_matches(focus, units, &p->samples[s], &buf, &cap)) < 0)
      err = focused;
    if (ignore && (ignored = tag_matches(ignore, units, &p->samples[s], &buf, &cap)) < 0)
      err = ignored;
    if (err)
      break;
    matched[CPROF_PF_FILTER_TAGFOCUS] |= focused;
    matched[CPROF_PF_FILTER_TAGIGNORE] |= ignored;
    if (focused && !ignored)
      p->samples[kept++] = p->samples[s];
  }
  free(buf);
  if (err)
    return err;
  p->n_samples = kept;
  return 0;
}

/* ---- all together ------------------------------------------------------ */

int cprof__pf_filter(cprof__pf_t *p, const cprof__pf_filter_t *f, int *matched, char *err,
                     size_t errlen) {
  static const char *const names[] = {"focus", "ignore", "hide", "show"};
  static const cprof__pf_filter_t none = {0};
  if (!f)
    f = &none; /* no options: only pprof's dropping of empty stacks */
  const char *patterns[] = {f->focus, f->ignore, f->hide, f->show};
  regex_t rx[4];
  int have[4] = {0}, found[CPROF_PF_FILTER_N] = {0};
  tag_filter_t tag[2] = {{0}};
  int have_tag[2] = {0};
  const char *tag_options[2] = {f->tagfocus, f->tagignore};
  static const char *const tag_names[2] = {"tagfocus", "tagignore"};
  label_units_t units = {0};
  int rc = 0;
  cprof__table_init(&units.index);

  for (int i = 0; i < 4 && rc == 0; i++)
    if (set(patterns[i]) && (rc = compile(&rx[i], names[i], patterns[i], err, errlen)) == 0)
      have[i] = 1;
  for (int i = 0; i < 2 && rc == 0; i++)
    if (set(tag_options[i]) &&
        (rc = compile_tag_filter(tag_options[i], tag_names[i], &tag[i], err, errlen)) == 0)
      have_tag[i] = 1;
  /* The units come from the whole profile, before any sample goes. */
  if (rc == 0 && ((have_tag[0] && tag[0].is_range) || (have_tag[1] && tag[1].is_range)))
    rc = find_label_units(p, &units);
  if (rc == 0)
    rc = filter_by_name(p, have[0] ? &rx[0] : NULL, have[1] ? &rx[1] : NULL,
                        have[2] ? &rx[2] : NULL, have[3] ? &rx[3] : NULL, found);
  if (rc == 0 && (have_tag[0] || have_tag[1]))
    rc =
        filter_by_tag(p, have_tag[0] ? &tag[0] : NULL, have_tag[1] ? &tag[1] : NULL, &units, found);
  if (rc == 0 && matched) {
    for (int i = 0; i < 4; i++)
      matched[i] = !have[i] || found[i];
    for (int i = 0; i < 2; i++)
      matched[CPROF_PF_FILTER_TAGFOCUS + i] = !have_tag[i] || found[CPROF_PF_FILTER_TAGFOCUS + i];
  }
  if (rc == -ENOMEM)
    snprintf(err, errlen, "out of memory");

  for (int i = 0; i < 4; i++)
    if (have[i])
      regfree(&rx[i]);
  for (int i = 0; i < 2; i++)
    if (have_tag[i])
      tag_filter_free(&tag[i]);
  free(units.v);
  cprof__table_free(&units.index);
  return rc;
}

/* Loading Parca's YAML config (config.h has the contract).
 *
 * libyaml's document API parses the whole file into a node tree in which
 * every node keeps its position; the walk below then reads it the way
 * Parca's Go code does (pkg/config/config.go with yaml.v3's KnownFields):
 * a key nobody expects is an error, and so is a value of the wrong shape.
 * Every error names the file, the line and the column of the node at fault.
 *
 * Parca's rules kept here, and where they come from:
 *  - scrape_interval defaults to 10s; scrape_timeout defaults to the
 *    interval and must fit in it, as in the Parca of the seed's set-up
 *    (v0.16: "scrape timeout must be larger or equal to inverval" guards
 *    timeout > interval; later Parcas turned this round, to a timeout of
 *    the interval plus 3s that must exceed it).
 *  - With process_cpu enabled the timeout is at least 2s.
 *  - A delta profile is asked for ?seconds= the interval less one second
 *    (pkg/scrape/target.go), here at least 1, and less than the timeout
 *    when that is shorter, so that it always arrives in time.
 *  - A pprof_config entry named like a default fills what it leaves out
 *    from the default (enabled, path; here also delta, which Parca drops:
 *    `process_cpu: {enabled: true}` would otherwise stop being a delta
 *    profile and wait 30 s for a CPU profile).
 *  - profiling_config.path_prefix goes in front of every profile's path.
 *  - password_file and bearer_token_file are relative to the config
 *    file's directory (Prometheus' SetDirectory); they are read here, once,
 *    with surrounding white space trimmed as Prometheus does. */
#include "collect/config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

typedef struct ctx {
  const char *file;
  yaml_document_t *doc;
  char *err;
  size_t errlen;
} ctx_t;

/* Parca's default profiles (memory is the heap profile, as the issue asks;
 * newer Parca scrapes /debug/pprof/allocs for it). threadcreate is known by
 * name but off, as in Parca: Go's holds a sample without a stack (threads
 * made before profiling), which Parca's checks refuse (validate.c), so a
 * Go target would always read Bad; `threadcreate: {enabled: true}` turns
 * it on for cprof's programs, whose threadcreate has stacks. */
static const struct {
  const char *name, *path;
  int delta, enabled;
} default_profiles[] = {
    {"memory", "/debug/pprof/heap", 0, 1},
    {"block", "/debug/pprof/block", 0, 1},
    {"goroutine", "/debug/pprof/goroutine", 0, 1},
    {"mutex", "/debug/pprof/mutex", 0, 1},
    {"threadcreate", "/debug/pprof/threadcreate", 0, 0},
    {"process_cpu", "/debug/pprof/profile", 1, 1},
};
#define NDEFAULTS (sizeof default_profiles / sizeof default_profiles[0])

#define DEFAULT_INTERVAL_MS 10000L
#define CPU_MIN_TIMEOUT_MS 2000L

static int fail_mark(ctx_t *c, yaml_mark_t m, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail_mark(ctx_t *c, yaml_mark_t m, const char *fmt, ...) {
  int n = snprintf(c->err, c->errlen, "%s:%zu:%zu: ", c->file, m.line + 1, m.column + 1);
  if (n >= 0 && (size_t)n < c->errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err + n, c->errlen - n, fmt, ap);
    va_end(ap);
  }
  return -EINVAL;
}
#define FAIL(c, node, ...) fail_mark((c), (node)->start_mark, __VA_ARGS__)

static int oom(ctx_t *c) {
  snprintf(c->err, c->errlen, "%s: out of memory", c->file);
  return -ENOMEM;
}

static yaml_node_t *node_at(ctx_t *c, int i) { return yaml_document_get_node(c->doc, i); }

/* YAML's null: an empty plain scalar, ~ or null (`static_configs:` with
 * nothing after it). Go's decoder leaves the field as it was. */
static int is_null(const yaml_node_t *n) {
  if (!n || n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
    return 0;
  const char *v = (const char *)n->data.scalar.value;
  return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") || !strcmp(v, "NULL");
}

static const char *kind(const yaml_node_t *n) {
  return n->type == YAML_MAPPING_NODE    ? "a map"
         : n->type == YAML_SEQUENCE_NODE ? "a list"
                                         : "a single value";
}

static const char *scalar(const yaml_node_t *n) { return (const char *)n->data.scalar.value; }

static int want(ctx_t *c, const yaml_node_t *n, yaml_node_type_t type, const char *what) {
  if (n->type == type)
    return 0;
  return FAIL(c, n, "%s wants %s, not %s", what,
              type == YAML_MAPPING_NODE    ? "a map"
              : type == YAML_SEQUENCE_NODE ? "a list"
                                           : "a single value",
              kind(n));
}

/* Checks that a map's keys are plain values and none comes twice. */
static int check_unique_keys(ctx_t *c, const yaml_node_t *map, const char *what) {
  for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
    yaml_node_t *k = node_at(c, p->key);
    if (k->type != YAML_SCALAR_NODE)
      return FAIL(c, k, "a key in %s is %s; keys are names", what, kind(k));
    for (yaml_node_pair_t *q = map->data.mapping.pairs.start; q < p; q++) {
      yaml_node_t *prev = node_at(c, q->key);
      if (!strcmp(scalar(prev), scalar(k)))
        return FAIL(c, k, "%s is given twice in %s (first on line %zu)", scalar(k), what,
                    prev->start_mark.line + 1);
    }
  }
  return 0;
}

/* Checks a map's keys: unique, and each in known. A key in unsupported (or
 * any *_sd_configs where unsupported is given) is Parca's but not ours yet,
 * and the error says so rather than calling it unknown. */
static int check_keys(ctx_t *c, const yaml_node_t *map, const char *what, const char *const *known,
                      const char *const *unsupported) {
  int rc = check_unique_keys(c, map, what);
  if (rc)
    return rc;
  for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
    yaml_node_t *k = node_at(c, p->key);
    const char *key = scalar(k);
    int ok = 0;
    for (const char *const *s = known; *s && !ok; s++)
      ok = !strcmp(*s, key);
    if (ok)
      continue;
    size_t kl = strlen(key);
    int parca = unsupported && kl > 11 && !strcmp(key + kl - 11, "_sd_configs");
    for (const char *const *s = unsupported; s && *s && !parca; s++)
      parca = !strcmp(*s, key);
    if (parca)
      return FAIL(c, k, "%s in %s is a Parca setting cprof collect does not support yet", key,
                  what);
    char list[256] = "";
    for (const char *const *s = known; *s; s++) {
      size_t used = strlen(list);
      snprintf(list + used, sizeof list - used, "%s%s", s == known ? "" : ", ", *s);
    }
    return FAIL(c, k, "unknown key %s in %s (known: %s)", key, what, list);
  }
  return 0;
}

/* The value of KEY in a (checked) map, or NULL when absent or null. */
static yaml_node_t *get(ctx_t *c, const yaml_node_t *map, const char *key) {
  for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
    yaml_node_t *k = node_at(c, p->key);
    if (!strcmp(scalar(k), key)) {
      yaml_node_t *v = node_at(c, p->value);
      return is_null(v) ? NULL : v;
    }
  }
  return NULL;
}

/* A string value: any single value (Go's decoder takes 8080 or true into a
 * string field too). *out is replaced. */
static int get_string(ctx_t *c, const yaml_node_t *n, const char *what, char **out) {
  int rc = want(c, n, YAML_SCALAR_NODE, what);
  if (rc)
    return rc;
  char *s = strdup(scalar(n));
  if (!s)
    return oom(c);
  free(*out);
  *out = s;
  return 0;
}

/* A boolean, as yaml.v3 decodes into a bool field: YAML 1.2's true and
 * false, and YAML 1.1's yes/no/on/off, in any of their three casings. */
static int get_bool(ctx_t *c, const yaml_node_t *n, const char *what, int *out) {
  static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"};
  static const char *const no[] = {"false", "False", "FALSE", "no", "No",
                                   "NO",    "off",   "Off",   "OFF"};
  int rc = want(c, n, YAML_SCALAR_NODE, what);
  if (rc)
    return rc;
  if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
      if (!strcmp(scalar(n), yes[i]))
        return *out = 1, 0;
      if (!strcmp(scalar(n), no[i]))
        return *out = 0, 0;
    }
  return FAIL(c, n, "%s wants true or false, not \"%s\"", what, scalar(n));
}

int collect_parse_duration(const char *s, long *ms) {
  /* Prometheus' model.ParseDuration: units largest first, each once. */
  static const struct {
    const char *unit;
    long ms;
  } units[] = {{"y", 365L * 24 * 3600 * 1000},
               {"w", 7L * 24 * 3600 * 1000},
               {"d", 24L * 3600 * 1000},
               {"h", 3600L * 1000},
               {"ms", 1},
               {"m", 60L * 1000},
               {"s", 1000}};
  /* Their order in a duration: ms comes last although it is tried before m. */
  static const int rank[] = {0, 1, 2, 3, 6, 4, 5};
  if (!strcmp(s, "0"))
    return *ms = 0, 0;
  if (!*s)
    return -EINVAL;
  long total = 0;
  int last = -1;
  while (*s) {
    if (!isdigit((unsigned char)*s))
      return -EINVAL;
    long v = 0;
    while (isdigit((unsigned char)*s)) {
      if (v > (LONG_MAX - 9) / 10)
        return -EINVAL;
      v = v * 10 + (*s++ - '0');
    }
    size_t u = 0;
    while (u < sizeof units / sizeof units[0] && strncmp(s, units[u].unit, strlen(units[u].unit)))
      u++;
    if (u == sizeof units / sizeof units[0] || rank[u] <= last)
      return -EINVAL;
    last = rank[u];
    s += strlen(units[u].unit);
    if (v > (LONG_MAX - total) / units[u].ms)
      return -EINVAL;
    total += v * units[u].ms;
  }
  *ms = total;
  return 0;
}

static int get_duration(ctx_t *c, const yaml_node_t *n, const char *what, long *out) {
  int rc = want(c, n, YAML_SCALAR_NODE, what);
  if (rc)
    return rc;
  if (collect_parse_duration(scalar(n), out))
    return FAIL(c, n, "%s: \"%s\" is not a duration (want a number and a unit: 500ms, 10s, 1m30s)",
                what, scalar(n));
  return 0;
}

/* Appends one element of SIZE bytes to *arr (holding *n), zeroed. */
static void *push(void *arr, size_t *n, size_t size) {
  char *a = realloc(*(void **)arr, (*n + 1) * size);
  if (!a)
    return NULL;
  *(void **)arr = a;
  memset(a + *n * size, 0, size);
  return a + (*n)++ * size;
}

/* Reads a secret from PATH (relative to the config file's directory), its
 * surrounding white space trimmed. */
static int read_secret(ctx_t *c, const yaml_node_t *n, const char *what, char **out) {
  const char *path = scalar(n);
  char *full = NULL;
  const char *slash = strrchr(c->file, '/');
  if (path[0] != '/' && slash) {
    if (asprintf(&full, "%.*s/%s", (int)(slash - c->file), c->file, path) < 0)
      return oom(c);
  } else if (!(full = strdup(path))) {
    return oom(c);
  }
  FILE *f = fopen(full, "r");
  if (!f) {
    int e = errno;
    free(full);
    return FAIL(c, n, "%s %s: %s", what, path, strerror(e));
  }
  free(full);
  char buf[4096];
  size_t len = fread(buf, 1, sizeof buf - 1, f);
  int bad = ferror(f) || !feof(f);
  fclose(f);
  if (bad)
    return FAIL(c, n, "%s %s: unreadable or longer than %zu bytes", what, path, sizeof buf - 1);
  buf[len] = 0;
  char *s = buf, *e = buf + len;
  while (s < e && isspace((unsigned char)*s))
    s++;
  while (e > s && isspace((unsigned char)e[-1]))
    *--e = 0;
  free(*out);
  if (!(*out = strdup(s)))
    return oom(c);
  return 0;
}

/* A Prometheus label name: [a-zA-Z_][a-zA-Z0-9_]*. */
static int label_name_ok(const char *s) {
  if (!*s || isdigit((unsigned char)*s))
    return 0;
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && *s != '_')
      return 0;
  return 1;
}

/* "host:port" or "[v6]:port", port 1 to 65535. Parca itself only refuses
 * a '/' (a URL where an address belongs); a missing port is refused here
 * too, since there is no default port to add for a profiling endpoint. */
static int target_ok(const char *s, const char **why) {
  const char *colon;
  if (strchr(s, '/'))
    return *why = "is not host:port (a URL? the scheme and path are set elsewhere)", 0;
  if (s[0] == '[') {
    const char *end = strchr(s, ']');
    if (!end || end[1] != ':')
      return *why = "is not [IPv6]:port", 0;
    colon = end + 1;
  } else {
    colon = strrchr(s, ':');
    if (!colon || colon == s || memchr(s, ':', colon - s))
      return *why = "is not host:port", 0;
  }
  char *end;
  long port = strtol(colon + 1, &end, 10);
  if (!isdigit((unsigned char)colon[1]) || *end || port < 1 || port > 65535)
    return *why = "has no port from 1 to 65535", 0;
  return 1;
}

static int parse_labels(ctx_t *c, const yaml_node_t *map, collect_label_t **out, size_t *n) {
  int rc = want(c, map, YAML_MAPPING_NODE, "labels");
  if (rc)
    return rc;
  for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
    yaml_node_t *k = node_at(c, p->key), *v = node_at(c, p->value);
    if ((rc = want(c, k, YAML_SCALAR_NODE, "a label's name")))
      return rc;
    if (!label_name_ok(scalar(k)))
      return FAIL(c, k, "label name \"%s\" is not valid (letters, digits and _, not first a digit)",
                  scalar(k));
    for (size_t i = 0; i < *n; i++)
      if (!strcmp((*out)[i].name, scalar(k)))
        return FAIL(c, k, "label %s is given twice", scalar(k));
    collect_label_t *l = push(out, n, sizeof *l);
    if (!l || !(l->name = strdup(scalar(k))))
      return oom(c);
    if (is_null(v)) {
      if (!(l->value = strdup("")))
        return oom(c);
    } else if ((rc = get_string(c, v, "a label's value", &l->value))) {
      return rc;
    }
  }
  return 0;
}

static int parse_static_config(ctx_t *c, collect_job_t *j, const yaml_node_t *sc) {
  static const char *const known[] = {"targets", "labels", NULL};
  int rc = want(c, sc, YAML_MAPPING_NODE, "a static_configs entry");
  if (rc || (rc = check_keys(c, sc, "a static_configs entry", known, NULL)))
    return rc;
  collect_label_t *labels = NULL;
  size_t nlabels = 0;
  yaml_node_t *targets = get(c, sc, "targets"), *lab = get(c, sc, "labels");
  if (lab && (rc = parse_labels(c, lab, &labels, &nlabels)))
    goto out;
  if (targets && (rc = want(c, targets, YAML_SEQUENCE_NODE, "targets")))
    goto out;
  for (yaml_node_item_t *i = targets ? targets->data.sequence.items.start : NULL;
       targets && i < targets->data.sequence.items.top; i++) {
    yaml_node_t *t = node_at(c, *i);
    const char *why;
    if ((rc = want(c, t, YAML_SCALAR_NODE, "a target")))
      goto out;
    if (!target_ok(scalar(t), &why)) {
      rc = FAIL(c, t, "target \"%s\" %s", scalar(t), why);
      goto out;
    }
    collect_target_t *tg = push(&j->targets, &j->ntargets, sizeof *tg);
    if (!tg || !(tg->addr = strdup(scalar(t))) ||
        (nlabels && !(tg->labels = calloc(nlabels, sizeof *tg->labels)))) {
      rc = oom(c);
      goto out;
    }
    for (size_t l = 0; l < nlabels; l++) {
      tg->labels[l].name = strdup(labels[l].name);
      tg->labels[l].value = strdup(labels[l].value);
      tg->nlabels++;
      if (!tg->labels[l].name || !tg->labels[l].value) {
        rc = oom(c);
        goto out;
      }
    }
  }
out:
  for (size_t l = 0; l < nlabels; l++) {
    free(labels[l].name);
    free(labels[l].value);
  }
  free(labels);
  return rc;
}

static int parse_params(ctx_t *c, collect_job_t *j, const yaml_node_t *map) {
  int rc = want(c, map, YAML_MAPPING_NODE, "params");
  if (rc)
    return rc;
  for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
    yaml_node_t *k = node_at(c, p->key), *v = node_at(c, p->value);
    if ((rc = want(c, k, YAML_SCALAR_NODE, "a parameter's name")))
      return rc;
    if (is_null(v))
      continue;
    /* url.Values: each name has a list of values. */
    if ((rc = want(c, v, YAML_SEQUENCE_NODE, "a parameter (a list of values)")))
      return rc;
    for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top; i++) {
      collect_label_t *l = push(&j->params, &j->nparams, sizeof *l);
      if (!l || !(l->name = strdup(scalar(k))))
        return oom(c);
      if ((rc = get_string(c, node_at(c, *i), "a parameter's value", &l->value)))
        return rc;
    }
  }
  return 0;
}

static collect_profile_t *find_profile(collect_job_t *j, const char *name) {
  for (size_t i = 0; i < j->nprofiles; i++)
    if (!strcmp(j->profiles[i].name, name))
      return &j->profiles[i];
  return NULL;
}

/* One pprof_config entry, over the default of its name if there is one. */
static int parse_profile(ctx_t *c, collect_job_t *j, const yaml_node_t *k, const yaml_node_t *v) {
  static const char *const known[] = {"enabled",          "path",    "delta",
                                      "keep_sample_type", "seconds", NULL};
  collect_profile_t *p = find_profile(j, scalar(k));
  int rc, custom = !p;
  if (custom) {
    if (!(p = push(&j->profiles, &j->nprofiles, sizeof *p)) || !(p->name = strdup(scalar(k))))
      return oom(c);
  }
  p->enabled = 1; /* named in the file: on unless it says otherwise, as in Parca */
  if (is_null(v)) {
    if (custom)
      return FAIL(c, k, "profile %s is not one of Parca's defaults, so it needs a path", p->name);
    return 0;
  }
  if ((rc = want(c, v, YAML_MAPPING_NODE, "a pprof_config entry")) ||
      (rc = check_keys(c, v, "a pprof_config entry", known, NULL)))
    return rc;
  yaml_node_t *n;
  if ((n = get(c, v, "enabled")) && (rc = get_bool(c, n, "enabled", &p->enabled)))
    return rc;
  if ((n = get(c, v, "delta")) && (rc = get_bool(c, n, "delta", &p->delta)))
    return rc;
  if ((n = get(c, v, "path"))) {
    if ((rc = get_string(c, n, "path", &p->path)))
      return rc;
    if (p->path[0] != '/')
      return FAIL(c, n, "path \"%s\" does not begin with /", p->path);
  }
  if (!p->path)
    return FAIL(c, k, "profile %s is not one of Parca's defaults, so it needs a path", p->name);
  if ((n = get(c, v, "seconds"))) {
    char *end;
    if ((rc = want(c, n, YAML_SCALAR_NODE, "seconds")))
      return rc;
    p->seconds = strtol(scalar(n), &end, 10);
    if (!isdigit((unsigned char)*scalar(n)) || *end || p->seconds < 1 || p->seconds > 86400)
      return FAIL(c, n, "seconds wants a whole number from 1 to 86400, not \"%s\"", scalar(n));
    /* The job's timing is known by now (parse_job reads it first). */
    if (p->seconds * 1000 >= j->timeout_ms)
      return FAIL(c, n, "profile %s lasts %lds, which does not end before scrape_timeout (%ldms)",
                  p->name, p->seconds, j->timeout_ms);
  }
  if ((n = get(c, v, "keep_sample_type"))) {
    static const char *const st_known[] = {"type", "unit", NULL};
    if ((rc = want(c, n, YAML_SEQUENCE_NODE, "keep_sample_type")))
      return rc;
    for (yaml_node_item_t *i = n->data.sequence.items.start; i < n->data.sequence.items.top; i++) {
      yaml_node_t *st = node_at(c, *i), *f;
      if ((rc = want(c, st, YAML_MAPPING_NODE, "a keep_sample_type entry")) ||
          (rc = check_keys(c, st, "a keep_sample_type entry", st_known, NULL)))
        return rc;
      collect_sample_type_t *t = push(&p->keep, &p->nkeep, sizeof *t);
      if (!t)
        return oom(c);
      if ((f = get(c, st, "type")) && (rc = get_string(c, f, "type", &t->type)))
        return rc;
      if ((f = get(c, st, "unit")) && (rc = get_string(c, f, "unit", &t->unit)))
        return rc;
      if ((!t->type && !(t->type = strdup(""))) || (!t->unit && !(t->unit = strdup(""))))
        return oom(c);
    }
  }
  return 0;
}

/* prefix + path with one slash between them, as Go's filepath.Join. */
static int join_prefix(ctx_t *c, const char *prefix, char **path) {
  size_t pl = strlen(prefix);
  while (pl && prefix[pl - 1] == '/')
    pl--;
  char *joined;
  if (asprintf(&joined, "%s%.*s%s", prefix[0] == '/' ? "" : "/", (int)pl, prefix, *path) < 0)
    return oom(c);
  free(*path);
  *path = joined;
  return 0;
}

static int parse_profiling_config(ctx_t *c, collect_job_t *j, const yaml_node_t *pc) {
  static const char *const known[] = {"pprof_config", "path_prefix", NULL};
  int rc = want(c, pc, YAML_MAPPING_NODE, "profiling_config");
  if (rc || (rc = check_keys(c, pc, "profiling_config", known, NULL)))
    return rc;
  yaml_node_t *n;
  if ((n = get(c, pc, "path_prefix")) && (rc = get_string(c, n, "path_prefix", &j->path_prefix)))
    return rc;
  if (!(n = get(c, pc, "pprof_config")))
    return 0;
  if ((rc = want(c, n, YAML_MAPPING_NODE, "pprof_config")))
    return rc;
  /* Any name is a profile: a default's or the user's own. */
  if ((rc = check_unique_keys(c, n, "pprof_config")))
    return rc;
  for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++)
    if ((rc = parse_profile(c, j, node_at(c, p->key), node_at(c, p->value))))
      return rc;
  return 0;
}

/* basic_auth, bearer_token and bearer_token_file of MAP (a scrape config
 * or remote_write), as Prometheus' HTTP client config reads them: one way
 * of authenticating at most, secrets from files read now. */
static int parse_auth(ctx_t *c, const yaml_node_t *map, const char *what, char **username,
                      char **password, char **bearer_token) {
  yaml_node_t *n;
  int rc;
  if ((n = get(c, map, "basic_auth"))) {
    static const char *const ba_known[] = {"username", "password", "password_file", NULL};
    yaml_node_t *f, *pw, *pwf;
    if ((rc = want(c, n, YAML_MAPPING_NODE, "basic_auth")) ||
        (rc = check_keys(c, n, "basic_auth", ba_known,
                         (const char *const[]){"username_file", NULL})))
      return rc;
    if ((f = get(c, n, "username")) && (rc = get_string(c, f, "username", username)))
      return rc;
    if (!*username && !(*username = strdup("")))
      return oom(c);
    pw = get(c, n, "password");
    pwf = get(c, n, "password_file");
    if (pw && pwf)
      return FAIL(c, pwf, "basic_auth takes password or password_file, not both");
    if (pw && (rc = get_string(c, pw, "password", password)))
      return rc;
    if (pwf && ((rc = want(c, pwf, YAML_SCALAR_NODE, "password_file")) ||
                (rc = read_secret(c, pwf, "password_file", password))))
      return rc;
    if (!*password && !(*password = strdup("")))
      return oom(c);
  }
  yaml_node_t *bt = get(c, map, "bearer_token"), *btf = get(c, map, "bearer_token_file");
  if (bt && btf)
    return FAIL(c, btf, "%s takes bearer_token or bearer_token_file, not both", what);
  if ((bt || btf) && *username)
    return FAIL(c, bt ? bt : btf, "%s takes basic_auth or a bearer token, not both", what);
  if (bt && (rc = get_string(c, bt, "bearer_token", bearer_token)))
    return rc;
  if (btf && ((rc = want(c, btf, YAML_SCALAR_NODE, "bearer_token_file")) ||
              (rc = read_secret(c, btf, "bearer_token_file", bearer_token))))
    return rc;
  return 0;
}

static int parse_job(ctx_t *c, collect_job_t *j, const yaml_node_t *sc) {
  static const char *const known[] = {
      "job_name",     "scrape_interval",   "scrape_timeout",   "scheme",
      "params",       "static_configs",    "profiling_config", "basic_auth",
      "bearer_token", "bearer_token_file", "tls_config",       NULL};
  static const char *const parca[] = {"relabel_configs",
                                      "normalized_addresses",
                                      "authorization",
                                      "oauth2",
                                      "proxy_url",
                                      "no_proxy",
                                      "proxy_from_environment",
                                      "proxy_connect_header",
                                      "follow_redirects",
                                      "enable_http2",
                                      NULL};
  int rc = want(c, sc, YAML_MAPPING_NODE, "a scrape_configs entry");
  if (rc || (rc = check_keys(c, sc, "a scrape config", known, parca)))
    return rc;
  yaml_node_t *n, *interval_node = get(c, sc, "scrape_interval"),
                  *timeout_node = get(c, sc, "scrape_timeout");

  if ((n = get(c, sc, "job_name")) && (rc = get_string(c, n, "job_name", &j->name)))
    return rc;
  if (!j->name || !*j->name)
    return FAIL(c, n ? n : sc, "a scrape config without a job_name");

  j->interval_ms = DEFAULT_INTERVAL_MS;
  if (interval_node && (rc = get_duration(c, interval_node, "scrape_interval", &j->interval_ms)))
    return rc;
  if (j->interval_ms <= 0)
    return FAIL(c, interval_node, "scrape_interval must be more than 0");
  j->timeout_ms = j->interval_ms;
  if (timeout_node && (rc = get_duration(c, timeout_node, "scrape_timeout", &j->timeout_ms)))
    return rc;
  if (j->timeout_ms <= 0 || j->timeout_ms > j->interval_ms)
    return FAIL(c, timeout_node,
                "scrape_timeout (%ldms) must be more than 0 and fit in scrape_interval (%ldms), "
                "in job %s",
                j->timeout_ms, j->interval_ms, j->name);

  if (!(j->scheme = strdup("http")) || !(j->path_prefix = strdup("")))
    return oom(c);
  if ((n = get(c, sc, "scheme"))) {
    if ((rc = get_string(c, n, "scheme", &j->scheme)))
      return rc;
    if (strcmp(j->scheme, "http") && strcmp(j->scheme, "https"))
      return FAIL(c, n, "scheme \"%s\" is not http or https", j->scheme);
  }
  if ((n = get(c, sc, "params")) && (rc = parse_params(c, j, n)))
    return rc;

  if ((rc = parse_auth(c, sc, "a scrape config", &j->username, &j->password, &j->bearer_token)))
    return rc;

  if ((n = get(c, sc, "tls_config"))) {
    static const char *const tls_known[] = {
        "ca_file", "cert_file", "key_file", "server_name", "insecure_skip_verify", NULL};
    yaml_node_t *f;
    if ((rc = want(c, n, YAML_MAPPING_NODE, "tls_config")) ||
        (rc = check_keys(c, n, "tls_config", tls_known,
                         (const char *const[]){"ca", "cert", "key", "min_version", NULL})))
      return rc;
    if (((f = get(c, n, "ca_file")) && (rc = get_string(c, f, "ca_file", &j->ca_file))) ||
        ((f = get(c, n, "cert_file")) && (rc = get_string(c, f, "cert_file", &j->cert_file))) ||
        ((f = get(c, n, "key_file")) && (rc = get_string(c, f, "key_file", &j->key_file))) ||
        ((f = get(c, n, "server_name")) &&
         (rc = get_string(c, f, "server_name", &j->server_name))) ||
        ((f = get(c, n, "insecure_skip_verify")) &&
         (rc = get_bool(c, f, "insecure_skip_verify", &j->insecure_skip_verify))))
      return rc;
    if (!j->cert_file != !j->key_file)
      return FAIL(c, n, "tls_config takes cert_file and key_file together");
  }

  if ((n = get(c, sc, "static_configs"))) {
    if ((rc = want(c, n, YAML_SEQUENCE_NODE, "static_configs")))
      return rc;
    for (yaml_node_item_t *i = n->data.sequence.items.start; i < n->data.sequence.items.top; i++)
      if ((rc = parse_static_config(c, j, node_at(c, *i))))
        return rc;
  }

  /* The defaults first, in the table's order; then the job's own. */
  if (!(j->profiles = calloc(NDEFAULTS, sizeof *j->profiles)))
    return oom(c);
  for (size_t i = 0; i < NDEFAULTS; i++) {
    collect_profile_t *p = &j->profiles[j->nprofiles++];
    if (!(p->name = strdup(default_profiles[i].name)) ||
        !(p->path = strdup(default_profiles[i].path)))
      return oom(c);
    p->enabled = default_profiles[i].enabled;
    p->delta = default_profiles[i].delta;
  }
  if ((n = get(c, sc, "profiling_config")) && (rc = parse_profiling_config(c, j, n)))
    return rc;
  for (size_t i = 0; i < j->nprofiles; i++) {
    collect_profile_t *p = &j->profiles[i];
    if (*j->path_prefix && (rc = join_prefix(c, j->path_prefix, &p->path)))
      return rc;
    if (!p->seconds) { /* less than the interval and the timeout: it arrives in time */
      long fit = (j->timeout_ms < j->interval_ms ? j->timeout_ms : j->interval_ms) / 1000 - 1;
      p->seconds = fit >= 1 ? fit : 1;
    }
  }
  collect_profile_t *cpu = find_profile(j, "process_cpu");
  if (cpu && cpu->enabled && j->timeout_ms < CPU_MIN_TIMEOUT_MS)
    return FAIL(c, timeout_node ? timeout_node : sc,
                "scrape_timeout must be at least 2s while process_cpu is enabled, in job %s",
                j->name);
  return 0;
}

static int parse_storage(ctx_t *c, collect_config_t *cfg, const yaml_node_t *os) {
  static const char *const os_known[] = {"bucket", NULL};
  static const char *const b_known[] = {"type", "config", NULL};
  static const char *const fs_known[] = {"directory", NULL};
  yaml_node_t *b, *t, *conf, *dir;
  int rc = want(c, os, YAML_MAPPING_NODE, "object_storage");
  if (rc || (rc = check_keys(c, os, "object_storage", os_known, NULL)))
    return rc;
  if (!(b = get(c, os, "bucket")))
    return FAIL(c, os, "object_storage has no bucket");
  if ((rc = want(c, b, YAML_MAPPING_NODE, "bucket")) ||
      (rc = check_keys(c, b, "bucket", b_known, (const char *const[]){"prefix", NULL})))
    return rc;
  if (!(t = get(c, b, "type")))
    return FAIL(c, b, "bucket has no type (cprof collect supports FILESYSTEM)");
  if ((rc = want(c, t, YAML_SCALAR_NODE, "type")))
    return rc;
  /* Thanos' objstore client compares the type in upper case. */
  if (strcasecmp(scalar(t), "FILESYSTEM"))
    return FAIL(c, t, "bucket type %s is not supported: cprof collect supports only FILESYSTEM",
                scalar(t));
  if (!(conf = get(c, b, "config")))
    return FAIL(c, b, "a FILESYSTEM bucket needs config.directory");
  if ((rc = want(c, conf, YAML_MAPPING_NODE, "config")) ||
      (rc = check_keys(c, conf, "a FILESYSTEM bucket's config", fs_known, NULL)))
    return rc;
  if (!(dir = get(c, conf, "directory")))
    return FAIL(c, conf, "a FILESYSTEM bucket needs config.directory");
  if ((rc = get_string(c, dir, "directory", &cfg->directory)))
    return rc;
  if (!*cfg->directory)
    return FAIL(c, dir, "directory is empty");
  return 0;
}

int collect_remote_write_url_ok(const char *url, const char **why) {
  const char *host = !strncmp(url, "http://", 7)    ? url + 7
                     : !strncmp(url, "https://", 8) ? url + 8
                                                    : NULL;
  if (!host)
    return *why = "is not an http:// or https:// URL", 0;
  if (!*host || *host == '/' || *host == ':')
    return *why = "has no host", 0;
  if (strpbrk(url, "?# \t\r\n"))
    return *why =
               "has a query, a fragment or white space (the URL of Pyroscope's server is wanted)",
           0;
  return 1;
}

/* remote_write (config.h): cprof's own section, checked as strictly as
 * Parca's. */
static int parse_remote_write(ctx_t *c, collect_config_t *cfg, const yaml_node_t *rw) {
  static const char *const known[] = {
      "url", "basic_auth", "bearer_token", "bearer_token_file", "tenant_id", "queue_size", NULL};
  int rc = want(c, rw, YAML_MAPPING_NODE, "remote_write");
  if (rc || (rc = check_keys(c, rw, "remote_write", known, NULL)))
    return rc;
  collect_remote_write_t *w = calloc(1, sizeof *w);
  if (!w)
    return oom(c);
  cfg->remote_write = w;
  w->queue_size = COLLECT_DEFAULT_QUEUE_SIZE;
  yaml_node_t *n;
  const char *why;
  if (!(n = get(c, rw, "url")))
    return FAIL(c, rw, "remote_write has no url (Pyroscope's, as http://host:4040)");
  if ((rc = get_string(c, n, "url", &w->url)))
    return rc;
  if (!collect_remote_write_url_ok(w->url, &why))
    return FAIL(c, n, "remote_write url \"%s\" %s", w->url, why);
  if ((rc = parse_auth(c, rw, "remote_write", &w->username, &w->password, &w->bearer_token)))
    return rc;
  if ((n = get(c, rw, "tenant_id")) && (rc = get_string(c, n, "tenant_id", &w->tenant_id)))
    return rc;
  if ((n = get(c, rw, "queue_size"))) {
    if ((rc = want(c, n, YAML_SCALAR_NODE, "queue_size")))
      return rc;
    char *end;
    errno = 0;
    long v = strtol(scalar(n), &end, 10);
    if (!isdigit((unsigned char)*scalar(n)) || *end || errno || v < 1 || v > 1000000)
      return FAIL(c, n, "queue_size \"%s\" is not a number from 1 to 1000000", scalar(n));
    w->queue_size = v;
  }
  return 0;
}

static int parse_root(ctx_t *c, collect_config_t *cfg, const yaml_node_t *root) {
  static const char *const known[] = {"object_storage", "scrape_configs", "remote_write", NULL};
  int rc = want(c, root, YAML_MAPPING_NODE, "the config");
  if (rc || (rc = check_keys(c, root, "the config", known, NULL)))
    return rc;
  yaml_node_t *rw = get(c, root, "remote_write");
  if (rw && (rc = parse_remote_write(c, cfg, rw)))
    return rc;
  yaml_node_t *os = get(c, root, "object_storage"), *scs = get(c, root, "scrape_configs");
  if (!os)
    return FAIL(c, root, "object_storage is missing (Parca requires it)");
  if ((rc = parse_storage(c, cfg, os)))
    return rc;
  if (!scs)
    return 0;
  if ((rc = want(c, scs, YAML_SEQUENCE_NODE, "scrape_configs")))
    return rc;
  for (yaml_node_item_t *i = scs->data.sequence.items.start; i < scs->data.sequence.items.top;
       i++) {
    yaml_node_t *sc = node_at(c, *i);
    collect_job_t *j = push(&cfg->jobs, &cfg->njobs, sizeof *j);
    if (!j)
      return oom(c);
    if ((rc = parse_job(c, j, sc)))
      return rc;
    for (size_t k = 0; k + 1 < cfg->njobs; k++)
      if (!strcmp(cfg->jobs[k].name, j->name)) {
        yaml_node_t *name = get(c, sc, "job_name");
        return FAIL(c, name, "job_name %s is used twice (job names are unique)", j->name);
      }
  }
  return 0;
}

int collect_config_load(const char *file, collect_config_t **out, char *err, size_t errlen) {
  ctx_t c = {.file = file, .err = err, .errlen = errlen};
  yaml_parser_t parser;
  yaml_document_t doc;
  int rc, have_doc = 0;
  collect_config_t *cfg = NULL;
  *out = NULL;
  if (errlen)
    err[0] = 0;

  FILE *f = fopen(file, "rb");
  if (!f) {
    rc = -errno;
    snprintf(err, errlen, "%s: %s", file, strerror(-rc));
    return rc;
  }
  struct stat st;
  if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
    fclose(f);
    snprintf(err, errlen, "%s: %s", file, strerror(EISDIR));
    return -EISDIR;
  }
  if (!yaml_parser_initialize(&parser)) {
    fclose(f);
    return oom(&c);
  }
  yaml_parser_set_input_file(&parser, f);
  if (!yaml_parser_load(&parser, &doc)) {
    yaml_mark_t m = parser.problem_mark;
    if (parser.error == YAML_MEMORY_ERROR)
      rc = oom(&c);
    else if (parser.error == YAML_READER_ERROR) {
      /* Bad bytes (not UTF-8): libyaml knows only their offset, so count
       * the lines up to it. */
      yaml_mark_t at = {0};
      rewind(f);
      for (size_t i = 0; i < parser.problem_offset; i++) {
        int ch = getc(f);
        if (ch == EOF)
          break;
        at.line += ch == '\n';
        at.column = ch == '\n' ? 0 : at.column + 1;
      }
      rc = fail_mark(&c, at, "%s", parser.problem ? parser.problem : "unreadable bytes");
    } else if (parser.context)
      rc = fail_mark(&c, m, "%s (%s that began on line %zu)", parser.problem, parser.context,
                     parser.context_mark.line + 1);
    else
      rc = fail_mark(&c, m, "%s", parser.problem ? parser.problem : "not YAML");
    goto out;
  }
  have_doc = 1;
  c.doc = &doc;
  yaml_node_t *root = yaml_document_get_root_node(&doc);
  if (!root || is_null(root)) {
    snprintf(err, errlen,
             "%s:1:1: the file is empty (Parca's config has object_storage and "
             "scrape_configs)",
             file);
    rc = -EINVAL;
    goto out;
  }
  if (!(cfg = calloc(1, sizeof *cfg)) || !(cfg->file = strdup(file))) {
    rc = oom(&c);
    goto out;
  }
  if ((rc = parse_root(&c, cfg, root)))
    goto out;
  *out = cfg;
  cfg = NULL;
out:
  collect_config_free(cfg);
  if (have_doc)
    yaml_document_delete(&doc);
  yaml_parser_delete(&parser);
  fclose(f);
  return rc;
}

static void free_labels(collect_label_t *l, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(l[i].name);
    free(l[i].value);
  }
  free(l);
}

void collect_config_free(collect_config_t *c) {
  if (!c)
    return;
  for (size_t i = 0; i < c->njobs; i++) {
    collect_job_t *j = &c->jobs[i];
    free(j->name);
    free(j->scheme);
    free(j->path_prefix);
    free(j->username);
    free(j->password);
    free(j->bearer_token);
    free(j->ca_file);
    free(j->cert_file);
    free(j->key_file);
    free(j->server_name);
    free_labels(j->params, j->nparams);
    for (size_t t = 0; t < j->ntargets; t++) {
      free(j->targets[t].addr);
      free_labels(j->targets[t].labels, j->targets[t].nlabels);
    }
    free(j->targets);
    for (size_t p = 0; p < j->nprofiles; p++) {
      collect_profile_t *pr = &j->profiles[p];
      free(pr->name);
      free(pr->path);
      for (size_t k = 0; k < pr->nkeep; k++) {
        free(pr->keep[k].type);
        free(pr->keep[k].unit);
      }
      free(pr->keep);
    }
    free(j->profiles);
  }
  free(c->jobs);
  if (c->remote_write) {
    free(c->remote_write->url);
    free(c->remote_write->username);
    free(c->remote_write->password);
    free(c->remote_write->bearer_token);
    free(c->remote_write->tenant_id);
    free(c->remote_write);
  }
  free(c->directory);
  free(c->file);
  free(c);
}

size_t collect_job_enabled_profiles(const collect_job_t *j) {
  size_t n = 0;
  for (size_t i = 0; i < j->nprofiles; i++)
    n += j->profiles[i].enabled != 0;
  return n;
}

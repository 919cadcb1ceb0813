/* Reading cprof collect's config file as Parca's Go code does
 * (config_yaml.h): the nodes of libyaml's document, checked as yaml.v3's
 * KnownFields decoding checks them, each error naming the file, the line
 * and the column of the node at fault; the values (strings, booleans,
 * Prometheus durations) and the secrets an HTTP client config reads.
 *
 * password_file and bearer_token_file are relative to the config file's
 * directory (Prometheus' SetDirectory); they are read here, once, with
 * surrounding white space trimmed as Prometheus does. */
#include "collect/config_yaml.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cfg_fail_mark(cfg_ctx_t *c, yaml_mark_t m, const char *fmt, ...) {
  int n = snprintf(c->err, c->errlen, "%s:%zu:%zu: ", c->file, m.line + 1, m.column + 1);
  if (n >= 0 && (size_t)n < c->errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err + n, c->errlen - n, fmt, ap);
    va_end(ap);
  }
  return -EINVAL;
}

int cfg_oom(cfg_ctx_t *c) {
  snprintf(c->err, c->errlen, "%s: out of memory", c->file);
  return -ENOMEM;
}

yaml_node_t *cfg_node(cfg_ctx_t *c, int i) { return yaml_document_get_node(c->doc, i); }

int cfg_is_null(const yaml_node_t *n) {
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

const char *cfg_scalar(const yaml_node_t *n) { return (const char *)n->data.scalar.value; }

int cfg_want(cfg_ctx_t *c, const yaml_node_t *n, yaml_node_type_t type, const char *what) {
  if (n->type == type)
    return 0;
  return CFG_FAIL(c, n, "%s wants %s, not %s", what,
                  type == YAML_MAPPING_NODE    ? "a map"
                  : type == YAML_SEQUENCE_NODE ? "a list"
                                               : "a single value",
                  kind(n));
}

int cfg_unique_keys(cfg_ctx_t *c, const yaml_node_t *map, const char *what) {
  for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
    yaml_node_t *k = cfg_node(c, p->key);
    if (k->type != YAML_SCALAR_NODE)
      return CFG_FAIL(c, k, "a key in %s is %s; keys are names", what, kind(k));
    for (yaml_node_pair_t *q = map->data.mapping.pairs.start; q < p; q++) {
      yaml_node_t *prev = cfg_node(c, q->key);
      if (!strcmp(cfg_scalar(prev), cfg_scalar(k)))
        return CFG_FAIL(c, k, "%s is given twice in %s (first on line %zu)", cfg_scalar(k), what,
                        prev->start_mark.line + 1);
    }
  }
  return 0;
}

int cfg_check_keys(cfg_ctx_t *c, const yaml_node_t *map, const char *what, const char *const *known,
                   const char *const *unsupported) {
  int rc = cfg_unique_keys(c, map, what);
  if (rc)
    return rc;
  for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
    yaml_node_t *k = cfg_node(c, p->key);
    const char *key = cfg_scalar(k);
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
      return CFG_FAIL(c, k, "%s in %s is a Parca setting cprof collect does not support yet", key,
                      what);
    char list[256] = "";
    for (const char *const *s = known; *s; s++) {
      size_t used = strlen(list);
      snprintf(list + used, sizeof list - used, "%s%s", s == known ? "" : ", ", *s);
    }
    return CFG_FAIL(c, k, "unknown key %s in %s (known: %s)", key, what, list);
  }
  return 0;
}

int cfg_map(cfg_ctx_t *c, const yaml_node_t *n, const char *what, const char *const *known,
            const char *const *unsupported) {
  int rc = cfg_want(c, n, YAML_MAPPING_NODE, what);
  return rc ? rc : cfg_check_keys(c, n, what, known, unsupported);
}

yaml_node_t *cfg_get(cfg_ctx_t *c, const yaml_node_t *map, const char *key) {
  for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
    yaml_node_t *k = cfg_node(c, p->key);
    if (!strcmp(cfg_scalar(k), key)) {
      yaml_node_t *v = cfg_node(c, p->value);
      return cfg_is_null(v) ? NULL : v;
    }
  }
  return NULL;
}

int cfg_string(cfg_ctx_t *c, const yaml_node_t *n, const char *what, char **out) {
  int rc = cfg_want(c, n, YAML_SCALAR_NODE, what);
  if (rc)
    return rc;
  char *s = strdup(cfg_scalar(n));
  if (!s)
    return cfg_oom(c);
  free(*out);
  *out = s;
  return 0;
}

int cfg_bool(cfg_ctx_t *c, const yaml_node_t *n, const char *what, int *out) {
  static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"};
  static const char *const no[] = {"false", "False", "FALSE", "no", "No",
                                   "NO",    "off",   "Off",   "OFF"};
  int rc = cfg_want(c, n, YAML_SCALAR_NODE, what);
  if (rc)
    return rc;
  if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
      if (!strcmp(cfg_scalar(n), yes[i]))
        return *out = 1, 0;
      if (!strcmp(cfg_scalar(n), no[i]))
        return *out = 0, 0;
    }
  return CFG_FAIL(c, n, "%s wants true or false, not \"%s\"", what, cfg_scalar(n));
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

int cfg_duration(cfg_ctx_t *c, const yaml_node_t *n, const char *what, long *out) {
  int rc = cfg_want(c, n, YAML_SCALAR_NODE, what);
  if (rc)
    return rc;
  if (collect_parse_duration(cfg_scalar(n), out))
    return CFG_FAIL(c, n,
                    "%s: \"%s\" is not a duration (want a number and a unit: 500ms, 10s, 1m30s)",
                    what, cfg_scalar(n));
  return 0;
}

void *cfg_push(void *arr, size_t *n, size_t size) {
  char *a = realloc(*(void **)arr, (*n + 1) * size);
  if (!a)
    return NULL;
  *(void **)arr = a;
  memset(a + *n * size, 0, size);
  return a + (*n)++ * size;
}

/* Reads a secret from PATH (relative to the config file's directory), its
 * surrounding white space trimmed. */
static int read_secret(cfg_ctx_t *c, const yaml_node_t *n, const char *what, char **out) {
  const char *path = cfg_scalar(n);
  char *full = NULL;
  const char *slash = strrchr(c->file, '/');
  if (path[0] != '/' && slash) {
    if (asprintf(&full, "%.*s/%s", (int)(slash - c->file), c->file, path) < 0)
      return cfg_oom(c);
  } else if (!(full = strdup(path))) {
    return cfg_oom(c);
  }
  FILE *f = fopen(full, "r");
  if (!f) {
    int e = errno;
    free(full);
    return CFG_FAIL(c, n, "%s %s: %s", what, path, strerror(e));
  }
  free(full);
  char buf[4096];
  size_t len = fread(buf, 1, sizeof buf - 1, f);
  int bad = ferror(f) || !feof(f);
  fclose(f);
  if (bad)
    return CFG_FAIL(c, n, "%s %s: unreadable or longer than %zu bytes", what, path, sizeof buf - 1);
  buf[len] = 0;
  char *s = buf, *e = buf + len;
  while (s < e && isspace((unsigned char)*s))
    s++;
  while (e > s && isspace((unsigned char)e[-1]))
    *--e = 0;
  free(*out);
  if (!(*out = strdup(s)))
    return cfg_oom(c);
  return 0;
}

int cfg_auth(cfg_ctx_t *c, const yaml_node_t *map, const char *what, char **username,
             char **password, char **bearer_token) {
  yaml_node_t *n;
  int rc;
  if ((n = cfg_get(c, map, "basic_auth"))) {
    static const char *const ba_known[] = {"username", "password", "password_file", NULL};
    yaml_node_t *f, *pw, *pwf;
    if ((rc = cfg_map(c, n, "basic_auth", ba_known, (const char *const[]){"username_file", NULL})))
      return rc;
    if ((f = cfg_get(c, n, "username")) && (rc = cfg_string(c, f, "username", username)))
      return rc;
    if (!*username && !(*username = strdup("")))
      return cfg_oom(c);
    pw = cfg_get(c, n, "password");
    pwf = cfg_get(c, n, "password_file");
    if (pw && pwf)
      return CFG_FAIL(c, pwf, "basic_auth takes password or password_file, not both");
    if (pw && (rc = cfg_string(c, pw, "password", password)))
      return rc;
    if (pwf && ((rc = cfg_want(c, pwf, YAML_SCALAR_NODE, "password_file")) ||
                (rc = read_secret(c, pwf, "password_file", password))))
      return rc;
    if (!*password && !(*password = strdup("")))
      return cfg_oom(c);
  }
  yaml_node_t *bt = cfg_get(c, map, "bearer_token"), *btf = cfg_get(c, map, "bearer_token_file");
  if (bt && btf)
    return CFG_FAIL(c, btf, "%s takes bearer_token or bearer_token_file, not both", what);
  if ((bt || btf) && *username)
    return CFG_FAIL(c, bt ? bt : btf, "%s takes basic_auth or a bearer token, not both", what);
  if (bt && (rc = cfg_string(c, bt, "bearer_token", bearer_token)))
    return rc;
  if (btf && ((rc = cfg_want(c, btf, YAML_SCALAR_NODE, "bearer_token_file")) ||
              (rc = read_secret(c, btf, "bearer_token_file", bearer_token))))
    return rc;
  return 0;
}

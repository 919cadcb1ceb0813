/* One scrape_configs entry of cprof collect's config (config.h): its
 * timing, targets, parameters, authentication, TLS and profiles.
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
 *  - process_tree (cprof's own, not Parca's): merged (the default) or
 *    each, how a cprof process tree is scraped (config.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/config_yaml.h"

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

static int parse_labels(cfg_ctx_t *c, const yaml_node_t *map, collect_label_t **out, size_t *n) {
  int rc = cfg_want(c, map, YAML_MAPPING_NODE, "labels");
  if (rc)
    return rc;
  for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
    yaml_node_t *k = cfg_node(c, p->key), *v = cfg_node(c, p->value);
    if ((rc = cfg_want(c, k, YAML_SCALAR_NODE, "a label's name")))
      return rc;
    if (!label_name_ok(cfg_scalar(k)))
      return CFG_FAIL(c, k,
                      "label name \"%s\" is not valid (letters, digits and _, not first a digit)",
                      cfg_scalar(k));
    for (size_t i = 0; i < *n; i++)
      if (!strcmp((*out)[i].name, cfg_scalar(k)))
        return CFG_FAIL(c, k, "label %s is given twice", cfg_scalar(k));
    collect_label_t *l = cfg_push(out, n, sizeof *l);
    if (!l || !(l->name = strdup(cfg_scalar(k))))
      return cfg_oom(c);
    if (cfg_is_null(v)) {
      if (!(l->value = strdup("")))
        return cfg_oom(c);
    } else if ((rc = cfg_string(c, v, "a label's value", &l->value))) {
      return rc;
    }
  }
  return 0;
}

static int parse_static_config(cfg_ctx_t *c, collect_job_t *j, const yaml_node_t *sc) {
  static const char *const known[] = {"targets", "labels", NULL};
  int rc = cfg_map(c, sc, "a static_configs entry", known, NULL);
  if (rc)
    return rc;
  collect_label_t *labels = NULL;
  size_t nlabels = 0;
  yaml_node_t *targets = cfg_get(c, sc, "targets"), *lab = cfg_get(c, sc, "labels");
  if (lab && (rc = parse_labels(c, lab, &labels, &nlabels)))
    goto out;
  if (targets && (rc = cfg_want(c, targets, YAML_SEQUENCE_NODE, "targets")))
    goto out;
  for (yaml_node_item_t *i = targets ? targets->data.sequence.items.start : NULL;
       targets && i < targets->data.sequence.items.top; i++) {
    yaml_node_t *t = cfg_node(c, *i);
    const char *why;
    if ((rc = cfg_want(c, t, YAML_SCALAR_NODE, "a target")))
      goto out;
    if (!target_ok(cfg_scalar(t), &why)) {
      rc = CFG_FAIL(c, t, "target \"%s\" %s", cfg_scalar(t), why);
      goto out;
    }
    collect_target_t *tg = cfg_push(&j->targets, &j->ntargets, sizeof *tg);
    if (!tg || !(tg->addr = strdup(cfg_scalar(t))) ||
        (nlabels && !(tg->labels = calloc(nlabels, sizeof *tg->labels)))) {
      rc = cfg_oom(c);
      goto out;
    }
    for (size_t l = 0; l < nlabels; l++) {
      tg->labels[l].name = strdup(labels[l].name);
      tg->labels[l].value = strdup(labels[l].value);
      tg->nlabels++;
      if (!tg->labels[l].name || !tg->labels[l].value) {
        rc = cfg_oom(c);
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

static int parse_params(cfg_ctx_t *c, collect_job_t *j, const yaml_node_t *map) {
  int rc = cfg_want(c, map, YAML_MAPPING_NODE, "params");
  if (rc)
    return rc;
  for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
    yaml_node_t *k = cfg_node(c, p->key), *v = cfg_node(c, p->value);
    if ((rc = cfg_want(c, k, YAML_SCALAR_NODE, "a parameter's name")))
      return rc;
    if (cfg_is_null(v))
      continue;
    /* url.Values: each name has a list of values. */
    if ((rc = cfg_want(c, v, YAML_SEQUENCE_NODE, "a parameter (a list of values)")))
      return rc;
    for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top; i++) {
      collect_label_t *l = cfg_push(&j->params, &j->nparams, sizeof *l);
      if (!l || !(l->name = strdup(cfg_scalar(k))))
        return cfg_oom(c);
      if ((rc = cfg_string(c, cfg_node(c, *i), "a parameter's value", &l->value)))
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
static int parse_profile(cfg_ctx_t *c, collect_job_t *j, const yaml_node_t *k,
                         const yaml_node_t *v) {
  static const char *const known[] = {"enabled",          "path",    "delta",
                                      "keep_sample_type", "seconds", NULL};
  collect_profile_t *p = find_profile(j, cfg_scalar(k));
  int rc, custom = !p;
  if (custom) {
    if (!(p = cfg_push(&j->profiles, &j->nprofiles, sizeof *p)) ||
        !(p->name = strdup(cfg_scalar(k))))
      return cfg_oom(c);
  }
  p->enabled = 1; /* named in the file: on unless it says otherwise, as in Parca */
  if (cfg_is_null(v)) {
    if (custom)
      return CFG_FAIL(c, k, "profile %s is not one of Parca's defaults, so it needs a path",
                      p->name);
    return 0;
  }
  if ((rc = cfg_map(c, v, "a pprof_config entry", known, NULL)))
    return rc;
  yaml_node_t *n;
  if ((n = cfg_get(c, v, "enabled")) && (rc = cfg_bool(c, n, "enabled", &p->enabled)))
    return rc;
  if ((n = cfg_get(c, v, "delta")) && (rc = cfg_bool(c, n, "delta", &p->delta)))
    return rc;
  if ((n = cfg_get(c, v, "path"))) {
    if ((rc = cfg_string(c, n, "path", &p->path)))
      return rc;
    if (p->path[0] != '/')
      return CFG_FAIL(c, n, "path \"%s\" does not begin with /", p->path);
  }
  if (!p->path)
    return CFG_FAIL(c, k, "profile %s is not one of Parca's defaults, so it needs a path", p->name);
  if ((n = cfg_get(c, v, "seconds"))) {
    char *end;
    if ((rc = cfg_want(c, n, YAML_SCALAR_NODE, "seconds")))
      return rc;
    p->seconds = strtol(cfg_scalar(n), &end, 10);
    if (!isdigit((unsigned char)*cfg_scalar(n)) || *end || p->seconds < 1 || p->seconds > 86400)
      return CFG_FAIL(c, n, "seconds wants a whole number from 1 to 86400, not \"%s\"",
                      cfg_scalar(n));
    /* The job's timing is known by now (parse_job reads it first). */
    if (p->seconds * 1000 >= j->timeout_ms)
      return CFG_FAIL(c, n,
                      "profile %s lasts %lds, which does not end before scrape_timeout (%ldms)",
                      p->name, p->seconds, j->timeout_ms);
  }
  if ((n = cfg_get(c, v, "keep_sample_type"))) {
    static const char *const st_known[] = {"type", "unit", NULL};
    if ((rc = cfg_want(c, n, YAML_SEQUENCE_NODE, "keep_sample_type")))
      return rc;
    for (yaml_node_item_t *i = n->data.sequence.items.start; i < n->data.sequence.items.top; i++) {
      yaml_node_t *st = cfg_node(c, *i), *f;
      if ((rc = cfg_map(c, st, "a keep_sample_type entry", st_known, NULL)))
        return rc;
      collect_sample_type_t *t = cfg_push(&p->keep, &p->nkeep, sizeof *t);
      if (!t)
        return cfg_oom(c);
      if ((f = cfg_get(c, st, "type")) && (rc = cfg_string(c, f, "type", &t->type)))
        return rc;
      if ((f = cfg_get(c, st, "unit")) && (rc = cfg_string(c, f, "unit", &t->unit)))
        return rc;
      if ((!t->type && !(t->type = strdup(""))) || (!t->unit && !(t->unit = strdup(""))))
        return cfg_oom(c);
    }
  }
  return 0;
}

/* prefix + path with one slash between them, as Go's filepath.Join. */
static int join_prefix(cfg_ctx_t *c, const char *prefix, char **path) {
  size_t pl = strlen(prefix);
  while (pl && prefix[pl - 1] == '/')
    pl--;
  char *joined;
  if (asprintf(&joined, "%s%.*s%s", prefix[0] == '/' ? "" : "/", (int)pl, prefix, *path) < 0)
    return cfg_oom(c);
  free(*path);
  *path = joined;
  return 0;
}

static int parse_profiling_config(cfg_ctx_t *c, collect_job_t *j, const yaml_node_t *pc) {
  static const char *const known[] = {"pprof_config", "path_prefix", NULL};
  int rc = cfg_map(c, pc, "profiling_config", known, NULL);
  if (rc)
    return rc;
  yaml_node_t *n;
  if ((n = cfg_get(c, pc, "path_prefix")) &&
      (rc = cfg_string(c, n, "path_prefix", &j->path_prefix)))
    return rc;
  if (!(n = cfg_get(c, pc, "pprof_config")))
    return 0;
  if ((rc = cfg_want(c, n, YAML_MAPPING_NODE, "pprof_config")))
    return rc;
  /* Any name is a profile: a default's or the user's own. */
  if ((rc = cfg_unique_keys(c, n, "pprof_config")))
    return rc;
  for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++)
    if ((rc = parse_profile(c, j, cfg_node(c, p->key), cfg_node(c, p->value))))
      return rc;
  return 0;
}

/* tls_config: the files and name a TLS client needs. */
static int parse_tls(cfg_ctx_t *c, collect_job_t *j, const yaml_node_t *n) {
  int rc;
  static const char *const tls_known[] = {
      "ca_file", "cert_file", "key_file", "server_name", "insecure_skip_verify", NULL};
  yaml_node_t *f;
  if ((rc = cfg_map(c, n, "tls_config", tls_known,
                    (const char *const[]){"ca", "cert", "key", "min_version", NULL})))
    return rc;
  if (((f = cfg_get(c, n, "ca_file")) && (rc = cfg_string(c, f, "ca_file", &j->ca_file))) ||
      ((f = cfg_get(c, n, "cert_file")) && (rc = cfg_string(c, f, "cert_file", &j->cert_file))) ||
      ((f = cfg_get(c, n, "key_file")) && (rc = cfg_string(c, f, "key_file", &j->key_file))) ||
      ((f = cfg_get(c, n, "server_name")) &&
       (rc = cfg_string(c, f, "server_name", &j->server_name))) ||
      ((f = cfg_get(c, n, "insecure_skip_verify")) &&
       (rc = cfg_bool(c, f, "insecure_skip_verify", &j->insecure_skip_verify))))
    return rc;
  if (!j->cert_file != !j->key_file)
    return CFG_FAIL(c, n, "tls_config takes cert_file and key_file together");
  return 0;
}

/* Parca's default profiles, then the job's pprof_config over them, each
 * with the path prefix and the seconds of a delta profile. */
static int parse_profiles(cfg_ctx_t *c, collect_job_t *j, const yaml_node_t *sc) {
  yaml_node_t *n;
  int rc;
  /* The defaults first, in the table's order; then the job's own. */
  if (!(j->profiles = calloc(NDEFAULTS, sizeof *j->profiles)))
    return cfg_oom(c);
  for (size_t i = 0; i < NDEFAULTS; i++) {
    collect_profile_t *p = &j->profiles[j->nprofiles++];
    if (!(p->name = strdup(default_profiles[i].name)) ||
        !(p->path = strdup(default_profiles[i].path)))
      return cfg_oom(c);
    p->enabled = default_profiles[i].enabled;
    p->delta = default_profiles[i].delta;
  }
  if ((n = cfg_get(c, sc, "profiling_config")) && (rc = parse_profiling_config(c, j, n)))
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
  return 0;
}

int cfg_job(cfg_ctx_t *c, collect_job_t *j, const yaml_node_t *sc) {
  static const char *const known[] = {"job_name",
                                      "scrape_interval",
                                      "scrape_timeout",
                                      "scheme",
                                      "params",
                                      "static_configs",
                                      "profiling_config",
                                      "basic_auth",
                                      "bearer_token",
                                      "bearer_token_file",
                                      "tls_config",
                                      "process_tree",
                                      NULL};
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
  int rc = cfg_want(c, sc, YAML_MAPPING_NODE, "a scrape_configs entry");
  if (rc || (rc = cfg_check_keys(c, sc, "a scrape config", known, parca)))
    return rc;
  yaml_node_t *n, *interval_node = cfg_get(c, sc, "scrape_interval"),
                  *timeout_node = cfg_get(c, sc, "scrape_timeout");

  if ((n = cfg_get(c, sc, "job_name")) && (rc = cfg_string(c, n, "job_name", &j->name)))
    return rc;
  if (!j->name || !*j->name)
    return CFG_FAIL(c, n ? n : sc, "a scrape config without a job_name");

  j->interval_ms = DEFAULT_INTERVAL_MS;
  if (interval_node && (rc = cfg_duration(c, interval_node, "scrape_interval", &j->interval_ms)))
    return rc;
  if (j->interval_ms <= 0)
    return CFG_FAIL(c, interval_node, "scrape_interval must be more than 0");
  j->timeout_ms = j->interval_ms;
  if (timeout_node && (rc = cfg_duration(c, timeout_node, "scrape_timeout", &j->timeout_ms)))
    return rc;
  if (j->timeout_ms <= 0 || j->timeout_ms > j->interval_ms)
    return CFG_FAIL(
        c, timeout_node,
        "scrape_timeout (%ldms) must be more than 0 and fit in scrape_interval (%ldms), "
        "in job %s",
        j->timeout_ms, j->interval_ms, j->name);

  if (!(j->scheme = strdup("http")) || !(j->path_prefix = strdup("")))
    return cfg_oom(c);
  if ((n = cfg_get(c, sc, "scheme"))) {
    if ((rc = cfg_string(c, n, "scheme", &j->scheme)))
      return rc;
    if (strcmp(j->scheme, "http") && strcmp(j->scheme, "https"))
      return CFG_FAIL(c, n, "scheme \"%s\" is not http or https", j->scheme);
  }
  if ((n = cfg_get(c, sc, "params")) && (rc = parse_params(c, j, n)))
    return rc;

  if ((rc = cfg_auth(c, sc, "a scrape config", &j->username, &j->password, &j->bearer_token)))
    return rc;

  if ((n = cfg_get(c, sc, "tls_config")) && (rc = parse_tls(c, j, n)))
    return rc;

  if ((n = cfg_get(c, sc, "process_tree"))) {
    if ((rc = cfg_want(c, n, YAML_SCALAR_NODE, "process_tree")))
      return rc;
    if (!strcmp(cfg_scalar(n), "each"))
      j->process_tree_each = 1;
    else if (strcmp(cfg_scalar(n), "merged"))
      return CFG_FAIL(c, n, "process_tree \"%s\" is not merged or each", cfg_scalar(n));
  }

  if ((n = cfg_get(c, sc, "static_configs"))) {
    if ((rc = cfg_want(c, n, YAML_SEQUENCE_NODE, "static_configs")))
      return rc;
    for (yaml_node_item_t *i = n->data.sequence.items.start; i < n->data.sequence.items.top; i++)
      if ((rc = parse_static_config(c, j, cfg_node(c, *i))))
        return rc;
  }

  if ((rc = parse_profiles(c, j, sc)))
    return rc;
  collect_profile_t *cpu = find_profile(j, "process_cpu");
  if (cpu && cpu->enabled && j->timeout_ms < CPU_MIN_TIMEOUT_MS)
    return CFG_FAIL(c, timeout_node ? timeout_node : sc,
                    "scrape_timeout must be at least 2s while process_cpu is enabled, in job %s",
                    j->name);
  return 0;
}

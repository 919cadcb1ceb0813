/* How the parts of cprof collect's config reader (config.c, the file and
 * its sections; config_job.c, a scrape config) read libyaml's document:
 * the helpers of config_yaml.c, cfg_*, for them alone. Each returns 0, or
 * a negative errno with one line in the context's err ("FILE:LINE:COLUMN:
 * what is wrong"). */
#ifndef CPROF_COLLECT_CONFIG_YAML_H
#define CPROF_COLLECT_CONFIG_YAML_H

#include <stddef.h>
#include <yaml.h>

#include "collect/config.h"

typedef struct cfg_ctx {
  const char *file;
  yaml_document_t *doc;
  char *err;
  size_t errlen;
} cfg_ctx_t;

/* An error at mark m: -EINVAL. */
int cfg_fail_mark(cfg_ctx_t *c, yaml_mark_t m, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* An error at a node. */
#define CFG_FAIL(c, node, ...) cfg_fail_mark((c), (node)->start_mark, __VA_ARGS__)
/* Out of memory: -ENOMEM. */
int cfg_oom(cfg_ctx_t *c);

/* The document's node i. */
yaml_node_t *cfg_node(cfg_ctx_t *c, int i);
/* YAML's null: an empty plain scalar, ~ or null (`static_configs:` with
 * nothing after it). Go's decoder leaves the field as it was. */
int cfg_is_null(const yaml_node_t *n);
/* A scalar node's text. */
const char *cfg_scalar(const yaml_node_t *n);

/* n is of type, or the error says what wanted what. */
int cfg_want(cfg_ctx_t *c, const yaml_node_t *n, yaml_node_type_t type, const char *what);
/* Checks that a map's keys are plain values and none comes twice. */
int cfg_unique_keys(cfg_ctx_t *c, const yaml_node_t *map, const char *what);
/* Checks a map's keys: unique, and each in known. A key in unsupported (or
 * any *_sd_configs where unsupported is given) is Parca's but not ours yet,
 * and the error says so rather than calling it unknown. */
int cfg_check_keys(cfg_ctx_t *c, const yaml_node_t *map, const char *what, const char *const *known,
                   const char *const *unsupported);
/* n is a map whose keys cfg_check_keys takes. */
int cfg_map(cfg_ctx_t *c, const yaml_node_t *n, const char *what, const char *const *known,
            const char *const *unsupported);
/* The value of KEY in a (checked) map, or NULL when absent or null. */
yaml_node_t *cfg_get(cfg_ctx_t *c, const yaml_node_t *map, const char *key);

/* A string value: any single value (Go's decoder takes 8080 or true into a
 * string field too). *out is replaced. */
int cfg_string(cfg_ctx_t *c, const yaml_node_t *n, const char *what, char **out);
/* A boolean, as yaml.v3 decodes into a bool field: YAML 1.2's true and
 * false, and YAML 1.1's yes/no/on/off, in any of their three casings. */
int cfg_bool(cfg_ctx_t *c, const yaml_node_t *n, const char *what, int *out);
/* A Prometheus duration (collect_parse_duration), in milliseconds. */
int cfg_duration(cfg_ctx_t *c, const yaml_node_t *n, const char *what, long *out);

/* Appends one element of SIZE bytes to *arr (holding *n), zeroed; NULL
 * when out of memory. */
void *cfg_push(void *arr, size_t *n, size_t size);

/* basic_auth, bearer_token and bearer_token_file of MAP (a scrape config
 * or remote_write), as Prometheus' HTTP client config reads them: one way
 * of authenticating at most, secrets from files read now. */
int cfg_auth(cfg_ctx_t *c, const yaml_node_t *map, const char *what, char **username,
             char **password, char **bearer_token);

/* One scrape_configs entry into j (config_job.c). */
int cfg_job(cfg_ctx_t *c, collect_job_t *j, const yaml_node_t *sc);

#endif

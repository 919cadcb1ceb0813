/* Loading Parca's YAML config (config.h has the contract): the file, its
 * top-level sections (object_storage, remote_write, scrape_configs, whose
 * entries config_job.c reads) and freeing what was loaded.
 *
 * libyaml's document API parses the whole file into a node tree in which
 * every node keeps its position; the walk below then reads it the way
 * Parca's Go code does (pkg/config/config.go with yaml.v3's KnownFields):
 * a key nobody expects is an error, and so is a value of the wrong shape.
 * Every error names the file, the line and the column of the node at fault.
 * config_job.c keeps Parca's rules for a job, config_yaml.c the reading. */
#include "collect/config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "collect/config_yaml.h"

static int parse_storage(cfg_ctx_t *c, collect_config_t *cfg, const yaml_node_t *os) {
  static const char *const os_known[] = {"bucket", NULL};
  static const char *const b_known[] = {"type", "config", NULL};
  static const char *const fs_known[] = {"directory", NULL};
  yaml_node_t *b, *t, *conf, *dir;
  int rc = cfg_map(c, os, "object_storage", os_known, NULL);
  if (rc)
    return rc;
  if (!(b = cfg_get(c, os, "bucket")))
    return CFG_FAIL(c, os, "object_storage has no bucket");
  if ((rc = cfg_map(c, b, "bucket", b_known, (const char *const[]){"prefix", NULL})))
    return rc;
  if (!(t = cfg_get(c, b, "type")))
    return CFG_FAIL(c, b, "bucket has no type (cprof collect supports FILESYSTEM)");
  if ((rc = cfg_want(c, t, YAML_SCALAR_NODE, "type")))
    return rc;
  /* Thanos' objstore client compares the type in upper case. */
  if (strcasecmp(cfg_scalar(t), "FILESYSTEM"))
    return CFG_FAIL(c, t, "bucket type %s is not supported: cprof collect supports only FILESYSTEM",
                    cfg_scalar(t));
  if (!(conf = cfg_get(c, b, "config")))
    return CFG_FAIL(c, b, "a FILESYSTEM bucket needs config.directory");
  if ((rc = cfg_want(c, conf, YAML_MAPPING_NODE, "config")) ||
      (rc = cfg_check_keys(c, conf, "a FILESYSTEM bucket's config", fs_known, NULL)))
    return rc;
  if (!(dir = cfg_get(c, conf, "directory")))
    return CFG_FAIL(c, conf, "a FILESYSTEM bucket needs config.directory");
  if ((rc = cfg_string(c, dir, "directory", &cfg->directory)))
    return rc;
  if (!*cfg->directory)
    return CFG_FAIL(c, dir, "directory is empty");
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
static int parse_remote_write(cfg_ctx_t *c, collect_config_t *cfg, const yaml_node_t *rw) {
  static const char *const known[] = {
      "url", "basic_auth", "bearer_token", "bearer_token_file", "tenant_id", "queue_size", NULL};
  int rc = cfg_map(c, rw, "remote_write", known, NULL);
  if (rc)
    return rc;
  collect_remote_write_t *w = calloc(1, sizeof *w);
  if (!w)
    return cfg_oom(c);
  cfg->remote_write = w;
  w->queue_size = COLLECT_DEFAULT_QUEUE_SIZE;
  yaml_node_t *n;
  const char *why;
  if (!(n = cfg_get(c, rw, "url")))
    return CFG_FAIL(c, rw, "remote_write has no url (Pyroscope's, as http://host:4040)");
  if ((rc = cfg_string(c, n, "url", &w->url)))
    return rc;
  if (!collect_remote_write_url_ok(w->url, &why))
    return CFG_FAIL(c, n, "remote_write url \"%s\" %s", w->url, why);
  if ((rc = cfg_auth(c, rw, "remote_write", &w->username, &w->password, &w->bearer_token)))
    return rc;
  if ((n = cfg_get(c, rw, "tenant_id")) && (rc = cfg_string(c, n, "tenant_id", &w->tenant_id)))
    return rc;
  if ((n = cfg_get(c, rw, "queue_size"))) {
    if ((rc = cfg_want(c, n, YAML_SCALAR_NODE, "queue_size")))
      return rc;
    char *end;
    errno = 0;
    long v = strtol(cfg_scalar(n), &end, 10);
    if (!isdigit((unsigned char)*cfg_scalar(n)) || *end || errno || v < 1 || v > 1000000)
      return CFG_FAIL(c, n, "queue_size \"%s\" is not a number from 1 to 1000000", cfg_scalar(n));
    w->queue_size = v;
  }
  return 0;
}

static int parse_root(cfg_ctx_t *c, collect_config_t *cfg, const yaml_node_t *root) {
  static const char *const known[] = {"object_storage", "scrape_configs", "remote_write", NULL};
  int rc = cfg_map(c, root, "the config", known, NULL);
  if (rc)
    return rc;
  yaml_node_t *rw = cfg_get(c, root, "remote_write");
  if (rw && (rc = parse_remote_write(c, cfg, rw)))
    return rc;
  yaml_node_t *os = cfg_get(c, root, "object_storage"), *scs = cfg_get(c, root, "scrape_configs");
  if (!os)
    return CFG_FAIL(c, root, "object_storage is missing (Parca requires it)");
  if ((rc = parse_storage(c, cfg, os)))
    return rc;
  if (!scs)
    return 0;
  if ((rc = cfg_want(c, scs, YAML_SEQUENCE_NODE, "scrape_configs")))
    return rc;
  for (yaml_node_item_t *i = scs->data.sequence.items.start; i < scs->data.sequence.items.top;
       i++) {
    yaml_node_t *sc = cfg_node(c, *i);
    collect_job_t *j = cfg_push(&cfg->jobs, &cfg->njobs, sizeof *j);
    if (!j)
      return cfg_oom(c);
    if ((rc = cfg_job(c, j, sc)))
      return rc;
    for (size_t k = 0; k + 1 < cfg->njobs; k++)
      if (!strcmp(cfg->jobs[k].name, j->name)) {
        yaml_node_t *name = cfg_get(c, sc, "job_name");
        return CFG_FAIL(c, name, "job_name %s is used twice (job names are unique)", j->name);
      }
  }
  return 0;
}

int collect_config_load(const char *file, collect_config_t **out, char *err, size_t errlen) {
  cfg_ctx_t c = {.file = file, .err = err, .errlen = errlen};
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
    return cfg_oom(&c);
  }
  yaml_parser_set_input_file(&parser, f);
  if (!yaml_parser_load(&parser, &doc)) {
    yaml_mark_t m = parser.problem_mark;
    if (parser.error == YAML_MEMORY_ERROR)
      rc = cfg_oom(&c);
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
      rc = cfg_fail_mark(&c, at, "%s", parser.problem ? parser.problem : "unreadable bytes");
    } else if (parser.context)
      rc = cfg_fail_mark(&c, m, "%s (%s that began on line %zu)", parser.problem, parser.context,
                         parser.context_mark.line + 1);
    else
      rc = cfg_fail_mark(&c, m, "%s", parser.problem ? parser.problem : "not YAML");
    goto out;
  }
  have_doc = 1;
  c.doc = &doc;
  yaml_node_t *root = yaml_document_get_root_node(&doc);
  if (!root || cfg_is_null(root)) {
    snprintf(err, errlen,
             "%s:1:1: the file is empty (Parca's config has object_storage and "
             "scrape_configs)",
             file);
    rc = -EINVAL;
    goto out;
  }
  if (!(cfg = calloc(1, sizeof *cfg)) || !(cfg->file = strdup(file))) {
    rc = cfg_oom(&c);
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

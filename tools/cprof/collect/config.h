/* cprof collect's configuration: Parca's YAML config file (the one
 * `parca --config-path=parca.yaml` reads, pkg/config/config.go of Parca
 * v0.16 onwards), loaded whole and checked before anything is scraped.
 *
 * The contract: collect_config_load either returns 0 with a complete
 * config (every default filled in, every file it names read) or a negative
 * errno with one line in err, "FILE:LINE:COLUMN: what is wrong" (1-based,
 * where the YAML says it), or "FILE: strerror" when the file cannot be
 * read. Keys Parca does not know are errors, as Parca's strict decoding
 * makes them; Parca keys cprof does not implement yet (relabel_configs,
 * service discovery, oauth2...) are errors that say so. */
#ifndef CPROF_COLLECT_CONFIG_H
#define CPROF_COLLECT_CONFIG_H

#include <stddef.h>

/* One sample type to keep (pprof_config.NAME.keep_sample_type[]); an empty
 * string matches any. */
typedef struct collect_sample_type {
  char *type, *unit;
} collect_sample_type_t;

/* A profile to scrape from every target of a job: Parca's defaults
 * (memory, block, goroutine, mutex, threadcreate, process_cpu) merged with
 * the job's pprof_config, then the job's own names in file order. Disabled
 * ones stay in the list with enabled = 0. */
typedef struct collect_profile {
  char *name;
  char *path;   /* with profiling_config.path_prefix joined in front */
  int enabled;  /* 0 or 1 */
  int delta;    /* ask for ?seconds=N and get a profile over N seconds */
  long seconds; /* N for delta profiles: the interval less one second, at least 1 */
  collect_sample_type_t *keep;
  size_t nkeep;
} collect_profile_t;

typedef struct collect_label {
  char *name, *value;
} collect_label_t;

/* A target: "host:port", with the labels of its static_configs entry. */
typedef struct collect_target {
  char *addr;
  collect_label_t *labels;
  size_t nlabels;
} collect_target_t;

typedef struct collect_job {
  char *name;
  long interval_ms;          /* scrape_interval, default 10 s */
  long timeout_ms;           /* scrape_timeout, default the interval; never more */
  char *scheme;              /* "http" or "https" */
  char *path_prefix;         /* profiling_config.path_prefix, or "" */
  char *username, *password; /* basic_auth, or NULL; password_file read */
  char *bearer_token;        /* bearer_token or bearer_token_file's content, or NULL */
  char *ca_file, *cert_file, *key_file, *server_name; /* tls_config, or NULL */
  int insecure_skip_verify;
  collect_label_t *params; /* query parameters, a name once per value, in file order */
  size_t nparams;
  collect_target_t *targets;
  size_t ntargets;
  collect_profile_t *profiles;
  size_t nprofiles;
  /* process_tree: a cprof extension. 0 ("merged", the default): a target
   * is scraped as one, and a process tree's owner answers with the tree's
   * merged profile, each sample labelled pid=N. 1 ("each"): every scrape
   * first reads the target's /debug/pprof/processes and scrapes each
   * process with ?pid=N, one series per process (scrape.c). */
  int process_tree_each;
} collect_job_t;

/* remote_write: where every scraped profile is also pushed, Grafana
 * Pyroscope's ingest API (collect/push.h). Not Parca's: Parca's own
 * remote write speaks gRPC to a Parca server. A section of cprof's:
 *
 *   remote_write:
 *     url: "http://pyroscope:4040"   # required; /ingest is added
 *     basic_auth: { username: u, password: p }  # or password_file
 *     bearer_token: "..."            # or bearer_token_file; not with basic_auth
 *     tenant_id: "team-a"            # sent as X-Scope-OrgID (multi-tenant Pyroscope)
 *     queue_size: 256                # profiles held while Pyroscope is away */
typedef struct collect_remote_write {
  char *url;                 /* http:// or https://, no query */
  char *username, *password; /* or NULL */
  char *bearer_token;        /* or NULL */
  char *tenant_id;           /* or NULL */
  long queue_size;           /* 1 to 1000000, default 256 */
} collect_remote_write_t;

#define COLLECT_DEFAULT_QUEUE_SIZE 256

typedef struct collect_config {
  char *file;      /* the path it was loaded from */
  char *directory; /* object_storage.bucket.config.directory, as written (Parca
                      resolves it against the working directory) */
  collect_job_t *jobs;
  size_t njobs;
  collect_remote_write_t *remote_write; /* NULL without a remote_write section */
  /* Not of the file: --merge-limit, the most profiles one range merges
   * (0: COLLECT_DEFAULT_MERGE_LIMIT). */
  long merge_limit;
} collect_config_t;

/* A day of 3 targets at 3 s, or of 10 at 10 s: about 15 s of merging on
 * a 2-core VM (bench/README.md). */
#define COLLECT_DEFAULT_MERGE_LIMIT 300000

/* Loads and checks FILE. On success *out is the config (free it with
 * collect_config_free) and 0 is returned; on failure *out is NULL, err
 * holds one line and a negative errno is returned (-EINVAL for anything
 * wrong in the file, -ENOENT and the like when it cannot be read, -ENOMEM). */
int collect_config_load(const char *file, collect_config_t **out, char *err, size_t errlen);
void collect_config_free(collect_config_t *c);

/* Parses a Prometheus duration ("1m30s", "500ms", "0"; units y w d h m s
 * ms, each at most once and in that order) into milliseconds. 0 or -EINVAL. */
int collect_parse_duration(const char *s, long *ms);

/* Whether URL can be a remote_write url: http:// or https://, a host,
 * no query or fragment. 1 or 0 with *why set. */
int collect_remote_write_url_ok(const char *url, const char **why);

/* The number of enabled profiles of a job. */
size_t collect_job_enabled_profiles(const collect_job_t *j);

#endif

/* cprof__config_load: the configuration from cprof_options_t fields and
 * the CPROF_* environment variables, one step per group of settings. A
 * bad value is one stderr line, and its feature stays off or takes its
 * default; the values' parsers are config.c's. */
#include "core/config.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"

#define DEFAULT_ADDR "127.0.0.1:6060"

/* New option fields take reserved_ entries: the struct's size, which
 * programs compile in, never changes. */
_Static_assert(sizeof(cprof_options_t) == 51 * sizeof(void *),
               "cprof_options_t changed size: take new fields from reserved_");

/* The option field if set, else the environment variable, else NULL. */
static const char *pick(const char *field, const char *env) { return field ? field : getenv(env); }

/* CPROF_ADDR and CPROF_PREFIX: where the server listens, and under
 * which path. */
static int load_address(const cprof_options_t *opts, cprof__config_t *cfg) {
  char err[160];
  int bad = 0;
  const char *v = pick(opts->addr, "CPROF_ADDR");
  if (cprof__parse_addr(v ? v : DEFAULT_ADDR, &cfg->addr, err, sizeof err) != 0) {
    cprof__log("CPROF_ADDR=\"%s\": %s; the profiling server stays off", v, err);
    cfg->addr.enabled = 0;
    bad = 1;
  }
  if ((v = pick(opts->prefix, "CPROF_PREFIX")) &&
      cprof__parse_prefix(v, cfg->prefix, sizeof cfg->prefix, err, sizeof err) != 0) {
    cprof__log("CPROF_PREFIX=\"%s\": %s; serving without a prefix", v, err);
    cfg->prefix[0] = '\0';
    bad = 1;
  }
  return bad ? -EINVAL : 0;
}

/* CPROF_UNWIND: the samplers' walker. */
static int load_unwind(const cprof_options_t *opts, cprof__config_t *cfg) {
  char err[160];
  const char *v;
  if ((v = pick(opts->unwind, "CPROF_UNWIND")) &&
      cprof__parse_unwind(v, &cfg->unwind, err, sizeof err) != 0) {
    cprof__log("CPROF_UNWIND=\"%s\": %s; using dwarf", v, err);
    cfg->unwind = CPROF_UNWIND_DWARF;
    return -EINVAL;
  }
  return 0;
}

/* CPROF_TLS_CERT and CPROF_TLS_KEY go together: either alone would serve
 * plain HTTP to someone who asked for HTTPS, so the server stays off. */
static int load_tls(const cprof_options_t *opts, cprof__config_t *cfg) {
  char err[160];
  const char *cert = pick(opts->tls_cert, "CPROF_TLS_CERT"),
             *key = pick(opts->tls_key, "CPROF_TLS_KEY");
  if (cert && !*cert)
    cert = NULL;
  if (key && !*key)
    key = NULL;
  if (!cert && !key)
    return 0;
  if (!cert || !key) {
    cprof__log("%s is set but %s is not: HTTPS needs both PEM files; the profiling server "
               "stays off",
               cert ? "CPROF_TLS_CERT" : "CPROF_TLS_KEY",
               cert ? "CPROF_TLS_KEY" : "CPROF_TLS_CERT");
    return -EINVAL;
  }
  if (cprof__parse_tls_path(cert, cfg->tls_cert, sizeof cfg->tls_cert, err, sizeof err) != 0 ||
      cprof__parse_tls_path(key, cfg->tls_key, sizeof cfg->tls_key, err, sizeof err) != 0) {
    cprof__log("CPROF_TLS_CERT or CPROF_TLS_KEY: %s; the profiling server stays off", err);
    return -EINVAL;
  }
  return 0;
}

/* CPROF_AUTH, CPROF_TOKEN, CPROF_TLS_CERT and CPROF_TLS_KEY: who may ask,
 * and over what. A bad one turns the server off, so that a typo never
 * exposes the endpoints. */
static int load_access(const cprof_options_t *opts, cprof__config_t *cfg) {
  char err[160];
  int bad = 0;
  const char *v;
  if ((v = pick(opts->auth, "CPROF_AUTH")) &&
      cprof__parse_auth(v, cfg->auth, sizeof cfg->auth, err, sizeof err) != 0) {
    cprof__log("CPROF_AUTH is malformed: %s; the profiling server stays off", err);
    cfg->addr.enabled = 0;
    bad = 1;
  }
  if ((v = pick(opts->token, "CPROF_TOKEN")) &&
      cprof__parse_token(v, cfg->token, sizeof cfg->token, err, sizeof err) != 0) {
    cprof__log("CPROF_TOKEN is malformed: %s; the profiling server stays off", err);
    cfg->addr.enabled = 0;
    bad = 1;
  }
  if (load_tls(opts, cfg) != 0) {
    cfg->tls_cert[0] = cfg->tls_key[0] = '\0';
    cfg->addr.enabled = 0;
    bad = 1;
  }
  /* As Go, ":port" listens everywhere; unlike Go's pprof, the profiles
   * (argv, memory contents' addresses, code layout) are then open to
   * anyone who can reach the port, which an operator should hear of. */
  if (cprof__addr_is_exposed(&cfg->addr) && !cfg->auth[0] && !cfg->token[0])
    cprof__log("CPROF_ADDR=%s listens beyond this machine and no CPROF_AUTH or CPROF_TOKEN is "
               "set: the profiles are open to the network",
               (v = pick(opts->addr, "CPROF_ADDR")) ? v : DEFAULT_ADDR);
  return bad ? -EINVAL : 0;
}

/* CPROF_OUTPUT: the directory of the profiles written at exit. */
static int load_output(const cprof_options_t *opts, cprof__config_t *cfg) {
  char err[160];
  const char *v;
  if ((v = pick(opts->output, "CPROF_OUTPUT")) && *v &&
      cprof__parse_output(v, cfg->output, sizeof cfg->output, err, sizeof err) != 0) {
    cprof__log("CPROF_OUTPUT=\"%s\": %s; no profiles will be written at exit", v, err);
    cfg->output[0] = '\0';
    return -EINVAL;
  }
  return 0;
}

/* CPROF_CPU_HZ, CPROF_HEAP_RATE, CPROF_BLOCK_RATE, CPROF_MUTEX_FRACTION,
 * CPROF_MAX_MEMORY and CPROF_MAX_DEPTH: the samplers' rates and the room
 * their stacks take. */
static int load_sampling(const cprof_options_t *opts, cprof__config_t *cfg) {
  char err[160];
  int bad = 0;
  const char *v;
  cfg->cpu_hz = CPROF_DEFAULT_CPU_HZ;
  cfg->heap_rate = CPROF_DEFAULT_HEAP_RATE;
  cfg->max_memory = CPROF_DEFAULT_MAX_MEMORY;
  cfg->max_depth = CPROF_DEFAULT_DEPTH;
  if ((v = pick(opts->cpu_hz, "CPROF_CPU_HZ")) &&
      cprof__parse_cpu_hz(v, &cfg->cpu_hz, err, sizeof err) != 0) {
    cprof__log("CPROF_CPU_HZ=\"%s\": %s; using %d", v, err, CPROF_DEFAULT_CPU_HZ);
    cfg->cpu_hz = CPROF_DEFAULT_CPU_HZ;
    bad = 1;
  }
  if ((v = pick(opts->heap_rate, "CPROF_HEAP_RATE")) &&
      cprof__parse_heap_rate(v, &cfg->heap_rate, err, sizeof err) != 0) {
    cprof__log("CPROF_HEAP_RATE=\"%s\": %s; using %d", v, err, CPROF_DEFAULT_HEAP_RATE);
    cfg->heap_rate = CPROF_DEFAULT_HEAP_RATE;
    bad = 1;
  }
  if ((v = pick(opts->block_rate, "CPROF_BLOCK_RATE")) &&
      cprof__parse_setting(v, CPROF_MAX_BLOCK_RATE, "nanoseconds", &cfg->block_rate, err,
                           sizeof err) != 0) {
    cprof__log("CPROF_BLOCK_RATE=\"%s\": %s; the block profile stays off", v, err);
    cfg->block_rate = 0;
    bad = 1;
  }
  if ((v = pick(opts->mutex_fraction, "CPROF_MUTEX_FRACTION")) &&
      cprof__parse_setting(v, CPROF_MAX_MUTEX_FRACTION, "events (1 in N is recorded)",
                           &cfg->mutex_fraction, err, sizeof err) != 0) {
    cprof__log("CPROF_MUTEX_FRACTION=\"%s\": %s; the mutex profile stays off", v, err);
    cfg->mutex_fraction = 0;
    bad = 1;
  }
  if ((v = pick(opts->max_memory, "CPROF_MAX_MEMORY")) &&
      cprof__parse_memory(v, &cfg->max_memory, err, sizeof err) != 0) {
    cprof__log("CPROF_MAX_MEMORY=\"%s\": %s; using 32M", v, err);
    cfg->max_memory = CPROF_DEFAULT_MAX_MEMORY;
    bad = 1;
  }
  if ((v = pick(opts->max_depth, "CPROF_MAX_DEPTH")) &&
      cprof__parse_max_depth(v, &cfg->max_depth, err, sizeof err) != 0) {
    cprof__log("CPROF_MAX_DEPTH=\"%s\": %s; using %d", v, err, CPROF_DEFAULT_DEPTH);
    cfg->max_depth = CPROF_DEFAULT_DEPTH;
    bad = 1;
  }
  return bad ? -EINVAL : 0;
}

static const struct limit_setting {
  const char *env;
  size_t option; /* offset of its field in cprof_options_t */
  size_t field;  /* offset of a long in cprof__config_t */
  long min, max, dflt;
  const char *what;
} limit_settings[] = {
    {"CPROF_MAX_CONNECTIONS", offsetof(cprof_options_t, max_connections),
     offsetof(cprof__config_t, max_connections), 1, CPROF_LIMIT_MAX_CONNECTIONS,
     CPROF_DEFAULT_MAX_CONNECTIONS, "connections"},
    {"CPROF_MAX_CONNECTIONS_PER_IP", offsetof(cprof_options_t, max_connections_per_ip),
     offsetof(cprof__config_t, max_connections_per_ip), 1, CPROF_LIMIT_MAX_CONNECTIONS,
     CPROF_DEFAULT_MAX_CONNECTIONS_PER_IP, "connections"},
    {"CPROF_READ_TIMEOUT", offsetof(cprof_options_t, read_timeout),
     offsetof(cprof__config_t, read_timeout), 1, CPROF_LIMIT_TIMEOUT, CPROF_DEFAULT_READ_TIMEOUT,
     "seconds"},
    {"CPROF_IDLE_TIMEOUT", offsetof(cprof_options_t, idle_timeout),
     offsetof(cprof__config_t, idle_timeout), 1, CPROF_LIMIT_TIMEOUT, CPROF_DEFAULT_IDLE_TIMEOUT,
     "seconds"},
    {"CPROF_MAX_PROFILES", offsetof(cprof_options_t, max_profiles),
     offsetof(cprof__config_t, max_profiles), 1, CPROF_LIMIT_MAX_PROFILES,
     CPROF_DEFAULT_MAX_PROFILES, "requests"},
};

/* The server's limits (http/limits.c), each from its option, its variable
 * or its default. Returns -EINVAL when any value was bad. */
static int load_limits(const cprof_options_t *opts, cprof__config_t *cfg) {
  char err[160];
  int bad = 0;
  for (size_t i = 0; i < sizeof limit_settings / sizeof limit_settings[0]; i++) {
    const struct limit_setting *l = &limit_settings[i];
    long *field = (long *)((char *)cfg + l->field);
    const char *v = pick(*(const char *const *)((const char *)opts + l->option), l->env);
    *field = l->dflt;
    if (v && cprof__parse_limit(v, l->min, l->max, l->what, field, err, sizeof err) != 0) {
      cprof__log("%s=\"%s\": %s; using %ld", l->env, v, err, l->dflt);
      *field = l->dflt;
      bad = 1;
    }
  }
  return bad ? -EINVAL : 0;
}

/* CPROF_METRICS, CPROF_METRICS_INTERVAL, CPROF_METRICS_WINDOW. A bad value
 * leaves the sampler on with its defaults: it only reads. */
static int load_metrics(const cprof_options_t *opts, cprof__config_t *cfg) {
  char err[160];
  int bad = 0;
  const char *v;
  long ms;
  cfg->metrics = 1;
  cfg->metrics_interval_ms = CPROF_DEFAULT_METRICS_INTERVAL_MS;
  cfg->metrics_window_s = CPROF_DEFAULT_METRICS_WINDOW_S;
  if ((v = pick(opts->metrics, "CPROF_METRICS"))) {
    if (strcmp(v, "0") == 0) {
      cfg->metrics = 0;
    } else if (strcmp(v, "1") != 0) {
      cprof__log("CPROF_METRICS=\"%s\": expected 0 (off) or 1 (on); the metrics sampler is on", v);
      bad = 1;
    }
  }
  if ((v = pick(opts->metrics_interval, "CPROF_METRICS_INTERVAL"))) {
    if (cprof__parse_duration_ms(v, CPROF_MIN_METRICS_INTERVAL_MS, CPROF_MAX_METRICS_INTERVAL_MS,
                                 &ms, err, sizeof err) != 0) {
      cprof__log("CPROF_METRICS_INTERVAL=\"%s\": %s; using 1s", v, err);
      bad = 1;
    } else {
      cfg->metrics_interval_ms = ms;
    }
  }
  if ((v = pick(opts->metrics_window, "CPROF_METRICS_WINDOW"))) {
    ms = 0;
    if (cprof__parse_duration_ms(v, CPROF_MIN_METRICS_WINDOW_S * 1000L,
                                 CPROF_MAX_METRICS_WINDOW_S * 1000L, &ms, err, sizeof err) != 0 ||
        ms % 1000 != 0) {
      cprof__log("CPROF_METRICS_WINDOW=\"%s\": %s; using 600s", v,
                 ms % 1000 ? "expected whole seconds" : err);
      bad = 1;
    } else {
      cfg->metrics_window_s = ms / 1000;
    }
  }
  if (cfg->metrics_window_s * 1000 / cfg->metrics_interval_ms > CPROF_MAX_METRICS_POINTS) {
    cprof__log("CPROF_METRICS_WINDOW=%lds at CPROF_METRICS_INTERVAL=%ldms is more than %d points; "
               "using %lds",
               cfg->metrics_window_s, cfg->metrics_interval_ms, CPROF_MAX_METRICS_POINTS,
               CPROF_MAX_METRICS_POINTS * cfg->metrics_interval_ms / 1000);
    cfg->metrics_window_s = CPROF_MAX_METRICS_POINTS * cfg->metrics_interval_ms / 1000;
    bad = 1;
  }
  return bad ? -EINVAL : 0;
}

/* CPROF_PUSH_URL, CPROF_PUSH_NAME, CPROF_PUSH_INTERVAL. A bad value turns
 * the push off: a typo must not send the profiles elsewhere or under
 * another name. */
static int load_push(const cprof_options_t *opts, cprof__config_t *cfg) {
  char err[200];
  const char *v;
  cfg->push_interval_ms = CPROF_DEFAULT_PUSH_INTERVAL_MS;
  if (!(v = pick(opts->push_url, "CPROF_PUSH_URL")) || !*v)
    return 0;
  if (cprof__parse_push_url(v, cfg->push_url, sizeof cfg->push_url, err, sizeof err) != 0) {
    cprof__log("CPROF_PUSH_URL: %s; nothing will be pushed", err); /* it may hold a password */
    cfg->push_url[0] = '\0';
    return -EINVAL;
  }
  if ((v = pick(opts->push_name, "CPROF_PUSH_NAME")) && *v &&
      cprof__parse_push_name(v, cfg->push_name, sizeof cfg->push_name, err, sizeof err) != 0) {
    cprof__log("CPROF_PUSH_NAME=\"%s\": %s; nothing will be pushed", v, err);
    cfg->push_url[0] = '\0';
    return -EINVAL;
  }
  if ((v = pick(opts->push_interval, "CPROF_PUSH_INTERVAL")) &&
      cprof__parse_duration_ms(v, CPROF_MIN_PUSH_INTERVAL_MS, CPROF_MAX_PUSH_INTERVAL_MS,
                               &cfg->push_interval_ms, err, sizeof err) != 0) {
    cprof__log("CPROF_PUSH_INTERVAL=\"%s\": %s; nothing will be pushed", v, err);
    cfg->push_url[0] = '\0';
    return -EINVAL;
  }
  return 0;
}

/* CPROF_WALL_BUDGET: the wall profile's share of one core. */
static int load_wall_budget(const cprof_options_t *opts, cprof__config_t *cfg) {
  char err[160];
  const char *v;
  cfg->wall_budget = CPROF_DEFAULT_WALL_BUDGET;
  if ((v = pick(opts->wall_budget, "CPROF_WALL_BUDGET")) &&
      cprof__parse_budget(v, &cfg->wall_budget, err, sizeof err) != 0) {
    cprof__log("CPROF_WALL_BUDGET=\"%s\": %s; using 2%%", v, err);
    cfg->wall_budget = CPROF_DEFAULT_WALL_BUDGET;
    return -EINVAL;
  }
  return 0;
}

int cprof__config_load(const cprof_options_t *opts, cprof__config_t *cfg) {
  static const cprof_options_t none;
  /* In this order, the order of their lines on stderr; every step runs,
   * whatever the ones before it found. */
  static int (*const steps[])(const cprof_options_t *, cprof__config_t *) = {
      load_address, load_unwind,  load_access, load_output,      load_sampling,
      load_limits,  load_metrics, load_push,   load_wall_budget,
  };
  int bad = 0;
  if (!opts)
    opts = &none;
  memset(cfg, 0, sizeof *cfg);
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
    if (steps[i](opts, cfg) != 0)
      bad = 1;
  return bad ? -EINVAL : 0;
}

/* cprof collect: the Parca-compatible collector's command: reads and
 * checks a Parca config, then scrapes and stores (collect/run.c) until
 * SIGTERM, serving its web pages (collect/web.h) meanwhile and pushing to
 * Pyroscope when asked (collect/push.h); with --check only the first. */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/config.h"
#include "collect/run.h"
#include "commands.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: cprof collect --config FILE [--listen HOST:PORT] [--remote-write URL]\n"
          "                    [--retention DURATION] [--retention-size SIZE] [--merge-limit N]\n"
          "       cprof collect --check FILE\n"
          "\n"
          "Continuous profiling: scrapes the profiles of programs under cprof (or Go\n"
          "programs) as Parca does, from Parca's own YAML config (object_storage and\n"
          "scrape_configs).\n"
          "\n"
          "  --config FILE  the config file (parca.yaml)\n"
          "  --listen HOST:PORT\n"
          "                 where the web pages are served (default 127.0.0.1:7070,\n"
          "                 Parca's port; port 0: any free port): / the profiles,\n"
          "                 /targets the scrapes' health, /metrics the collector's own\n"
          "  --retention DURATION    delete profiles older than this (default 15d; 0: keep\n"
          "                 them), as Prometheus's --storage.tsdb.retention.time\n"
          "  --retention-size SIZE   delete the oldest past this much (512MB, 10GB; default\n"
          "                 0: no limit), as --storage.tsdb.retention.size\n"
          "  --merge-limit N  the most profiles one range of the query page merges\n"
          "                 (default %d); a longer range is a 400 asking for less\n"
          "  --check        only read and check the config: a summary on success, one\n"
          "                 line FILE:LINE:COLUMN: what is wrong otherwise\n"
          "  --remote-write URL  also push every profile to Grafana Pyroscope at URL\n"
          "                 (http://host:4040); replaces remote_write.url of the config\n"
          "  -h, --help     this text\n",
          COLLECT_DEFAULT_MERGE_LIMIT);
}

/* One line: jobs, targets, profiles a job (enabled ones), the storage. */
static void summary(const collect_config_t *c) {
  size_t targets = 0, profiles = 0, lo = (size_t)-1, hi = 0;
  for (size_t i = 0; i < c->njobs; i++) {
    size_t n = collect_job_enabled_profiles(&c->jobs[i]);
    targets += c->jobs[i].ntargets;
    profiles += n;
    lo = n < lo ? n : lo;
    hi = n > hi ? n : hi;
  }
  printf("%s: %zu job%s, %zu target%s, ", c->file, c->njobs, c->njobs == 1 ? "" : "s", targets,
         targets == 1 ? "" : "s");
  if (c->njobs && lo == hi)
    printf("%zu profile%s each", lo, lo == 1 ? "" : "s");
  else
    printf("%zu profile%s in all", profiles, profiles == 1 ? "" : "s");
  printf("; storage %s", c->directory);
  if (c->remote_write)
    printf("; remote write %s", c->remote_write->url);
  printf("\n");
}

/* --remote-write URL: the config's remote_write with its url replaced, or
 * one with the defaults. 0, or 1 with a line on stderr. */
static int set_remote_write(collect_config_t *cfg, const char *url) {
  const char *why;
  if (!collect_remote_write_url_ok(url, &why)) {
    fprintf(stderr, "cprof collect: --remote-write \"%s\" %s\n", url, why);
    return 1;
  }
  if (!cfg->remote_write && (cfg->remote_write = calloc(1, sizeof *cfg->remote_write)))
    cfg->remote_write->queue_size = COLLECT_DEFAULT_QUEUE_SIZE;
  char *u = strdup(url);
  if (!cfg->remote_write || !u) {
    free(u);
    fprintf(stderr, "cprof collect: out of memory\n");
    return 1;
  }
  free(cfg->remote_write->url);
  cfg->remote_write->url = u;
  return 0;
}

/* "512MB", "10GB", "1.5TB", "4096" (bytes), base 1024 as Prometheus's
 * units; 0 or -1. */
static int parse_size(const char *s, int64_t *out) {
  char *end;
  double v = strtod(s, &end);
  static const struct {
    const char *unit;
    double factor;
  } units[] = {{"", 1},
               {"B", 1},
               {"KB", 1024.0},
               {"KiB", 1024.0},
               {"MB", 1048576.0},
               {"MiB", 1048576.0},
               {"GB", 1073741824.0},
               {"GiB", 1073741824.0},
               {"TB", 1099511627776.0},
               {"TiB", 1099511627776.0}};
  if (end == s || v < 0)
    return -1;
  for (size_t i = 0; i < sizeof units / sizeof *units; i++)
    if (strcmp(end, units[i].unit) == 0 && v * units[i].factor < 9e18) {
      *out = (int64_t)(v * units[i].factor);
      return 0;
    }
  return -1;
}

/* What cprof collect was asked. */
typedef struct args {
  const char *file, *remote, *listen;
  int check;
  long merge_limit;
  long age_ms;
  collect_retention_t keep;
} args_t;

/* Reads the options and FILE into a: -1 to go on, or the exit status (0
 * after --help, 2 after a usage error on stderr). */
static int read_args(int argc, char **argv, args_t *a) {
  static const struct option longs[] = {{"config", required_argument, NULL, 'c'},
                                        {"config-path", required_argument, NULL, 'c'},
                                        {"check", no_argument, NULL, 'k'},
                                        {"retention", required_argument, NULL, 'r'},
                                        {"retention-size", required_argument, NULL, 's'},
                                        {"remote-write", required_argument, NULL, 'w'},
                                        {"merge-limit", required_argument, NULL, 'm'},
                                        {"listen", required_argument, NULL, 'l'},
                                        {"http-address", required_argument, NULL, 'l'},
                                        {"help", no_argument, NULL, 'h'},
                                        {NULL, 0, NULL, 0}};
  int c;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":h", longs, NULL)) != -1) {
    switch (c) {
    case 'c':
      a->file = optarg;
      break;
    case 'k':
      a->check = 1;
      break;
    case 'r':
      if (collect_parse_duration(optarg, &a->age_ms) != 0) {
        fprintf(stderr, "cprof collect: --retention wants a duration (15d, 12h, 0), not %s\n",
                optarg);
        return 2;
      }
      break;
    case 's':
      if (parse_size(optarg, &a->keep.max_bytes) != 0) {
        fprintf(stderr, "cprof collect: --retention-size wants a size (512MB, 10GB, 0), not %s\n",
                optarg);
        return 2;
      }
      break;
    case 'w':
      a->remote = optarg;
      break;
    case 'm': {
      char *end;
      errno = 0;
      a->merge_limit = strtol(optarg, &end, 10);
      if (end == optarg || *end || errno || a->merge_limit < 1) {
        fprintf(stderr,
                "cprof collect: --merge-limit wants a number of profiles (1 or more), not %s\n",
                optarg);
        return 2;
      }
      break;
    }
    case 'l':
      a->listen = optarg;
      break;
    case 'h':
      usage(stdout);
      return 0;
    case ':':
      fprintf(stderr, "cprof collect: %s wants a value (cprof collect --help)\n", argv[optind - 1]);
      return 2;
    default:
      fprintf(stderr, "cprof collect: unknown option %s (cprof collect --help)\n",
              argv[optind - 1]);
      return 2;
    }
  }
  /* --check FILE: the file may follow as an operand. */
  if (!a->file && optind == argc - 1)
    a->file = argv[optind++];
  if (!a->file || optind != argc) {
    fprintf(stderr, "cprof collect: %s (cprof collect --help)\n",
            !a->file ? "no config FILE given" : "one config FILE at a time");
    return 2;
  }
  return -1;
}

int cmd_collect(int argc, char **argv) {
  args_t a = {.listen = "127.0.0.1:7070", .age_ms = 15L * 24 * 3600 * 1000};
  int rc = read_args(argc, argv, &a);
  if (rc >= 0)
    return rc;
  collect_config_t *cfg;
  char err[1024];
  if (collect_config_load(a.file, &cfg, err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  if (a.remote && set_remote_write(cfg, a.remote) != 0) {
    collect_config_free(cfg);
    return 2;
  }
  cfg->merge_limit = a.merge_limit;
  if (a.check) {
    summary(cfg);
    collect_config_free(cfg);
    return 0;
  }
  a.keep.max_age_ns = (int64_t)a.age_ms * 1000000;
  rc = collect_run(cfg, &a.keep, a.listen);
  collect_config_free(cfg);
  return rc;
}

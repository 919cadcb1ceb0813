/* cprof collect: the Parca-compatible collector's command: reads and
 * checks a Parca config, then scrapes and stores (collect/run.c) until
 * SIGTERM, serving its web pages (collect/web.h) meanwhile; with --check
 * only the first. Remote write comes with a later part of issue 17. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "collect/config.h"
#include "collect/run.h"
#include "commands.h"

static void usage(FILE *out) {
  fprintf(out, "usage: cprof collect --config FILE [--listen HOST:PORT]\n"
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
               "  --check        only read and check the config: a summary on success, one\n"
               "                 line FILE:LINE:COLUMN: what is wrong otherwise\n"
               "  -h, --help     this text\n");
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
  printf("; storage %s\n", c->directory);
}

int cmd_collect(int argc, char **argv) {
  static const struct option longs[] = {{"config", required_argument, NULL, 'c'},
                                        {"config-path", required_argument, NULL, 'c'},
                                        {"check", no_argument, NULL, 'k'},
                                        {"listen", required_argument, NULL, 'l'},
                                        {"http-address", required_argument, NULL, 'l'},
                                        {"help", no_argument, NULL, 'h'},
                                        {NULL, 0, NULL, 0}};
  const char *file = NULL, *listen = "127.0.0.1:7070";
  int check = 0, c;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":h", longs, NULL)) != -1) {
    switch (c) {
    case 'c':
      file = optarg;
      break;
    case 'k':
      check = 1;
      break;
    case 'l':
      listen = optarg;
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
  if (!file && optind == argc - 1)
    file = argv[optind++];
  if (!file || optind != argc) {
    fprintf(stderr, "cprof collect: %s (cprof collect --help)\n",
            !file ? "no config FILE given" : "one config FILE at a time");
    return 2;
  }

  collect_config_t *cfg;
  char err[1024];
  if (collect_config_load(file, &cfg, err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  if (check) {
    summary(cfg);
    collect_config_free(cfg);
    return 0;
  }
  int rc = collect_run(cfg, listen);
  collect_config_free(cfg);
  return rc;
}

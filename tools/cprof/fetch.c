/* cprof fetch SOURCE -o FILE: saves a profile's bytes as they came, as
 * go tool pprof saves what it fetched ("Saved profile in FILE"), so that it
 * can be read later, elsewhere, by cprof or by pprof. The file appears
 * whole or not at all: the bytes go to a temporary file beside it, which
 * is renamed over FILE once written and synced. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "save.h"
#include "source.h"

static void usage(FILE *out) {
  fprintf(out, "usage: cprof fetch [--seconds N] SOURCE -o FILE\n"
               "\n"
               "Saves the profile at SOURCE (a URL, a file or - for standard input) in FILE,\n"
               "byte for byte; -o - writes it to standard output.\n"
               "\n"
               "  -o, --output FILE  where to save it (required)\n"
               "  --seconds N        ask the URL for a profile over N seconds (sets ?seconds=N,\n"
               "                     as pprof's -seconds)\n"
               "  -h, --help         this text\n"
               "\n"
               "A URL without a path means /debug/pprof/profile, the CPU profile; host:port\n"
               "alone is a URL. user:password@ in the URL is sent as HTTP Basic auth.\n");
}

int cmd_fetch(int argc, char **argv) {
  static const struct option longs[] = {{"output", required_argument, NULL, 'o'},
                                        {"seconds", required_argument, NULL, 's'},
                                        {"help", no_argument, NULL, 'h'},
                                        {NULL, 0, NULL, 0}};
  source_options_t opts = {0};
  const char *output = NULL;
  char err[512];
  int c;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":o:h", longs, NULL)) != -1) {
    switch (c) {
    case 'o':
      output = optarg;
      break;
    case 's': {
      char *end;
      long v = strtol(optarg, &end, 10);
      if (end == optarg || *end || v < 1 || v > 86400) {
        fprintf(stderr, "cprof fetch: --seconds wants a whole number of seconds from 1 to 86400\n");
        return 2;
      }
      opts.seconds = (int)v;
      break;
    }
    case 'h':
      usage(stdout);
      return 0;
    case ':':
      fprintf(stderr, "cprof fetch: %s wants a value (cprof fetch --help)\n", argv[optind - 1]);
      return 2;
    default:
      fprintf(stderr, "cprof fetch: unknown option %s (cprof fetch --help)\n", argv[optind - 1]);
      return 2;
    }
  }
  if (optind != argc - 1 || !output) {
    fprintf(stderr, "cprof fetch: %s (cprof fetch --help)\n",
            optind >= argc      ? "no SOURCE given"
            : optind < argc - 1 ? "one SOURCE at a time"
                                : "no -o FILE given");
    return 2;
  }

  source_t s;
  if (source_read_opts(argv[optind], &opts, &s, err, sizeof err) != 0) {
    fprintf(stderr, "cprof fetch: %s\n", err);
    return 1;
  }
  int rc = strcmp(output, "-") == 0 ? save_write_all(STDOUT_FILENO, s.data, s.len)
                                    : save_file(output, s.data, s.len);
  source_free(&s);
  if (rc) {
    fprintf(stderr, "cprof fetch: %s: %s\n", output, strerror(-rc));
    return 1;
  }
  if (strcmp(output, "-") != 0)
    fprintf(stderr, "Saved profile in %s\n", output);
  return 0;
}

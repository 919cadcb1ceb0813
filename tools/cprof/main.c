/* cprof: read, rank, diff and draw pprof profiles without a Go toolchain,
 * fetch them from running programs, and run programs under the profiler.
 * Each subcommand is a file of its own; this one only dispatches. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "graph.h"

static const command_t commands[] = {
    {"graph", graph_main, "draw the call graph (SVG, PNG or DOT), as pprof -svg"},
    {NULL, NULL, NULL},
};

static void usage(FILE *out) {
  fprintf(out, "usage: cprof COMMAND [OPTIONS] [SOURCE...]\n"
               "       cprof SOURCE        an interactive prompt on the profile\n"
               "\n"
               "SOURCE is a profile.proto file (gzip or not), - for standard input, or a URL\n"
               "(http://host:port/debug/pprof/profile?seconds=10; user:password@ for Basic auth).\n"
               "\n"
               "Commands:\n");
  for (const command_t *c = commands; c->name; c++)
    fprintf(out, "  %-8s %s\n", c->name, c->summary);
  fprintf(out, "\n`cprof COMMAND --help` tells more of each.\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
      strcmp(argv[1], "help") == 0) {
    usage(stdout);
    return 0;
  }
  for (const command_t *c = commands; c->name; c++)
    if (strcmp(argv[1], c->name) == 0)
      return c->run(argc - 1, argv + 1);
  fprintf(stderr, "cprof: unknown command %s (cprof --help lists them)\n", argv[1]);
  return 2;
}

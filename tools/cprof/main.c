/* cprof: read, rank, diff and draw pprof profiles without a Go toolchain,
 * fetch them from running programs, and run programs under the profiler.
 * Each subcommand is a file of its own; this one only dispatches. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "source.h"

static const command_t commands[] = {
    {"top", cmd_top, "the functions with the most value, as go tool pprof -top"},
    {"traces", cmd_traces, "every sample with its labels and stack"},
    {"list", cmd_list, "source lines of functions matching REGEX, with their values"},
    {"peek", cmd_peek, "callers and callees of functions matching REGEX"},
    {"folded", cmd_folded, "collapsed stacks (a;b;c 123) for FlameGraph, inferno, speedscope"},
    {"graph", cmd_graph, "the call graph (SVG, PNG or DOT), as go tool pprof -svg"},
    {"diff", cmd_diff, "NEW minus BASE: what grew and what shrank (--flame: a page)"},
    {"flame", cmd_flame, "the viewer page (flame graph, icicle, top table) in one file"},
    {"web", cmd_web, "serve the viewer page over HTTP, as go tool pprof -http"},
    {"fetch", cmd_fetch, "save a profile from a URL (or a file, or -) in a file"},
    {"collect", cmd_collect, "continuous profiling from a Parca config (--check: check it)"},
    {"run", cmd_run, "run a program with the profiler preloaded"},
    {"prompt", cmd_prompt, "the interactive prompt (as cprof SOURCE), as go tool pprof SOURCE"},
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
  fprintf(out, "\n`cprof COMMAND --help` tells more of each; `cprof --version` its version.\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
    printf("cprof %s\n", CPROF_VERSION);
    return 0;
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
      strcmp(argv[1], "help") == 0) {
    usage(stdout);
    return 0;
  }
  for (const command_t *c = commands; c->name; c++)
    if (strcmp(argv[1], c->name) == 0)
      return c->run(argc - 1, argv + 1);
  /* cprof SOURCE: the prompt, as go tool pprof SOURCE. */
  struct stat st;
  if (strcmp(argv[1], "-") == 0 || source_is_url(argv[1]) || strncmp(argv[1], "file://", 7) == 0 ||
      stat(argv[1], &st) == 0)
    return cmd_prompt(argc, argv);
  fprintf(stderr, "cprof: unknown command %s (cprof --help lists them)\n", argv[1]);
  return 2;
}

/* The cprof command's subcommands, one file each (tools/cprof/NAME.c),
 * listed in main.c. Each takes its own argv (argv[0] is its name) and
 * returns the process's exit status: 0, 1 for an error (after one line on
 * stderr, "cprof NAME: what went wrong"), 2 for a usage error. */
#ifndef CPROF_TOOLS_COMMANDS_H
#define CPROF_TOOLS_COMMANDS_H

typedef struct command {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *summary; /* one line for `cprof --help` */
} command_t;

int cmd_top(int argc, char **argv);
int cmd_folded(int argc, char **argv);
int cmd_peek(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_traces(int argc, char **argv);
int cmd_graph(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_flame(int argc, char **argv);
int cmd_web(int argc, char **argv);
int cmd_fetch(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_prompt(int argc, char **argv);
/* In tools/cprof/collect/command.c (the cprof_collect library). */
int cmd_collect(int argc, char **argv);

#endif

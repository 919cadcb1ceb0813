/* cprof SOURCE (or cprof prompt SOURCE...): an interactive prompt on a
 * profile, as `go tool pprof SOURCE` gives one. Commands run the reports
 * of the other subcommands (top, peek, list, traces, folded, flame, web),
 * and settings (sample_index=, focus=, unit=, nodecount=, cum, lines...)
 * stay for the commands after, as in pprof's interactive mode:
 *
 *   (cprof) sample_index=alloc_space
 *   (cprof) top 5 -cum
 *   (cprof) peek cache_insert
 *
 * On a terminal, lines are edited and remembered with libedit (history in
 * $CPROF_HISTORY, else ~/.cprof_history). Otherwise commands are read
 * line by line with no prompt, so that `echo top | cprof prof.pb.gz`
 * prints only the report.
 *
 * The profile's bytes are read once (a URL is fetched once) and decoded
 * afresh for each command, because report_prepare filters the profile in
 * place. The greeting, help, options and messages go to standard error as
 * pprof's do; the reports go to standard output. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <editline/readline.h>

#include "commands.h"
#include "prompt.h"

static const char usage[] =
    "usage: cprof SOURCE...\n"
    "       cprof prompt [OPTIONS] SOURCE...\n"
    "\n"
    "An interactive prompt on the profile, as go tool pprof SOURCE: type commands\n"
    "(top, peek REGEX, list REGEX, traces, folded, flame, web) and settings\n"
    "(sample_index=NAME, focus=RE, unit=ms, nodecount=N, cum, lines...);\n"
    "\"help\" lists them, \"quit\" or Ctrl-D leaves. Several SOURCEs are merged.\n"
    "With standard input not a terminal, commands are read from it line by line\n"
    "(echo top | cprof prof.pb.gz). History: $CPROF_HISTORY, else ~/.cprof_history.\n";

/* --- The loop. */

/* Runs one line; 1 to leave the prompt. */
static int execute(prompt_t *ps, char *line) {
  line = prompt_trim(line);
  if (!line[0] || prompt_setting(ps, line))
    return 0;
  size_t cap = strlen(line) / 2 + 2; /* room for one more ("top10" is "top 10") */
  char **tok = malloc(cap * sizeof *tok);
  int n = 0, quit = 0;
  if (!tok) {
    fprintf(stderr, "out of memory\n");
    return 0;
  }
  for (char *save, *t = strtok_r(line, " \t", &save); t; t = strtok_r(NULL, " \t", &save))
    tok[n++] = t;
  if (strcmp(tok[0], "o") == 0 || strcmp(tok[0], "options") == 0) {
    prompt_print_options(ps);
  } else if (strcmp(tok[0], "exit") == 0 || strcmp(tok[0], "quit") == 0 ||
             strcmp(tok[0], "q") == 0) {
    quit = 1;
  } else if (strcmp(tok[0], "help") == 0) {
    /* pprof joins the words after help: "help top" */
    cprof__buf_t what;
    cprof__buf_init(&what);
    for (int i = 1; i < n; i++)
      cprof__buf_printf(&what, "%s%s", i > 1 ? " " : "", tok[i]);
    cprof__buf_putc(&what, '\0');
    prompt_print_help(what.failed ? "" : what.data);
    cprof__buf_free(&what);
  } else {
    quit = prompt_command(ps, tok, n);
  }
  free(tok);
  return quit;
}

/* The next command line (malloc'd), or NULL at the end. */
static char *read_command(prompt_t *ps) {
  if (ps->edit) {
    char *line = readline("(cprof) ");
    if (line && ps->history && *prompt_trim(line)) {
      add_history(line);
      write_history(ps->history); /* each time: a crash or Ctrl-C keeps it */
    }
    return line;
  }
  if (ps->prompt) {
    fputs("(cprof) ", stderr);
    fflush(stderr);
  }
  char *line = NULL;
  size_t cap = 0;
  if (getline(&line, &cap, ps->in) < 0) {
    free(line);
    return NULL;
  }
  return line;
}

/* Chooses where commands come from and how. 0, or 2 after a line. */
static int open_input(prompt_t *ps, int stdin_used) {
  ps->in = stdin;
  if (stdin_used && !isatty(STDIN_FILENO)) {
    /* The profile came through standard input: commands come from the
     * terminal, if there is one. */
    ps->in = fopen("/dev/tty", "r");
    if (!ps->in) {
      fprintf(stderr, "cprof: standard input held the profile, and there is no terminal to "
                      "read commands from (give the profile as a file, or run one report on "
                      "it: cprof top -)\n");
      return 2;
    }
  }
  clearerr(ps->in);
  if (!isatty(fileno(ps->in)))
    return 0;
  const char *term = getenv("TERM");
  if (!term || !term[0] || strcmp(term, "dumb") == 0) {
    ps->prompt = 1;
    return 0;
  }
  ps->edit = 1;
  rl_readline_name = "cprof";
  rl_instream = ps->in;
  rl_outstream = isatty(STDOUT_FILENO) ? stdout : stderr;
  using_history();
  stifle_history(1000);
  const char *h = getenv("CPROF_HISTORY"), *home = getenv("HOME");
  if (h && h[0]) {
    ps->history = strdup(h);
  } else if (home && home[0]) {
    size_t n = strlen(home) + sizeof "/.cprof_history";
    if ((ps->history = malloc(n)))
      snprintf(ps->history, n, "%s/.cprof_history", home);
  }
  if (ps->history)
    read_history(ps->history); /* none yet, or unreadable: start afresh */
  return 0;
}

/* pprof's greetings. */
int cmd_prompt(int argc, char **argv) {
  report_opts_t o;
  report_opts_init(&o);
  prompt_t ps = {0};
  char **sources = calloc((size_t)argc + 1, sizeof *sources);
  int n = 0, rc = 1, stdin_used = 0;
  char err[512];
  if (!sources)
    return 1;
  if (report_args("prompt", usage, &o, NULL, NULL, argc, argv, sources, &n, &rc) != 0)
    goto done;
  rc = 2;
  if (n == 0) {
    fprintf(stderr, "cprof prompt: which profile? (cprof prompt --help)\n");
    goto done;
  }
  rc = 1;
  ps.src = calloc((size_t)n, sizeof *ps.src);
  if (!ps.src)
    goto done;
  for (int i = 0; i < n; i++) {
    if (source_read(sources[i], &ps.src[i], err, sizeof err) != 0) {
      fprintf(stderr, "cprof: %s\n", err);
      goto done;
    }
    ps.n_src = i + 1;
    stdin_used |= strcmp(sources[i], "-") == 0;
  }
  if (prompt_load(&ps, &ps.meta) != 0)
    goto done;
  if ((rc = prompt_settings_init(&ps, &o)) != 0)
    goto done;
  if ((rc = open_input(&ps, stdin_used)) != 0)
    goto done;
  prompt_greet(&ps);
  for (;;) {
    char *line = read_command(&ps);
    if (!line) {
      if (ps.edit) /* Ctrl-D: the shell's prompt on a line of its own */
        fputc('\n', rl_outstream);
      break;
    }
    int quit = execute(&ps, line);
    free(line);
    fflush(stdout);
    if (quit)
      break;
  }
  rc = 0;
done:
  if (ps.in && ps.in != stdin)
    fclose(ps.in);
  for (int i = 0; i < ps.n_src; i++)
    source_free(&ps.src[i]);
  free(ps.src);
  cprof__pf_free(ps.meta);
  for (int f = 0; f < OPT_N; f++)
    free(ps.values[f]);
  free(ps.history);
  free(sources);
  return rc;
}

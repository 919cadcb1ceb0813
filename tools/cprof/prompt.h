/* What the parts of the prompt (cprof SOURCE, as go tool pprof SOURCE)
 * share: prompt.c reads lines and runs them, prompt_settings.c keeps the
 * settings (focus=RE, cum...), prompt_commands.c runs the commands (top,
 * peek, web...), prompt_text.c has the text helpers they all use. */
#ifndef CPROF_TOOLS_PROMPT_H
#define CPROF_TOOLS_PROMPT_H

#include <stdio.h>

#include "options.h"
#include "model/model.h"
#include "report.h"
#include "source.h"

typedef struct prompt {
  source_t *src; /* the SOURCEs' bytes, decoded again for each command */
  int n_src;
  cprof__pf_t *meta; /* decoded once, never filtered: sample types, names */
  /* The settings as text, as pprof's config.get shows them, for the
   * options of report_options that are the prompt's (NULL for others). */
  char *values[OPT_N];
  FILE *in;   /* where commands come from */
  int edit;   /* through libedit */
  int prompt; /* print "(cprof) " before reading (a dumb terminal) */
  char *history;
} prompt_t;

/* --- prompt_settings.c */

/* Each setting at its initial value, compact_labels on as pprof's prompt
 * sets it, then the report options o given on the command line. 0, 1
 * when out of memory, 2 after a line for a value the prompt refuses. */
int prompt_settings_init(prompt_t *ps, const report_opts_t *o);

/* Runs line if it is a setting ("focus=RE", "cum", a bare "unit" that
 * tells its value, a sample type's name, ":"): 1 if it was one, else 0. */
int prompt_setting(prompt_t *ps, char *line);

/* pprof's printCurrentOptions, on stderr. */
void prompt_print_options(const prompt_t *ps);

/* The options' part of pprof's commandHelp: with what "", the summary
 * lines; else what's help, and 1; 0 when what is no option. */
int prompt_help_options(const char *what);

/* Lands the settings in o (after report_opts_init). */
void prompt_settings_land(const prompt_t *ps, report_opts_t *o);

/* --- prompt_commands.c */

/* Runs the command that tok[0] names, its arguments after: 1 when the
 * prompt should end (the web server got a SIGTERM). */
int prompt_command(prompt_t *ps, char **tok, int n);

/* pprof's commandHelp, on stderr: the list with what "", else the help
 * of the command or option named what. */
void prompt_print_help(const char *what);

/* pprof's greetings, on stderr: the profile's header lines, then
 * "Entering interactive mode". */
void prompt_greet(prompt_t *ps);

/* A fresh copy of the profile: each SOURCE decoded again, merged if
 * several. 0, or 1 after a line on stderr. */
int prompt_load(const prompt_t *ps, cprof__pf_t **out);

/* --- prompt_text.c */

/* s less the white space around it. */
char *prompt_trim(char *s);
/* Prints s on f quoted as Go's %q would, so that what a user typed (or
 * a profile holds) is shown, never obeyed by the terminal. */
void prompt_put_quoted(FILE *f, const char *s);
/* Prints s on f with report_put_name's escapes. */
void prompt_put_name(FILE *f, const char *s);

#endif

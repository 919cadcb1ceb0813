/* The report options, in one table that the command line's flags
 * (report_flag: --focus RE, --cum, -n 5) and the prompt's settings
 * (prompt.c: focus=RE, cum, nodecount=5) both read, as pprof's driver
 * keeps one set of variables that its flags and its interactive shell
 * both set. Each row says how the option is spelt in each, what kind of
 * value it takes, where it lands in report_opts_t and pprof's help. */
#ifndef CPROF_TOOLS_OPTIONS_H
#define CPROF_TOOLS_OPTIONS_H

#include <stddef.h>

#include "report.h"

typedef enum option_kind {
  OPTION_STRING, /* const char * in report_opts_t */
  OPTION_INT,    /* long */
  OPTION_FLOAT,  /* double */
  OPTION_BOOL,   /* int, 0 or 1 */
  OPTION_CHOICE, /* an enum (int) whose values have names */
} option_kind_t;

/* Where an option is taken. */
enum {
  OPTION_PROMPT = 1, /* a setting of the prompt: name=value (and a bare name) */
  OPTION_FLAG = 2,   /* a flag: --name VALUE or --name=VALUE; --name alone for a bool */
  OPTION_WORDS = 4,  /* a choice whose names are flags of their own: --cum, --lines */
};

typedef struct option_choice {
  const char *name;
  int value;
  const char *help; /* pprof's; the first line is the summary */
} option_choice_t;

typedef struct option {
  /* pprof's name, as the prompt takes it; the flag is spelt with dashes
   * for its underscores (--sample-index), and either is taken. */
  const char *name;
  const char *alias; /* another flag for it (-n for nodecount), or NULL */
  option_kind_t kind;
  int where;                      /* OPTION_PROMPT | OPTION_FLAG | OPTION_WORDS */
  const option_choice_t *choices; /* OPTION_CHOICE: the names, sorted; a NULL name ends them */
  const char *initial;            /* the default (report_opts_init), as text */
  size_t offset;                  /* where the value lands in report_opts_t */
  /* The prompt's help (pprof's configHelp; the first line is the
   * summary); for a flag alone, what a bad value is told it wants. */
  const char *help;
} option_t;

/* The options, sorted by name as the prompt's "options" lists them; the
 * flags that are no setting of the prompt after. */
enum {
  OPT_COMPACT_LABELS,
  OPT_EDGEFRACTION,
  OPT_FOCUS,
  OPT_GRANULARITY,
  OPT_HIDE,
  OPT_IGNORE,
  OPT_MEAN,
  OPT_NODECOUNT,
  OPT_NODEFRACTION,
  OPT_SAMPLE_INDEX,
  OPT_SHOW,
  OPT_SORT,
  OPT_TAGFOCUS,
  OPT_TAGIGNORE,
  OPT_TAGLEAF,
  OPT_TAGROOT,
  OPT_UNIT,
  OPT_SYMBOLIZE,
  OPT_N
};

extern const option_t report_options[OPT_N];

/* The option named name (pprof's spelling), or -1. */
int option_find(const char *name);

/* The option one of whose choices is named name ("cum": sort), among
 * those of `where`, or -1. */
int option_find_choice(const char *name, int where);

/* Lands text, a value already checked (the prompt's), in o: an empty
 * string is the option unset (its initial value, or NULL), a choice by
 * its name. */
void option_land(report_opts_t *o, int opt, const char *text);

/* The value o holds for opt as text (in buf when it must be made), or
 * NULL for a string that is unset. */
const char *option_text(const report_opts_t *o, int opt, char *buf, size_t len);

#endif

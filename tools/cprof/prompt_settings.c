/* The prompt's settings (prompt.h): pprof's configuration variables that
 * cprof's reports take, from the one table of report options
 * (options.h). Each is held as text, as pprof's config.get shows it, and
 * set as pprof's config.set checks it. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "prompt.h"

static int is_setting(int f) { return (report_options[f].where & OPTION_PROMPT) != 0; }

/* The setting named name, or -1. */
static int find_setting(const char *name) {
  int f = option_find(name);
  return f >= 0 && is_setting(f) ? f : -1;
}

/* pprof's stringToBool: "" is true. -1 if neither. */
static int parse_bool(const char *v) {
  static const char *const yes[] = {"true", "t", "yes", "y", "1", ""};
  static const char *const no[] = {"false", "f", "no", "n", "0"};
  for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
    if (strcasecmp(v, yes[i]) == 0)
      return 1;
  for (size_t i = 0; i < sizeof no / sizeof *no; i++)
    if (strcasecmp(v, no[i]) == 0)
      return 0;
  return -1;
}

static int set_value(prompt_t *ps, int f, const char *text) {
  char *v = strdup(text);
  if (!v) {
    fprintf(stderr, "out of memory\n");
    return -1;
  }
  free(ps->values[f]);
  ps->values[f] = v;
  return 0;
}

static void bad_bool(const char *value) {
  fprintf(stderr, "illegal value ");
  prompt_put_quoted(stderr, value);
  fprintf(stderr, " for bool variable\n");
}

/* Sets setting f from value as pprof's config.set: checked, and kept in
 * the form pprof shows it. 0, or -1 after a line on stderr. */
static int configure(prompt_t *ps, int f, const char *value) {
  const option_t *opt = &report_options[f];
  char text[64], err[512], *end;
  switch (opt->kind) {
  case OPTION_STRING:
    if (f == OPT_SAMPLE_INDEX) {
      size_t index;
      if (report_sample_index(ps->meta, value, &index, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return -1;
      }
      value = ps->meta->sample_types[index].type;
    }
    return set_value(ps, f, value);
  case OPTION_INT: {
    errno = 0;
    long n = strtol(value, &end, 10);
    if (errno || end == value || *end || n < INT32_MIN || n > INT32_MAX) {
      fprintf(stderr, "strconv.Atoi: parsing ");
      prompt_put_quoted(stderr, value);
      fprintf(stderr, ": invalid syntax\n");
      return -1;
    }
    snprintf(text, sizeof text, "%ld", n);
    return set_value(ps, f, text);
  }
  case OPTION_FLOAT: {
    errno = 0;
    double x = strtod(value, &end);
    if (errno || end == value || *end || x < 0) {
      fprintf(stderr, "%s wants a number, not ", opt->name);
      prompt_put_quoted(stderr, value);
      fputc('\n', stderr);
      return -1;
    }
    snprintf(text, sizeof text, "%g", x);
    return set_value(ps, f, text);
  }
  case OPTION_BOOL: {
    int b = parse_bool(value);
    if (b < 0) {
      bad_bool(value);
      return -1;
    }
    return set_value(ps, f, b ? "true" : "false");
  }
  case OPTION_CHOICE:
    for (const option_choice_t *c = opt->choices; c->name; c++)
      if (strcmp(c->name, value) == 0)
        return set_value(ps, f, value);
    fprintf(stderr, "invalid \"%s\" value ", opt->name);
    prompt_put_quoted(stderr, value);
    fputc('\n', stderr);
    return -1;
  }
  return -1;
}

int prompt_settings_init(prompt_t *ps, const report_opts_t *o) {
  for (int f = 0; f < OPT_N; f++)
    if (is_setting(f) && set_value(ps, f, report_options[f].initial) != 0)
      return 1;
  /* As pprof's interactive mode: no File/Type/Time lines above a table. */
  if (set_value(ps, OPT_COMPACT_LABELS, "true") != 0)
    return 1;
  /* The report options given on the command line are the first settings. */
  for (int f = 0; f < OPT_N; f++) {
    char buf[32];
    const char *given = report_options[f].where & (OPTION_FLAG | OPTION_WORDS) && is_setting(f)
                            ? option_text(o, f, buf, sizeof buf)
                            : NULL;
    if (given && configure(ps, f, given) != 0)
      return 2;
  }
  return 0;
}

void prompt_settings_land(const prompt_t *ps, report_opts_t *o) {
  for (int f = 0; f < OPT_N; f++)
    if (is_setting(f))
      option_land(o, f, ps->values[f]);
}

/* The value as "options" shows it: sample_index's default is named. */
static const char *shown_value(const prompt_t *ps, int f) {
  const char *v = ps->values[f];
  if (f == OPT_SAMPLE_INDEX && !v[0]) {
    size_t index;
    char err[256];
    if (report_sample_index(ps->meta, NULL, &index, err, sizeof err) == 0)
      return ps->meta->sample_types[index].type;
  }
  return v;
}

/* The "//: ..." comment "options" writes after setting f's value v (which
 * it may change to show it). */
static void options_comment(const prompt_t *ps, int f, const char **v, cprof__buf_t *comment) {
  const option_t *opt = &report_options[f];
  if (opt->choices) {
    cprof__buf_puts(comment, "//: [");
    for (const option_choice_t *c = opt->choices; c->name; c++)
      cprof__buf_printf(comment, "%s%s", c == opt->choices ? "" : " | ", c->name);
    cprof__buf_puts(comment, "]");
  } else if (f == OPT_SAMPLE_INDEX) {
    cprof__buf_puts(comment, "//: [");
    for (size_t i = 0; i < ps->meta->n_sample_types; i++) {
      cprof__buf_puts(comment, i ? " | " : "");
      report_put_name(comment, ps->meta->sample_types[i].type);
    }
    cprof__buf_puts(comment, "]");
  } else if (f == OPT_NODECOUNT && strcmp(*v, "-1") == 0) {
    cprof__buf_puts(comment, "//: default");
  } else if (!(*v)[0]) {
    *v = "\"\"";
  }
}

void prompt_print_options(const prompt_t *ps) {
  for (int f = 0; f < OPT_N; f++) {
    if (!is_setting(f))
      continue;
    const char *v = shown_value(ps, f);
    cprof__buf_t comment, value;
    cprof__buf_init(&comment);
    cprof__buf_init(&value);
    options_comment(ps, f, &v, &comment);
    report_put_name(&value, v);
    cprof__buf_putc(&value, '\0');
    cprof__buf_putc(&comment, '\0');
    fprintf(stderr, "  %-25s = %-20s %s\n", report_options[f].name, value.failed ? "" : value.data,
            comment.failed ? "" : comment.data);
    cprof__buf_free(&value);
    cprof__buf_free(&comment);
  }
}

/* The first line of a help text. */
static int summary_len(const char *help) { return (int)strcspn(help, "\n"); }

int prompt_help_options(const char *what) {
  if (!what[0]) {
    fprintf(stderr, "\n  Options:\n");
    for (int f = 0; f < OPT_N; f++)
      if (is_setting(f) && !report_options[f].choices)
        fprintf(stderr, "    %-16s %.*s\n", report_options[f].name,
                summary_len(report_options[f].help), report_options[f].help);
    fprintf(stderr, "\n  Option groups (only set one per group):\n");
    for (int f = 0; f < OPT_N; f++) {
      if (!is_setting(f) || !report_options[f].choices)
        continue;
      fprintf(stderr, "    %-16s \n", report_options[f].name);
      for (const option_choice_t *c = report_options[f].choices; c->name; c++)
        fprintf(stderr, "      %-16s %.*s\n", c->name, summary_len(c->help), c->help);
    }
    return 1;
  }
  int f = find_setting(what);
  if (f >= 0) {
    fprintf(stderr, "%s\n", report_options[f].help);
    return 1;
  }
  f = option_find_choice(what, OPTION_PROMPT);
  for (const option_choice_t *c = f >= 0 ? report_options[f].choices : NULL; c && c->name; c++)
    if (strcmp(c->name, what) == 0) {
      fprintf(stderr, "%s\n", c->help);
      return 1;
    }
  return 0;
}

/* pprof's shortcuts: ":" clears the filters; a sample type's name
 * chooses it (mean_NAME, total_NAME with mean set or not). 1 if line was
 * one. */
static int shortcut(prompt_t *ps, const char *line) {
  if (strcmp(line, ":") == 0) {
    int clear[] = {OPT_FOCUS, OPT_IGNORE, OPT_HIDE, OPT_TAGFOCUS, OPT_TAGIGNORE};
    for (size_t i = 0; i < sizeof clear / sizeof *clear; i++)
      set_value(ps, clear[i], "");
    return 1;
  }
  for (size_t i = 0; i < ps->meta->n_sample_types; i++) {
    const char *t = ps->meta->sample_types[i].type;
    int mean = -1;
    if (strncmp(line, "mean_", 5) == 0 && strcmp(line + 5, t) == 0)
      mean = 1;
    else if (strncmp(line, "total_", 6) == 0 && strcmp(line + 6, t) == 0)
      mean = 0;
    else if (strcmp(line, t) != 0)
      continue;
    if (mean >= 0)
      set_value(ps, OPT_MEAN, mean ? "true" : "false");
    configure(ps, OPT_SAMPLE_INDEX, t);
    return 1;
  }
  return 0;
}

int prompt_setting(prompt_t *ps, char *line) {
  if (shortcut(ps, line))
    return 1;
  char *eq = strchr(line, '=');
  char *name = line, *value = NULL;
  if (eq) {
    *eq = '\0';
    value = eq + 1;
    char *comment = strstr(value, "//:");
    if (comment)
      *comment = '\0';
    value = prompt_trim(value);
  }
  name = prompt_trim(name);
  int f = find_setting(name), choice = f < 0 ? option_find_choice(name, OPTION_PROMPT) : -1;
  if (f < 0 && choice < 0) {
    if (eq)
      *eq = '=';
    return 0;
  }
  if (choice >= 0) {
    /* "cum", "lines", "cum=true": the group takes that choice. */
    int b = parse_bool(value ? value : "");
    if (b < 0)
      bad_bool(value);
    else if (b)
      configure(ps, choice, name);
    return 1;
  }
  if (!value && report_options[f].kind != OPTION_BOOL) {
    /* A bare name tells its value. */
    fprintf(stderr, "%s = ", name);
    prompt_put_name(stderr, shown_value(ps, f)[0] ? shown_value(ps, f) : "\"\"");
    fputc('\n', stderr);
    return 1;
  }
  configure(ps, f, value ? value : "");
  return 1;
}

/* The report options' table (options.h), and the command line's flags
 * read from it (report_flag). */
#include "options.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/demangle.h"

static const option_choice_t granularities[] = {
    {"addresses", CPROF_PF_ADDRESSES,
     "Aggregate at the address level.\n"
     "Includes functions' addresses in the output.\n"},
    {"files", CPROF_PF_FILES, "Aggregate at the file level.\n"},
    {"functions", CPROF_PF_FUNCTIONS,
     "Aggregate at the function level.\n"
     "Ignores the filename where the function was defined.\n"},
    {"lines", CPROF_PF_LINES, "Aggregate at the source code line level.\n"},
    {NULL, 0, NULL},
};

static const option_choice_t sorts[] = {
    {"cum", 1, "Sort entries based on cumulative weight\n"},
    {"flat", 0, "Sort entries based on own weight\n"},
    {NULL, 0, NULL},
};

/* --symbolize's values, as pprof's: only the demangling is cprof's to
 * choose, the profile being symbolized already. */
static const option_choice_t symbolizations[] = {
    {"none", CPROF_PF_DEMANGLE_NONE, NULL},
    {"demangle=none", CPROF_PF_DEMANGLE_NONE, NULL},
    {"demangle=full", CPROF_PF_DEMANGLE_FULL, NULL},
    {"demangle=templates", CPROF_PF_DEMANGLE_TEMPLATES, NULL},
    {"demangle=default", CPROF_PF_DEMANGLE_SIMPLIFIED, NULL},
    {"local", CPROF_PF_DEMANGLE_SIMPLIFIED, NULL},
    {NULL, 0, NULL},
};

#define AT(field) offsetof(report_opts_t, field)
#define P OPTION_PROMPT
#define F OPTION_FLAG
#define W OPTION_WORDS

#define TAG_HELP                                                                                   \
  "Use name=value syntax to limit the matching to a specific tag.\n"                               \
  "Numeric tag filter examples: 1kb, 1kb:10kb, memory=32mb:\n"                                     \
  "String tag filter examples: foo, foo.*bar, mytag=foo.*bar\n"

const option_t report_options[OPT_N] = {
    /* pprof's prompt sets it (prompt_settings_init): no File/Type/Time
     * lines above a table. */
    [OPT_COMPACT_LABELS] = {"compact_labels", NULL, OPTION_BOOL, P, NULL, "false",
                            AT(compact_labels), "Show minimal headers\n"},
    [OPT_EDGEFRACTION] = {"edgefraction", NULL, OPTION_FLOAT, P | F, NULL, "0.001",
                          AT(edgefraction), "Hide edges below <f>*total\n"},
    [OPT_FOCUS] = {"focus", NULL, OPTION_STRING, P | F, NULL, "", AT(filter.focus),
                   "Restricts to samples going through a node matching regexp\n"
                   "Discard samples that do not include a node matching this regexp.\n"
                   "Matching includes the function name, filename or object name.\n"},
    [OPT_GRANULARITY] = {"granularity", NULL, OPTION_CHOICE, P | W, granularities, "functions",
                         AT(granularity), ""},
    [OPT_HIDE] = {"hide", NULL, OPTION_STRING, P | F, NULL, "", AT(filter.hide),
                  "Skips nodes matching regexp\n"
                  "Discard nodes that match this location.\n"
                  "Other nodes from samples that include this location will be shown.\n"
                  "Matching includes the function name, filename or object name.\n"},
    [OPT_IGNORE] = {"ignore", NULL, OPTION_STRING, P | F, NULL, "", AT(filter.ignore),
                    "Skips paths going through any nodes matching regexp\n"
                    "If set, discard samples that include a node matching this regexp.\n"
                    "Matching includes the function name, filename or object name.\n"},
    [OPT_MEAN] = {"mean", NULL, OPTION_BOOL, P | F, NULL, "false", AT(mean),
                  "Average sample value over first value (count)\n"
                  "For memory profiles, report average memory per allocation.\n"
                  "For time-based profiles, report average time per event.\n"},
    [OPT_NODECOUNT] = {"nodecount", "n", OPTION_INT, P | F, NULL, "-1", AT(nodecount),
                       "Max number of nodes to show\n"
                       "Uses heuristics to limit the number of locations to be displayed.\n"
                       "On graphs, dotted edges represent paths through nodes that have been "
                       "removed.\n"},
    [OPT_NODEFRACTION] = {"nodefraction", NULL, OPTION_FLOAT, P | F, NULL, "0.005",
                          AT(nodefraction), "Hide nodes below <f>*total\n"},
    [OPT_SAMPLE_INDEX] = {"sample_index", NULL, OPTION_STRING, P | F, NULL, "", AT(sample_index),
                          "Sample value to report (0-based index or name)\n"
                          "Profiles contain multiple values per sample.\n"
                          "Use sample_index=i to select the ith value (starting at 0).\n"},
    [OPT_SHOW] = {"show", NULL, OPTION_STRING, P | F, NULL, "", AT(filter.show),
                  "Only show nodes matching regexp\n"
                  "If set, only show nodes that match this location.\n"
                  "Matching includes the function name, filename or object name.\n"},
    [OPT_SORT] = {"sort", NULL, OPTION_CHOICE, P | W, sorts, "flat", AT(cum_sort), ""},
    [OPT_TAGFOCUS] = {"tagfocus", NULL, OPTION_STRING, P | F, NULL, "", AT(filter.tagfocus),
                      "Restricts to samples with tags in range or matched by regexp\n" TAG_HELP},
    [OPT_TAGIGNORE] = {"tagignore", NULL, OPTION_STRING, P | F, NULL, "", AT(filter.tagignore),
                       "Discard samples with tags in range or matched by regexp\n" TAG_HELP},
    [OPT_TAGLEAF] = {"tagleaf", NULL, OPTION_STRING, P | F, NULL, "", AT(tagleaf),
                     "Adds pseudo stack frames for labels key/value pairs at the callstack leaf.\n"
                     "A comma-separated list of label keys.\n"
                     "The last key creates frames at the new leaf.\n"},
    [OPT_TAGROOT] = {"tagroot", NULL, OPTION_STRING, P | F, NULL, "", AT(tagroot),
                     "Adds pseudo stack frames for labels key/value pairs at the callstack root.\n"
                     "A comma-separated list of label keys.\n"
                     "The first key creates frames at the new root.\n"},
    [OPT_UNIT] = {"unit", NULL, OPTION_STRING, P | F, NULL, "minimum", AT(unit),
                  "Measurement units to display\n"
                  "Scale the sample values to this unit.\n"
                  "For time-based profiles, use seconds, milliseconds, nanoseconds, etc.\n"
                  "For memory profiles, use megabytes, kilobytes, bytes, etc.\n"
                  "Using auto will scale each value independently to the most natural unit.\n"},
    [OPT_SYMBOLIZE] = {"symbolize", NULL, OPTION_CHOICE, F, symbolizations, "", AT(demangle),
                       "none or demangle=full|templates|none|default"},
};

#undef AT
#undef P
#undef F
#undef W

int option_find(const char *name) {
  for (int i = 0; i < OPT_N; i++)
    if (strcmp(report_options[i].name, name) == 0)
      return i;
  return -1;
}

int option_find_choice(const char *name, int where) {
  for (int i = 0; i < OPT_N; i++) {
    const option_choice_t *c = report_options[i].choices;
    if (!(report_options[i].where & where))
      continue;
    for (; c && c->name; c++)
      if (strcmp(c->name, name) == 0)
        return i;
  }
  return -1;
}

/* The choice of opt named name, or NULL. */
static const option_choice_t *choice_named(const option_t *opt, const char *name) {
  for (const option_choice_t *c = opt->choices; c && c->name; c++)
    if (strcmp(c->name, name) == 0)
      return c;
  return NULL;
}

static void *slot(report_opts_t *o, const option_t *opt) { return (char *)o + opt->offset; }

static const void *cslot(const report_opts_t *o, const option_t *opt) {
  return (const char *)o + opt->offset;
}

void option_land(report_opts_t *o, int i, const char *text) {
  const option_t *opt = &report_options[i];
  const option_choice_t *c;
  switch (opt->kind) {
  case OPTION_STRING:
    *(const char **)slot(o, opt) = text[0] ? text : opt->initial[0] ? opt->initial : NULL;
    break;
  case OPTION_INT:
    *(long *)slot(o, opt) = strtol(text, NULL, 10);
    break;
  case OPTION_FLOAT:
    *(double *)slot(o, opt) = strtod(text, NULL);
    break;
  case OPTION_BOOL:
    *(int *)slot(o, opt) = strcmp(text, "true") == 0;
    break;
  case OPTION_CHOICE:
    if ((c = choice_named(opt, text)))
      *(int *)slot(o, opt) = c->value;
    break;
  }
}

const char *option_text(const report_opts_t *o, int i, char *buf, size_t len) {
  const option_t *opt = &report_options[i];
  switch (opt->kind) {
  case OPTION_STRING:
    return *(const char *const *)cslot(o, opt);
  case OPTION_INT:
    snprintf(buf, len, "%ld", *(const long *)cslot(o, opt));
    return buf;
  case OPTION_FLOAT:
    snprintf(buf, len, "%g", *(const double *)cslot(o, opt));
    return buf;
  case OPTION_BOOL:
    return *(const int *)cslot(o, opt) ? "true" : "false";
  case OPTION_CHOICE:
    for (const option_choice_t *c = opt->choices; c->name; c++)
      if (c->value == *(const int *)cslot(o, opt))
        return c->name;
    return NULL;
  }
  return NULL;
}

/* pprof's defaults, the table's initial values: last or default sample
 * type, unit "minimum", node fraction 0.005, edge fraction 0.001,
 * functions. */
void report_opts_init(report_opts_t *o) {
  memset(o, 0, sizeof *o);
  for (int i = 0; i < OPT_N; i++)
    if (report_options[i].initial[0])
      option_land(o, i, report_options[i].initial);
}

/* --- The command line's flags. */

const char report_flags_help[] =
    "  --sample-index NAME  which value: a sample type's name or index (default: the\n"
    "                       profile's default type, else the last)\n"
    "  --unit UNIT          show values in UNIT (ms, s, kB, MB...; default: as pprof)\n"
    "  --cum                sort by cumulative value\n"
    "  --mean               average value per sample (value / count)\n"
    "  --functions --files --lines --addresses   what a row stands for (default: functions)\n"
    "  --focus RE --ignore RE --hide RE --show RE   keep / drop samples or frames by name\n"
    "  --tagfocus RE --tagignore RE   keep / drop samples by label (key=value, or key=1kb:)\n"
    "  --tagroot KEYS --tagleaf KEYS   labels as frames at the root / leaf (thread,request)\n"
    "  --nodecount N --nodefraction F --edgefraction F   how much to show\n"
    "  --symbolize=none     names as the profile has them (default: C++ names shortened,\n"
    "                       as pprof; demangle=templates or demangle=full for more)\n";

/* a, less one or two leading dashes, is name: pprof's spelling, with
 * dashes or underscores for its underscores ("sample-index" or
 * "sample_index"). Returns what follows the name in a, or NULL. */
static const char *after_name(const char *name, const char *a) {
  a += a[0] == '-';
  a += a[0] == '-';
  size_t n = strlen(name);
  for (size_t k = 0; k < n; k++)
    if (!(a[k] == name[k] || (name[k] == '_' && a[k] == '-')))
      return NULL;
  return a + n;
}

static int is_flag(const char *name, const char *arg) {
  const char *rest = after_name(name, arg);
  return rest && !*rest;
}

/* "--name VALUE", "--name=VALUE", "-name VALUE". Returns the value, or
 * NULL if argv[*i] is not `name`; *missing when it is but has no value. */
static const char *value_of(const char *name, int argc, char **argv, int *i, int *missing) {
  const char *rest = after_name(name, argv[*i]);
  if (!rest)
    return NULL;
  if (rest[0] == '=')
    return rest + 1;
  if (rest[0] != '\0')
    return NULL;
  if (*i + 1 >= argc) {
    *missing = 1;
    return NULL;
  }
  return argv[++*i];
}

/* The flag as a message names it: --n, --sample-index. */
static void put_flag(const char *cmd, const char *name) {
  fprintf(stderr, "cprof %s: --", cmd);
  for (const char *c = name; *c; c++)
    fputc(*c == '_' ? '-' : *c, stderr);
}

/* Lands a flag's value v in o; flag is its name as given. 1, or -1 after
 * a line on stderr. The one whole number is a count of nodes, the
 * numbers with a point are fractions of the total. */
static int take_value(report_opts_t *o, const option_t *opt, const char *cmd, const char *flag,
                      const char *v) {
  const option_choice_t *c;
  char *end;
  double x;
  switch (opt->kind) {
  case OPTION_STRING:
    *(const char **)slot(o, opt) = v;
    return 1;
  case OPTION_CHOICE:
    if (!(c = choice_named(opt, v))) {
      put_flag(cmd, flag);
      fprintf(stderr, " wants %s, not %s\n", opt->help, v);
      return -1;
    }
    *(int *)slot(o, opt) = c->value;
    return 1;
  case OPTION_INT:
  case OPTION_FLOAT:
    errno = 0;
    x = strtod(v, &end);
    if (errno || end == v || *end) {
      put_flag(cmd, flag);
      fprintf(stderr, " wants a number, not %s\n", v);
      return -1;
    }
    if (opt->kind == OPTION_INT && (x < 0 || x != (double)(long)x)) {
      put_flag(cmd, flag);
      fprintf(stderr, " wants a whole number of nodes, not %s\n", v);
      return -1;
    }
    if (opt->kind == OPTION_FLOAT && (x < 0 || x > 1)) {
      put_flag(cmd, flag);
      fprintf(stderr, " wants a fraction between 0 and 1, not %s\n", v);
      return -1;
    }
    if (opt->kind == OPTION_INT)
      *(long *)slot(o, opt) = (long)x;
    else
      *(double *)slot(o, opt) = x;
    return 1;
  case OPTION_BOOL:
    break;
  }
  return -1;
}

int report_flag(report_opts_t *o, const char *cmd, int argc, char **argv, int *i) {
  for (int k = 0; k < OPT_N; k++) {
    const option_t *opt = &report_options[k];
    if (opt->where & OPTION_WORDS) {
      for (const option_choice_t *c = opt->choices; c->name; c++)
        if (is_flag(c->name, argv[*i])) {
          *(int *)slot(o, opt) = c->value;
          return 1;
        }
      continue;
    }
    if (!(opt->where & OPTION_FLAG))
      continue;
    if (opt->kind == OPTION_BOOL) {
      if (!is_flag(opt->name, argv[*i]))
        continue;
      *(int *)slot(o, opt) = 1;
      return 1;
    }
    const char *names[] = {opt->name, opt->alias};
    for (size_t n = 0; n < 2 && names[n]; n++) {
      int missing = 0;
      const char *v = value_of(names[n], argc, argv, i, &missing);
      if (missing) {
        put_flag(cmd, names[n]);
        fprintf(stderr, " wants a value\n");
        return -1;
      }
      if (v)
        return take_value(o, opt, cmd, names[n], v);
    }
  }
  return 0;
}

/* The prompt's commands (prompt.h): the reports of the other subcommands
 * (top, peek, list, traces, folded), the graphs, flame and web, each run
 * on a fresh copy of the profile under the settings and what its command
 * line adds (top 5 -cum, peek RE, >file). */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "page.h"
#include "prompt.h"
#include "save.h"
#include "web.h"

/* --- Commands. */

enum action { A_REPORT, A_FLAME, A_WEB, A_GRAPH };

typedef struct pcommand {
  const char *name;
  enum action action;
  report_fn fn;
  int has_param; /* takes a REGEX first, as list and peek */
  const char *description, *usage;
} pcommand_t;

#define SELECT_HELP                                                                                \
  "Include up to n samples\n"                                                                      \
  "Include samples matching focus_regex, and exclude ignore_regex.\n"
#define SAVE_HELP "Optionally save the report on the file f"
#define GRAPH_USAGE(c) c " [n] [focus_regex]* [-ignore_regex]* [-o f | >f]\n" SELECT_HELP SAVE_HELP

/* Sorted by name, for help. */
static const pcommand_t pcommands[] = {
    {"dot", A_GRAPH, NULL, 0, "Outputs a graph in DOT format", GRAPH_USAGE("dot")},
    {"flame", A_FLAME, NULL, 0, "Outputs the viewer page (flame graph, icicle, top table)",
     "flame [focus_regex]* [-ignore_regex]* [-o f | >f]\n"
     "Include samples matching focus_regex, and exclude ignore_regex.\n"
     "Saves the page in f (default flame.html)"},
    {"folded", A_REPORT, report_folded, 0, "Outputs collapsed stacks (a;b;c 123)",
     "folded [focus_regex]* [-ignore_regex]* [>f]\n"
     "Include samples matching focus_regex, and exclude ignore_regex.\n" SAVE_HELP},
    {"graph", A_GRAPH, NULL, 0, "Outputs a graph image in SVG format", GRAPH_USAGE("graph")},
    {"list", A_REPORT, report_list, 1, "Output annotated source for functions matching regexp",
     "list <func_regex> [-focus_regex]* [-ignore_regex]* [>f]\n"
     "Include functions matching func_regex.\n"
     "Include samples matching focus_regex, and exclude ignore_regex.\n" SAVE_HELP},
    {"peek", A_REPORT, report_peek, 1, "Output callers/callees of functions matching regexp",
     "peek func_regex\n"
     "Display callers and callees of functions matching func_regex."},
    {"png", A_GRAPH, NULL, 0, "Outputs a graph image in PNG format", GRAPH_USAGE("png")},
    {"svg", A_GRAPH, NULL, 0, "Outputs a graph in SVG format", GRAPH_USAGE("svg")},
    {"text", A_REPORT, report_top, 0, "Outputs top entries in text form",
     "text [n] [focus_regex]* [-ignore_regex]* [-cum] >f\n" SELECT_HELP
     "-cum sorts the output by cumulative weight\n" SAVE_HELP},
    {"top", A_REPORT, report_top, 0, "Outputs top entries in text form",
     "top [n] [focus_regex]* [-ignore_regex]* [-cum] >f\n" SELECT_HELP
     "-cum sorts the output by cumulative weight\n" SAVE_HELP},
    {"traces", A_REPORT, report_traces, 0, "Outputs all profile samples in text form", ""},
    {"web", A_WEB, NULL, 0, "Serve the viewer page over HTTP until Ctrl-C",
     "web [focus_regex]* [-ignore_regex]* [-http HOST:PORT]\n"
     "Serves the viewer page (default on 127.0.0.1:6061) until Ctrl-C,\n"
     "then comes back to the prompt."},
};
#define N_PCOMMANDS (sizeof pcommands / sizeof *pcommands)

void prompt_print_help(const char *what) {
  if (!what[0]) {
    fprintf(stderr, "  Commands:\n");
    for (size_t i = 0; i < N_PCOMMANDS; i++)
      fprintf(stderr, "    %-16s %s\n", pcommands[i].name, pcommands[i].description);
    fprintf(stderr, "    %-16s %s\n", "o/options", "List options and their current values");
    fprintf(stderr, "    %-16s %s\n", "q/quit/exit/^D", "Exit cprof");
    prompt_help_options("");
    fprintf(stderr, "  :   Clear focus/ignore/hide/tagfocus/tagignore\n"
                    "\n"
                    "  type \"help <cmd|option>\" for more information\n");
    return;
  }
  for (size_t i = 0; i < N_PCOMMANDS; i++)
    if (strcmp(pcommands[i].name, what) == 0) {
      fprintf(stderr, "%s\n", pcommands[i].description);
      const char *u = pcommands[i].usage;
      if (u[0]) {
        fprintf(stderr, "  Usage:\n");
        while (*u) {
          size_t n = strcspn(u, "\n");
          fprintf(stderr, "    %.*s\n", (int)n, u);
          u += n + (u[n] == '\n');
        }
      }
      fputc('\n', stderr);
      return;
    }
  if (prompt_help_options(what))
    return;
  fprintf(stderr, "Unknown command: ");
  prompt_put_name(stderr, what);
  fputc('\n', stderr);
}

/* --- Running a command. */

int prompt_load(const prompt_t *ps, cprof__pf_t **out) {
  char err[512];
  cprof__pf_t **p = calloc((size_t)ps->n_src, sizeof *p);
  int rc = 1;
  if (!p) {
    fprintf(stderr, "out of memory\n");
    return 1;
  }
  for (int i = 0; i < ps->n_src; i++)
    if (cprof__pf_decode(ps->src[i].data, ps->src[i].len, &p[i], err, sizeof err) != 0) {
      fprintf(stderr, "%s: %s\n", ps->src[i].name, err);
      goto done;
    }
  if (ps->n_src == 1) {
    *out = p[0];
    p[0] = NULL;
    rc = 0;
  } else if (cprof__pf_merge(p, (size_t)ps->n_src, out, err, sizeof err) != 0) {
    fprintf(stderr, "merging the profiles: %s\n", err);
  } else {
    rc = 0;
  }
done:
  for (int i = 0; i < ps->n_src; i++)
    cprof__pf_free(p[i]);
  free(p);
  return rc;
}

/* pprof's catRegex. Returns a malloc'd a|b (a is freed), NULL if out of
 * memory. */
static char *cat_regex(char *a, const char *b) {
  size_t na = a ? strlen(a) : 0, nb = strlen(b);
  char *r = malloc(na + nb + 2);
  if (r)
    snprintf(r, na + nb + 2, "%s%s%s", a ? a : "", na && nb ? "|" : "", b);
  free(a);
  return r;
}

/* What one command line asks for besides the settings: pprof's
 * parseCommandLine's copy of the configuration. */
typedef struct request {
  const pcommand_t *c;
  const char *param;
  long nodecount; /* -2: as set */
  int cum;        /* -1: as set */
  char *focus, *ignore;
  const char *output, *http;
} request_t;

static int parse_request(request_t *r, char **tok, int n) {
  r->nodecount = -2;
  r->cum = -1;
  int i = 1;
  if (r->c->has_param) {
    if (n < 2) {
      fprintf(stderr, "command %s requires an argument\n", r->c->name);
      return -1;
    }
    r->param = tok[i++];
  }
  for (; i < n; i++) {
    const char *t = tok[i];
    char *end;
    errno = 0;
    long v = strtol(t, &end, 10);
    if (!errno && end != t && !*end && v >= INT32_MIN && v <= INT32_MAX) {
      r->nodecount = v;
      continue;
    }
    if (t[0] == '>' || strcmp(t, "-o") == 0) {
      const char *file = t[0] == '>' ? t + 1 : "";
      if (!file[0]) {
        if (++i >= n) {
          fprintf(stderr, "unexpected end of line after %s\n", t);
          return -1;
        }
        file = tok[i];
      }
      r->output = file;
    } else if (r->c->action == A_WEB && (strcmp(t, "-http") == 0 || strcmp(t, "--http") == 0)) {
      if (++i >= n) {
        fprintf(stderr, "unexpected end of line after %s\n", t);
        return -1;
      }
      r->http = tok[i];
    } else if (r->c->action == A_WEB &&
               (strncmp(t, "-http=", 6) == 0 || strncmp(t, "--http=", 7) == 0)) {
      r->http = strchr(t, '=') + 1;
    } else if (t[0] == '-') {
      if (strcmp(t, "-cum") == 0 || strcmp(t, "--cum") == 0) {
        r->cum = 1;
        continue;
      }
      if (!(r->ignore = cat_regex(r->ignore, t + 1)))
        return -1;
    } else if (!(r->focus = cat_regex(r->focus, t))) {
      return -1;
    }
  }
  return 0;
}

/* The report options of the settings and the request. The strings stay
 * the prompt's and the request's. */

static void make_opts(const prompt_t *ps, const request_t *r, report_opts_t *o) {
  report_opts_init(o);
  prompt_settings_land(ps, o);
  if (r->cum >= 0)
    o->cum_sort = r->cum;
  if (r->nodecount != -2)
    o->nodecount = r->nodecount;
  if (o->nodecount == -1 && r->c->fn == report_top)
    o->nodecount = 10; /* pprof's prompt: top shows 10 unless told */
  if (r->focus)
    o->filter.focus = r->focus;
  if (r->ignore)
    o->filter.ignore = r->ignore;
}

/* Writes what a report made to its file (>f, -o f) or standard output. */
static void emit(const request_t *r, const cprof__buf_t *out) {
  if (out->failed) {
    fprintf(stderr, "%s: out of memory\n", r->c->name);
    return;
  }
  if (r->output) {
    int e = save_file(r->output, out->data, out->len);
    if (e != 0) {
      prompt_put_name(stderr, r->output);
      fprintf(stderr, ": %s\n", strerror(-e));
    }
    return;
  }
  if (fwrite(out->data, 1, out->len, stdout) != out->len || fflush(stdout) != 0)
    fprintf(stderr, "%s: writing the report failed\n", r->c->name);
}

/* Returns 1 when the prompt should end (the web server got a SIGTERM). */
static int run(prompt_t *ps, request_t *r) {
  report_opts_t o;
  make_opts(ps, r, &o);
  cprof__pf_t *p = NULL;
  int quit = 0;
  if (prompt_load(ps, &p) != 0 || report_prepare(r->c->name, p, &o) != 0) {
    cprof__pf_free(p);
    return 0;
  }
  cprof__buf_t out;
  cprof__buf_init(&out);
  if (r->c->action == A_GRAPH) {
    /* As pprof's: "Generating report in profile001.svg". */
    const char *format = strcmp(r->c->name, "graph") == 0 ? "svg" : r->c->name;
    char def[32], err[512];
    snprintf(def, sizeof def, "profile001.%s", format);
    const char *file = r->output ? r->output : def;
    fprintf(stderr, "Generating report in ");
    prompt_put_name(stderr, file);
    fputc('\n', stderr);
    if (graph_save(p, &o, file, graph_format_of(file) ? graph_format_of(file) : format, err,
                   sizeof err) != 0)
      fprintf(stderr, "%s: %s\n", r->c->name, err);
  } else if (r->c->action == A_REPORT) {
    char err[512] = "";
    int rc = r->c->fn(&out, p, &o, r->param, err, sizeof err);
    emit(r, &out);
    if (rc != 0)
      fprintf(stderr, "%s\n", err);
  } else if (page_build(p, NULL, &out) != 0 || out.failed) {
    fprintf(stderr, "%s: out of memory\n", r->c->name);
  } else if (r->c->action == A_FLAME) {
    const char *file = r->output ? r->output : "flame.html";
    int e = save_file(file, out.data, out.len);
    if (e == 0)
      fprintf(stderr, "Saved flame graph in ");
    prompt_put_name(stderr, file);
    if (e != 0)
      fprintf(stderr, ": %s", strerror(-e));
    fputc('\n', stderr);
  } else {
    web_page_t page = {out.data, out.len};
    int sig = 0;
    fprintf(stderr, "Ctrl-C stops serving and comes back to the prompt.\n");
    web_serve(&page, r->http ? r->http : "127.0.0.1:6061", &sig);
    quit = sig != 0 && sig != SIGINT;
  }
  cprof__buf_free(&out);
  cprof__pf_free(p);
  return quit;
}

/* pprof's greetings. */
void prompt_greet(prompt_t *ps) {
  report_opts_t o;
  request_t r = {.c = &pcommands[0], .nodecount = -2, .cum = -1};
  make_opts(ps, &r, &o);
  cprof__pf_t *p = NULL;
  if (prompt_load(ps, &p) == 0 && report_prepare("prompt", p, &o) == 0) {
    cprof__buf_t out;
    cprof__buf_init(&out);
    report_profile_labels(&out, p, &o);
    if (!out.failed)
      fwrite(out.data, 1, out.len, stderr);
    cprof__buf_free(&out);
    if (o.total == 0 && p->n_sample_types > 1)
      fprintf(stderr, "No samples were found with the default sample value type.\n"
                      "Try \"sample_index\" command to analyze different sample values.\n\n");
  }
  cprof__pf_free(p);
  fprintf(stderr, "Entering interactive mode (type \"help\" for commands, \"o\" for options)\n");
}

/* The command tok[0] names, or NULL. "top10" is "top 10": the number
 * goes in as the first argument, as in pprof, into digits (tok has room
 * for one more). */
static const pcommand_t *find_command(char **tok, int *n, char *digits, size_t room) {
  for (size_t i = 0; i < N_PCOMMANDS; i++)
    if (strcmp(pcommands[i].name, tok[0]) == 0)
      return &pcommands[i];
  size_t len = strlen(tok[0]), d = len;
  while (d > 0 && tok[0][d - 1] >= '0' && tok[0][d - 1] <= '9')
    d--;
  if (d == 0 || d == len || len - d >= room)
    return NULL;
  for (size_t i = 0; i < N_PCOMMANDS; i++)
    if (strlen(pcommands[i].name) == d && strncmp(pcommands[i].name, tok[0], d) == 0) {
      memcpy(digits, tok[0] + d, len - d + 1);
      memmove(tok + 2, tok + 1, (size_t)(*n - 1) * sizeof *tok);
      tok[1] = digits;
      ++*n;
      return &pcommands[i];
    }
  return NULL;
}

int prompt_command(prompt_t *ps, char **tok, int n) {
  request_t r = {0};
  char digits[32] = "";
  int quit = 0;
  r.c = find_command(tok, &n, digits, sizeof digits);
  if (!r.c) {
    int f = option_find(tok[0]);
    if (f >= 0 && report_options[f].where & OPTION_PROMPT) {
      fprintf(stderr, "did you mean: %s=", tok[0]);
      prompt_put_name(stderr, n > 1 ? tok[1] : "<val>");
      fputc('\n', stderr);
    } else {
      fprintf(stderr, "unrecognized command: ");
      prompt_put_quoted(stderr, tok[0]);
      fputc('\n', stderr);
    }
    return 0;
  }
  if (parse_request(&r, tok, n) == 0)
    quit = run(ps, &r);
  free(r.focus);
  free(r.ignore);
  return quit;
}

/* /debug/pprof/ui/: the cprof command's viewer, served by the profiled
 * program itself, with a picker to choose what it shows. The bytes are
 * src/ui/'s (ui/ui.h); here the profiles are taken.
 *
 *   GET ui/           the viewer page without data, with the picker.
 *                     Cheap: no profile is taken.
 *   GET ui/profiles   the profiles to pick from, as JSON: the registry's
 *                     (cprof__registry_list, custom ones included), then
 *                     the CPU profile, "profile" (the wall-clock profile,
 *                     "wall", is the registry's).
 *   GET ui/data?name=NAME[&seconds=N | &diff=N]
 *                     the viewer's JSON for one profile, taken as
 *                     /debug/pprof/NAME takes it, on the server's thread
 *                     that serves the request:
 *                       name=profile&seconds=N   the CPU profile over N s
 *                                                (default 30, 1..3600), as
 *                                                /debug/pprof/profile;
 *                       name=wall&seconds=N      the wall-clock profile,
 *                                                likewise, at 50 Hz;
 *                       name=NAME&seconds=N      the change over N s, the
 *                                                registry's delta (pprof's
 *                                                seconds= on heap, allocs);
 *                       name=NAME&diff=N         two snapshots N s apart
 *                                                (1..3600) in one
 *                                                differential tree.
 *                     &tagroot=KEY[,KEY]: those labels as frames at the
 *                     root. A bad name or value is a 400 with a one-line
 *                     reason (the router reads them: cprof__params_view).
 *
 * The data requests are expensive ones for the server's limits
 * (http/limits.h: a slot each, CPROF_MAX_PROFILES at once), as every
 * profile; the page and the list are cheap. */
#include <errno.h>
#include <string.h>

#include "http/handlers.h"
#include "http/response.h"
#include "http/tree.h"
#include "registry/registry.h"
#include "ui/ui.h"

#define CPROF_JSON "application/json; charset=utf-8"

/* The program's name, for titles (the page escapes it). */
static const char *program_name(void) {
  return program_invocation_short_name[0] ? program_invocation_short_name : "the program";
}

void cprof__serve_ui_page(const cprof__params_t *p, const cprof__config_t *cfg,
                          cprof_response_t *resp) {
  cprof__buf_t b;
  cprof__buf_init(&b);
  cprof__ui_page(program_name(), &b);
  cprof__resp_body(resp, CPROF_HTML, &b);
}

void cprof__serve_ui_profiles(const cprof__params_t *p, const cprof__config_t *cfg,
                              cprof_response_t *resp) {
  const cprof__profile_t *ps[CPROF_MAX_PROFILES_REGISTERED];
  int n = cprof__registry_list(ps, CPROF_MAX_PROFILES_REGISTERED);
  cprof__index_row_t rows[CPROF_MAX_PROFILES_REGISTERED];
  for (int i = 0; i < n; i++)
    rows[i] = (cprof__index_row_t){ps[i]->name, ps[i]->desc, ps[i]->ops->count(ps[i]), NULL,
                                   ps[i]->ops->off ? ps[i]->ops->off(ps[i]) : NULL};
  cprof__buf_t b;
  cprof__buf_init(&b);
  cprof__ui_profiles(rows, n, &b);
  cprof__resp_body(resp, CPROF_JSON, &b);
}

/* One registry profile, now or its change over seconds, into out. */
static int take(const cprof__profile_t *prof, const cprof__params_t *p, long seconds,
                cprof_response_t *resp, cprof__buf_t *out) {
  cprof__collect_t c = {.seconds = seconds, .wait = p->wait, .ctx = p->ctx};
  int err = cprof__profile_collect(prof, &c, out);
  if (err == -ECANCELED)
    cprof__resp_error(resp, 500, "request cancelled");
  else if (err)
    cprof__resp_error(resp, 500, "%s: %s", prof->failure, cprof_strerror(err));
  return err ? -1 : 0;
}

/* One take of the viewer's, as cprof__tree_take runs it: this process's
 * profile, and in a process tree every process's merged. */
typedef struct taking {
  const cprof__profile_t *prof; /* NULL: the CPU or wall recording */
  int wall;
  const cprof__params_t *p;
  const cprof__config_t *cfg;
  long seconds;
  cprof_response_t *resp;
} taking_t;

static int take_own(void *arg, cprof__buf_t *own) {
  const taking_t *t = arg;
  if (t->prof)
    return take(t->prof, t->p, t->seconds, t->resp, own);
  int err = t->wall ? cprof__wall_take(t->p, t->cfg, t->seconds, 0, t->resp, own)
                    : cprof__cpu_profile_take(t->p, t->cfg, t->seconds, t->resp, own);
  return err ? -1 : 0;
}

static int take_tree(const char *name, taking_t *t, cprof__buf_t *out) {
  char why[300];
  int rc = cprof__tree_take(name, t->seconds, t->cfg, take_own, t, out, why, sizeof why);
  if (rc == -2)
    cprof__resp_error(t->resp, 500, "merging the profiles of this process tree: %s", why);
  return rc;
}

/* The viewer's JSON of now (against base when not NULL) as the answer. */
static void answer(const cprof__ui_view_t *v, const cprof__buf_t *base, const cprof__buf_t *now,
                   cprof_response_t *resp) {
  cprof__buf_t out;
  cprof__buf_init(&out);
  char why[400];
  int how = cprof__ui_data(v, base, now, &out, why, sizeof why);
  if (how) {
    cprof__buf_free(&out);
    cprof__resp_error(resp, how == CPROF_UI_REFUSED ? 400 : 500, "%s", why);
    return;
  }
  cprof__resp_body(resp, CPROF_JSON, &out);
}

void cprof__serve_ui_data(const cprof__params_t *p, const cprof__config_t *cfg,
                          cprof_response_t *resp) {
  cprof__ui_view_t v = {.program = program_name(),
                        .name = p->name,
                        .seconds = p->seconds,
                        .diff = p->diff,
                        .tagroot = p->tagroot};
  cprof__buf_t a, b;
  cprof__buf_init(&a);
  cprof__buf_init(&b);
  int cpu = strcmp(p->name, CPROF_UI_CPU) == 0, wall = strcmp(p->name, CPROF_UI_WALL) == 0;
  if (cpu || wall) { /* recordings, over the seconds given */
    if (p->diff) {
      cprof__resp_error(resp, 400, "diff is for snapshots (heap, allocs, ...), not the %s profile",
                        cpu ? "CPU" : "wall-clock");
      return;
    }
    if (!v.seconds)
      v.seconds = CPROF_DEFAULT_SECONDS;
    taking_t t = {NULL, wall, p, cfg, v.seconds, resp};
    if (take_tree(cpu ? "profile" : "wall", &t, &a) == 0)
      answer(&v, NULL, &a, resp);
    goto done;
  }
  const cprof__profile_t *prof = cprof__registry_lookup(p->name);
  if (!prof) {
    /* The name as the request gave it could hold anything: a newline would
     * break the one-line reason. */
    char name[sizeof p->name];
    memcpy(name, p->name, sizeof name);
    for (char *c = name; *c; c++)
      if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", *c))
        *c = '?';
    cprof__resp_error(resp, 400, "unknown profile \"%s\"", name);
    return;
  }
  v.name = prof->name; /* "threads" is the goroutine profile */
  taking_t t = {prof, 0, p, cfg, 0, resp};
  if (p->diff) {
    if (take_tree(prof->name, &t, &a) != 0)
      goto done;
    if (p->wait(p->ctx, p->diff * 1000) != 0) {
      cprof__resp_error(resp, 500, "request cancelled");
      goto done;
    }
    if (take_tree(prof->name, &t, &b) == 0)
      answer(&v, &a, &b, resp);
  } else {
    t.seconds = p->seconds;
    if (take_tree(prof->name, &t, &a) == 0)
      answer(&v, NULL, &a, resp);
  }
done:
  cprof__buf_free(&a);
  cprof__buf_free(&b);
}

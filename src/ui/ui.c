/* /debug/pprof/ui/: the viewer served in-process (ui/ui.h). */
#include "ui/ui.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/buf.h"
#include "http/query.h"
#include "http/response.h"
#include "http/routes.h"
#include "model/model.h"
#include "registry/registry.h"
#include "ui/viewer.h"

#define CPU_NAME "profile"
#define WALL_NAME "wall"
#define CPU_DEFAULT_SECONDS 30
#define MAX_SECONDS 3600
#define CPROF_JSON "application/json; charset=utf-8"

/* The program's name, for titles (the page escapes it). */
static const char *program_name(void) {
  return program_invocation_short_name[0] ? program_invocation_short_name : "the program";
}

static int wait_for(void *req, long ms) { return cprof__wait_request(req, ms); }

static void serve_page(cprof_response_t *resp) {
  char title[200];
  snprintf(title, sizeof title, "cprof: %s", program_name());
  cprof__buf_t b;
  cprof__buf_init(&b);
  cprof__viewer_page_live(title, &b);
  cprof__resp_body(resp, CPROF_HTML, &b);
}

static void serve_profiles(cprof_response_t *resp) {
  const cprof__profile_t *ps[CPROF_MAX_PROFILES_REGISTERED];
  int n = cprof__registry_list(ps, CPROF_MAX_PROFILES_REGISTERED);
  cprof__buf_t b;
  cprof__buf_init(&b);
  cprof__buf_putc(&b, '[');
  for (int i = 0; i < n; i++) {
    const char *off = ps[i]->ops->off ? ps[i]->ops->off(ps[i]) : NULL;
    cprof__buf_puts(&b, "{\"name\":");
    cprof__viewer_json_string(&b, ps[i]->name);
    cprof__buf_puts(&b, ",\"desc\":");
    cprof__viewer_json_string(&b, ps[i]->desc ? ps[i]->desc : "");
    cprof__buf_printf(&b, ",\"count\":%ld,\"off\":", ps[i]->ops->count(ps[i]));
    if (off)
      cprof__viewer_json_string(&b, off);
    else
      cprof__buf_puts(&b, "null");
    cprof__buf_puts(&b, "},\n");
  }
  cprof__buf_puts(&b, "{\"name\":\"" CPU_NAME "\",\"desc\":\"CPU profile over the seconds given\","
                      "\"count\":0,\"off\":null}]\n");
  cprof__resp_body(resp, CPROF_JSON, &b);
}

/* An optional integer parameter in [1, MAX_SECONDS]; absent leaves *v. */
static int param_secs(const cprof_request_t *req, cprof_response_t *resp, const char *key,
                      long *v) {
  char s[32];
  int got = cprof__query_get(req->query, key, s, sizeof s);
  if (got == 0)
    return 0;
  if (got < 0 || cprof__query_int(s, 1, MAX_SECONDS, v) != 0) {
    cprof__resp_error(resp, 400, "invalid value for \"%s\" - must be an integer from 1 to %d", key,
                      MAX_SECONDS);
    return -1;
  }
  return 0;
}

/* One registry profile, now or its change over seconds, into out. */
static int take(const cprof__profile_t *p, const cprof_request_t *req, long seconds,
                cprof_response_t *resp, cprof__buf_t *out) {
  cprof__collect_t c = {.seconds = seconds, .wait = wait_for, .ctx = (void *)req};
  int err = cprof__profile_collect(p, &c, out);
  if (err == -ECANCELED)
    cprof__resp_error(resp, 500, "request cancelled");
  else if (err)
    cprof__resp_error(resp, 500, "%s: %s", p->failure, cprof_strerror(err));
  return err ? -1 : 0;
}

static cprof__pf_t *decode(const cprof__buf_t *b, cprof_response_t *resp) {
  cprof__pf_t *p = NULL;
  char err[200] = "";
  if (b->failed) {
    cprof__resp_error(resp, 500, "out of memory");
    return NULL;
  }
  if (cprof__pf_decode(b->data, b->len, &p, err, sizeof err) != 0) {
    err[strcspn(err, "\n")] = '\0';
    cprof__resp_error(resp, 500, "cannot read the profile just written: %s", err);
    return NULL;
  }
  return p;
}

/* The viewer's JSON of new_ (against base when not NULL) as the answer,
 * with the labels keys in tagroot (comma-separated, "" for none) as frames
 * at the root, as pprof's -tagroot. */
static void answer(cprof__pf_t *base, cprof__pf_t *new_, const char *tagroot, const char *title,
                   cprof_response_t *resp) {
  int m;
  int err = cprof__pf_tagroot(new_, tagroot, NULL, "minimum", &m, &m);
  if (!err && base)
    err = cprof__pf_tagroot(base, tagroot, NULL, "minimum", &m, &m);
  if (err) {
    cprof__resp_error(resp, err == -EINVAL ? 400 : 500, "cannot root by \"tagroot\": %s",
                      err == -EINVAL ? "more than 32 label keys" : cprof_strerror(err));
    return;
  }
  cprof__pf_tree_t *t = NULL;
  err = base ? cprof__pf_tree_diff(base, new_, &t) : cprof__pf_tree(new_, &t);
  if (err) {
    cprof__resp_error(resp, 500, "cannot build the call tree: %s", cprof_strerror(err));
    return;
  }
  if (t->n_nodes > CPROF_UI_MAX_NODES) {
    cprof__resp_error(resp, 500,
                      "the profile has %zu frames, more than the page shows (%d): download it "
                      "and open it with cprof flame",
                      t->n_nodes, CPROF_UI_MAX_NODES);
    cprof__pf_tree_free(t);
    return;
  }
  cprof__buf_t out;
  cprof__buf_init(&out);
  err = cprof__viewer_json(t, new_, title, base != NULL, &out);
  cprof__pf_tree_free(t);
  if (err || out.len > CPROF_UI_MAX_JSON) {
    cprof__buf_free(&out);
    if (err)
      cprof__resp_error(resp, 500, "cannot write the viewer's data: %s", cprof_strerror(err));
    else
      cprof__resp_error(resp, 500, "the profile's data is over %zu MB: download it instead",
                        CPROF_UI_MAX_JSON >> 20);
    return;
  }
  cprof__resp_body(resp, CPROF_JSON, &out);
}

static void serve_data(const cprof_request_t *req, const cprof__config_t *cfg,
                       cprof_response_t *resp) {
  char name[80];
  int got = cprof__query_get(req->query, "name", name, sizeof name);
  if (got <= 0 || name[0] == '\0') {
    cprof__resp_error(resp, 400, "missing \"name\": the profile to show (profile, heap, ...)");
    return;
  }
  long seconds = 0, diff = 0;
  if (param_secs(req, resp, "seconds", &seconds) != 0 || param_secs(req, resp, "diff", &diff) != 0)
    return;
  if (seconds && diff) {
    cprof__resp_error(resp, 400, "seconds and diff params are incompatible");
    return;
  }
  char tagroot[256] = "";
  if (cprof__query_get(req->query, "tagroot", tagroot, sizeof tagroot) < 0) {
    cprof__resp_error(resp, 400, "invalid value for \"tagroot\" - label keys, at most %zu bytes",
                      sizeof tagroot - 1);
    return;
  }
  const char *prog = program_name();
  char title[300];
  cprof__buf_t a, b;
  cprof__buf_init(&a);
  cprof__buf_init(&b);
  cprof__pf_t *pa = NULL, *pb = NULL;
  int cpu = strcmp(name, CPU_NAME) == 0, wall = strcmp(name, WALL_NAME) == 0;
  if (cpu || wall) { /* recordings, over the seconds given */
    if (diff) {
      cprof__resp_error(resp, 400, "diff is for snapshots (heap, allocs, ...), not the %s profile",
                        cpu ? "CPU" : "wall-clock");
      return;
    }
    if (!seconds)
      seconds = CPU_DEFAULT_SECONDS;
    snprintf(title, sizeof title, "%s profile of %s, %ld s", cpu ? "CPU" : "Wall-clock", prog,
             seconds);
    int err = cpu ? cprof__cpu_profile_take(req, cfg, seconds, resp, &a)
                  : cprof__wall_take(req, cfg, seconds, 0, resp, &a);
    if (err == 0 && (pa = decode(&a, resp)))
      answer(NULL, pa, tagroot, title, resp);
    goto done;
  }
  const cprof__profile_t *p = cprof__registry_lookup(name);
  if (!p) {
    /* The name as the request gave it could hold anything: a newline would
     * break the one-line reason. */
    for (char *c = name; *c; c++)
      if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", *c))
        *c = '?';
    cprof__resp_error(resp, 400, "unknown profile \"%s\"", name);
    return;
  }
  if (diff) {
    snprintf(title, sizeof title, "%s profile of %s: now against %ld s ago", p->name, prog, diff);
    if (take(p, req, 0, resp, &a) != 0)
      goto done;
    if (cprof__wait_request(req, diff * 1000) != 0) {
      cprof__resp_error(resp, 500, "request cancelled");
      goto done;
    }
    if (take(p, req, 0, resp, &b) == 0 && (pa = decode(&a, resp)) && (pb = decode(&b, resp)))
      answer(pa, pb, tagroot, title, resp);
  } else {
    if (seconds)
      snprintf(title, sizeof title, "%s profile of %s: the change over %ld s", p->name, prog,
               seconds);
    else
      snprintf(title, sizeof title, "%s profile of %s", p->name, prog);
    if (take(p, req, seconds, resp, &a) == 0 && (pa = decode(&a, resp)))
      answer(NULL, pa, tagroot, title, resp);
  }
done:
  cprof__pf_free(pa);
  cprof__pf_free(pb);
  cprof__buf_free(&a);
  cprof__buf_free(&b);
}

void cprof__ui_serve(const char *rest, const cprof_request_t *req, const cprof__config_t *cfg,
                     cprof_response_t *resp) {
  if (rest[0] == '\0')
    serve_page(resp);
  else if (strcmp(rest, "profiles") == 0)
    serve_profiles(resp);
  else if (strcmp(rest, "data") == 0)
    serve_data(req, cfg, resp);
  else
    cprof__resp_error(resp, 404, "404 page not found");
}

/* /debug/pprof/ui/'s bytes (ui/ui.h). */
#include "ui/ui.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cprof.h"
#include "model/model.h"
#include "ui/viewer.h"

int cprof__ui_page(const char *program, cprof__buf_t *out) {
  char title[200];
  snprintf(title, sizeof title, "cprof: %s", program);
  return cprof__viewer_page_live(title, out);
}

void cprof__ui_profiles(const cprof__index_row_t *rows, int n, cprof__buf_t *out) {
  cprof__buf_t *b = out;
  cprof__buf_putc(b, '[');
  for (int i = 0; i < n; i++) {
    cprof__buf_puts(b, "{\"name\":");
    cprof__viewer_json_string(b, rows[i].name);
    cprof__buf_puts(b, ",\"desc\":");
    cprof__viewer_json_string(b, rows[i].desc ? rows[i].desc : "");
    cprof__buf_printf(b, ",\"count\":%ld,\"off\":", rows[i].count);
    if (rows[i].off)
      cprof__viewer_json_string(b, rows[i].off);
    else
      cprof__buf_puts(b, "null");
    cprof__buf_puts(b, "},\n");
  }
  cprof__buf_puts(b, "{\"name\":\"" CPROF_UI_CPU "\",\"desc\":\"CPU profile over the seconds "
                     "given\",\"count\":0,\"off\":null}]\n");
}

/* Says why in why, and returns how (CPROF_UI_REFUSED or _FAILED). */
__attribute__((format(printf, 4, 5))) static int fail(int how, char *why, size_t whylen,
                                                      const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, whylen, fmt, ap);
  va_end(ap);
  return how;
}

/* What the data shows, as its title says it. */
static void title_of(const cprof__ui_view_t *v, char *title, size_t len) {
  int cpu = strcmp(v->name, CPROF_UI_CPU) == 0, wall = strcmp(v->name, CPROF_UI_WALL) == 0;
  if (cpu || wall) /* recordings, over the seconds given */
    snprintf(title, len, "%s profile of %s, %ld s", cpu ? "CPU" : "Wall-clock", v->program,
             v->seconds);
  else if (v->diff)
    snprintf(title, len, "%s profile of %s: now against %ld s ago", v->name, v->program, v->diff);
  else if (v->seconds)
    snprintf(title, len, "%s profile of %s: the change over %ld s", v->name, v->program,
             v->seconds);
  else
    snprintf(title, len, "%s profile of %s", v->name, v->program);
}

static int decode(const cprof__buf_t *b, cprof__pf_t **p, char *why, size_t whylen) {
  char err[200] = "";
  if (b->failed)
    return fail(CPROF_UI_FAILED, why, whylen, "out of memory");
  if (cprof__pf_decode(b->data, b->len, p, err, sizeof err) != 0) {
    err[strcspn(err, "\n")] = '\0';
    return fail(CPROF_UI_FAILED, why, whylen, "cannot read the profile just written: %s", err);
  }
  return 0;
}

/* The viewer's JSON of new_ (against base when not NULL) into out, with
 * the labels keys in tagroot (comma-separated, "" for none) as frames at
 * the root, as pprof's -tagroot. */
static int answer(cprof__pf_t *base, cprof__pf_t *new_, const char *tagroot, const char *title,
                  cprof__buf_t *out, char *why, size_t whylen) {
  int m;
  int err = cprof__pf_tagroot(new_, tagroot, NULL, "minimum", &m, &m);
  if (!err && base)
    err = cprof__pf_tagroot(base, tagroot, NULL, "minimum", &m, &m);
  if (err)
    return fail(err == -EINVAL ? CPROF_UI_REFUSED : CPROF_UI_FAILED, why, whylen,
                "cannot root by \"tagroot\": %s",
                err == -EINVAL ? "more than 32 label keys" : cprof_strerror(err));
  cprof__pf_tree_t *t = NULL;
  err = base ? cprof__pf_tree_diff(base, new_, &t) : cprof__pf_tree(new_, &t);
  if (err)
    return fail(CPROF_UI_FAILED, why, whylen, "cannot build the call tree: %s",
                cprof_strerror(err));
  if (t->n_nodes > CPROF_UI_MAX_NODES) {
    size_t n = t->n_nodes;
    cprof__pf_tree_free(t);
    return fail(CPROF_UI_FAILED, why, whylen,
                "the profile has %zu frames, more than the page shows (%d): download it and "
                "open it with cprof flame",
                n, CPROF_UI_MAX_NODES);
  }
  size_t start = out->len;
  err = cprof__viewer_json(t, new_, title, base != NULL, out);
  cprof__pf_tree_free(t);
  if (err)
    return fail(CPROF_UI_FAILED, why, whylen, "cannot write the viewer's data: %s",
                cprof_strerror(err));
  if (out->len - start > CPROF_UI_MAX_JSON)
    return fail(CPROF_UI_FAILED, why, whylen,
                "the profile's data is over %zu MB: download it instead", CPROF_UI_MAX_JSON >> 20);
  return 0;
}

int cprof__ui_data(const cprof__ui_view_t *v, const cprof__buf_t *base, const cprof__buf_t *now,
                   cprof__buf_t *out, char *why, size_t whylen) {
  char title[300];
  title_of(v, title, sizeof title);
  cprof__pf_t *pb = NULL, *pn = NULL;
  int err = base ? decode(base, &pb, why, whylen) : 0;
  if (!err)
    err = decode(now, &pn, why, whylen);
  if (!err)
    err = answer(pb, pn, v->tagroot, title, out, why, whylen);
  cprof__pf_free(pb);
  cprof__pf_free(pn);
  return err;
}

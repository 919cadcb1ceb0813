/* /debug/pprof/ui/'s bytes: the cprof command's viewer (ui/viewer.h) as the
 * profiled program serves it, with a picker to choose what it shows. Which
 * profile, taken how, and who may see it is src/http/'s to decide
 * (http/ui.c, which lists the routes); here the page, the list and the
 * viewer's JSON are made from plain data.
 *
 *   the page      the viewer page without data, with ui.js (the picker:
 *                 src/ui/viewer/viewer.live.js) after the viewer's script.
 *   the list      the profiles to pick from, as JSON:
 *                 [{"name": "heap", "desc": "...", "count": 12,
 *                   "off": null or "how to turn it on"}, ...]
 *                 the rows given (the registry's, custom ones included),
 *                 then the CPU profile, "profile".
 *   the data      the viewer's JSON (cprof__viewer_json) for one profile,
 *                 or for two snapshots in one differential tree
 *                 (cprof__pf_tree_diff: the first is BASE, the second
 *                 NEW; "compare two moments" on the page), with a title
 *                 that says which. tagroot=KEY[,KEY] puts those labels as
 *                 frames at the root (cprof__pf_tagroot, pprof's
 *                 -tagroot), so that the graph splits by thread name or by
 *                 a label of cprof_do; the JSON's "labels" lists the keys.
 *
 * The picker asks for a profile, counts down while it records, and draws
 * the JSON with the viewer's own code (window.cprofView in viewer.js);
 * "download" links the raw profile at the existing endpoints
 * (../NAME?debug=0, ../profile?seconds=N).
 *
 * Bounds: the viewer's JSON is built only for a tree of at most
 * CPROF_UI_MAX_NODES frames and sent only up to CPROF_UI_MAX_JSON bytes;
 * beyond, the reason says to download the profile instead. Everything runs
 * on the server's thread, under cprof's guard that cprof_handle_request
 * holds, never in a signal handler. */
#ifndef CPROF_UI_UI_H
#define CPROF_UI_UI_H

#include <stddef.h>

#include "core/buf.h"
#include "ui/index.h"

#define CPROF_UI_MAX_NODES 500000
#define CPROF_UI_MAX_JSON ((size_t)64 << 20)

/* The two profiles the picker asks for that are recordings over seconds,
 * not the registry's snapshots: the CPU and the wall-clock profile. */
#define CPROF_UI_CPU "profile"
#define CPROF_UI_WALL "wall"

/* What the viewer's data shows. */
typedef struct cprof__ui_view {
  const char *program; /* the program's name, for the title */
  const char *name;    /* CPROF_UI_CPU, CPROF_UI_WALL or a profile of the registry */
  long seconds;        /* a recording's length, or a snapshot's change over; 0: a snapshot */
  long diff;           /* two snapshots diff seconds apart (base and now); 0: one profile */
  const char *tagroot; /* label keys to root by, comma-separated; "" for none */
} cprof__ui_view_t;

/* How cprof__ui_data went, when not 0: the request asked what cannot be
 * done (more than 32 label keys to root by), or the profile could not be
 * shown (not readable, too big, out of memory). */
enum { CPROF_UI_REFUSED = 1, CPROF_UI_FAILED = 2 };

/* Appends the page, titled "cprof: PROGRAM". 0 or -ENOMEM. */
int cprof__ui_page(const char *program, cprof__buf_t *out);

/* Appends the list: rows[0..n) (their name, desc, count and off), then the
 * CPU profile's. */
void cprof__ui_profiles(const cprof__index_row_t *rows, int n, cprof__buf_t *out);

/* Appends the viewer's JSON of profile now (profile.proto, as a profile is
 * written), against base when base is not NULL (v->diff), as v says. 0, or
 * CPROF_UI_REFUSED or CPROF_UI_FAILED with the reason, one line, in why. */
int cprof__ui_data(const cprof__ui_view_t *v, const cprof__buf_t *base, const cprof__buf_t *now,
                   cprof__buf_t *out, char *why, size_t whylen);

#endif

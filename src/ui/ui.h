/* /debug/pprof/ui/: the cprof command's viewer (ui/viewer.h), served by the
 * profiled program itself, with a picker to choose what it shows.
 *
 *   GET ui/           the viewer page without data, with ui.js (the
 *                     picker: src/ui/viewer/viewer.live.js) after the
 *                     viewer's script. Cheap: no profile is taken.
 *   GET ui/profiles   the profiles to pick from, as JSON:
 *                     [{"name": "heap", "desc": "...", "count": 12,
 *                       "off": null or "how to turn it on"}, ...]
 *                     the registry's (cprof__registry_list, custom ones
 *                     included), then the CPU profile, "profile", and
 *                     the wall-clock profile, "wall".
 *   GET ui/data?name=NAME[&seconds=N | &diff=N]
 *                     the viewer's JSON (cprof__viewer_json) for one
 *                     profile, taken as /debug/pprof/NAME takes it, on the
 *                     server's thread that serves the request:
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
 *                                                differential tree
 *                                                (cprof__pf_tree_diff):
 *                                                the first is BASE, the
 *                                                second NEW; "compare two
 *                                                moments" on the page.
 *                     &tagroot=KEY[,KEY]: those labels as frames at the
 *                     root (cprof__pf_tagroot, pprof's -tagroot), so that
 *                     the graph splits by thread name or by a label of
 *                     cprof_do; the JSON's "labels" lists the keys.
 *                     A bad name or value is a 400 with a one-line reason.
 *
 * The picker asks for a profile, counts down while it records, and draws
 * the JSON with the viewer's own code (window.cprofView in viewer.js);
 * "download" links the raw profile at the existing endpoints
 * (../NAME?debug=0, ../profile?seconds=N).
 *
 * Bounds: the viewer's JSON is built only for a tree of at most
 * CPROF_UI_MAX_NODES frames and sent only up to CPROF_UI_MAX_JSON bytes;
 * beyond, a 500 says to download the profile instead. The data requests
 * are expensive ones for the server's limits (http/limits.h: a slot each,
 * CPROF_MAX_PROFILES at once), as every profile; the page and the list are
 * cheap. Everything runs on the server's thread, under cprof's guard that
 * cprof_handle_request holds, never in a signal handler. */
#ifndef CPROF_UI_UI_H
#define CPROF_UI_UI_H

#include "core/config.h"
#include "cprof.h"

#define CPROF_UI_MAX_NODES 500000
#define CPROF_UI_MAX_JSON ((size_t)64 << 20)

/* Serves /debug/pprof/ui/REST: rest is what follows "ui/" ("", "data",
 * "profiles"); anything else is a 404. */
void cprof__ui_serve(const char *rest, const cprof_request_t *req, const cprof__config_t *cfg,
                     cprof_response_t *resp);

#endif

/* The profile viewer: one self-contained HTML page (src/ui/viewer/: the
 * html, css and js, embedded at build time by cmake/assets.cmake) with a call
 * tree in it as JSON. It needs no network and no server: saved to a file it
 * opens in any browser, and the library can serve the same bytes.
 *
 * The JSON, inside <script type="application/json" id="profile-data">:
 *
 *   {"version": 1,
 *    "title": "heap profile of demo_server",
 *    "comments": ["..."],               profile.proto's comments
 *    "types": [{"type": "alloc_objects", "unit": "count"}, ...],
 *    "default": 3,                      index into types: the profile's
 *                                       default_sample_type, else the last
 *    "diff": false,
 *    "time_nanos": 0, "duration_nanos": 0,
 *    "labels": ["thread", ...],         the samples' label keys, sorted
 *                                       (at most 64; pprof::base left out)
 *    "strings": ["", "main", "main.c", ...],
 *    "nodes": [parent, name, file, total..., self..., parent, ...]}
 *
 * nodes is one flat array, node after node, each `3 + 2 * V` numbers wide
 * where V is the number of values per node: the number of types, or twice
 * it for a diff (NEW's values first, then BASE's, as cprof__pf_tree_diff
 * keeps them). name and file index strings, which holds each distinct
 * string once. Nodes come in preorder: node 0 is the root (parent -1, name
 * ""), a node's parent comes before it, and siblings keep the tree's order
 * (heaviest first). A flat array of numbers is what JSON.parse reads
 * fastest, and the shared strings keep a 100k-node tree a few MB.
 *
 * Values are JSON integers; past 2^53 the browser rounds them, which no
 * profile's totals reach in practice.
 *
 * Strings are escaped for JSON inside an HTML script element: `<`, `>` and
 * `&` as \u003c \u003e \u0026 (no "</script>" or "<!--" can end or bend the
 * element), U+2028 and U+2029 as \u2028 \u2029, control characters and DEL
 * as \uXXXX (or \n, \t...), `"` and `\` as \" and \\. Names are arbitrary
 * bytes: each byte that is not part of a valid UTF-8 sequence (Unicode's
 * table 3-7: no overlong forms, no surrogates, nothing past U+10FFFF)
 * becomes U+FFFD, written \ufffd, so the JSON is always valid UTF-8. */
#ifndef CPROF_UI_VIEWER_H
#define CPROF_UI_VIEWER_H

#include <stddef.h>

#include "core/buf.h"
#include "model/model.h"

#define CPROF_VIEWER_MAX_LABEL_KEYS 64

/* Appends s as a JSON string literal, quotes included, escaped as above. */
void cprof__viewer_json_string(cprof__buf_t *out, const char *s);

/* Appends the JSON above for tree t of profile p (whose sample types,
 * default type and comments it takes). With diff, t comes from
 * cprof__pf_tree_diff and has twice p's sample types; without, as many.
 * title may be NULL. 0, -EINVAL when t and p do not agree, or -ENOMEM. */
int cprof__viewer_json(const cprof__pf_tree_t *t, const cprof__pf_t *p, const char *title, int diff,
                       cprof__buf_t *out);

/* Appends the whole page: the html with the css, the JSON json[0..n) and
 * the js inlined, and title (escaped for HTML; NULL for "cprof") as the
 * document's title. json must be what cprof__viewer_json wrote: -EINVAL
 * if it holds a `<`, which could end the script element. 0 or -ENOMEM. */
int cprof__viewer_page(const char *json, size_t n, const char *title, cprof__buf_t *out);

/* The page without data and with the picker (viewer/viewer.live.js) after
 * the viewer's script, which then draws what the picker fetches: the page
 * of /debug/pprof/ui/ (ui/ui.h). 0 or -ENOMEM. */
int cprof__viewer_page_live(const char *title, cprof__buf_t *out);

#endif

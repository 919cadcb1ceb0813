#!/usr/bin/env python3
"""The query page's time to draw a day of one target (bench/collect/day.sh),
in headless Chromium through tests/ui/viewer_browser.py's WebDriver client:

    day_page.py DIR BASE_URL JOB RUNS TYPE...

For each TYPE, RUNS times: opens about:blank, then BASE_URL?job=JOB&type=
TYPE&range=24h, and waits for the line to be drawn (body's data-points
set, collect.js's mark for the tests). Times, from the page's own clock
(performance.now(), 0 at the navigation's start): when /api/profiles'
answer had arrived (its resource timing), and when data-points was set (a
MutationObserver installed as soon as the navigation returns; if the line
was drawn already by then, the time it returned, an upper bound). Also the
wall time from the navigation's request to seeing it, the answer's size,
the points drawn; and when the frame had drawn the day's merged flame graph
(data-shown set: the status then says what the frame shows), with the
status line. Prints a line per run.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "ui"))
import viewer_browser as vb  # noqa: E402

OBSERVE = """
var d = document.body && document.body.dataset;
function look(late) {
  var d = document.body.dataset;
  if (!window.__drawn && (d.points || d.error)) window.__drawn = {at: performance.now(), late: late};
  if (!window.__shown && d.shown) window.__shown = {at: performance.now(), late: late};
  return window.__drawn && window.__shown;
}
if (d && look(true)) return 'drawn';
new MutationObserver(function (m, o) { if (look(false)) o.disconnect(); })
  .observe(document.body, {attributes: true});
return 'observing';
"""

RESULT = """
if (!window.__drawn || !window.__shown) return null;
var e = performance.getEntriesByType('resource').filter(function (r) {
  return r.name.indexOf('/api/profiles?') >= 0; })[0];
return {drawn: window.__drawn.at, late: window.__drawn.late,
        shown: window.__shown.at, shown_late: window.__shown.late,
        points: Number(document.body.dataset.points || 0),
        error: document.body.dataset.error || '',
        status: document.getElementById('status').textContent,
        profiles_end: e ? e.responseEnd : null, profiles_start: e ? e.startTime : null,
        profiles_bytes: e ? (e.decodedBodySize || e.encodedBodySize) : null};
"""


def measure(wd, url):
    wd.call("POST", "/url", {"url": "about:blank"})
    t0 = time.time()
    wd.call("POST", "/url", {"url": url})
    wd.run(OBSERVE)
    end = time.time() + 300
    while time.time() < end:
        r = wd.run(RESULT)
        if r:
            r["wall"] = time.time() - t0
            return r
        time.sleep(0.05)
    return {"error": "not drawn within 300 s"}


def main():
    d, base, job, runs, types = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5:]

    def step(wd):
        for typ in types:
            url = "%s?job=%s&type=%s&range=24h" % (base, job, typ)
            for i in range(runs):
                r = measure(wd, url)
                if "drawn" not in r:
                    vb.check("%s: the line of a day" % typ, False, r.get("error"))
                    continue
                print("page %-12s run %d: %6d points drawn at %7.0f ms%s (/api/profiles %s ms -> %s ms, %s bytes);"
                      " the day's flame graph at %.0f ms%s; seen after %.2f s; status: %s%s" % (
                          typ, i + 1, r["points"], r["drawn"], " (or before)" if r["late"] else "",
                          "%.0f" % r["profiles_start"] if r["profiles_start"] is not None else "?",
                          "%.0f" % r["profiles_end"] if r["profiles_end"] is not None else "?",
                          r["profiles_bytes"], r["shown"], " (or before)" if r["shown_late"] else "",
                          r["wall"], r["status"],
                          "; error: " + r["error"] if r["error"] else ""), flush=True)
                vb.check("%s: the line of a day has its points (%d)" % (typ, r["points"]), r["points"] > 0)
                vb.check("%s: the day is merged, and the status says so" % typ,
                         ("%d profiles merged" % r["points"]) in r["status"], r["status"])
        wd.screenshot(os.path.join(d, "collect-day.png"))

    return vb.drive("day_page", d, step)


if __name__ == "__main__":
    sys.exit(main())

"""Drives headless Chromium (tests/ui/viewer_browser.py's WebDriver client)
over a running cprof collect's pages and checks what a person would see:

    collect_browser.py DIR BASE_URL ARTIFACTS

/targets shows a health badge per loop; / draws a point per stored profile
of the series it picks (process_cpu first), and the merged flame graph in
its frame; clicking a point shows that one moment (from = to). Screenshots
go to ARTIFACTS/collect-targets.png and collect-query.png (the last minute).
Prints one line per check and exits 1 if any failed.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import viewer_browser as vb  # noqa: E402

check = vb.check


def wait(wd, script, what, limit=60):
    return vb.wait(wd, script, what, limit)


def targets(wd, base, art):
    wd.call("POST", "/url", {"url": base + "targets"})
    n = wd.run("return document.querySelectorAll('span.health').length")
    good = wd.run("return document.querySelectorAll('span.health.Good').length")
    check("/targets: a health badge per loop (%s, %s good)" % (n, good), n == 18 and good >= 1)
    check("/targets: labels shown as text", wd.run(
        "return [...document.querySelectorAll('span.label')].some(s => s.textContent == 'note=<b>x&y</b>')"))
    wd.screenshot(os.path.join(art, "collect-targets.png"))


FRAME_READY = ("var f = document.getElementById('view').contentDocument;"
               "return f && f.body && f.body.dataset.ready == '1' && document.body.dataset.view;")


def query(wd, base, art):
    # The last minute: the collector is seconds old, and its points fill it.
    wd.call("POST", "/url", {"url": base + "?range=1m"})
    points = wait(wd, "return Number(document.body.dataset.points || 0)", "the line has points")
    check("/: the line has a point per profile (%s)" % points, bool(points))
    # CPU first, in cores: two decimals at most on the y axis.
    axis = wd.run("var d = document.body.dataset;"
                  "return [document.getElementById('type').value, d.ytitle, d.yunit, JSON.parse(d.yticks || '[]')];")
    check("/: process_cpu first, its y axis CPU cores (%s)" % (axis,), axis[:3] == ["process_cpu", "CPU cores", "cores"]
          and len(axis[3]) >= 2 and all(t.endswith(" cores") and len(t[:-6].partition(".")[2]) <= 2 for t in axis[3]))
    view = wait(wd, FRAME_READY, "the flame graph is drawn")
    check("/: the merged profile is drawn in the frame", bool(view), view)
    wd.screenshot(os.path.join(art, "collect-query.png"))
    # Click the first point: the frame shows that moment only.
    at = wd.run("var c = Chart.getChart(document.getElementById('chart'));"
                "var p = c.getDatasetMeta(0).data[0], r = c.canvas.getBoundingClientRect();"
                "return [r.left + p.x, r.top + p.y, c.data.datasets[0].data[0].ns];")
    wd.click_at(at[0], at[1])
    moment = wait(wd, "var v = document.body.dataset.view || '';"
                  "return v.indexOf('from=%s&to=%s') >= 0 && v;" % (at[2], at[2]),
                  "a click on a point shows its moment")
    check("/: a click on a point shows that moment only", bool(moment), moment)
    check("/: and the frame draws it", bool(wait(wd, FRAME_READY, "the moment is drawn")))


def main():
    d, base, art = sys.argv[1], sys.argv[2], sys.argv[3]
    return vb.drive("collect_browser", d, lambda wd: targets(wd, base, art),
                    lambda wd: query(wd, base, art))


if __name__ == "__main__":
    sys.exit(main())

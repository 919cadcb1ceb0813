"""Drives headless Chromium through chromedriver's WebDriver HTTP API (with
nothing but Python's standard library) over the live charts page of a
server, and checks what a person would see:

    charts_browser.py BASE_URL OUT_DIR [--tree PID...]

BASE_URL is where the server answers, with any CPROF_PREFIX, e.g.
http://127.0.0.1:6060: the page is BASE_URL/debug/charts/ and its data
BASE_URL/debug/charts/data. charts_browser.sh points it at
tests/ui/charts_fixture.py; it works as well against a program running
under cprof (without auth: the browser sends no credentials). Screenshots
go to OUT_DIR (charts.png, charts-phone.png). Prints one line per check
("ok ..." or "FAIL ...") and exits 1 if any failed.

With --tree PID... the server is a process tree's owner (PIDs: its
members): the page must show its "Process tree" section, a line per
process by pid and name beside the total, in cores, bytes and threads
(tree.png).
"""
import json
import os
import re
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from viewer_browser import check, drive, png_pixels  # noqa: E402

# The JSON's series, each of which a chart must show.
SERIES = ["cpu_user_pct", "cpu_system_pct", "rss_bytes", "rss_peak_bytes", "vm_bytes",
          "heap_inuse_bytes", "alloc_bytes_per_s", "threads", "open_fds", "ctx_voluntary_per_s",
          "ctx_involuntary_per_s", "faults_minor_per_s", "faults_major_per_s", "read_bytes_per_s",
          "write_bytes_per_s", "cprof_samples_per_s", "cprof_dropped_per_s", "cprof_memory_bytes",
          "cprof_serve_ms_per_s"]


def fetch(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.read(), r.headers


def wait_until(wd, script, limit_s, *args):
    """Runs script until it returns something true, for at most limit_s
    seconds (a bound on a hang, not a timing the test asserts)."""
    end = time.monotonic() + limit_s
    while True:
        v = wd.run(script, *args)
        if v or time.monotonic() > end:
            return v
        time.sleep(0.2)


def check_page(wd, base, out):
    page_url = base + "/debug/charts/"
    body, headers = fetch(page_url)
    csp = headers.get("Content-Security-Policy", "")
    check("the page comes as text/html", headers.get("Content-Type", "").startswith("text/html"),
          headers.get("Content-Type"))
    check("the page is served with a strict Content-Security-Policy",
          "default-src 'none'" in csp and "connect-src 'self'" in csp, csp)
    html = body.decode("utf-8", "replace")
    external = re.findall(r"""(?i)\b(?:src|href|action|srcset|poster)\s*=\s*["']?\s*(?:[a-z][a-z0-9+.-]*:|//)""", html)
    check("the page's markup names no external URL", not external, external[:3])
    check("the page imports no stylesheet and no url()",
          not re.search(r"(?i)@import|(?<![\w.])url\(\s*['\"]?(?!data:)", html))
    check("the page holds Chart.js", "Chart.js v3" in html)

    wd.call("POST", "/url", {"url": page_url})
    first = wait_until(wd, "var c = window.cprofCharts; return c && c.state.updates >= 1 ? c.state.lastT : null", 30)
    check("the page's first update came", first is not None, first)
    # Two more updates, and new points with them: the page is live.
    later = wait_until(wd, "var s = window.cprofCharts.state; return s.updates >= 3 && s.lastT > arguments[0] ?"
                       " s.updates : 0", 60, first or 0)
    check("two more updates came, with new points", bool(later), later)
    errors = wd.run("return window.cprofCharts.state.errors")
    check("the page met no error (fetch, CSP)", errors == [], errors)

    charts = wd.run("""
        var out = [];
        for (var g of window.cprofCharts.groups) {
          var c = window.cprofCharts.state.charts[g.id];
          out.push({id: g.id, datasets: c.data.datasets.map(d => ({key: d.key, n: d.data.length,
                    numbers: d.data.filter(p => typeof p.y === 'number').length}))});
        }
        return out;""")
    cards = wd.run("return document.querySelectorAll('#charts .card canvas').length")
    check("a canvas per chart", cards == len(charts) and cards >= 8, [cards, len(charts)])
    empty = [c["id"] for c in charts if not all(d["n"] >= 2 and d["numbers"] >= 1 for d in c["datasets"])]
    check("every chart holds points", not empty and charts, empty or charts)
    shown = {d["key"] for c in charts for d in c["datasets"]}
    check("every series of the data has a chart", set(SERIES) <= shown, set(SERIES) - shown)

    # The RSS chart's last point against the data the server gives.
    last = wd.run("""
        var c = window.cprofCharts.state.charts.memory, d = c.data.datasets.find(d => d.key === 'rss_bytes');
        var p = d.data[d.data.length - 1];
        return {x: p.x, y: p.y, title: document.querySelector('#chart-memory h2').textContent,
                shown: window.cprofCharts.format('bytes', p.y)};""")
    data = json.loads(fetch(base + "/debug/charts/data")[0])
    t = data.get("t", [])
    check("the data has the page's last point", last["x"] in t, [last["x"], t[-3:]])
    if last["x"] in t:
        i = t.index(last["x"])
        want = data["series"]["rss_bytes"][i]
        check("the RSS chart's last value is the data's rss_bytes", last["y"] == want, [last["y"], want])
        check("the page is current: its last point is among the data's newest", i >= len(t) - 5,
              [i, len(t)])
    check("the memory chart's title shows the current RSS", ("RSS " + last["shown"]) in last["title"], last)
    units = wd.run("return [document.querySelector('#chart-cpu h2').textContent,"
                   " window.cprofCharts.state.charts.cpu.scales.y.ticks.map(t => t.label).join(' ')]")
    check("CPU shows % in its title and on its axis", "%" in units[0] and "%" in units[1], units)
    mem_ticks = wd.run("return window.cprofCharts.state.charts.memory.scales.y.ticks.map(t => t.label)")
    check("memory's axis is in bytes (kB, MB, GB)", any(re.search(r"\d (B|kB|MB|GB)$", x) for x in mem_ticks),
          mem_ticks)
    rate_ticks = wd.run("return window.cprofCharts.state.charts.ctx.scales.y.ticks.map(t => t.label)")
    check("context switches are per second", all(x.endswith("/s") for x in rate_ticks) and rate_ticks,
          rate_ticks)

    # The window: the time axis spans what is chosen.
    spans = {}
    options = wd.run("return Array.from(document.querySelectorAll('#window option'), o => o.value)")
    check("the window offers 1, 5 and 10 minutes", options == ["60", "300", "600"], options)
    for w in options:
        wd.run("var s = document.getElementById('window'); s.value = arguments[0];"
               " s.dispatchEvent(new Event('change'))", w)
        spans[w] = wd.run("""
            var c = window.cprofCharts.state.charts.memory, x = c.scales.x;
            var d = c.data.datasets[0].data;
            return [x.max - x.min, d.filter(p => p.x >= x.min && p.x <= x.max).length, x.max];""")
    check("1 min shows a minute", spans.get("60", [0])[0] == 60000 and spans["60"][1] <= 61, spans)
    check("10 min shows ten minutes", spans.get("600", [0])[0] == 600000, spans)
    if len(t) > 61:
        check("a longer window shows more points", spans["600"][1] > spans["60"][1], spans)
    # The screenshot in the 1-minute window: a program started a few
    # seconds ago has lines there wide enough to see.
    wd.run("var s = document.getElementById('window'); s.value = '60'; s.dispatchEvent(new Event('change'))")

    # Nothing but the server itself was asked for anything.
    res = wd.run("return [location.origin, performance.getEntriesByType('resource').map(e => e.name),"
                 " Array.from(document.querySelectorAll('[src],[href]'), e => e.getAttribute('src') || e.getAttribute('href'))]")
    foreign = [u for u in res[1] if not u.startswith(res[0] + "/")]
    check("the page fetched from its own server only", not foreign, foreign)
    absolute = [u for u in res[2] if re.match(r"(?i)[a-z][a-z0-9+.-]*:|//", u)]
    check("the page's links are relative", not absolute, absolute)

    png = wd.screenshot(os.path.join(out, "charts.png"))
    width, height, bpp, rows = png_pixels(png)
    blue = sum(1 for row in rows[::2] for x in range(0, width * bpp, bpp * 2)
               if abs(row[x] - 0x2f) < 40 and abs(row[x + 1] - 0x6f) < 40 and abs(row[x + 2] - 0xd0) < 40)
    check("the screenshot shows the lines drawn", blue > 200, blue)

    # A phone: one column, nothing wider than the screen.
    wd.call("POST", "/window/rect", {"width": 400, "height": 850})
    phone = wait_until(wd, """
        var cards = Array.from(document.querySelectorAll('.card'), c => c.getBoundingClientRect());
        var one = cards.every(r => Math.abs(r.left - cards[0].left) < 1);
        var fits = document.documentElement.scrollWidth <= window.innerWidth;
        return one && fits && window.innerWidth <= 400 ? [one, fits] : null;""", 10)
    check("on a phone the charts are one column and nothing is wider than the screen", phone == [True, True],
          phone)
    wd.screenshot(os.path.join(out, "charts-phone.png"))
    wd.call("POST", "/window/rect", {"width": 1280, "height": 900})


def check_tree(wd, base, out, members):
    wd.call("POST", "/url", {"url": base + "/debug/charts/"})
    # Three updates with a tree in them: the members' lines have points.
    updates = wait_until(wd, "var c = window.cprofCharts; return c && c.state.tree && c.state.updates >= 3 &&"
                         " c.state.tree.lastT ? c.state.updates : 0", 60)
    check("the page's tree section filled", bool(updates), updates)
    errors = wd.run("return window.cprofCharts && window.cprofCharts.state.errors")
    check("the page met no error (fetch, CSP)", errors == [], errors)
    layout = wd.run("""
        var tree = document.getElementById('tree'), first = document.querySelector('#charts > .card');
        return tree ? {title: tree.querySelector('h2').textContent,
                       cards: tree.querySelectorAll('.card canvas').length,
                       first: !!(first && (tree.compareDocumentPosition(first) & Node.DOCUMENT_POSITION_FOLLOWING)),
                       visible: tree.getBoundingClientRect().height > 100} : null;""")
    check("a 'Process tree' section, before the process's own charts, three charts drawn",
          layout is not None and layout["title"].startswith("Process tree") and layout["cards"] == 3
          and layout["first"] and layout["visible"], layout)
    charts = wd.run("""
        var out = {};
        for (var g of window.cprofCharts.treeGroups) {
          var c = window.cprofCharts.state.charts[g.id];
          out[g.id] = {labels: c.data.datasets.map(d => d.label),
                       numbers: c.data.datasets.map(d => d.data.filter(p => typeof p.y === 'number').length),
                       ticks: c.scales.y.ticks.map(t => t.label),
                       last: c.data.datasets[0].data.length ? c.data.datasets[0].data[c.data.datasets[0].data.length - 1] : null};
        }
        return out;""")
    data = json.loads(fetch(base + "/debug/charts/data")[0])
    tree = data.get("tree") or {}
    for gid, c in sorted(charts.items()):
        check(gid + ": the total first", c["labels"][:1] == ["total"], c["labels"])
        for pid in members:
            check(gid + ": a line for process %s, by pid and name" % pid,
                  any(re.match(r"%s \S" % pid, l) for l in c["labels"]), c["labels"])
        check(gid + ": every line has points", all(n >= 1 for n in c["numbers"]), c["numbers"])
    check("tree CPU: its axis in cores", any(re.search(r"\d cores?$", x) for x in charts["tree_cpu"]["ticks"]),
          charts["tree_cpu"]["ticks"])
    check("tree memory: its axis in bytes", any(re.search(r"\d (B|kB|MB|GB)$", x) for x in charts["tree_rss"]["ticks"]),
          charts["tree_rss"]["ticks"])
    last = charts["tree_rss"]["last"]
    t = tree.get("t", [])
    check("the tree's RSS total is the data's", last is not None and last["x"] in t
          and tree["totals"]["rss_bytes"][t.index(last["x"])] == last["y"], [last, t[-3:]])
    title = wd.run("return document.querySelector('#chart-tree_cpu h2').textContent")
    check("tree CPU's title shows the total in cores", re.search(r"cores?$", title) is not None, title)
    wd.run("var s = document.getElementById('window'); s.value = '60'; s.dispatchEvent(new Event('change'))")
    wd.screenshot(os.path.join(out, "tree.png"))


def main():
    base, out = sys.argv[1].rstrip("/"), sys.argv[2]
    os.makedirs(out, exist_ok=True)
    if len(sys.argv) > 3 and sys.argv[3] == "--tree":
        members = sys.argv[4:]
        return drive("charts_browser", out, lambda wd: check_tree(wd, base, out, members))
    return drive("charts_browser", out, lambda wd: check_page(wd, base, out))


if __name__ == "__main__":
    sys.exit(main())

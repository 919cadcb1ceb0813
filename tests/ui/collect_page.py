"""Drives headless Chromium (tests/ui/viewer_browser.py's WebDriver client)
over cprof collect's query page against real targets (collect_page.sh):

    collect_page.py DIR BASE_URL HEAP_ADDR HEAP_PID LOCK_PID HEAP_OUT LOCK_OUT SHOT

and checks what a person would read: the heap's 8 MiB averaged over a
range, on the line and in the frame (+-5 %); a block range's total against
the contention the program measured (+-10 %); the y axis' unit, title and
ticks; a drag that sets the range, and Back; an A/B comparison across the
heap's growth (late_alloc's 2 MiB); a view reopened from its address; the
mode picker; a malformed selector's 400 in the status; the heap target
killed, marked with its error; and /debug/pprof/ui/'s state kept in its
address across a reload. The comparison's screenshot is SHOT. Prints one
line per check and exits 1 if any failed.

    collect_page.py limit DIR BASE_URL

against a collector serving the same store with --merge-limit 2: a range
over the limit, said in the status as the frame shows it.
"""
import json
import os
import signal
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import viewer_browser as vb  # noqa: E402

check = vb.check
MiB = 1 << 20
SHIFT = "\ue008"


def api(base, path):
    with urllib.request.urlopen(base + path, timeout=30) as r:
        return json.loads(r.read())


def rows(base, job, typ):
    return api(base, "api/profiles?job=%s&type=%s&from=0&to=%d" % (job, typ, time.time_ns()))


def until(what, fn, limit=60):
    end = time.time() + limit
    while time.time() < end:
        v = fn()
        if v:
            return v
        time.sleep(0.2)
    check(what, False, "not within %d s" % limit)
    return None


def wait(wd, script, what, *args, limit=60):
    end = time.time() + limit
    while time.time() < end:
        v = wd.run(script, *args)
        if v:
            return v
        time.sleep(0.1)
    check(what, False, "not within %d s; page error: %s" % (
        limit, wd.run("return document.body.dataset.error || ''")))
    return None


def near(got, want, tol):
    return got is not None and abs(got - want) <= want * tol


def shown(wd):
    return int(wd.run("return +(document.body.dataset.shown || 0)"))


def after(wd, n, what):
    """Waits for the page to have shown a view more than n."""
    return wait(wd, "return +(document.body.dataset.shown || 0) > arguments[0]", what, n)


def open_page(wd, url, what):
    wd.call("POST", "/url", {"url": "about:blank"})
    wd.call("POST", "/url", {"url": url})
    return after(wd, 0, what)


# The frame id's document when it shows the page's current address for it
# (body's data-view, data-view-a or data-view-b) and has drawn.
FRAME = """var f = document.getElementById(arguments[0]), u = document.body.dataset[arguments[1]];
var d = f && f.contentDocument;
return !!(u && d && d.body && d.body.dataset.ready == '1' &&
          f.contentWindow.location.href.indexOf(u) >= 0) && u;"""


def frame_data(wd, frame="view", key="view"):
    """The viewer's JSON in a frame, once it has drawn."""
    if not wait(wd, FRAME, "the frame %s draws" % frame, frame, key):
        return None
    return json.loads(wd.run("return document.getElementById(arguments[0]).contentDocument"
                             ".getElementById('profile-data').textContent", frame))


def total(data, typ, node=0, base=False):
    """A node's total of sample type typ (its base's, in a diff)."""
    names = [t["type"] for t in data["types"]]
    k, n = names.index(typ), len(names)
    v = 2 * n if data["diff"] else n
    stride = 3 + 2 * v
    return data["nodes"][node * stride + 3 + k + (n if base else 0)]


def node_of(data, name):
    """The heaviest node of a function, or -1."""
    n = len(data["types"]) * (2 if data["diff"] else 1)
    stride = 3 + 2 * n
    nodes = data["nodes"]
    try:
        s = data["strings"].index(name)
    except ValueError:
        return -1
    best = -1
    for i in range(len(nodes) // stride):
        if nodes[i * stride + 1] == s and (best < 0 or nodes[i * stride + 3] > nodes[best * stride + 3]):
            best = i
    return best


def line(wd):
    """The first line's points: [x (ms), y] (y None where it breaks)."""
    return wd.run("var c = Chart.getChart(document.getElementById('chart'));"
                  "return c.data.datasets[0].data.map(p => [p.x, p.y]);")


def px(wd, t):
    """Viewport pixels of time t (ms) on the chart, halfway up."""
    return wd.run("var c = Chart.getChart(document.getElementById('chart')),"
                  " r = c.canvas.getBoundingClientRect(), a = c.chartArea;"
                  "return [r.left + c.scales.x.getPixelForValue(arguments[0]), r.top + (a.top + a.bottom) / 2];", t)


def drag(wd, t0, t1, shift=False):
    (x0, y), (x1, _) = px(wd, t0), px(wd, t1)
    moves = [{"type": "pointerMove", "x": int(x0), "y": int(y), "origin": "viewport"},
             {"type": "pointerDown", "button": 0},
             {"type": "pointerMove", "x": int((x0 + x1) / 2), "y": int(y), "origin": "viewport"},
             {"type": "pointerMove", "x": int(x1), "y": int(y), "origin": "viewport"},
             {"type": "pointerUp", "button": 0}]
    sources = [{"type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"},
                "actions": ([{"type": "pause", "duration": 0}] if shift else []) + moves +
                ([{"type": "pause", "duration": 0}] if shift else [])}]
    if shift:
        sources.append({"type": "key", "id": "keyboard", "actions":
                        [{"type": "keyDown", "value": SHIFT}] +
                        [{"type": "pause", "duration": 0}] * len(moves) + [{"type": "keyUp", "value": SHIFT}]})
    wd.call("POST", "/actions", {"actions": sources})
    wd.call("DELETE", "/actions")
    # The range the page took: a pixel's worth of time either side.
    return wd.run("var c = Chart.getChart(document.getElementById('chart'));"
                  "return c.scales.x.getValueForPixel(1) - c.scales.x.getValueForPixel(0);")


def body(wd, key):
    return wd.run("return document.body.dataset[arguments[0]] || ''", key)


def ns_ms(text):
    return int(text) / 1e6


class Run:
    def __init__(self, argv):
        (self.dir, self.base, self.heap, hpid, lpid, self.heap_out, self.lock_out,
         self.shot) = argv[1:9]
        self.hpid, self.lpid = int(hpid), int(lpid)

    # ---- the heap: 8 MiB averaged, the axis, a drag, Back --------------------

    def heap_range(self, wd):
        got = until("five heap scrapes", lambda: len(rows(self.base, "heap", "memory")) >= 5 and
                    rows(self.base, "heap", "memory"))
        if not got:
            return
        first, last = got[0]["time_ns"], got[-1]["time_ns"]
        url = self.base + "?job=heap&type=memory&from=%s&to=%s" % (first, last)
        open_page(wd, url, "the heap's range is shown")
        pts = [p for p in line(wd) if p[1] is not None]
        check("heap: a point per scrape in the range (%d)" % len(pts), len(pts) == len(got))
        check("heap: each point is the 8 MiB in use +-5 %% (%s)" % [round(p[1] / MiB, 3) for p in pts],
              pts and all(near(p[1], 8 * MiB, 0.05) for p in pts))
        data = frame_data(wd)
        got_total = data and total(data, "inuse_space")
        check("heap: the frame's average is 8 MiB +-5 %% (%s)" % got_total, near(got_total, 8 * MiB, 0.05))
        check("heap: the frame averaged (the title says avg)", data and "avg" in data.get("title", ""),
              data and data.get("title"))
        check("heap: the y axis is bytes in use in MiB", body(wd, "ytitle") == "bytes in use" and
              body(wd, "yunit") == "MiB", (body(wd, "ytitle"), body(wd, "yunit")))
        ticks = json.loads(body(wd, "yticks") or "[]")
        check("heap: the y ticks are whole MiB steps (%s)" % ticks, len(ticks) >= 3 and
              all(t.endswith(" MiB") and float(t[:-4]) == int(float(t[:-4])) for t in ticks))
        check("heap: the axis title on the chart names the unit", wd.run(
            "return Chart.getChart(document.getElementById('chart')).options.scales.y.title.text")
            == "bytes in use (MiB)")
        check("heap: the page says the range is averaged", "averaged" in wd.run(
            "return document.getElementById('status').textContent"))

        # A drag from just before the second point to just after the fourth:
        # three profiles, the range and the frame follow.
        t0, t1 = got[1]["t"] - 300, got[3]["t"] + 300
        n = shown(wd)
        slack = drag(wd, t0, t1)
        after(wd, n, "a drag shows a new range")
        f, t = ns_ms(body(wd, "from")), ns_ms(body(wd, "to"))
        check("drag: the range is the one dragged (%.0f..%.0f ms, want %.0f..%.0f +- %.0f)" % (
            f, t, t0, t1, 2 * slack), abs(f - t0) <= 2 * slack + 1 and abs(t - t1) <= 2 * slack + 1)
        check("drag: three points (%s)" % body(wd, "points"), body(wd, "points") == "3")
        view = body(wd, "view")
        check("drag: the frame shows the range", "from=%s&to=%s" % (body(wd, "from"), body(wd, "to")) in view,
              view)
        check("drag: the address holds the range", wd.run("return location.search").find(
            "from=" + body(wd, "from")) >= 0)
        check("drag: and the frame draws it", bool(frame_data(wd)))
        n = shown(wd)
        wd.run("history.back()")
        after(wd, n, "Back shows the view before")
        check("Back: the range before the drag", body(wd, "from") == first and body(wd, "to") == last,
              (body(wd, "from"), first))
        # A diff against the range before, when nothing is stored before
        # it: the range alone, and the page says why (not the frame a 404).
        n = shown(wd)
        wd.click(wd.find("#diff"))
        after(wd, n, "the diff is asked for")
        st = wd.run("return document.getElementById('status').textContent")
        check("diff with nothing before the range: the range alone, said (%s)" % st,
              "base_from" not in body(wd, "view") and "nothing stored in the range before" in st and
              "diff=1" in wd.run("return location.search"))

    # ---- the heap grows: A against B -----------------------------------------

    def compare(self, wd):
        before = rows(self.base, "heap", "memory")
        os.kill(self.hpid, signal.SIGUSR1)
        until("the heap target's late allocation", lambda: "late done" in open(self.heap_out).read(), 20)
        grown = time.time_ns()
        got = until("three heap scrapes after it", lambda: len(
            [r for r in rows(self.base, "heap", "memory") if int(r["time_ns"]) > grown]) >= 3 and
            rows(self.base, "heap", "memory"))
        if not got or len(before) < 3:
            return
        later = [r for r in got if int(r["time_ns"]) > grown]
        url = self.base + "?job=heap&type=memory&from=%s&to=%s" % (got[0]["time_ns"], got[-1]["time_ns"])
        wd.call("POST", "/window/rect", {"width": 1400, "height": 1500})
        open_page(wd, url, "the heap's whole range is shown")
        n = shown(wd)
        wd.click(wd.find("#compare"))
        after(wd, n, "compare is on")
        # A: the last three scrapes before the growth; B: those after.
        n = shown(wd)
        drag(wd, before[-3]["t"] - 200, before[-1]["t"] + 200)
        after(wd, n, "A is picked")
        n = shown(wd)
        drag(wd, later[0]["t"] - 200, later[-1]["t"] + 200, shift=True)
        after(wd, n, "Shift+drag picks B")
        va, vb_, v = body(wd, "viewA"), body(wd, "viewB"), body(wd, "view")
        check("compare: A and B each in a frame, the diff below (%s)" % v,
              va and vb_ and "base_from=" in v and va.split("&from=")[1].split("&")[0] in v.split("base_from=")[1])
        a, b = frame_data(wd, "view-a", "viewA"), frame_data(wd, "view-b", "viewB")
        ta, tb = a and total(a, "inuse_space"), b and total(b, "inuse_space")
        check("compare: A reads 8 MiB (%s)" % ta, near(ta, 8 * MiB, 0.05))
        check("compare: B reads 10 MiB (%s)" % tb, near(tb, 10 * MiB, 0.05))
        d = frame_data(wd)
        if d:
            check("compare: the diff is B against A", d["diff"] and near(total(d, "inuse_space"), 10 * MiB, 0.05)
                  and near(total(d, "inuse_space", base=True), 8 * MiB, 0.05))
            k = node_of(d, "late_alloc")
            grew = k >= 0 and (total(d, "inuse_space", k), total(d, "inuse_space", k, base=True))
            check("compare: late_alloc grew by 2 MiB, from nothing (%s)" % (grew,),
                  grew and near(grew[0], 2 * MiB, 0.05) and grew[1] == 0)
        check("compare: the frames' titles say which is the base", "base A, new B" in wd.run(
            "return document.getElementById('title-view').textContent"))
        time.sleep(0.5)
        wd.screenshot(self.shot)

        # The address reopens the same view.
        href = wd.run("return location.href")
        PICKS = ("return ['job', 'instance', 'type', 'range', 'mode', 'selector', 'a_from', 'b_to']"
                 ".map(id => document.getElementById(id).value)"
                 ".concat([document.getElementById('compare').checked, document.body.dataset.view,"
                 " document.body.dataset.viewA, document.body.dataset.viewB]);")
        picks = wd.run(PICKS)
        open_page(wd, href, "the address is shown again")
        frame_data(wd)
        again = wd.run(PICKS)
        check("the address reopens the same view (same frames, same picks)", again == picks, (again, picks))

        # The mode picker: latest, in the frames' addresses.
        n = shown(wd)
        wd.run("var m = document.getElementById('mode'); m.value = 'latest'; m.dispatchEvent(new Event('change'));")
        after(wd, n, "mode=latest is shown")
        check("mode: latest in every frame and the address", all(
            "mode=latest" in body(wd, k) for k in ("view", "viewA", "viewB")) and
            "mode=latest" in wd.run("return location.search"))
        b = frame_data(wd, "view-b", "viewB")
        check("mode latest: B's last scrape, 10 MiB", b and near(total(b, "inuse_space"), 10 * MiB, 0.05))

        # A malformed selector: the 400's line in the status.
        n = shown(wd)
        sel = wd.find("#selector")
        wd.call("POST", "/element/%s/value" % sel, {"text": "{thread=worker}"})
        wd.click(wd.find("#show"))
        after(wd, n, "the selector is sent")
        st = wd.run("return [document.getElementById('status').textContent, document.getElementById('status').className]")
        check("selector: a malformed one's 400 line in the status (%s)" % st[0],
              st[0].startswith("400 bad selector at column 9") and st[1] == "error")
        check("selector: in the address", "selector=%7Bthread%3Dworker%7D" in wd.run("return location.search"))
        wd.call("POST", "/window/rect", {"width": 1280, "height": 900})

    # ---- block: the contention measured --------------------------------------

    def block(self, wd):
        until("two block scrapes before the round", lambda: len(rows(self.base, "lock", "block")) >= 2)
        os.kill(self.lpid, signal.SIGUSR1)
        until("the round ended", lambda: "round 1 " in open(self.lock_out).read(), 30)
        ended = time.time_ns()
        got = until("two block scrapes after the round", lambda: len(
            [r for r in rows(self.base, "lock", "block") if int(r["time_ns"]) > ended]) >= 2 and
            rows(self.base, "lock", "block"))
        truth = 0
        for ln in open(self.lock_out):
            f = ln.split()
            if len(f) > 2 and f[0] == "round" and f[1] == "1":
                truth = sum(int(kv.split("=")[1]) for kv in f[2:] if kv.split("=")[0] in ("wait_ns", "cond_ns"))
        if not got or not truth:
            return
        url = self.base + "?job=lock&type=block&from=%s&to=%s" % (got[0]["time_ns"], got[-1]["time_ns"])
        open_page(wd, url, "the block range is shown")
        data = frame_data(wd)
        delay = data and total(data, "delay")
        check("block: the frame's delay is the round's contention (%s ns, want %d +-10 %%)" % (delay, truth),
              near(delay, truth, 0.10))
        pts = line(wd)
        s = sum(y * (x - px_) / 1000 for (px_, _), (x, y) in zip(pts, pts[1:]) if y is not None) * 1e9
        check("block: the line's values times their windows add up to it (%.0f ns)" % s, near(s, truth, 0.10))
        check("block: the y axis is contention seconds per second (s/s)",
              body(wd, "ytitle") == "contention seconds per second" and body(wd, "yunit") == "s/s")
        ticks = json.loads(body(wd, "yticks") or "[]")
        check("block: the y ticks carry s/s (%s)" % ticks, ticks and all(t.endswith(" s/s") for t in ticks))

    # ---- the in-process viewer keeps its state in its address ---------------

    def viewer(self, wd):
        ui = "http://%s/debug/pprof/ui/" % self.heap
        wd.call("POST", "/url", {"url": ui + "?profile=heap&show=now&sample=alloc_space&search=leak_big&layout=icicle"})
        ok = wait(wd, "return document.body.dataset.ready == '1' && document.body.dataset.loaded",
                  "the viewer draws the addressed profile")
        state = lambda: wd.run("return [document.getElementById('ui-name').value, document.body.dataset.type,"
                               " document.body.dataset.layout, document.getElementById('search').value]")
        check("viewer: the address's profile, sample, layout and search (%s)" % (state(),),
              ok and state() == ["heap", "alloc_space", "icicle", "leak_big"])
        # A change is written to the address; a reload keeps it.
        wd.click(wd.find("#layout"))
        wd.run("var s = document.getElementById('type'); s.value = [...s.options].find(o => o.textContent"
               ".startsWith('inuse_space')).value; s.dispatchEvent(new Event('change'));")
        search = wd.run("return location.search")
        check("viewer: the address follows the view (%s)" % search,
              "sample=inuse_space" in search and "layout=icicle" not in search and "search=leak_big" in search)
        wd.call("POST", "/refresh", {})
        ok = wait(wd, "return document.body.dataset.ready == '1' && document.body.dataset.loaded",
                  "the viewer draws after a reload")
        check("viewer: a reload keeps the state (%s)" % (state(),),
              ok and state() == ["heap", "inuse_space", "flame", "leak_big"])
        # Another profile is a new entry; Back shows the heap as it was.
        n = int(body(wd, "loaded") or 0)
        wd.run("var s = document.getElementById('ui-name'); s.value = 'goroutine';"
               "s.dispatchEvent(new Event('change'));")
        wd.click(wd.find("#ui-load"))
        wait(wd, "return +document.body.dataset.loaded > arguments[0] && document.body.dataset.ready == '1'",
             "the threads are drawn", n)
        check("viewer: another profile in the address", "profile=goroutine" in wd.run("return location.search"))
        wd.run("history.back()")
        wait(wd, "return +document.body.dataset.loaded > arguments[0] && document.body.dataset.ready == '1'",
             "Back draws the heap again", n + 1)
        check("viewer: Back shows the heap as it was (%s)" % (state(),),
              state() == ["heap", "inuse_space", "flame", "leak_big"])

    # ---- the heap target killed -----------------------------------------------

    def killed(self, wd):
        os.kill(self.hpid, signal.SIGTERM)
        gone = time.time_ns()
        until("two failed heap scrapes", lambda: len(api(self.base, "api/scrapes?job=heap&from=%d" % gone)
                                                     ["failures"]) >= 2, 30)
        open_page(wd, self.base + "?job=heap&type=memory&range=5m", "the heap's last minutes are shown")
        gaps, downs = int(body(wd, "gaps") or 0), int(body(wd, "downs") or 0)
        check("killed: its failed scrapes marked (%d) and its going down (%d)" % (gaps, downs),
              gaps >= 2 and downs == 1)
        marks = wd.run("var c = Chart.getChart(document.getElementById('chart'));"
                       "return c.data.datasets.filter(d => d.label == 'failed scrape' || d.label == 'target down')"
                       ".map(d => d.data.map(p => [d.label, p.ev.reason, p.ev.error]));")
        flat = [m for d in marks for m in d]
        check("killed: each mark has its reason and error (%s)" % (flat[:1],), flat and all(
            m[1] == "connection_refused" and "onnect" in m[2] for m in flat))
        check("killed: the line stops where it went down", None in [p[1] for p in line(wd)])
        # The tooltip of a mark says why.
        x, y = wd.run("var c = Chart.getChart(document.getElementById('chart')), i = c.data.datasets"
                      ".findIndex(d => d.label == 'target down'), p = c.getDatasetMeta(i).data[0],"
                      " r = c.canvas.getBoundingClientRect(); return [r.left + p.x, r.top + p.y];")
        wd.hover(x, y)
        tip = wait(wd, "var t = Chart.getChart(document.getElementById('chart')).tooltip;"
                   "return t && t.opacity > 0 && t.body && t.body.map(b => b.lines.concat(b.after).join(' ')).join(' ');",
                   "the down mark's tooltip")
        check("killed: the down mark's tooltip names the reason and error (%s)" % tip,
              tip and "connection_refused" in tip and "onnect" in tip)


def limit(base, wd):
    """Served with cprof collect --merge-limit 2: a range of more profiles
    is a 400 in the frame, and the status says that line, not "N profiles
    merged"; a range of two merges."""
    got = rows(base, "heap", "memory")
    check("limit: more than 2 heap profiles stored (%d)" % len(got), len(got) > 2)
    if len(got) <= 2:
        return
    status = "var s = document.getElementById('status'); return [s.textContent, s.className];"
    open_page(wd, base + "?job=heap&type=memory&from=%s&to=%s" % (got[0]["time_ns"], got[-1]["time_ns"]),
              "a range over the limit is shown")
    st = wd.run(status)
    check("limit: the status is the frame's 400 line (%s)" % st[0],
          st[0].startswith("400 the range holds more than 2 profiles") and st[1] == "error")
    text = wd.run("var d = document.getElementById('view').contentDocument;"
                  "return d && d.body ? d.body.textContent.trim() : '';")
    check("limit: the frame shows that line (%s)" % text, text == st[0])
    open_page(wd, base + "?job=heap&type=memory&from=%s&to=%s" % (got[0]["time_ns"], got[1]["time_ns"]),
              "a range of two is shown")
    st = wd.run(status)
    check("limit: a range of two is merged, and said (%s)" % st[0],
          st[0].startswith("2 profiles merged") and st[1] == "")
    check("limit: and drawn", bool(frame_data(wd)))


def main():
    if sys.argv[1] == "limit":  # limit DIR BASE_URL
        return vb.drive("collect_page limit", sys.argv[2], lambda wd: limit(sys.argv[3], wd))
    run = Run(sys.argv)
    return vb.drive("collect_page", run.dir, run.heap_range, run.compare, run.block, run.viewer, run.killed)


if __name__ == "__main__":
    sys.exit(main())

"""Drives headless Chromium through chromedriver's WebDriver HTTP API
(W3C WebDriver, with nothing but Python's standard library) over viewer pages
that tests/ui/viewer_page.c wrote, and checks what a person would see:

    viewer_browser.py DIR

DIR holds page.html, diff.html and big.html; screenshots are written there.
Prints one line per check ("ok ..." or "FAIL ...") and exits 1 if any failed.
"""
import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zlib

HOT = "hot_function<std::map<int, char>>&"
EVIL = "</script><script>window.__pwned=1;alert(1)</script>"

passes = 0
fails = 0


def check(what, ok, detail=""):
    global passes, fails
    if ok:
        passes += 1
        print("ok   " + what)
    else:
        fails += 1
        print("FAIL " + what + (": " + str(detail) if detail != "" else ""), file=sys.stderr)


class WebDriver:
    def __init__(self, port):
        self.base = "http://127.0.0.1:%d" % port
        self.session = None

    def call(self, method, path, body=None):
        url = self.base + (("/session/" + self.session) if self.session else "") + path
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return json.loads(r.read())["value"]
        except urllib.error.HTTPError as e:
            value = json.loads(e.read())["value"]
            raise RuntimeError("%s %s: %s: %s" % (method, path, value.get("error"),
                                                  value.get("message", "")[:300]))

    def run(self, script, *args):
        return self.call("POST", "/execute/sync", {"script": script, "args": list(args)})

    def click_at(self, x, y):
        self.call("POST", "/actions", {"actions": [{
            "type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"},
            "actions": [{"type": "pointerMove", "x": int(x), "y": int(y), "origin": "viewport"},
                        {"type": "pointerDown", "button": 0},
                        {"type": "pointerUp", "button": 0}]}]})
        self.call("DELETE", "/actions")

    def hover(self, x, y):
        self.call("POST", "/actions", {"actions": [{
            "type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"},
            "actions": [{"type": "pointerMove", "x": int(x), "y": int(y), "origin": "viewport"}]}]})

    def key(self, key):
        self.call("POST", "/actions", {"actions": [{
            "type": "key", "id": "keyboard",
            "actions": [{"type": "keyDown", "value": key}, {"type": "keyUp", "value": key}]}]})
        self.call("DELETE", "/actions")

    def click(self, element):
        self.call("POST", "/element/%s/click" % element, {})

    def find(self, css):
        el = self.call("POST", "/element", {"using": "css selector", "value": css})
        return next(iter(el.values()))

    def screenshot(self, path):
        png = base64.b64decode(self.call("GET", "/screenshot"))
        with open(path, "wb") as f:
            f.write(png)
        return png


def wait(wd, script, what, limit, why="return document.body.dataset.error || ''"):
    """Polls script until it returns something true and returns that; at
    the limit, which only bounds a hang (no check depends on how long it
    took), a failed check with the page's error (why) and None."""
    end = time.time() + limit
    while time.time() < end:
        v = wd.run(script)
        if v:
            return v
        time.sleep(0.1)
    check(what, False, "not within %d s; page error: %s" % (limit, wd.run(why)))
    return None


def png_pixels(png):
    """The RGB(A) rows of an 8-bit PNG, unfiltered (PNG spec, section 9)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height, ctype = 8, b"", 0, 0, 0
    while pos < len(png):
        n = int.from_bytes(png[pos:pos + 4], "big")
        kind, body = png[pos + 4:pos + 8], png[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            width, height = int.from_bytes(body[0:4], "big"), int.from_bytes(body[4:8], "big")
            assert body[8] == 8, "bit depth"
            ctype = body[9]
        elif kind == b"IDAT":
            idat += body
    bpp = {2: 3, 6: 4}[ctype]
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 255
        rows.append(line)
        prev = line
    return width, height, bpp, rows


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def check_page(wd, d):
    wd.call("POST", "/url", {"url": "file://" + os.path.join(d, "page.html")})
    ready = wd.run("return document.body.dataset.ready || document.body.dataset.error || ''")
    check("the page's script ran", ready == "1", ready)

    # (a) A screenshot, not blank: the flame graph's warm colours are in it.
    png = wd.screenshot(os.path.join(d, "page.png"))
    width, height, bpp, rows = png_pixels(png)
    colours, warm = set(), 0
    for row in rows[::4]:
        for x in range(0, width * bpp, bpp * 4):
            r, g, b = row[x], row[x + 1], row[x + 2]
            colours.add((r, g, b))
            if r > 200 and b < 120 and r - b > 100:
                warm += 1
    check("the screenshot has many colours", len(colours) > 50, len(colours))
    check("the screenshot has flame-coloured frames", warm > 100, warm)

    # (b) The DOM after the script: names as text, nothing injected.
    names = wd.run("return Array.from(document.querySelectorAll('#top td.name'), e => e.textContent)")
    check("the top table lists the hot function", HOT in names, names)
    check("the top table's first row is the hot function (by flat)", names[:1] == [HOT], names[:3])
    check("the malicious name is shown as text", EVIL in names, names)
    check("a newline in a name shows escaped", "line1\\nline2" in names, names)
    check("bytes that are not UTF-8 show as U+FFFD", "bad\ufffd\ufffd caf\u00e9" in names, names)
    check("quotes and ampersands show as they are", "say \"hi\" & 'bye'" in names, names)
    injected = wd.run("return [window.__pwned === undefined, document.scripts.length,"
                      " document.querySelectorAll('#top script, #crumbs script').length]")
    check("the malicious name ran nothing", injected == [True, 2, 0], injected)
    try:
        text = wd.call("GET", "/alert/text")
        check("no alert is open", False, text)
    except RuntimeError as e:
        check("no alert is open", "no such alert" in str(e), e)
    check("the document title is escaped text", wd.run("return document.title") == "heap </title>",
          wd.run("return document.title"))

    # Values with pprof's units: inuse_space (the default, the last type)
    # in bytes, alloc_objects as a plain count.
    row = wd.run("return Array.from(document.querySelector('#top tbody tr').cells, c => c.textContent)")
    check("the default type is the last, inuse_space", wd.run("return document.body.dataset.type") == "inuse_space")
    check("flat and cum in MB, with pprof's percentages", row[:4] == ["2MB", "73.99%", "2.05MB", "75.79%"], row)
    wd.run("var s = document.getElementById('type'); s.value = '0'; s.dispatchEvent(new Event('change'))")
    row = wd.run("return Array.from(document.querySelector('#top tbody tr').cells, c => c.textContent)")
    check("alloc_objects: counts without a unit", row[0] == "1600" and row[4] == HOT, row)
    wd.run("var s = document.getElementById('type'); s.value = '3'; s.dispatchEvent(new Event('change'))")

    # Sorting by a header: by name, ascending.
    wd.click(wd.find("#top th[data-key=name]"))
    names = wd.run("return Array.from(document.querySelectorAll('#top td.name'), e => e.textContent)")
    check("a click on the name header sorts by name", names == sorted(names) and names[0] == EVIL, names)

    # (c) A click on the hot function's frame zooms into it.
    frames = wd.run("return window.cprofViewer.frames(arguments[0])", HOT)
    check("the hot function has two frames drawn", len(frames) == 2, frames)
    f = max(frames, key=lambda f: f["w"])
    wd.hover(f["x"] + f["w"] / 2, f["y"] + f["h"] / 2)
    tip = wd.run("var t = document.getElementById('tooltip'); return t.hidden ? '' : t.textContent")
    check("hovering shows name, file, value and share", HOT in tip and "hot.cc" in tip and
          "1.55MB" in tip and "% of total" in tip, tip)
    wd.click_at(f["x"] + f["w"] / 2, f["y"] + f["h"] / 2)
    zoomed = wd.run("return document.body.dataset.zoom")
    check("a click on the frame zooms into it", zoomed == HOT, zoomed)
    crumbs = wd.run("return Array.from(document.querySelectorAll('#crumbs button'), b => b.textContent)")
    check("the zoom path shows root, main and the function", crumbs == ["root", "main", HOT], crumbs)
    after = wd.run("return [window.cprofViewer.frames(arguments[0]),"
                   " document.getElementById('flame').getBoundingClientRect().width]", HOT)
    full = [x for x in after[0] if not x["collapsed"]]
    check("the zoomed frame spans the graph", len(full) == 1 and abs(full[0]["w"] - after[1]) < 1, after)
    callers = wd.run("return window.cprofViewer.frames('main')")
    check("its caller is shown collapsed, full width", len(callers) == 1 and callers[0]["collapsed"], callers)
    wd.screenshot(os.path.join(d, "zoomed.png"))

    # Escape resets the zoom.
    wd.key("\ue00c")
    check("Escape resets the zoom", wd.run("return document.body.dataset.zoom") == "",
          wd.run("return document.body.dataset.zoom"))

    # Search: a regex highlights the frames and shows their share.
    wd.call("POST", "/element/%s/value" % wd.find("#search"), {"text": "^hot_"})
    time.sleep(0.2)
    status = wd.run("return document.getElementById('status').textContent")
    check("a search shows the matched share", status.startswith("Matched: 2.05MB of 2.70MB (75.79%)"), status)
    rows = wd.run("return document.querySelectorAll('#top tbody tr').length")
    check("a search narrows the table", rows == 1, rows)
    wd.click(wd.find("#reset"))

    # A click on a table row zooms into that function's heaviest frame.
    wd.click(wd.find("#top tbody tr[data-name=cold_function]"))
    check("a click on a row zooms into its function",
          wd.run("return document.body.dataset.zoom") == "cold_function")
    wd.click(wd.find("#reset"))

    # The icicle: the root on top.
    wd.click(wd.find("#layout"))
    root = wd.run("return [window.cprofViewer.frames('root')[0].y - "
                  "document.getElementById('flame').getBoundingClientRect().top, document.body.dataset.layout]")
    check("the icicle puts the root on top", root == [0, "icicle"], root)

    # A phone's width: the table goes under the graph, nothing overflows.
    wd.call("POST", "/window/rect", {"width": 400, "height": 800})
    time.sleep(0.3)
    phone = wd.run("var g = document.getElementById('graph-pane').getBoundingClientRect(),"
                   " t = document.getElementById('table-pane').getBoundingClientRect();"
                   " return [t.top >= g.bottom, document.documentElement.scrollWidth <= window.innerWidth,"
                   " document.getElementById('flame').width > 0]")
    check("on a phone the table is under the graph and nothing is wider than the screen",
          phone == [True, True, True], phone)
    wd.screenshot(os.path.join(d, "phone.png"))
    wd.call("POST", "/window/rect", {"width": 1280, "height": 900})


def check_diff(wd, d):
    wd.call("POST", "/url", {"url": "file://" + os.path.join(d, "diff.html")})
    check("the diff page's script ran", wd.run("return document.body.dataset.ready") == "1")
    heads = wd.run("return Array.from(document.querySelectorAll('#top th'), e => e.textContent)")
    check("the diff table has delta columns", "flat \u0394" in heads and "cum \u0394" in heads, heads)
    # The hot function grew (BASE is half of NEW), the cold one shrank
    # (BASE is three times NEW): red and blue where they are drawn.
    pixels = wd.run("""
        var c = document.getElementById('flame'), b = c.getBoundingClientRect(),
            x = c.getContext('2d'), k = c.width / b.width;
        function at(name) {
          var f = window.cprofViewer.frames(name)[0];
          return Array.from(x.getImageData(Math.round((f.x - b.left + 2) * k),
                                           Math.round((f.y - b.top + f.h / 2) * k), 1, 1).data);
        }
        return [at(arguments[0]), at('cold_function')];""", HOT)
    hot, cold = pixels
    check("a frame that grew is red", hot[0] > hot[2] + 80, hot)
    check("a frame that shrank is blue", cold[2] > cold[0] + 80, cold)
    row = wd.run("return Array.from(document.querySelector('#top tr[data-name=cold_function]').cells,"
                 " c => c.textContent + '|' + c.className)")
    check("the table shows the shrinking function's delta", row[1] == "-400kB|down", row)
    wd.screenshot(os.path.join(d, "diff.png"))


def check_big(wd, d):
    start = time.time()
    wd.call("POST", "/url", {"url": "file://" + os.path.join(d, "big.html")})
    state = wd.run("return [document.body.dataset.ready, document.getElementById('meta').textContent,"
                   " document.querySelectorAll('#top tbody tr').length]")
    check("a 100k-frame tree loads", state[0] == "1" and "99999 frames" in state[1] and state[2] > 100, state)
    print("     (big.html loaded in %.1f s)" % (time.time() - start))


def drive(name, d, *steps):
    """Runs each step (called with the WebDriver) in one headless Chromium
    session, with chromedriver's log and the browser's profile in d; prints
    the tally as "NAME: N passed, M failed" and returns the exit code."""
    port = free_port()
    profile = os.path.join(d, "chromium-profile")
    with open(os.path.join(d, "chromedriver.log"), "w") as log:
        drv = subprocess.Popen(["chromedriver", "--port=%d" % port], stdout=log, stderr=subprocess.STDOUT)
        wd = WebDriver(port)
        try:
            for _ in range(100):
                try:
                    if wd.call("GET", "/status").get("ready"):
                        break
                except (OSError, RuntimeError):
                    pass
                time.sleep(0.1)
            caps = {"browserName": "chrome", "goog:chromeOptions": {
                "binary": os.environ.get("CHROMIUM", "/usr/bin/chromium"),
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,900",
                         "--user-data-dir=" + profile, "--force-device-scale-factor=1"]}}
            wd.session = wd.call("POST", "/session", {"capabilities": {"alwaysMatch": caps}})["sessionId"]
            try:
                for step in steps:
                    step(wd)
            finally:
                wd.call("DELETE", "")
        except (RuntimeError, OSError) as e:
            check("WebDriver", False, e)
        finally:
            drv.terminate()
            drv.wait(10)
            shutil.rmtree(profile, ignore_errors=True)
    print("%s: %d passed, %d failed" % (name, passes, fails))
    return 1 if fails else 0


def main():
    d = sys.argv[1]
    return drive("viewer_browser", d, lambda wd: check_page(wd, d), lambda wd: check_diff(wd, d),
                 lambda wd: check_big(wd, d))


if __name__ == "__main__":
    sys.exit(main())

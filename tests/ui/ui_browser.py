"""Drives headless Chromium (chromedriver's WebDriver API, Python's standard
library only, through tests/ui/viewer_browser.py's client) over
/debug/pprof/ui/ of running programs, and checks what a person would see:

    ui_browser.py DIR TARGET_UI_URL NAMES_UI_URL SCREENSHOT

TARGET is tests/ui/programs/ui_target.c (hot_spin burns CPU, grow_heap's
heap grows); NAMES is tests/cli/names.cpp (names with '<', '>', '&', quotes,
0xff and ESC). Prints one line per check and exits 1 if any failed.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import viewer_browser as vb  # noqa: E402

check = vb.check
CPP = "void names::spin<names::Box<std::pair<int, char> > >(names::Box<std::pair<int, char> >&)"
WEIRD = "w<tag>&'\ufffd\\x1bx"
# names.cpp's thread: pthread_setname_np(t, "<tag>&\"\n\xff\x1b'xyz"), as the
# viewer shows it (control characters escaped, 0xff as U+FFFD).
THREAD = "<tag>&\"\\n\ufffd\\x1b'xyz"


def wait(wd, script, what, limit=90):
    return vb.wait(wd, script, what, limit,
                   "return document.body.dataset.uiError || document.body.dataset.error || ''")


def loaded(wd):
    return int(wd.run("return document.body.dataset.loaded || '0'"))


def pick(wd, name, mode="now", seconds=None):
    """Chooses a profile in the picker and presses Show; returns the count of
    profiles drawn before, to wait for the next."""
    n = loaded(wd)
    wd.run("var s = document.getElementById('ui-name'); s.value = arguments[0];"
           "s.dispatchEvent(new Event('change'));"
           "var m = document.getElementById('ui-mode'); m.value = arguments[1];"
           "m.dispatchEvent(new Event('change'));"
           "if (arguments[2]) { var i = document.getElementById('ui-seconds'); i.value = arguments[2];"
           "i.dispatchEvent(new Event('input')); }", name, mode, str(seconds or ""))
    wd.click(wd.find("#ui-load"))
    return n


def drawn(wd, before, what):
    return wait(wd, "return (+(document.body.dataset.loaded || 0) > %d && !document.body.dataset.loading)"
                " || !!document.body.dataset.uiError" % before, what) and loaded(wd) > before


def names(wd):
    return wd.run("return Array.from(document.querySelectorAll('#top td.name'), e => e.textContent)")


def check_target(wd, url, shot):
    wd.call("POST", "/url", {"url": url})
    ok = wait(wd, "return document.body.dataset.loaded", "the page draws a first profile")
    check("the page draws a first profile on its own", bool(ok))
    opts = wd.run("return Array.from(document.querySelectorAll('#ui-name option'), o => o.value)")
    check("the picker lists the registry's profiles and CPU",
          all(x in opts for x in ["heap", "allocs", "goroutine", "block", "mutex", "threadcreate", "profile"]),
          opts)

    # CPU for 2 seconds: a countdown while it records, then the hot function.
    before = pick(wd, "profile", seconds=2)
    cd = wait(wd, "return document.getElementById('ui-countdown').textContent", "a countdown shows", 10)
    check("a countdown shows while the CPU profile records", bool(cd) and "recording" in cd, cd)
    check("the CPU profile is drawn", drawn(wd, before, "the CPU profile is drawn"),
          wd.run("return document.body.dataset.uiError || ''"))
    check("the title says CPU profile", "CPU profile" in wd.run("return document.getElementById('title').textContent"))
    top = names(wd)
    check("the hot function is on the page, first by flat", top[:1] == ["hot_spin"], top[:5])
    href = wd.run("return document.getElementById('ui-download').getAttribute('href')")
    check("download links the raw CPU profile", href == "../profile?seconds=2", href)
    frames = wd.run("return window.cprofViewer.frames('hot_spin')")
    check("hot_spin has a frame drawn", len(frames) >= 1, frames)
    if frames:
        f = max(frames, key=lambda f: f["w"])
        wd.click_at(f["x"] + f["w"] / 2, f["y"] + f["h"] / 2)
        z = wd.run("return document.body.dataset.zoom")
        check("a click on the flame graph zooms into the frame", z == "hot_spin", z)
        crumbs = wd.run("return Array.from(document.querySelectorAll('#crumbs button'), b => b.textContent)")
        check("the zoom path ends at hot_spin", crumbs[-1:] == ["hot_spin"], crumbs)
    vb.png_pixels(wd.screenshot(shot))  # a PNG the reader can read
    check("the screenshot is saved", os.path.getsize(shot) > 10000, shot)

    # The heap: its four sample types in the viewer's selector.
    before = pick(wd, "heap")
    check("the heap is drawn", drawn(wd, before, "the heap is drawn"))
    types = wd.run("return Array.from(document.querySelectorAll('#type option'), o => o.textContent)")
    check("the heap's sample types are offered",
          [t.split(" ")[0] for t in types] == ["alloc_objects", "alloc_space", "inuse_objects", "inuse_space"],
          types)
    check("download links the raw heap profile",
          wd.run("return document.getElementById('ui-download').getAttribute('href')") == "../heap?debug=0")

    # Two heap snapshots 2 s apart: grow_heap grew.
    before = pick(wd, "heap", mode="diff", seconds=2)
    check("the heap diff is drawn", drawn(wd, before, "the heap diff is drawn"))
    title = wd.run("return document.getElementById('title').textContent")
    check("the title says diff", "diff" in title and "2 s ago" in title, title)
    row = wd.run("var r = document.querySelector('#top tbody tr[data-name=grow_heap]');"
                 "return r ? Array.from(r.cells, c => [c.textContent, c.className]) : []")
    check("grow_heap's row says it grew", len(row) == 6 and row[4][0].startswith("+") and
          "up" in row[4][1] and row[2][0] != "0", row)
    frames = wd.run("return window.cprofViewer.frames('grow_heap')")
    check("grow_heap is drawn in the diff", len(frames) >= 1, frames)

    # A bad value is said, not drawn.
    n = loaded(wd)
    wd.run("var i = document.getElementById('ui-seconds'); i.value = '0'")
    wd.click(wd.find("#ui-load"))
    # The number field's own validation (min 1) or the picker's check.
    err = wd.run("return document.getElementById('ui-error').textContent ||"
                 " (document.getElementById('ui-seconds').validity.valid ? '' : 'invalid')")
    check("a bad seconds value is refused on the page", err != "" and loaded(wd) == n, err)


def check_names(wd, url):
    wd.call("POST", "/url", {"url": url})
    wait(wd, "return document.body.dataset.loaded", "the names page draws")
    before = pick(wd, "profile", seconds=1)
    check("the names program's CPU profile is drawn", drawn(wd, before, "names: CPU drawn"))
    top = names(wd)
    check("the C++ template's name is shown as it is", CPP in top, top[:6])
    check("the symbol with <, >, &, a quote, 0xff and ESC is shown escaped", WEIRD in top, top[:6])
    frames = wd.run("return window.cprofViewer.frames(arguments[0])", WEIRD)
    check("the escaped symbol is drawn on the flame graph", len(frames) >= 1, frames)
    injected = wd.run("return [document.scripts.length, document.querySelectorAll('#top b, #top tag').length]")
    check("no name became markup", injected == [2, 0], injected)

    # Rooted by the thread label: the thread's name, which holds '<tag>&', a
    # quote, a newline, 0xff and ESC, is a frame of its own, shown as text.
    keys = wd.run("return Array.from(document.querySelectorAll('#ui-root option'), o => o.value)")
    check("Root by offers the CPU profile's thread label", "thread" in keys, keys)
    wd.run("document.getElementById('ui-root').value = 'thread'")
    before = pick(wd, "profile", seconds=1)
    check("the CPU profile rooted by thread is drawn", drawn(wd, before, "names: rooted by thread"),
          wd.run("return document.body.dataset.uiError || ''"))
    top = names(wd)
    check("the thread's name is a row, shown as text", THREAD in top, top[:8])
    frames = wd.run("return window.cprofViewer.frames(arguments[0])", THREAD)
    check("the thread's name is a frame right under the root", any(f["depth"] == 1 for f in frames),
          frames)
    injected = wd.run("return [document.scripts.length, document.querySelectorAll('#top tag, #graph tag').length]")
    check("the thread's name became no markup", injected == [2, 0], injected)


def main():
    d, target, names_url, shot = sys.argv[1:5]
    return vb.drive("ui_browser", d, lambda wd: check_target(wd, target, shot),
                    lambda wd: check_names(wd, names_url))


if __name__ == "__main__":
    sys.exit(main())

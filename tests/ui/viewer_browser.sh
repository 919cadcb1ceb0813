#!/usr/bin/env bash
# The viewer page in a real browser: headless Chromium, driven through
# chromedriver's WebDriver API by tests/ui/viewer_browser.py (Python's
# standard library only), opens pages tests/ui/viewer_page.c wrote and
# checks what a person would see: a drawn flame graph, names shown as text
# (one of them a </script> with a script after it, which must not run), a
# click that zooms, search, sorting, sample types, a diff's colours, a
# phone's layout, and a 100k-frame tree.
. "$CPROF_SOURCE_DIR/tests/integration/lib.sh"

if ! command -v chromedriver >/dev/null || ! [ -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
  skip "chromium and chromium-driver are not installed (scripts/install-deps.sh test)"
fi
command -v python3 >/dev/null || skip "python3 is not installed"

check "viewer_page writes a page" "$B/tests/ui/viewer_page" "$T/page.html"
check "viewer_page writes a diff page" "$B/tests/ui/viewer_page" --diff "$T/diff.html"
check "viewer_page writes a 100k-frame page" "$B/tests/ui/viewer_page" --big 100000 "$T/big.html"
check "the page holds one data element and two scripts" \
  test "$(grep -o '</script>' "$T/page.html" | wc -l)" = 2

check "Chromium shows the page as it should" python3 "$CPROF_SOURCE_DIR/tests/ui/viewer_browser.py" "$T"
# VIEWER_SHOTS=DIR keeps the screenshots, to look at.
if [ -n "${VIEWER_SHOTS:-}" ]; then cp "$T"/*.png "$VIEWER_SHOTS"/ 2>/dev/null || true; fi
finish

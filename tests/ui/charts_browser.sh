#!/usr/bin/env bash
# The live charts page in a real browser: headless Chromium, driven through
# chromedriver's WebDriver API by tests/ui/charts_browser.py, opens the page
# tests/ui/charts_page.c wrote (the library's bytes) as
# tests/ui/charts_fixture.py serves it beside a made-up metrics ring that
# grows a point a second, then as the demo server serves it with its own
# sampler's data, and checks that every chart fills and follows the
# data, the window selector, the units, that nothing comes from elsewhere,
# and a phone's layout; then a process tree's owner (a prefork master):
# its "Process tree" section drawn, a line per process. The screenshots
# are kept in $CPROF_BUILD_DIR/artifacts/ (charts.png, tree.png).
. "$CPROF_SOURCE_DIR/tests/integration/lib.sh"

if ! command -v chromedriver >/dev/null || ! [ -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
  skip "chromium and chromium-driver are not installed (scripts/install-deps.sh test)"
fi
command -v python3 >/dev/null || skip "python3 is not installed"

check "charts_page writes the page" "$B/tests/ui/charts_page" "$T/charts.html"
check "the page holds two scripts (Chart.js and its own), nothing ends one early" \
  test "$(grep -o '</script>' "$T/charts.html" | wc -l)" = 2
check "the page fetches no script or stylesheet" \
  test "$(grep -Eic '<script[^>]* src=|<link[^>]* href=' "$T/charts.html")" = 0

python3 "$CPROF_SOURCE_DIR/tests/ui/charts_fixture.py" "$T/charts.html" "$T/port" 2>"$T/fixture.log" &
for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.1; done
[ -s "$T/port" ] || { cat "$T/fixture.log" >&2; fail "the fixture server started"; finish; }

check "Chromium shows live charts (made-up data)" \
  python3 "$CPROF_SOURCE_DIR/tests/ui/charts_browser.py" "http://127.0.0.1:$(cat "$T/port")" "$T/fixture-out"

# The same against a running program: its own sampler's data, the RSS
# chart's last value equal to /debug/charts/data's.
start demo -- "$B/examples/demo_server" --seconds 60
# Ten seconds of points first, so that the screenshot's lines are long
# enough to count.
for _ in $(seq 1 150); do
  n=$(curl -s "http://$ADDR/debug/charts/data" | python3 -c 'import json, sys; print(len(json.load(sys.stdin)["t"]))' 2>/dev/null || echo 0)
  [ "$n" -ge 10 ] && break
  sleep 0.1
done
check "Chromium shows live charts of a running program" \
  python3 "$CPROF_SOURCE_DIR/tests/ui/charts_browser.py" "http://$ADDR" "$T/out"
stop

# A process tree's owner (issue 31): a prefork master and 3 busy workers;
# the page shows the tree's section, a line per process.
start tree LD_PRELOAD="$LIB" -- "$B/tests/host/host_prefork" 3 busy 90
prefork_workers tree 3
for _ in $(seq 1 100); do
  curl -s "http://$ADDR/metrics" | grep -q '^cprof_tree_processes 4$' && break
  sleep 0.1
done
check "Chromium shows the process tree's section" \
  python3 "$CPROF_SOURCE_DIR/tests/ui/charts_browser.py" "http://$ADDR" "$T/out" --tree "$PID" "${W[@]}"
stop
mkdir -p "$B/artifacts"
cp "$T/out/charts.png" "$T/out/charts-phone.png" "$T/out/tree.png" "$B/artifacts/" 2>/dev/null || true
finish

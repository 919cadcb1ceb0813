#!/usr/bin/env bash
# /debug/pprof/ui/, the viewer served by the profiled program: first with
# curl (the page, the list of profiles, ui/data's JSON and its 400s), then in
# headless Chromium driven by tests/ui/ui_browser.py: a CPU profile of a
# known workload picked with 2 seconds (a countdown, the hot function on the
# page, a click that zooms), the heap's sample types, the diff of two heap
# snapshots (the growing function grew), and names that are not plain
# (tests/cli/names.cpp) shown as text. The screenshot goes to
# $CPROF_BUILD_DIR/artifacts/ui.png.
. "$CPROF_SOURCE_DIR/tests/integration/lib.sh"

start target --ready LD_PRELOAD="$LIB" CPROF_HEAP_RATE=4096 -- "$B/tests/ui/ui_target"
U="http://$ADDR/debug/pprof/ui"

check "ui/ is a page" test "$(http "$U/")" = 200
check "ui/ is HTML" grep -qi '^content-type: text/html' "$T/headers"
check "ui/ holds the viewer and the picker" grep -q 'cprofView' "$T/body"
check "ui/ holds no profile data" \
  grep -q '<script type="application/json" id="profile-data"></script>' "$T/body"
check "ui redirects to ui/" test "$(http "$U")" = 301
check "the index links ui/" bash -c "curl -s 'http://$ADDR/debug/pprof/' | grep -q \"href='ui/'\""

check "ui/profiles lists the registry and the CPU profile" test "$(http "$U/profiles")" = 200
check "ui/profiles is JSON with heap, wall once, then the CPU recording" python3 -c '
import json, sys
names = [p["name"] for p in json.load(open(sys.argv[1]))]
sys.exit(0 if "heap" in names and "goroutine" in names and names.count("wall") == 1 and names[-1] == "profile" else 1)' "$T/body"

valid_json() {
  python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if d["version"] == 1 and d["nodes"][0] == -1 and d["types"] else 1)' "$T/body"
}
check "ui/data?name=heap is 200" test "$(http "$U/data?name=heap")" = 200
check "ui/data?name=heap is application/json" grep -qi '^content-type: application/json' "$T/headers"
check "ui/data?name=heap is the viewer's JSON" valid_json
check "ui/data?name=goroutine is 200" test "$(http "$U/data?name=goroutine")" = 200
check "ui/data?name=goroutine is the viewer's JSON" valid_json
check "ui/data?name=wall&seconds=1 is 200" test "$(http "$U/data?name=wall&seconds=1")" = 200
check "ui/data?name=wall&seconds=1 is the viewer's JSON, its type wall" eval \
  'valid_json && grep -q "\"wall\"" "$T/body"'
check "ui/data?name=heap&diff=1 is 200" test "$(http "$U/data?name=heap&diff=1")" = 200
check "ui/data?name=heap&diff=1 is a diff" python3 -c '
import json, sys
sys.exit(0 if json.load(open(sys.argv[1]))["diff"] is True else 1)' "$T/body"

one_line_400() { # URL REASON
  [ "$(http "$1")" = 400 ] && [ "$(wc -l <"$T/body")" = 1 ] && grep -qF -- "$2" "$T/body"
}
check "an unknown name is a 400 with one line" one_line_400 "$U/data?name=nope%0A%3Cb%3E" 'unknown profile "nope??b?"'
check "no name is a 400" one_line_400 "$U/data" 'missing "name"'
check "seconds=0 is a 400" one_line_400 "$U/data?name=profile&seconds=0" 'invalid value for "seconds"'
check "seconds=x is a 400" one_line_400 "$U/data?name=heap&seconds=x" 'invalid value for "seconds"'
check "diff=99999 is a 400" one_line_400 "$U/data?name=heap&diff=99999" 'invalid value for "diff"'
check "diff on the CPU profile is a 400" one_line_400 "$U/data?name=profile&diff=2" 'not the CPU profile'
check "diff on the wall profile is a 400" one_line_400 "$U/data?name=wall&diff=2" 'not the wall-clock profile'
check "an unknown ui path is a 404" test "$(http "$U/nope")" = 404

if ! command -v chromedriver >/dev/null || ! [ -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
  stop
  skip "chromium and chromium-driver are not installed (scripts/install-deps.sh test)"
fi

# names.cpp: a C++ template's name and a symbol with '<', '>', '&', a quote,
# 0xff and ESC (tests/cli/reports.sh builds it the same way).
mkdir "$T/names"
cp "$CPROF_SOURCE_DIR/tests/cli/names.cpp" "$CPROF_SOURCE_DIR/tests/cli/names_weird.c" "$T/names/"
(
  cd "$T/names"
  cc -O1 -fno-omit-frame-pointer -c names_weird.c -o names_weird.o
  c++ -g -O1 -fno-omit-frame-pointer -pthread -o names names.cpp names_weird.o
) || fail "building tests/cli/names.cpp"
TARGET=$ADDR
TPID=$PID
start names --ready LD_PRELOAD="$LIB" -- "$T/names/names"
mkdir -p "$B/artifacts"
check "Chromium shows /debug/pprof/ui/ as it should" \
  python3 "$CPROF_SOURCE_DIR/tests/ui/ui_browser.py" "$T" "http://$TARGET/debug/pprof/ui/" \
  "http://$ADDR/debug/pprof/ui/" "$B/artifacts/ui.png"
stop
stop "$TPID"
finish

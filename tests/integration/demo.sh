# The README's first command, run as a newcomer would (with a free port and
# a time limit), then the first go tool pprof command it prints (doc/tour.md's
# first too) against it.
. "$(dirname "$0")/lib.sh"

start demo CPROF_ADDR=127.0.0.1:0 DEMO_SECONDS=60 -- make -s -C "$CPROF_SOURCE_DIR" BUILD="$B" demo
for _ in $(seq 1 100); do has "$T/demo.out" 'Or try, in another terminal' && break; sleep 0.1; done
check "make demo prints the commands to try" has "$T/demo.out" "go tool pprof -top http://$ADDR/debug/pprof/goroutine"
# The pages it says to open (tests/ui/charts_browser.sh and ui_browser.sh
# look at them in Chromium).
for page in debug/charts/ debug/pprof/ui/; do
  check "make demo names http://ADDR/$page" has "$T/demo.out" "^  http://$ADDR/$page "
  check "... which is a page" [ "$(http "http://$ADDR/$page")" = 200 ]
done
pprof -top "http://$ADDR/debug/pprof/goroutine" >"$T/top" || fail "go tool pprof -top on the demo"
for f in burn_cpu allocate_buffers contend_on_lock wait_for_jobs; do
  check "-top names the demo's $f" has "$T/top" " $f\$"
done
check "-top reports the demo as the main file" has "$T/top" '^File: demo_server'
check "the goroutine profile of the demo is small" \
  bash -c "[ \$(curl -s 'http://$ADDR/debug/pprof/goroutine' | wc -c) -lt 20000 ]"
echo "demo goroutine profile: $(curl -s "http://$ADDR/debug/pprof/goroutine" | wc -c) bytes"

kill -TERM "$PID"
wait "$PID" 2>/dev/null || true
check "the demo stops cleanly on SIGTERM" has "$T/demo.out" '^cprof demo: stopped\.$'

# DEMO_SECONDS ends it by itself, for scripts.
rc=0
CPROF_ADDR=127.0.0.1:0 DEMO_SECONDS=1 timeout 60 make -s -C "$CPROF_SOURCE_DIR" BUILD="$B" demo >"$T/short.out" 2>&1 || rc=$?
check "DEMO_SECONDS=1 make demo ends by itself with status 0" [ $rc = 0 ]
check "DEMO_SECONDS=1 says so" has "$T/short.out" 'Stopping by itself after 1 s'
finish

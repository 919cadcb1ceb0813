# Signals sent to the process are the program's: cprof's threads, which
# exist before main, block them all, so a program that blocks SIGTERM and
# real-time signals and reads them from a signalfd gets every one, and a
# graceful shutdown stays graceful.
. "$(dirname "$0")/../integration/lib.sh"
P=$B/tests/host/host_signal_wait

# send NAME ENV...: starts the program, sends 10 real-time signals of each
# of SIGRTMIN..SIGRTMIN+4 and SIGRTMAX, fetching /goroutine in between when a
# server runs, then SIGTERM; the output and exit code go to $T/NAME.*.
send() {
  local name=$1
  shift
  : >"$T/$name.out"
  env "$@" "$P" >"$T/$name.out" 2>"$T/$name.err" &
  local pid=$!
  for _ in $(seq 1 100); do if has "$T/$name.out" '^ready$'; then break; fi; sleep 0.05; done
  local addr
  addr=$(sed -n 's|^cprof: serving http://\([^/]*\)/.*|\1|p' "$T/$name.err" | head -1)
  # (A program that died of one is seen by the checks, not here.)
  for sig in RTMIN RTMIN+1 RTMIN+2 RTMIN+3 RTMIN+4 RTMAX; do
    for _ in $(seq 1 10); do kill -s "$sig" "$pid" 2>/dev/null || true; done
    if [ -n "$addr" ]; then curl -s -o /dev/null "http://$addr/debug/pprof/goroutine?debug=2" || true; fi
  done
  kill -TERM "$pid" 2>/dev/null || true
  local rc=0
  timeout 10 tail --pid="$pid" -f /dev/null || rc=124
  wait "$pid" || rc=$?
  echo $rc >"$T/$name.rc"
}
send plain
check "without cprof: 60 real-time signals and SIGTERM read, exit 0" \
  bash -c "rc() { [ \$(cat '$T/plain.rc') = 0 ]; }; rc && grep -q '^real-time signals read: 60$' '$T/plain.out'"
send pre LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0
check "server on: SIGTERM read from the signalfd, exit code 0 (was 143)" rc_is pre 0
check "server on: same output, all 60 real-time signals read" same plain pre out
send out LD_PRELOAD="$LIB" CPROF_ADDR=0 CPROF_OUTPUT="$T/o"
check "CPROF_OUTPUT: exit code 0" rc_is out 0
check "CPROF_OUTPUT: same output" same plain out out
finish

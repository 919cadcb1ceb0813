# Real-time signals stay the program's while /goroutine captures threads
# with one of them: a program that blocks them all and reads them later gets
# every one it queued; a program that installs handlers on all of them after
# start finds them at SIG_DFL first and then gets every one of its signals,
# and no other; an unhandled real-time signal sent to the program ends it,
# even the one cprof captures with.
. "$(dirname "$0")/../integration/lib.sh"
H=$B/tests/host

# fetch_during NAME: fetches the goroutine profile as text, dump and proto
# from $ADDR until the program ends (at most 30 s). A fetch that fails with
# an HTTP error is a failure; one that cannot connect means the program has
# ended. The last dump is kept in $T/dump.
fetch_during() {
  local name=$1 q rc n=0 until=$((SECONDS + 30))
  while [ $SECONDS -lt $until ]; do
    for q in debug=1 debug=2 debug=0; do
      rc=0
      curl -sf -o "$T/g.$q" "http://$ADDR/debug/pprof/goroutine?$q" || rc=$?
      case $rc in
      0) n=$((n + 1)); [ $q != debug=2 ] || cp "$T/g.$q" "$T/dump" ;;
      22) fail "$name: goroutine?$q failed: $(curl -s "http://$ADDR/debug/pprof/goroutine?$q")"; break 2 ;;
      *) break 2 ;;
      esac
    done
  done
  check "$name: three profiles or more were fetched while it ran ($n)" [ $n -ge 3 ]
}

# Blocked in every thread, queued, read later with signalfd and sigtimedwait.
run blocked.plain -- "$H/host_rt_blocked"
start blocked.pre --ready LD_PRELOAD="$LIB" -- "$H/host_rt_blocked"
fetch_during blocked
await blocked.pre
compare blocked
check "blocked: the sleeping thread is in the dump" has "$T/dump" '^nap\('

# Handlers installed on every real-time signal after start.
run handlers.plain -- "$H/host_rt_handlers"
start handlers.pre --ready LD_PRELOAD="$LIB" -- "$H/host_rt_handlers"
fetch_during handlers
await handlers.pre
compare handlers
check "handlers: the program found every real-time signal at SIG_DFL" \
  has "$T/handlers.pre.out" '^0 of [0-9]+ real-time signals already handled$'
check "handlers: the spinning thread is in the dump" has "$T/dump" '^(spin\(|\[thread)'

# An unhandled real-time signal from outside ends the program, as without
# cprof; sent here on every real-time signal cprof catches (SigCgt).
start dfl.pre --ready LD_PRELOAD="$LIB" -- "$H/host_sleeper" 5
curl -sf -o /dev/null "http://$ADDR/debug/pprof/goroutine?debug=1" || fail "dfl: fetch goroutine"
cgt=$((16#$(awk '/^SigCgt/ {print $2}' "/proc/$PID/status")))
caught=""
for sig in $(seq 34 64); do
  if (((cgt >> (sig - 1)) & 1)); then caught="${caught:+$caught }$sig"; fi
done
check "dfl: cprof catches a real-time signal (${caught:-none})" [ -n "$caught" ]
kill -s "${caught%% *}" "$PID" 2>/dev/null || true
await dfl.pre
for sig in ${caught:-}; do
  "$H/host_sleeper" 5 >"$T/dfl.plain.out" 2>"$T/dfl.plain.err" &
  PID=$!
  until has "$T/dfl.plain.out" '^ready$'; do sleep 0.05; done
  kill -s "$sig" "$PID"
  await dfl.plain
  if [ "$sig" = "${caught%% *}" ]; then
    compare dfl
    check "dfl: ended by signal $sig" rc_is dfl.pre $((128 + sig))
  fi
done
finish

# No wait of the program ends with EINTR under /wall or /goroutine: threads
# that loop 1 ms timed waits in poll, select, epoll_wait, nanosleep, a raw
# futex, sigtimedwait, recv with SO_RCVTIMEO and sem_timedwait
# (programs/timed_waits.c), with threads burning CPU beside them, while
# wall profiles at 250 Hz are taken one after another and /goroutine is
# fetched in every form. A woken waiter that is not yet back in user space
# reads as running in /proc; asked there by a signal, its call returned
# EINTR (issue 28: 45 select, 24 poll... in one 2 s profile). The program
# counts every EINTR; without cprof the counts are 0, and with it they must
# be too. The profiles must be real: go tool pprof reads them, and the
# waiters' functions are in them. The program under cprof runs until the
# profiles are taken (SIGUSR1, which only its main thread takes), not for
# a fixed time: on a loaded machine three 2 s profiles beside the
# /goroutine fetches took over 11 s, and the third found the program gone.
. "$(dirname "$0")/../integration/lib.sh"
H=$B/tests/host
SECONDS_RUN=11

run plain -- "$H/host_timed_waits" "$SECONDS_RUN" &
plain=$!
start pre --ready LD_PRELOAD="$LIB" -- "$H/host_timed_waits" 120

# Wall profiles, back to back, while /goroutine is fetched in a loop.
(
  for i in 1 2 3; do
    code=$(curl -s -o "$T/wall.$i.pb.gz" -w '%{http_code} in %{time_total} s' \
      "http://$ADDR/debug/pprof/wall?seconds=2&hz=250") || true
    echo "wall profile $i: $code"
    [ "${code%% *}" = 200 ] || { head -c 300 "$T/wall.$i.pb.gz"; echo; }
  done
) &
walls=$!
fetches=0
while kill -0 "$walls" 2>/dev/null; do
  for q in debug=0 debug=1 debug=2; do
    curl -sf -o "$T/g.$q" "http://$ADDR/debug/pprof/goroutine?$q" && fetches=$((fetches + 1))
  done
done
wait "$walls" || true
kill -USR1 "$PID"
await pre
wait $plain
cat "$T/pre.out"
check "without cprof: every kind waited, and no wait failed with EINTR" \
  eval 'has "$T/plain.out" "^eintr 0$" && [ "$(grep -c " waits [1-9][0-9]* eintr" "$T/plain.out")" = 8 ]'
check "under cprof: the program ran to its end" rc_is pre 0
check "under cprof: every kind waited" [ "$(grep -c ' waits [1-9][0-9]* eintr' "$T/pre.out")" = 8 ]
for kind in poll select epoll_wait nanosleep futex sigtimedwait recv sem_timedwait; do
  check "under cprof: no $kind failed with EINTR" has "$T/pre.out" "^$kind waits [0-9]+ eintr 0 "
done
check "under cprof: no wait failed with EINTR at all" has "$T/pre.out" '^eintr 0$'

echo "goroutine fetched $fetches times"
check "/goroutine was fetched in every form meanwhile" [ "$fetches" -ge 3 ]
for i in 1 2 3; do
  check "wall profile $i was taken, and go tool pprof reads it" \
    eval 'pprof -top -nodecount=200 "$T/wall.$i.pb.gz" >"$T/wall.$i.top"'
done
for fn in wait_in_poll wait_in_select wait_in_epoll_wait wait_in_nanosleep wait_in_futex \
  wait_in_sigtimedwait wait_in_recv wait_in_sem_timedwait burn; do
  check "the wall profiles show $fn" grep -qE " $fn\$" "$T"/wall.*.top
  check "the goroutine dump shows $fn" has "$T/g.debug=2" "^$fn\\("
done
finish

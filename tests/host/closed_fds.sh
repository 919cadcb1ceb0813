# A program that closes every descriptor above stderr (one by one, with
# close_range, with closefrom) and then uses the numbers it gets: its pipe
# keeps exactly its bytes while profiles are fetched, its next descriptors
# have the numbers they have without cprof, the server still answers, and
# the process stays idle when the program is (issue 11, defects 2 and 9).
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/lib/fds.sh"
P=$B/tests/host/host_closes_fds

for how in loop range from; do
  touch "$T/plain_$how.done"
  bg "plain_$how" DONE="$T/plain_$how.done" -- "$P" "$how" work
  done_with "plain_$how"

  bg "pre_$how" LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0 DONE="$T/pre_$how.done" -- "$P" "$how" work
  check "$how: a CPU profile is served after the close" \
    [ "$(code "http://$ADDR/debug/pprof/profile?seconds=1")" = 200 ]
  check "$how: every thread's stack is served, with the program's functions" \
    eval '[ "$(code "http://$ADDR/debug/pprof/goroutine?debug=2")" = 200 ] && has "$T/body" until_done'
  check "$how: the heap profile is served" [ "$(code "http://$ADDR/debug/pprof/heap")" = 200 ]
  check "$how: the symbol endpoint answers" [ "$(code "http://$ADDR/debug/pprof/symbol")" = 200 ]
  done_with "pre_$how"
  check "$how: the program printed what it prints without cprof" same "plain_$how" "pre_$how" out
  check "$how: its pipe gave back its own bytes" has "$T/pre_$how.out" "^read back: the program's own bytes$"
  check "$how: same exit status" same "plain_$how" "pre_$how" rc
  if ! same "plain_$how" "pre_$how" out; then diff "$T/plain_$how.out" "$T/pre_$how.out" >&2 || true; fi
done

# Idle after the close: no thread of ours may spin on a descriptor that went
# away. 20 ticks in a second is a fifth of a core.
touch "$T/plain_idle.done"
bg plain_idle DONE="$T/plain_idle.done" -- "$P" loop idle
done_with plain_idle
bg pre_idle LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0 DONE="$T/pre_idle.done" -- "$P" loop idle
sleep 0.3
t0=$(cpu_ticks "$PID")
sleep 1
t1=$(cpu_ticks "$PID")
echo "CPU ticks used in 1 s of idling after the close: $((t1 - t0))"
check "idle: the process stays idle after the close (under 20 ticks in 1 s)" [ $((t1 - t0)) -lt 20 ]
check "idle: the server still answers" [ "$(code "http://$ADDR/debug/pprof/")" = 200 ]
done_with pre_idle
check "idle: the program printed what it prints without cprof" same plain_idle pre_idle out
finish

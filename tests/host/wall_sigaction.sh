# A program that sets its own action on the capture signal while a wall
# profile has asks out (programs/wall_sigaction.c): the wall profile's
# sampler holds the signal for the asks it has not had answered yet, and
# the program's sigaction waits for them; they are given up within 100 ms
# of its asking, so it waits no longer than that (with room for a loaded
# machine), its handler gets none of them, and the profile goes on.
. "$(dirname "$0")/../integration/lib.sh"
H=$B/tests/host

start pre --ready LD_PRELOAD="$LIB" -- "$H/host_wall_sigaction"
code=$(http "http://$ADDR/debug/pprof/wall?seconds=2&hz=250")
await pre
cat "$T/pre.out"
check "the wall profile was taken ($code)" [ "$code" = 200 ]
check "the program ran to its end" rc_is pre 0
check "its sigaction waited less than half a second" \
  eval '[ "$(sed -n "s/^sigaction took \([0-9]*\) ms$/\1/p" "$T/pre.out")" -lt 500 ]'
check "its handler got none of cprof's asks" has "$T/pre.out" '^handler calls 0$'
finish

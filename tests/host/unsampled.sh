# CPU time that no SIGPROF timer can sample is in the CPU profile all the
# same, as frames that say why, so that the profile's total is the CPU the
# program used (host_unsampled):
# - a thread that blocks every signal while it computes: its time shows as
#   "[thread blocked SIGPROF]", above the function that blocked them when
#   the thread unblocks again ("toggler", blocked half its time), alone
#   when it never does ("walled", blocked all its life), and then all of
#   it when the thread exits within the profile;
# - a thread no timer could be made for (the program put every thread
#   under a seccomp filter denying timer_create after the profile began):
#   "[thread not sampled: timer_create: Operation not permitted]".
# The known answers are the threads' CPU times in /proc, with generous
# bounds: the machine is shared, and /proc counts in clock ticks.
. "$(dirname "$0")/../integration/lib.sh"
H=$B/tests/host
HZ=$(getconf CLK_TCK)
BLOCKED="[thread blocked SIGPROF]"
NO_TIMER="[thread not sampled: timer_create: Operation not permitted]"

# cpu_ms PID [NAME]: the CPU time, user and system, of the thread called
# NAME (of the whole process without one), in ms.
cpu_ms() {
  local stat=/proc/$1/stat t
  if [ -n "${2:-}" ]; then
    stat=
    for t in /proc/"$1"/task/*; do
      [ "$(cat "$t/comm" 2>/dev/null)" = "$2" ] && stat=$t/stat
    done
  fi
  [ -n "$stat" ] && awk -v hz="$HZ" '{ print int(($14 + $15) * 1000 / hz) }' "$stat" || echo 0
}
# flat_ms PROFILE THREAD FRAME: the CPU time, in ms, of FRAME itself in
# THREAD's samples (0 when it is not there).
flat_ms() {
  pprof -top -unit=ms -nodefraction=0 -tagfocus="thread=^$2\$" "$1" |
    awk -v f="$3" '{ v = $1; for (i = 1; i <= 5; i++) $i = ""; sub(/^ +/, "")
                     if ($0 == f) { sub(/ms$/, "", v); print v; found = 1; exit } }
                   END { if (!found) print 0 }'
}
# total_ms PROFILE [THREAD]: the profile's total CPU time in ms (THREAD's).
total_ms() {
  pprof -top -unit=ms -nodefraction=0 -nodecount=100000 ${2:+-tagfocus="thread=^$2\$"} "$1" |
    sed -n 's/^Showing nodes accounting for \([0-9.]*\)ms,.*/\1/p'
}
# ratio WHAT A B LO HI: A/B is within [LO, HI].
ratio() {
  awk -v a="$2" -v b="$3" -v lo="$4" -v hi="$5" 'BEGIN { exit !(b > 0 && a / b >= lo && a / b <= hi) }'
}

# Blocked signals.
start blocked --ready LD_PRELOAD="$LIB" -- "$H/host_unsampled" blocked 30
w0=$(cpu_ms $PID walled) p0=$(cpu_ms $PID)
code=$(http "http://$ADDR/debug/pprof/profile?seconds=2")
w1=$(cpu_ms $PID walled) p1=$(cpu_ms $PID)
stop
cp "$T/body" "$T/blocked.pb.gz"
check "blocked: the profile is served ($code)" [ "$code" = 200 ]
pprof -top -unit=ms "$T/blocked.pb.gz" | sed -n '5,12p'
walled=$(flat_ms "$T/blocked.pb.gz" walled "$BLOCKED")
check "blocked all its life: its CPU time is the profile's $BLOCKED ($walled ms of $((w1 - w0)) ms)" \
  ratio walled "$walled" $((w1 - w0)) 0.5 1.2
toggled=$(flat_ms "$T/blocked.pb.gz" toggler "$BLOCKED")
toggler=$(total_ms "$T/blocked.pb.gz" toggler)
check "blocked half its time: half its CPU time is $BLOCKED ($toggled ms of $toggler ms)" \
  ratio toggler "$toggled" "$toggler" 0.3 0.7
pprof -traces -tagfocus='thread=^toggler$' "$T/blocked.pb.gz" >"$T/traces"
check "blocked half its time: $BLOCKED sits above block_phase, which blocked the signals" \
  eval 'grep -A1 -F "$BLOCKED" "$T/traces" | grep -q "^ *block_phase$"'
total=$(total_ms "$T/blocked.pb.gz")
check "blocked: the profile's total is the CPU time the program used ($total ms of $((p1 - p0)) ms)" \
  ratio total "$total" $((p1 - p0)) 0.55 1.2

# The whole run's profile (CPROF_OUTPUT): "walled" lives and dies within
# it, blocked throughout, and counts its time as it exits, so the profile
# has all of it, to the clock's precision: the program prints what the
# thread's own clock says at its end.
run whole CPROF_ADDR=0 CPROF_OUTPUT="$T/whole" LD_PRELOAD="$LIB" -- "$H/host_unsampled" blocked 1
check "whole run: the program ran to its end" rc_is whole 0
clock=$(awk '$1 == "walled" { print $2 * 1000 }' "$T/whole.out")
walled=$(flat_ms "$T/whole/cpu.pb.gz" walled "$BLOCKED")
check "whole run: the thread blocked all its life has all its CPU time as $BLOCKED, under its name ($walled ms, its clock $clock ms)" \
  ratio walled "$walled" "$clock" 0.98 1.02

# No timer for the threads made after the program sandboxed itself.
start sandboxed --ready LD_PRELOAD="$LIB" -- "$H/host_unsampled" sandboxed 30
code=$(http "http://$ADDR/debug/pprof/profile?seconds=3")
l1=$(cpu_ms $PID late)
stop
cp "$T/body" "$T/sandboxed.pb.gz"
check "sandboxed: the profile is served ($code)" [ "$code" = 200 ]
pprof -top -unit=ms "$T/sandboxed.pb.gz" | sed -n '5,12p'
late=$(flat_ms "$T/sandboxed.pb.gz" late "$NO_TIMER")
check "no timer: the thread's CPU time is the profile's $NO_TIMER ($late ms of $l1 ms)" \
  ratio late "$late" "$l1" 0.5 1.1
early=$(total_ms "$T/sandboxed.pb.gz" early)
check "no timer: the thread that had one before is sampled as ever ($early ms)" \
  eval '[ "$(flat_ms "$T/sandboxed.pb.gz" early burn)" != 0 ]'
finish

# Under the full tcmalloc (libtcmalloc.so.4, gperftools), preloaded after
# cprof as doc/running.md prescribes for another allocator (issue 29, defect 7).
# tcmalloc unwinds with libunwind, which keeps a pipe to validate addresses
# at numbers of the program's table (3 and 4 here) in globals; run on one of
# the server's threads, whose table is cprof's own, it found the listening
# socket at "its" 3, closed 3 and 4 to open its pipe anew, and the server
# answered once and then never (its listener spun on accept4, ENOTSOCK).
# Now:
# - /debug/pprof/ and /debug/pprof/heap answer 200, 20 times each;
# - cprof's threads use well under 10 % of a core meanwhile (a ratio of CPU
#   time to the interval, from /proc/PID/task/*/stat: no spin);
# - the program's table holds what it held before the fetches (libunwind's
#   pipe is still at its numbers there).
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/lib/cpu_ticks.sh"
P=$B/tests/host/host_sleeper
TC=/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4
TICK=$(getconf CLK_TCK)
[ -e "$TC" ] || skip "the full tcmalloc ($TC, libgoogle-perftools4) is not installed"

# fds PID: the program's table, as "number target" lines.
fds() { for f in /proc/"$1"/fd/*; do echo "${f##*/} $(readlink "$f" 2>/dev/null)"; done | sort; }

start tc --ready LD_PRELOAD="$LIB:$TC" -- "$P" 60
fds "$PID" >"$T/fds.before"
c0=$(cpu_ticks "$PID")
s0=$(date +%s%N)
ok=0 codes=""
for i in $(seq 1 20); do
  for path in "" heap; do
    c=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://$ADDR/debug/pprof/$path" || true)
    [ "$c" = 200 ] && ok=$((ok + 1))
    codes="$codes $c"
  done
done
echo "HTTP codes:$codes"
check "the full tcmalloc: 40 of 40 fetches (/debug/pprof/ and /heap, 20 each) answer 200" [ $ok = 40 ]
# The spin, when there is one, lasts: measure a quiet while after the fetches.
sleep 0.5
c1=$(cpu_ticks "$PID")
s1=$(date +%s%N)
sleep 2
c2=$(cpu_ticks "$PID")
s2=$(date +%s%N)
idle=$((c2 - c1))
echo "cprof's threads: $((c1 - c0)) ticks in $(((s1 - s0) / 1000000)) ms of fetches," \
  "$idle ticks in the $(((s2 - s1) / 1000000)) ms after ($TICK ticks a second)"
check "the full tcmalloc: cprof's threads idle after the fetches (under 10 % of a core)" \
  [ $((idle * 1000000000 * 10)) -lt $(((s2 - s1) * TICK)) ]
fds "$PID" >"$T/fds.after"
check "the full tcmalloc: the program's table is as before the fetches" \
  cmp -s "$T/fds.before" "$T/fds.after"
if ! cmp -s "$T/fds.before" "$T/fds.after"; then diff "$T/fds.before" "$T/fds.after" >&2 || true; fi
stop
finish

#!/usr/bin/env bash
# The demo under load (issue 13): the demo server alone, then the same demo
# with 64 clients fetching /debug/pprof/heap, /goroutine, /allocs and the
# index as fast as it answers, each for DURATION seconds, alternating,
# RUNS times each. Prints what the clients got (requests per endpoint,
# statuses, errors, latency), what the demo's own threads got done
# (rounds per second of its loops, loaded over alone), and the demo's
# memory (VmRSS and VmHWM, sampled every second).
#
#   DURATION=60 RUNS=2 CLIENTS=64 THREADS=4 TIMEOUT=10 bench/load/run.sh
#
# Allowed answers: 200, and 503 with Retry-After (a server at its cap for
# expensive requests says so). Anything else, a socket error (refused,
# reset, closed early) or a request taking over TIMEOUT s is an error.
#
# The demo leaks 4 KiB every 10 ms up to 16 MiB by design (its
# remember_session, for the heap profile to show), alone or loaded, so the
# memory serving costs is the loaded run's RSS less the lone run's at the
# same second, and growth after that leak has stopped (about 45 s in).
. "$(dirname "${BASH_SOURCE[0]}")/../cpu/lib.sh"

DURATION=${DURATION:-60}
RUNS=${RUNS:-2}
CLIENTS=${CLIENTS:-64}
THREADS=${THREADS:-4}
TIMEOUT=${TIMEOUT:-10}
DEMO=$CPROF_BUILD/examples/demo_server
SCRIPT=$BENCH/load/pprof.lua
need_pkgs load wrk
[ -x "$DEMO" ] || { echo "load: $DEMO not built" >&2; exit 1; }

# sample_memory PID FILE: every second until PID ends, "SECOND RSS_KB
# HWM_KB" from /proc/PID/status.
sample_memory() {
  local pid=$1 out=$2 s=0
  while [ -r "/proc/$pid/status" ]; do
    awk -v s=$s '/^VmRSS:/ { r = $2 } /^VmHWM:/ { h = $2 } END { if (r) print s, r, h }' \
      "/proc/$pid/status" >>"$out" 2>/dev/null || true
    sleep 1
    s=$((s + 1))
  done
}

# one MODE N: runs the demo for DURATION s, alone (MODE=alone) or under
# wrk (MODE=loaded), and appends a row to $RES: mode, run, rounds/s of the
# cpu-burner, of all workers, RSS at 1 s, at 3/4 of DURATION, at the end, peak
# (VmHWM), all in KiB.
one() {
  local mode=$1 n=$2 name=$1-$2
  : >"$T/$name.mem"
  CPROF_ADDR=127.0.0.1:0 "$DEMO" >"$T/$name.out" 2>"$T/$name.err" &
  PID=$!
  for _ in $(seq 1 400); do
    ADDR=$(sed -n 's|^cprof: serving http://\([^/]*\)/.*|\1|p' "$T/$name.err" | head -1)
    [ -n "$ADDR" ] && break
    sleep 0.025
  done
  [ -n "$ADDR" ] || { echo "load: the demo did not serve:" >&2; cat "$T/$name.err" >&2; exit 1; }
  sample_memory $PID "$T/$name.mem" &
  local sampler=$!
  if [ "$mode" = loaded ]; then
    wrk -t"$THREADS" -c"$CLIENTS" -d"${DURATION}s" --timeout "${TIMEOUT}s" -s "$SCRIPT" "http://$ADDR" \
      >"$T/$name.wrk" 2>&1 || echo "load: wrk failed (exit $?)" >>"$T/$name.wrk"
  else
    sleep "$DURATION"
  fi
  kill -TERM $PID
  local rc=0
  wait $PID || rc=$?
  wait $sampler 2>/dev/null || true
  [ $rc = 0 ] || { echo "load: the demo exited with $rc in run $name:" >&2; tail "$T/$name.err" >&2; }
  local work burner secs
  work=$(sed -n 's/^cprof demo: work: \([0-9]*\) rounds in \([0-9.]*\) s (cpu-burner \([0-9]*\),.*/\1 \2 \3/p' "$T/$name.out")
  read -r total secs burner <<<"$work"
  awk -v mode="$mode" -v n="$n" -v t="$total" -v s="$secs" -v b="$burner" -v half=$((DURATION * 3 / 4)) -v rc=$rc '
    NR == 2 { start = $2 } $1 == half { mid = $2 } { end = $2; if ($3 > peak) peak = $3 }
    END { printf "%s\t%d\t%.1f\t%.1f\t%d\t%d\t%d\t%d\t%d\n", mode, n, b / s, t / s, start, mid, end, peak, rc }' \
    "$T/$name.mem" >>"$RES"
}

RES=$T/results
echo "== the demo under load: $CLIENTS clients ($THREADS wrk threads) for ${DURATION} s, $RUNS runs alone and $RUNS loaded"
machine
echo "demo: $DEMO (cpu-burner, allocator, 2 lock workers, waiter; block rate 10 us, mutex fraction 5)"
echo "wrk: $(wrk -v 2>&1 | head -1); timeout ${TIMEOUT} s; endpoints: heap, goroutine, allocs, index (one per wrk thread)"
for r in $(seq 1 "$RUNS"); do
  for mode in $(rotated "$r" alone loaded); do
    one "$mode" "$r"
    printf '%s %s: %s\n' "$mode" "$r" "$(tail -1 "$RES" | cut -f3-)"
  done
done
load

echo
echo "-- what the clients got, per loaded run"
for r in $(seq 1 "$RUNS"); do
  echo "run $r:"
  grep '^load:\|^load: wrk\|Socket errors\|Non-2xx' "$T/loaded-$r.wrk" | sed 's/^/  /'
done
col() { awk -F'\t' -v m="$1" -v c="$2" '$1 == m { print $c }' "$RES" | median; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
mib() { awk -v k="$1" 'BEGIN { printf "%.1f MiB", k / 1024 }'; }
echo
echo "-- the demo's own work (rounds/s, median of $RUNS runs each)"
b_alone=$(col alone 3) b_loaded=$(col loaded 3) t_alone=$(col alone 4) t_loaded=$(col loaded 4)
echo "cpu-burner: alone $b_alone, loaded $b_loaded, loaded/alone $(ratio "$b_loaded" "$b_alone")"
echo "all workers: alone $t_alone, loaded $t_loaded, loaded/alone $(ratio "$t_loaded" "$t_alone")"
echo
echo "-- the demo's memory (median of $RUNS runs each; the demo itself leaks up to 16 MiB)"
for m in alone loaded; do
  echo "$m: RSS at 1 s $(mib "$(col $m 5)"), at $((DURATION * 3 / 4)) s $(mib "$(col $m 6)"), at the end $(mib "$(col $m 7)"); peak (VmHWM) $(mib "$(col $m 8)")"
done
echo "serving's memory at the end (loaded less alone): $(mib $(($(col loaded 7 | cut -d. -f1) - $(col alone 7 | cut -d. -f1))))"
echo "exit codes: $(awk -F'\t' '{ printf "%s%s-%s=%s", (NR > 1 ? ", " : ""), $1, $2, $9 }' "$RES")"

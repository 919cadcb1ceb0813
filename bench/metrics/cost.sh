#!/usr/bin/env bash
# The metrics sampler's own cost: the CPU time of the cprof-metrics thread
# per second of wall time, read from /proc/PID/task/TID/schedstat (ns on a
# CPU; the stat file's utime+stime in clock ticks where schedstat is
# missing) at the start and the end of DURATION seconds, for a program
# under cprof (LD_PRELOAD) at the default interval (1s) and at 10ms, which
# magnifies the per-point cost a hundredfold, on three shapes of program:
# idle (sleep: three descriptors, one thread), fds (10 000 descriptors
# open: the sampler counts /proc/self/fd) and threads (500 threads:
# getrusage sums over them), bench/metrics/hold.py. All run at once.
#
#   bench/metrics/cost.sh                 60 s
#   DURATION=10 bench/metrics/cost.sh
#   SHAPES="idle fds" bench/metrics/cost.sh
#   CPROF_BUILD=/path/to/build bench/metrics/cost.sh
. "$(dirname "${BASH_SOURCE[0]}")/../cpu/lib.sh"
DURATION=${DURATION:-60}

# cpu_ns PID TID: the thread's CPU time so far, ns.
cpu_ns() {
  local f=/proc/$1/task/$2
  if [ -r "$f/schedstat" ]; then
    awk '{print $1}' "$f/schedstat"
  else
    local s
    read -r -a s <<<"$(sed 's/.*) //' "$f/stat")"
    echo $(((s[11] + s[12]) * 1000000000 / $(getconf CLK_TCK)))
  fi
}

# sampler_tid PID: the cprof-metrics thread's id, once it runs.
sampler_tid() {
  local t
  for _ in $(seq 1 100); do
    for t in /proc/"$1"/task/*; do
      if [ "$(cat "$t/comm" 2>/dev/null)" = cprof-metrics ]; then
        basename "$t"
        return 0
      fi
    done
    sleep 0.1
  done
  echo "no cprof-metrics thread in $1" >&2
  return 1
}

echo "# The metrics sampler's cost: CPU time of the cprof-metrics thread over $DURATION s"
echo "# $(uname -r), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
ulimit -n 20000 2>/dev/null || true
# The interpreter itself, not a wrapper script (pyenv's) that would exec it
# under another sampler thread.
PY=$(python3 -c 'import sys; print(sys.executable)')
declare -A cmd=([idle]="sleep $((DURATION + 60))"
  [fds]="$PY $BENCH/metrics/hold.py 10000 0 $((DURATION + 60))"
  [threads]="$PY $BENCH/metrics/hold.py 0 500 $((DURATION + 60))")
runs=()
for shape in ${SHAPES:-idle fds threads}; do
  [ -n "${cmd[$shape]:-}" ] || { echo "unknown shape $shape (idle, fds, threads)" >&2; exit 2; }
  runs+=("$shape/1s" "$shape/10ms")
done
declare -A pid tid before
for r in "${runs[@]}"; do
  # shellcheck disable=SC2086 # the command's words
  env LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0 CPROF_METRICS_INTERVAL="${r#*/}" \
    CPROF_METRICS_WINDOW=600s ${cmd[${r%/*}]} 2>"$T/${r/\//_}.err" &
  pid[$r]=$!
done
for r in "${runs[@]}"; do
  tid[$r]=$(sampler_tid "${pid[$r]}")
  before[$r]=$(cpu_ns "${pid[$r]}" "${tid[$r]}")
done
t0=$(date +%s%N)
sleep "$DURATION"
t1=$(date +%s%N)
printf '%-14s %14s %14s %16s\n' shape/interval "CPU ns/s" "% of one core" "us per point"
for r in "${runs[@]}"; do
  after=$(cpu_ns "${pid[$r]}" "${tid[$r]}")
  python3 - "$r" "${before[$r]}" "$after" "$t0" "$t1" <<'PY'
import sys
run, b, a, t0, t1 = sys.argv[1], *map(int, sys.argv[2:])
interval = run.split("/")[1]
wall = (t1 - t0) / 1e9
ns_per_s = (a - b) / wall
ms = float(interval[:-2]) if interval.endswith("ms") else float(interval[:-1]) * 1000
points = wall * 1000 / ms
print("%-14s %14.0f %13.5f%% %16.1f" % (run, ns_per_s, ns_per_s / 1e7, (a - b) / points / 1e3))
PY
done

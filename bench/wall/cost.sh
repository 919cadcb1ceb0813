#!/usr/bin/env bash
# The wall profile's cost per thread per tick (issue 18): a program of N
# threads (bench/wall/threads.c) that sleep (asleep in one call at one
# place: their stacks reused from tick to tick) or spin (running: asked for
# their stacks with a signal at every tick) runs under cprof (LD_PRELOAD);
# GET /debug/pprof/wall?seconds=DURATION&hz=50 with the budget lifted
# (CPROF_WALL_BUDGET=100%), so that the rate stays at 50; the answer's
# X-Cprof-Wall header gives the sampling thread's CPU time, the ticks and
# the thread stacks taken. Prints µs of the sampling thread's CPU per
# thread per tick, and what that would be as a share of one core at 50 Hz
# for 100 threads. The spinning threads' own cost (each unwinds itself in
# cprof's signal handler) is on their CPU and not in these figures.
#
#   bench/wall/cost.sh                    10 s each, N in 10 100 1000
#   DURATION=5 COUNTS="10 100" SPIN_COUNTS=10 bench/wall/cost.sh
#   CPROF_BUILD=/path/to/build bench/wall/cost.sh
. "$(dirname "${BASH_SOURCE[0]}")/../cpu/lib.sh"
DURATION=${DURATION:-10}
cc -O2 -pthread -o "$T/threads" "$BENCH/wall/threads.c"

echo "# The wall profile's cost: the sampling thread's CPU per thread per tick, 50 Hz, $DURATION s"
echo "# $(uname -r), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
printf '%-6s %7s %6s %6s %9s %9s %16s %22s\n' shape threads hz ticks stacks reused "us/thread/tick" "100 threads at 50 Hz"
for shape in sleep spin; do
  # A thousand threads spinning on a small machine wait their turn to run
  # the handler for much of a second: the ticks would measure the scheduler.
  counts=${COUNTS:-10 100 1000}
  [ "$shape" = spin ] && counts=${SPIN_COUNTS:-10 100}
  for n in $counts; do
    start "$shape$n" CPROF_WALL_BUDGET=100% CPROF_METRICS=0 -- "$T/threads" "$n" "$shape" \
      $((DURATION + 30))
    pid=$PID addr=$ADDR
    for _ in $(seq 1 200); do grep -q '^ready$' "$T/$shape$n.out" && break; sleep 0.05; done
    curl -s -D "$T/h" -o /dev/null "http://$addr/debug/pprof/wall?seconds=$DURATION&hz=50"
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    python3 - "$shape" "$n" "$T/h" <<'PY'
import re, sys
shape, n, h = sys.argv[1], int(sys.argv[2]), open(sys.argv[3]).read()
m = re.search(r'hz=(\d+); ticks=(\d+); threads=(\d+); reused=(\d+); cpu_us=(\d+)', h)
hz, ticks, stacks, reused, cpu = map(int, m.groups())
per = cpu / max(stacks, 1)
print("%-6s %7d %6d %6d %9d %9d %16.2f %20.2f %%" % (shape, n, hz, ticks, stacks, reused, per,
                                                      per * 100 * 50 / 1e4))
PY
  done
done

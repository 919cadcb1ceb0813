#!/usr/bin/env bash
# The wall profile's cost (issue 18).
#
# 1. Per thread per tick, to the sampling thread: a program of N threads
#    (bench/wall/threads.c) that sleep (asleep in one call at one place:
#    their stacks reused from tick to tick) or spin (running: asked for
#    their stacks with a signal at every tick) runs under cprof
#    (LD_PRELOAD); GET /debug/pprof/wall?seconds=DURATION&hz=50 with the
#    budget lifted (CPROF_WALL_BUDGET=100%), so that the rate stays at 50;
#    the answer's X-Cprof-Wall header gives the sampling thread's CPU
#    time, the ticks and the thread stacks taken. Prints µs of the sampling
#    thread's CPU per thread per tick, and what that would be as a share of
#    one core at 50 Hz for 100 threads. The program is built with frame
#    pointers and without (CPROF_UNWIND is dwarf either way, the default).
# 2. The floor under asking a running thread on this machine: a signal to
#    a thread on another CPU, and the CPU a wake from sleep costs
#    (bench/wall/floor.c).
# 3. To the running threads (each unwinds itself in cprof's signal
#    handler, on its own CPU): the work SPIN_HANDLER spinning threads get
#    done in DURATION seconds with a wall profile at 50 Hz all along,
#    against the same run without one, alternated RUNS times; the median
#    of the ratios.
#
#   bench/wall/cost.sh                    10 s each, N in 10 100 1000
#   DURATION=5 COUNTS="10 100" SPIN_COUNTS=10 RUNS=3 bench/wall/cost.sh
#   CPROF_BUILD=/path/to/build bench/wall/cost.sh
. "$(dirname "${BASH_SOURCE[0]}")/../cpu/lib.sh"
DURATION=${DURATION:-10}
RUNS=${RUNS:-3}
SPIN_HANDLER=${SPIN_HANDLER:-10}
cc -O2 -pthread -fno-omit-frame-pointer -o "$T/threads-fp" "$BENCH/wall/threads.c"
cc -O2 -pthread -fomit-frame-pointer -o "$T/threads-nofp" "$BENCH/wall/threads.c"
cc -O2 -pthread -o "$T/floor" "$BENCH/wall/floor.c"

# run BUILD SHAPE N SECONDS WALL_SECONDS [kill]: the program, for SECONDS;
# with a wall request of WALL_SECONDS when that is not 0, its header in
# $T/h; ended as the answer comes with "kill" (a slow last tick may end
# past SECONDS), else awaited. Leaves the program's output in $T/run.out.
run() {
  local build=$1 shape=$2 n=$3 secs=$4 wall=$5 end=${6:-}
  start run CPROF_WALL_BUDGET=100% CPROF_METRICS=0 -- "$T/threads-$build" "$n" "$shape" "$secs"
  local pid=$PID addr=$ADDR
  for _ in $(seq 1 200); do grep -q '^ready$' "$T/run.out" && break; sleep 0.05; done
  if [ "$wall" != 0 ]; then
    curl -s -D "$T/h" -o /dev/null "http://$addr/debug/pprof/wall?seconds=$wall&hz=50"
  fi
  [ "$end" = kill ] && kill "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null || true
}

echo "# The wall profile's cost: the sampling thread's CPU per thread per tick, 50 Hz, $DURATION s"
echo "# $(uname -r), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
printf '%-6s %-5s %7s %6s %6s %9s %9s %16s %22s\n' shape build threads hz ticks stacks reused \
  "us/thread/tick" "100 threads at 50 Hz"
for shape in sleep spin; do
  # A thousand threads spinning on a small machine wait their turn to run
  # the handler for much of a second: the ticks would measure the scheduler.
  counts=${COUNTS:-10 100 1000}
  [ "$shape" = spin ] && counts=${SPIN_COUNTS:-10 100}
  for n in $counts; do
    for build in fp nofp; do
      [ "$build" = nofp ] && [ "$n" = 1000 ] && continue
      run "$build" "$shape" "$n" $((DURATION + 60)) "$DURATION" kill
      python3 - "$shape" "$build" "$n" "$T/h" <<'PY'
import re, sys
shape, build, n, h = sys.argv[1], sys.argv[2], int(sys.argv[3]), open(sys.argv[4]).read()
m = re.search(r'hz=(\d+); ticks=(\d+); threads=(\d+); reused=(\d+); cpu_us=(\d+)', h)
hz, ticks, stacks, reused, cpu = map(int, m.groups())
per = cpu / max(stacks, 1)
print("%-6s %-5s %7d %6d %6d %9d %9d %16.2f %20.2f %%" % (shape, build, n, hz, ticks, stacks, reused,
                                                            per, per * 100 * 50 / 1e4))
PY
    done
  done
done

"$T/floor"

echo "# To the running threads: $SPIN_HANDLER spinning threads' work in $DURATION s, with a wall profile at 50 Hz / without"
ratios=()
for r in $(seq 1 "$RUNS"); do
  run fp spin "$SPIN_HANDLER" "$DURATION" 0
  without=$(sed -n 's/^loops //p' "$T/run.out")
  run fp spin "$SPIN_HANDLER" "$DURATION" $((DURATION - 1))
  with=$(sed -n 's/^loops //p' "$T/run.out")
  # The profile runs DURATION-1 of the DURATION seconds: scaled to all of them.
  ratio=$(python3 -c "import sys; w, o, d = map(float, sys.argv[1:]); print('%.4f' % (1 - (1 - w / o) * d / (d - 1)))" "$with" "$without" "$DURATION")
  echo "run $r: without $without loops, with $with: $ratio"
  ratios+=("$ratio")
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR]=$1} END {printf "median: with the wall profile the spinning threads did %.2f %% of the work they did without\n", 100 * a[int((NR + 1) / 2)]}'

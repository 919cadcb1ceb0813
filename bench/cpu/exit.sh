#!/usr/bin/env bash
# Time added at exit: how much later a program is gone when a profiler
# writes its profiles at exit.
#
#   bench/cpu/exit.sh
#   REPS=11 SECONDS_RUN=2 THREADS=2 CASES="cpu heap" bench/cpu/exit.sh
#
# The workload (`exiting`, bench/cpu/exiting.c) runs THREADS threads for
# SECONDS_RUN seconds through many distinct stacks (and libc's qsort), then
# prints the CLOCK_MONOTONIC time at which it calls exit(0). `reap`
# (bench/cpu/reap.c) starts it, and prints the CLOCK_MONOTONIC time at which
# wait4 returned, and the CPU time the workload used in all. The delay at
# exit is the difference: atexit handlers and the kernel's teardown, as the
# program's parent sees it. Cases and variants, run in rotated order (each
# repetition starts with the next variant) for REPS repetitions:
#
#   cpu    the CPU work, as
#            plain        no profiler
#            cprof        LD_PRELOAD=libcprof.so CPROF_ADDR=0 CPROF_OUTPUT=DIR: the CPU
#                         profile of the whole run, written at exit with heap.pb.gz
#            gperftools   LD_PRELOAD=libprofiler.so CPUPROFILE=FILE
#   heap   the same with --alloc: the innermost call of each round mallocs
#          16 B-64 KiB and keeps the last 1024 blocks, so the heap profile
#          written at exit holds samples from thousands of stacks
#            plain, cprof (CPROF_HEAP_RATE=HEAP_RATE, default 524288 as cprof's
#            own default: about 3,000 samples a second at 2 threads)
#
# Both profilers sample at 100 Hz. For every cprof run the script checks
# that cpu.pb.gz (and heap.pb.gz) were written. Reports, per case and
# variant, the median delay at exit, the median of (delay - plain's delay
# in the same repetition), the median CPU time of the whole run and peak
# RSS, then one line per case and variant for bench/matrix.sh:
#   exit-delay: case=cpu variant=cprof median_ms=X
# The workload runs at nice -10 when the script runs as root (NICE=0 to
# turn that off). gperftools (Debian libgoogle-perftools-dev) is installed
# if missing.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

REPS=${REPS:-7}
SECONDS_RUN=${SECONDS_RUN:-2}
THREADS=${THREADS:-2}
CASES=${CASES:-cpu heap}
HEAP_RATE=${HEAP_RATE:-524288}
if [ "$(id -u)" -eq 0 ]; then NICE=${NICE:--10}; else NICE=${NICE:-0}; fi

# The two programs are built by bench/Makefile's pattern rule for cpu/*.c.
make -s -C "$BENCH" "$BIN/exiting" "$BIN/reap" >/dev/null

gperftools_profiler exit

echo "# Time added at exit: exiting $SECONDS_RUN s, $THREADS threads, $REPS repetitions; cases: $CASES; nice $NICE"
echo "# cprof: $LIB; heap case at CPROF_HEAP_RATE=$HEAP_RATE"
machine
echo "gperftools: $GPERF ($(dpkg-query -W -f '${Version}' libgoogle-perftools-dev))"

RES=$T/results # case variant rep delay_ns cpu_ns maxrss_kb
: >"$RES"

variants() {
  case $1 in
  cpu) echo plain cprof gperftools ;;
  heap) echo plain cprof ;;
  esac
}

# run CASE VARIANT REP
run() {
  local c=$1 v=$2 r=$3 out=$T/$1.$2.$3 args=("$SECONDS_RUN" --threads "$THREADS") envs=()
  [ "$c" = heap ] && args+=(--alloc)
  case $v in
  plain) ;;
  cprof)
    envs=(LD_PRELOAD="$LIB" CPROF_ADDR=0 CPROF_CPU_HZ=100 CPROF_OUTPUT="$out.dir")
    [ "$c" = heap ] && envs+=(CPROF_HEAP_RATE="$HEAP_RATE")
    ;;
  gperftools) envs=(LD_PRELOAD="$GPERF" CPUPROFILE="$out.prof" CPUPROFILE_FREQUENCY=100) ;;
  esac
  # env execs the workload after reap has forked: the profiler is in the
  # workload only, and env's own start-up is before the work, not at exit.
  nice -n "$NICE" "$BIN/reap" env ${envs[@]+"${envs[@]}"} "$BIN/exiting" "${args[@]}" \
    >"$out.out" 2>"$out.err" || { echo "$c/$v rep $r failed:" >&2; cat "$out.out" "$out.err" >&2; exit 1; }
  local e d cpu rss
  e=$(field exit_ns "$out.out") d=$(field reaped_ns "$out.out")
  cpu=$(field cpu_ns "$out.out") rss=$(field maxrss_kb "$out.out")
  if [ -z "$e" ] || [ -z "$d" ]; then
    echo "$c/$v rep $r: no timestamps:" >&2
    cat "$out.out" "$out.err" >&2
    exit 1
  fi
  if [ "$v" = cprof ]; then
    [ -s "$out.dir/cpu.pb.gz" ] || { echo "$c/$v rep $r: no cpu.pb.gz" >&2; cat "$out.err" >&2; exit 1; }
    [ "$c" != heap ] || [ -s "$out.dir/heap.pb.gz" ] ||
      { echo "$c/$v rep $r: no heap.pb.gz" >&2; cat "$out.err" >&2; exit 1; }
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$c" "$v" "$r" "$((d - e))" "$cpu" "$rss" >>"$RES"
  awk -v c="$c" -v v="$v" -v r="$r" -v d="$((d - e))" -v cpu="$cpu" -v rss="$rss" 'BEGIN {
    printf "  %-4s rep %2d %-10s delay %8.2f ms  CPU %6.3f s  peak RSS %6.1f MiB\n",
      c, r, v, d / 1e6, cpu / 1e9, rss / 1024 }'
}

for r in $(seq 1 "$REPS"); do
  for c in $CASES; do
    for v in $(rotated "$r" $(variants "$c")); do
      run "$c" "$v" "$r"
    done
  done
done
load

col() { awk -F'\t' -v c="$1" -v v="$2" -v k="$3" '$1 == c && $2 == v { print $k }' "$RES"; }
# above_plain CASE VARIANT: per repetition, delay minus plain's delay.
above_plain() {
  awk -F'\t' -v c="$1" -v v="$2" '$1 == c && $2 == "plain" { p[$3] = $4 } $1 == c && $2 == v { x[$3] = $4 }
    END { for (r in x) if (r in p) print x[r] - p[r] }' "$RES"
}

echo
echo "## Medians over $REPS rotated repetitions (exiting $SECONDS_RUN s, $THREADS threads)"
echo
echo "| case | variant | delay at exit ms | above plain ms | CPU of the run s | peak RSS MiB |"
echo "|---|---|---:|---:|---:|---:|"
for c in $CASES; do
  for v in $(variants "$c"); do
    awk -v c="$c" -v v="$v" -v d="$(col "$c" "$v" 4 | median)" -v a="$(above_plain "$c" "$v" | median)" \
      -v cpu="$(col "$c" "$v" 5 | median)" -v rss="$(col "$c" "$v" 6 | median)" 'BEGIN {
      printf "| %s | %s | %.2f | %.2f | %.3f | %.1f |\n", c, v, d / 1e6, a / 1e6, cpu / 1e9, rss / 1024 }'
  done
done
echo
for c in $CASES; do
  for v in $(variants "$c"); do
    printf 'exit-delay: case=%s variant=%s median_ms=%.2f\n' "$c" "$v" "$(col "$c" "$v" 4 | median | awk '{ print $1 / 1e6 }')"
  done
done

#!/usr/bin/env bash
# CPU profiling overhead: the same CPU-bound work (`burn`, a fixed number of
# units, about RUN_SECONDS plain) run
#   plain        no profiler
#   cprof        LD_PRELOAD=libcprof.so, a /debug/pprof/profile request at
#                CPROF_CPU_HZ=100 covering the whole run (started while the
#                program sleeps its first 0.3 s, longer than the work)
#   gperftools   LD_PRELOAD=libprofiler.so CPUPROFILE=... CPUPROFILE_FREQUENCY=100
#   cprof-fp     (only if listed in VARIANTS) cprof with CPROF_UNWIND=fp
# in alternation (plain, cprof, gperftools, plain, ...) for ROUNDS rounds.
#
#   bench/cpu/overhead.sh
#   ROUNDS=7 RUN_SECONDS=6 VARIANTS="plain cprof gperftools cprof-fp" bench/cpu/overhead.sh
#
# `burn` times its own work: wall (CLOCK_MONOTONIC), its thread's CPU (which
# includes the signal handlers that ran on it) and the process's CPU (which
# includes cprof's collector and server threads, or anything else the
# profiler runs). Start-up, the 0.3 s sleep and writing the profile out are
# outside the timed work for every variant. Reports medians and ratios to
# plain; the machine is shared and noisy, so only medians and ratios mean
# anything. The workloads run at nice -10 when the script runs as root
# (NICE=0 to turn that off), so other work on the machine disturbs them less.
# gperftools (Debian libgoogle-perftools-dev) is installed if missing.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ROUNDS=${ROUNDS:-7}
RUN_SECONDS=${RUN_SECONDS:-6}
VARIANTS=${VARIANTS:-plain cprof gperftools}
HZ=100
if [ "$(id -u)" -eq 0 ]; then NICE=${NICE:--10}; else NICE=${NICE:-0}; fi

gperftools_profiler overhead

cpu_profile_available || exit 1

UNITS=$(nice -n "$NICE" "$BIN/burn" --calibrate "$RUN_SECONDS")
# The profile must outlast the work even when a loaded machine slows it:
# 1.5 times the calibrated time, plus the 0.3 s sleep and a second.
PROFILE_SECONDS=$(((RUN_SECONDS * 3 + 1) / 2 + 1))
UNTIL_MS=$((PROFILE_SECONDS * 1000 + 1500))

echo "# CPU profiling overhead: burn $UNITS units (~${RUN_SECONDS} s), $ROUNDS rounds of: $VARIANTS"
echo "# sampling at 100 Hz; cprof profile requests of ${PROFILE_SECONDS} s; nice $NICE"
machine
echo "gperftools: $GPERF ($(dpkg-query -W -f '${Version}' libgoogle-perftools-dev))"

RES=$T/results # variant round wall thread_cpu process_cpu samples
: >"$RES"

# record VARIANT ROUND OUTFILE SAMPLES: adds burn's figures to the results.
record() {
  local w c p
  w=$(field wall_ns "$3") c=$(field thread_cpu_ns "$3") p=$(field process_cpu_ns "$3")
  if [ -z "$w" ]; then
    echo "$1 round $2: burn printed no result" >&2
    exit 1
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$w" "$c" "$p" "$4" >>"$RES"
  awk -v v="$1" -v r="$2" -v w="$w" -v c="$c" -v p="$p" -v s="$4" 'BEGIN {
    printf "  round %d %-11s wall %7.3f s  thread CPU %7.3f s  process CPU %7.3f s  samples %s\n",
      r, v, w / 1e9, c / 1e9, p / 1e9, s }'
}

run_plain() {
  nice -n "$NICE" "$BIN/burn" "$UNITS" --wait-ms 300 >"$T/plain.$1.out"
  record plain "$1" "$T/plain.$1.out" -
}

run_gperftools() {
  nice -n "$NICE" env LD_PRELOAD="$GPERF" CPUPROFILE="$T/gperf.$1.prof" CPUPROFILE_FREQUENCY=$HZ \
    "$BIN/burn" "$UNITS" --wait-ms 300 >"$T/gperftools.$1.out" 2>"$T/gperftools.$1.err"
  # gperftools says at exit: "PROFILE: interrupts/evictions/bytes = 600/0/…".
  record gperftools "$1" "$T/gperftools.$1.out" \
    "$(sed -n 's|^PROFILE: interrupts/evictions/bytes = \([0-9]*\)/.*|\1|p' "$T/gperftools.$1.err")"
}

# run_cprof VARIANT ROUND UNWINDER
run_cprof() {
  local v=$1 r=$2 samples
  WRAP=(nice -n "$NICE")
  start "$v.$r" CPROF_CPU_HZ=$HZ CPROF_UNWIND="$3" -- \
    "$BIN/burn" "$UNITS" --wait-ms 300 --until-ms "$UNTIL_MS"
  WRAP=()
  fetch_profile "$v.$r" "$PROFILE_SECONDS" || exit 1
  # The burn thread's samples: at 100 Hz about 100 per second of its CPU.
  samples=$(go tool pprof -tags -sample_index=samples "$T/$v.$r.pb.gz" 2>/dev/null | awk '
    /^ *[^ ]+:[ \t]+Total/ { key = $1 }
    key == "thread:" && /%\): *burn$/ { n = $1 } END { printf "%d", n }')
  record "$v" "$r" "$T/$v.$r.out" "$samples"
  local w
  w=$(field wall_ns "$T/$v.$r.out")
  if [ $((w / 1000000 + 300)) -gt $((PROFILE_SECONDS * 1000)) ]; then
    echo "  (round $r: the work outlasted the ${PROFILE_SECONDS} s profile; the machine is very busy)" >&2
  fi
}

for r in $(seq 1 "$ROUNDS"); do
  for v in $VARIANTS; do
    case $v in
    plain) run_plain "$r" ;;
    gperftools) run_gperftools "$r" ;;
    cprof) run_cprof cprof "$r" dwarf ;;
    cprof-fp) run_cprof cprof-fp "$r" fp ;;
    *) echo "unknown variant $v" >&2; exit 2 ;;
    esac
  done
done
load

col() { awk -F'\t' -v v="$1" -v c="$2" '$1 == v { print $c }' "$RES"; }
# paired VARIANT COLUMN: the median over rounds of variant/plain in the same round.
paired() {
  awk -F'\t' -v v="$1" -v c="$2" '$1 == "plain" { p[$2] = $c } $1 == v { x[$2] = $c }
    END { for (r in x) if (r in p) printf "%.6f\n", x[r] / p[r] }' "$RES" | median
}

echo
echo "## Medians over $ROUNDS alternating rounds (burn, ~${RUN_SECONDS} s, 100 Hz)"
echo
echo "| variant | wall s | wall ratio | thread CPU s | thread CPU ratio | process CPU s | process CPU ratio | samples |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
pw=$(col plain 3 | median) pc=$(col plain 4 | median) pp=$(col plain 5 | median)
for v in $VARIANTS; do
  w=$(col "$v" 3 | median) c=$(col "$v" 4 | median) p=$(col "$v" 5 | median)
  s=$(col "$v" 6 | grep -v '^-$' | median || true)
  awk -v v="$v" -v w="$w" -v c="$c" -v p="$p" -v pw="$pw" -v pc="$pc" -v pp="$pp" -v s="$s" 'BEGIN {
    printf "| %s | %.3f | %.4f | %.3f | %.4f | %.3f | %.4f | %s |\n", v, w / 1e9, w / pw, c / 1e9, c / pc,
      p / 1e9, p / pp, (s == "nan" ? "-" : s) }'
done
echo
echo "Median of the per-round ratios (each variant over the plain run of the same round):"
echo
echo "| variant | wall | thread CPU | process CPU |"
echo "|---|---:|---:|---:|"
for v in $VARIANTS; do
  [ "$v" = plain ] && continue
  printf '| %s | %.4f | %.4f | %.4f |\n' "$v" "$(paired "$v" 3)" "$(paired "$v" 4)" "$(paired "$v" 5)"
done

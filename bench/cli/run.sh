#!/usr/bin/env bash
# `cprof top` against `go tool pprof -top` on the same large profile (issue
# 15): gen_profile writes a SIZE MB profile.proto of each shape (deep: a
# heap profile, four sample types, stacks 20-200 deep and some 1,000; cpu:
# two sample types, shallow stacks, a million samples); then the two
# commands read it in turn, RUNS times each, alternating which goes first.
# Prints each run's wall time and peak RSS (GNU time's %M: the peak
# of the process and of anything it waited for), the medians, and the
# ratios pprof/cprof of runs made side by side (their median, and the
# spread). Wall time is taken around GNU time by bash's $EPOCHREALTIME, as
# time's own %e has 10 ms steps. Whether the two printed the same table is
# shown too.
#
#   bench/cli/run.sh                 or: make -C bench cli
#   RUNS=5 SIZE=50 SHAPES="deep cpu" SEED=1 RAW=0 bench/cli/run.sh
#
# RAW=1 reads the profiles uncompressed instead of gzipped. The commands
# are prefixes that get the file's path appended:
#   CPROF_CMD  default "$CPROF_BUILD/cprof top" (CPROF_BUILD: bench/build/cprof)
#   PPROF_CMD  default "$(go env GOTOOLDIR)/pprof -top": go tool pprof's own
#              binary, without the go command that would start it
# Without a `cprof top` (and no CPROF_CMD) only pprof is measured.
# pprof takes about 2 minutes a run for both shapes at 50 MB on the machine
# bench/README.md describes (RUNS=5: about 10 minutes, and cprof's time).
set -euo pipefail
BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ -z "${BENCH_BUILT:-}" ]; then
  make -s -C "$BENCH" lib "$BENCH/build/gen_profile" >/dev/null
  export BENCH_BUILT=1
fi
. "$BENCH/cpu/lib.sh"

RUNS=${RUNS:-5}
SIZE=${SIZE:-50}
SHAPES=${SHAPES:-deep cpu}
SEED=${SEED:-1}
RAW=${RAW:-0}
need_pkgs cli time
command -v go >/dev/null || { echo "cli: needs go tool pprof (Debian package golang-go)" >&2; exit 1; }
PPROF_CMD=${PPROF_CMD:-$(go env GOTOOLDIR)/pprof -top}
read -r -a pprof_cmd <<<"$PPROF_CMD"
tools=(pprof)
if [ -n "${CPROF_CMD:-}" ]; then
  read -r -a cprof_cmd <<<"$CPROF_CMD"
  tools+=(cprof)
elif "$CPROF_BUILD/cprof" top --help >/dev/null 2>&1; then
  cprof_cmd=("$CPROF_BUILD/cprof" top)
  tools+=(cprof)
else
  echo "cli: no 'cprof top' in $CPROF_BUILD/cprof yet (CPROF_CMD= names another):" \
    "measuring go tool pprof alone"
fi

echo "cli: ${tools[*]} on $SIZE MB profiles, $RUNS runs each, alternating"
echo "pprof: ${pprof_cmd[*]} FILE"
[ ${#tools[@]} -eq 2 ] && echo "cprof: ${cprof_cmd[*]} FILE"
machine
RES=$T/results
: >"$RES"

# mb KB: kilobytes (GNU time's unit for %M) in megabytes.
mb() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
# ratio GROUP COLUMN: pprof's over cprof's, the median of side-by-side runs
# and their spread.
ratio() {
  printf '%.2fx (%s)' "$(res_paired "$1" pprof cprof "$2")" "$(res_spread "$1" pprof cprof "$2")"
}

# measure TOOL FILE SHAPE RUN: one run, its time and peak RSS appended to
# $RES as "SHAPE TOOL RUN SECONDS KB"; its output kept as $T/SHAPE.TOOL.out.
measure() {
  local tool=$1 file=$2 shape=$3 run=$4 rc=0
  local -a cmd
  if [ "$tool" = pprof ]; then cmd=("${pprof_cmd[@]}"); else cmd=("${cprof_cmd[@]}"); fi
  local t0=$EPOCHREALTIME
  /usr/bin/time -f '%M' -o "$T/time" "${cmd[@]}" "$file" >"$T/$shape.$tool.out" \
    2>"$T/$shape.$tool.err" || rc=$?
  local t1=$EPOCHREALTIME
  if [ $rc -ne 0 ]; then
    echo "  run $run: $tool failed (exit $rc): $(grep -v '^Command exited' "$T/$shape.$tool.err" | head -1)"
    return 1
  fi
  local secs kb
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
  kb=$(tail -1 "$T/time")
  printf '%s\t%s\t%s\t%s\t%s\n' "$shape" "$tool" "$run" "$secs" "$kb" >>"$RES"
  printf '  run %d: %-5s %8.3f s %8s MB\n' "$run" "$tool" "$secs" "$(mb "$kb")"
}

status=0
for shape in $SHAPES; do
  file=$T/$shape.pb.gz
  gen=(--shape "$shape" --size "$SIZE" --seed "$SEED")
  if [ "$RAW" = 1 ]; then
    file=$T/$shape.pb
    gen+=(--raw)
  fi
  echo
  echo "$("$BIN/gen_profile" "${gen[@]}" -o "$file"), seed $SEED"
  for run in $(seq 1 "$RUNS"); do
    for tool in $(rotated "$run" "${tools[@]}"); do
      measure "$tool" "$file" "$shape" "$run" || status=1
    done
  done
  printf '  %-6s %10s %12s\n' median "time s" "peak RSS MB"
  for tool in "${tools[@]}"; do
    printf '  %-6s %10.3f %12s\n' "$tool" "$(res_col "$shape" "$tool" 4 | median)" \
      "$(mb "$(res_col "$shape" "$tool" 5 | median)")"
  done
  if [ ${#tools[@]} -eq 2 ] && [ -n "$(res_col "$shape" cprof 4)" ]; then
    echo "  pprof/cprof: time $(ratio "$shape" 4), memory $(ratio "$shape" 5);" \
      "goal: time >= 3x, memory > 1x"
    if cmp -s "$T/$shape.pprof.out" "$T/$shape.cprof.out"; then
      echo "  tables: the same"
    else
      echo "  tables: differ in $(diff -a "$T/$shape.pprof.out" "$T/$shape.cprof.out" | grep -c '^[<>]') lines" \
        "(run with KEEP=1 to keep $T/$shape.{pprof,cprof}.out)"
    fi
  fi
done
echo
load
exit $status

#!/usr/bin/env bash
# The collector's cost per target (issue 32): bench/collect/run.sh for 10,
# 100 and 200 targets at the seed's 3 s interval and at 10 s, one after the
# other, and one table of what each measured. Short windows, so that the
# six runs take about 7 minutes: DURATION3 (45 s by default) at 3 s,
# DURATION10 (60 s) at 10 s, each after one interval of warm-up. Each run's
# whole output goes to the log named at the end.
#
#   bench/collect/matrix.sh
#   COUNTS="10 100" INTERVALS=3 DURATION3=120 bench/collect/matrix.sh
#   CPROF_BUILD=/path/to/build bench/collect/matrix.sh
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export CPROF_BUILD=${CPROF_BUILD:-$BENCH/build/cprof}
[ -x "$CPROF_BUILD/cprof" ] || make -s -C "$BENCH" lib
COUNTS=${COUNTS:-10 100 200}
INTERVALS=${INTERVALS:-3 10}
DURATION3=${DURATION3:-45}
DURATION10=${DURATION10:-60}
mkdir -p "$BENCH/build"
LOG=$BENCH/build/collect-matrix-$(date -u +%Y%m%dT%H%M%SZ).txt
ROWS=$(mktemp /tmp/cprof-collect-matrix.XXXXXX)
trap 'rm -f "$ROWS"' EXIT

{
  echo "$(date -u '+%Y-%m-%d %H:%M:%S UTC'), $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
  echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$LOG"
for iv in $INTERVALS; do
  case $iv in 3) d=$DURATION3 ;; 10) d=$DURATION10 ;; *) d=${DURATION:-60} ;; esac
  for n in $COUNTS; do
    echo "== $n targets at ${iv}s, ${d} s measured" | tee -a "$LOG"
    INTERVAL=$iv TARGETS=$n DURATION=$d ROW_FILE=$ROWS "$BENCH/collect/run.sh" >>"$LOG" 2>&1 ||
      { echo "collect matrix: the run of $n targets at ${iv}s failed (see $LOG)" >&2; tail -5 "$LOG" >&2; exit 1; }
    grep -E '^(recorded|load average)' "$LOG" | tail -3 | sed 's/^/   /'
  done
done
{
  echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  printf '%-8s %7s %6s %12s %13s %11s %16s %8s %18s %18s %9s\n' interval targets window \
    'profiles/s' 'CPU % core' '% / target' 'RSS end/peak MB' failures 'GB/day stored/du' \
    'MB/day/target s/du' 'gen. CPU'
  awk -F'\t' '{
    printf "%-8s %7d %5ss %6.1f/%5.1f %13.1f %11.3f %8.1f / %5.1f %8d %9.2f / %6.2f %9.1f / %6.1f %8.1f%%\n",
      $1 "s", $2, $3, $4, $5, $6, $6 / $2, $7, $8, $9, $10, $11, $12, $13, $14
  }' "$ROWS"
  echo
  echo "profiles/s: stored / expected (targets x 5 profiles / interval); GB/day: the window's stored"
  echo "bytes a second x 86400, and its profiles a second x 86400 at du's bytes a profile (files,"
  echo "4 KB blocks, the SQLite index); % / target: the collector's CPU over the targets"
} | tee -a "$LOG"
echo "(each run's output: $LOG)"

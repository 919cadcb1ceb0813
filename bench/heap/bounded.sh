#!/usr/bin/env bash
# The heap profiler's own memory over time, on programs that keep nothing
# and allocate from many distinct stacks and sizes: `stacks`
# (heap/stacks.c), steps of malloc+free of sizes log-uniform in 16 B-64 KiB
# from D recursion depths, and with --paths P also one of two functions
# at each of the first P levels (up to D x 2^P stacks).
#
#   bench/heap/bounded.sh
#   SECONDS_RUN=25 SHAPES="depths paths" bench/heap/bounded.sh
#
# Shapes:
#   depths  120 depths, no paths: 120 stacks, thousands of sizes each (the
#           shape on which the per-(stack, size) table grew to 630 MB in 25 s)
#   paths   120 depths, 20 path levels: more stacks than CPROF_MAX_MEMORY
#           holds, so the limit is reached and must hold
# each run plain and under LD_PRELOAD=libcprof.so at the default rate and
# the default CPROF_MAX_MEMORY (32M), SECONDS_RUN seconds. Reported: the
# program's own VmRSS at 8 s and at the end, and for cprof, from its
# server, the time and size of a /debug/pprof/heap fetch at the end
# (median of 3), the peak RSS after those fetches (building a profile
# takes memory of its own, for a while), and the sampler's own figures
# from ?debug=1 (Buckets: stacks, Records, ProfilerBytes: its tables'
# memory).
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SECONDS_RUN=${SECONDS_RUN:-25}
SHAPES=${SHAPES:-depths paths}

need_pkgs heap-bounded curl
heap_available || exit 1

echo "# Heap profiler memory over time: stacks for $SECONDS_RUN s; shapes: $SHAPES"
machine
echo

args_of() {
  case $1 in
  depths) echo "--depths 120" ;;
  paths) echo "--depths 120 --paths 20" ;;
  *) echo "unknown shape $1" >&2; exit 2 ;;
  esac
}

# last_t FILE: the last second the program reported.
last_t() { awk '/^stacks:/ { split($2, a, "="); t = a[2] } END { print t + 0 }' "$1"; }
# rss_at FILE SECONDS: the VmRSS (kB) the program printed at that second
# (or its last line).
rss_at() { awk -v t="$2" '/^stacks:/ { split($2, a, "="); split($4, b, "="); if (a[2] <= t) r = b[2] } END { print r }' "$1"; }

echo "| shape | variant | VmRSS at 8 s, kB | VmRSS at end, kB | /heap fetch, s | /heap size, kB | VmHWM after the fetches, kB | Buckets | Records | ProfilerBytes |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for shape in $SHAPES; do
  read -r -a args <<<"$(args_of "$shape")"
  echo "  $shape: plain..." >&2
  "$BIN/stacks" --seconds "$SECONDS_RUN" "${args[@]}" >"$T/$shape.plain.out"
  printf '| %s | plain | %s | %s | | | | | | |\n' "$shape" "$(rss_at "$T/$shape.plain.out" 8)" \
    "$(rss_at "$T/$shape.plain.out" 100000)"

  echo "  $shape: cprof..." >&2
  # A little longer than the plain run, so the profile is fetched while it
  # still runs, after as many steps.
  start "$shape.cprof" -- "$BIN/stacks" --seconds $((SECONDS_RUN + 10)) "${args[@]}"
  while [ "$(last_t "$T/$shape.cprof.out")" -lt "$SECONDS_RUN" ]; do
    kill -0 "$PID" 2>/dev/null || { echo "stacks under cprof exited:" >&2; cat "$T/$shape.cprof.err" >&2; exit 1; }
    sleep 0.2
  done
  times=()
  for _ in 1 2 3; do
    times+=("$(curl -s -o "$T/$shape.heap.pb.gz" -w '%{time_total}' "http://$ADDR/debug/pprof/heap")")
  done
  hwm=$(status_kb "$PID" VmHWM)
  # The trailer's figures: the text of a profile at the limit is hundreds of
  # MB (every frame of every record), so only its head and tail are kept.
  curl -s --max-time 120 "http://$ADDR/debug/pprof/heap?debug=1" | grep '^# [A-Za-z]* = ' >"$T/$shape.heap.txt" || true
  kill "$PID" 2>/dev/null || true
  wait "$PID" 2>/dev/null || true
  fig() { sed -n "s/^# $1 = \([0-9]*\)$/\1/p" "$T/$shape.heap.txt"; }
  printf '| %s | cprof | %s | %s | %.3f | %d | %s | %s | %s | %s |\n' "$shape" \
    "$(rss_at "$T/$shape.cprof.out" 8)" "$(rss_at "$T/$shape.cprof.out" "$SECONDS_RUN")" \
    "$(printf '%s\n' "${times[@]}" | median)" $(($(stat -c %s "$T/$shape.heap.pb.gz") / 1024)) "$hwm" \
    "$(fig Buckets)" "$(fig Records)" "$(fig ProfilerBytes)"
done
load

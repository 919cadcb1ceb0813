#!/usr/bin/env bash
# The heap profiler's own memory: `hold` (heap/hold.c) keeps BLOCKS live
# blocks of SIZE bytes (defaults 1000000 x 64 B, from 16 distinct stacks)
# and reports its VmRSS and VmHWM once they are allocated, in four runs:
#   plain       no cprof
#   cprof-off   LD_PRELOAD=libcprof.so, CPROF_HEAP_RATE=0 (what the library
#               itself takes: code, the server thread)
#   cprof       the default rate (524288)
#   cprof-all   CPROF_HEAP_RATE=1: every block sampled, so every one is in
#               the profiler's table of live sampled blocks
# each REPS times (medians). cprof runs with its server on a free port;
# while the program holds its blocks the script fetches
# /debug/pprof/heap?debug=1 and reports the `# Name = value` lines of its
# trailer that describe the profiler itself (its tables' bytes, the sampled
# blocks in use), and the profile's inuse_space as a check.
#
#   bench/heap/memory.sh
#   REPS=3 BLOCKS=1000000 SIZE=64 STACKS=16 bench/heap/memory.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

REPS=${REPS:-3}
BLOCKS=${BLOCKS:-1000000}
SIZE=${SIZE:-64}
STACKS=${STACKS:-16}
VARIANTS="plain cprof-off cprof cprof-all"

need_pkgs heap-memory golang-go curl
heap_available || exit 1

echo "# Heap profiler memory: hold $BLOCKS blocks of $SIZE B from $STACKS stacks; $REPS runs of: $VARIANTS"
machine

RES=$T/results # variant rep rss hwm build_ms trailer...
: >"$RES"
HOLD=(--blocks "$BLOCKS" --size "$SIZE" --stacks "$STACKS")

# wait_line FILE PID: waits until hold has printed its line into FILE.
wait_line() {
  for _ in $(seq 1 2400); do
    grep -q '^hold:' "$1" && return 0
    kill -0 "$2" 2>/dev/null || { echo "hold exited early:" >&2; cat "$1" "${1%.out}.err" >&2; return 1; }
    sleep 0.05
  done
  echo "hold did not finish within 120 s" >&2
  return 1
}

for r in $(seq 1 "$REPS"); do
  for v in $VARIANTS; do
    name=$v.$r
    case $v in
    plain)
      "$BIN/hold" "${HOLD[@]}" >"$T/$name.out"
      ;;
    cprof-off | cprof | cprof-all)
      case $v in
      cprof-off) rate=0 ;;
      cprof) rate=524288 ;;
      cprof-all) rate=1 ;;
      esac
      start "$name" CPROF_HEAP_RATE="$rate" -- "$BIN/hold" "${HOLD[@]}" --hold-ms 600000
      wait_line "$T/$name.out" "$PID"
      curl -s --max-time 120 -o "$T/$name.heap" "http://$ADDR/debug/pprof/heap?debug=1" || true
      curl -s --max-time 120 -o "$T/$name.pb.gz" "http://$ADDR/debug/pprof/heap" || true
      kill "$PID" 2>/dev/null || true
      wait "$PID" 2>/dev/null || true
      ;;
    *) echo "unknown variant $v" >&2; exit 2 ;;
    esac
    line=$(grep '^hold:' "$T/$name.out")
    rss=$(echo "$line" | sed -n 's/.*vm_rss_kb=\([0-9]*\).*/\1/p')
    hwm=$(echo "$line" | sed -n 's/.*vm_hwm_kb=\([0-9]*\).*/\1/p')
    ms=$(echo "$line" | sed -n 's/.*build_ms=\([0-9]*\).*/\1/p')
    extra=""
    if [ -s "$T/$name.heap" ]; then
      # The trailer's "# Name = value" lines (Go's runtime.MemStats names
      # and cprof's own), as name=value.
      extra=$(sed -n 's/^# \([A-Za-z]*\) = \([0-9]*\)$/\1=\2/p' "$T/$name.heap" | tr '\n' ' ')
    fi
    if [ -s "$T/$name.pb.gz" ]; then
      extra="$extra inuse_space=$(heap_totals "$T/$name.pb.gz" | cut -d' ' -f4)"
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$v" "$r" "$rss" "$hwm" "$ms" "$extra" >>"$RES"
    printf '  run %d %-9s VmRSS %7d kB  VmHWM %7d kB  build %5d ms  %s\n' "$r" "$v" "$rss" "$hwm" "$ms" "$extra"
  done
done
load

col() { awk -F'\t' -v v="$1" -v c="$2" '$1 == v { print $c }' "$RES"; }
# trailer VARIANT NAME: the median of a trailer value.
trailer() {
  awk -F'\t' -v v="$1" -v k="$2" '$1 == v { n = split($6, a, " "); for (i = 1; i <= n; i++) {
    split(a[i], kv, "="); if (kv[1] == k) print kv[2] } }' "$RES" | median
}
P_RSS=$(col plain 3 | median)
echo
echo "## Medians over $REPS runs ($BLOCKS blocks of $SIZE B live = $((BLOCKS * SIZE / 1024)) KiB requested)"
echo
NAMES=$(awk -F'\t' '{ n = split($6, a, " "); for (i = 1; i <= n; i++) { split(a[i], kv, "="); print kv[1] } }' "$RES" |
  awk '!seen[$0]++' | grep -E '^(SampledLive|Buckets|ProfilerBytes|inuse_space)$' || true)
hdr="| variant | CPROF_HEAP_RATE | VmRSS kB | VmHWM kB | over plain, kB | over plain per block, B | malloc loop, ms |"
sep="|---|---:|---:|---:|---:|---:|---:|"
for k in $NAMES; do hdr="$hdr $k |"; sep="$sep---:|"; done
echo "$hdr"
echo "$sep"
for v in $VARIANTS; do
  case $v in plain) rate=- ;; cprof-off) rate=0 ;; cprof) rate=524288 ;; cprof-all) rate=1 ;; esac
  rss=$(col "$v" 3 | median) hwm=$(col "$v" 4 | median) ms=$(col "$v" 5 | median)
  row=$(awk -v v="$v" -v rate="$rate" -v rss="$rss" -v hwm="$hwm" -v p="$P_RSS" -v b="$BLOCKS" -v ms="$ms" 'BEGIN {
    printf "| %s | %s | %.0f | %.0f | %+.0f | %.1f | %.0f |", v, rate, rss, hwm, rss - p, (rss - p) * 1024 / b, ms }')
  for k in $NAMES; do
    x=$(trailer "$v" "$k")
    [ "$x" = nan ] && x=- || x=$(printf '%.0f' "$x")
    row="$row $x |"
  done
  echo "$row"
done

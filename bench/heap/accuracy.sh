#!/usr/bin/env bash
# Heap profile accuracy: the totals of cprof's exit-time heap profile
# against the truth the workload counts itself.
#
#   bench/heap/accuracy.sh
#   REPS=9 SMALL_MIB=100 BIG_MIB=1024 CHURN=4 HIGH_RATE=4096 CASES="high default mix" \
#     UNWIND=dwarf bench/heap/accuracy.sh
#
# `live` (heap/live.c) keeps a live set of log-uniform sizes (16 B-64 KiB)
# while allocating and freeing CHURN times as much around it, prints the
# truth (bytes and objects it asked for: live, and allocated in all) and
# exits with the live set still allocated. It runs under
#   LD_PRELOAD=libcprof.so CPROF_ADDR=0 CPROF_OUTPUT=DIR CPROF_HEAP_RATE=R
# and DIR/heap.pb.gz, written at exit, is read with `go tool pprof -raw`:
# the sums of inuse_space, alloc_space, inuse_objects and alloc_objects
# over all samples are compared with the truth, as (profile - truth) /
# truth in percent. The cases:
#   high     CPROF_HEAP_RATE=$HIGH_RATE, SMALL_MIB live (goal: bytes within 2 %)
#   default  the default rate (524288), BIG_MIB live (goal: within 10 %)
#   mix      as high, with every allocation function (live --mix)
# Each repetition uses another seed (so other sizes). "se" is the relative
# standard error the workload computes for its own sizes (what sampling
# with probability 1-exp(-size/rate) and weights 1/probability gives): an
# error well inside a few se is noise, a median outside it is bias.
# "samples" is the number of allocations cprof sampled (recovered from the
# profile, see heap_totals in lib.sh), next to the number the workload
# expects for its sizes (sum of 1-exp(-size/rate)); "records" the number
# of sample records in the profile. Object counts at the default rate are
# heavy-tailed (a sampled 16-byte block stands for 32768 objects), so their
# median sits below their mean: the table gives both.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

REPS=${REPS:-9}
SMALL_MIB=${SMALL_MIB:-100}
BIG_MIB=${BIG_MIB:-1024}
CHURN=${CHURN:-4}
HIGH_RATE=${HIGH_RATE:-4096}
CASES=${CASES:-high default mix}
UNWIND=${UNWIND:-dwarf}

need_pkgs heap-accuracy golang-go
heap_available || exit 1

echo "# Heap profile accuracy: $REPS repetitions of: $CASES; churn ${CHURN}x the live set; CPROF_UNWIND=$UNWIND"
machine

ROWS=$T/rows # case rep metric truth profile err% se%
: >"$ROWS"

# one CASE REP RATE MIB [live flags]: runs live once under cprof, adds its rows.
one() {
  local c=$1 r=$2 rate=$3 mib=$4 dir=$T/$1.$2
  shift 4
  mkdir -p "$dir"
  local t0 t1
  t0=$(date +%s%N)
  if ! env LD_PRELOAD="$LIB" CPROF_ADDR=0 CPROF_OUTPUT="$dir" CPROF_HEAP_RATE="$rate" CPROF_UNWIND="$UNWIND" \
    "$BIN/live" "$mib" --churn "$CHURN" --seed "$r" "$@" >"$dir/out" 2>"$dir/err"; then
    echo "$c run $r: live failed under cprof:" >&2
    cat "$dir/err" >&2
    exit 1
  fi
  t1=$(date +%s%N)
  if [ ! -s "$dir/heap.pb.gz" ]; then
    echo "$c run $r: no heap.pb.gz in CPROF_OUTPUT ($(ls "$dir" | tr '\n' ' '))" >&2
    cat "$dir/err" >&2
    exit 1
  fi
  local tot
  tot=$(heap_totals "$dir/heap.pb.gz")
  awk -v c="$c" -v r="$r" -v tot="$tot" -v ms=$(((t1 - t0) / 1000000)) -v rows="$ROWS" '
    function kv(k,   i, a) { for (i = 1; i <= NF; i++) { split($i, a, "="); if (a[1] == k) return a[2] } }
    {
      split(tot, p, " ")
      # metric, its column in heap_totals, the truth, the truth'"'"'s se
      n = split("inuse_space 4 live_bytes se_live_bytes|alloc_space 2 alloc_bytes se_alloc_bytes|" \
                "inuse_objects 3 live_objects se_live_objects|alloc_objects 1 alloc_objects se_alloc_objects|" \
                "inuse_objects_unrounded 8 live_objects se_live_objects|" \
                "alloc_objects_unrounded 7 alloc_objects se_alloc_objects", m, "|")
      line = sprintf("  %-7s run %d:", c, r)
      for (i = 1; i <= n; i++) {
        split(m[i], f, " ")
        truth = kv(f[3]); prof = p[f[2]]; se = kv(f[4]); sub(/%/, "", se)
        err = truth > 0 ? 100 * (prof - truth) / truth : 0
        printf "%s\t%d\t%s\t%s\t%s\t%.4f\t%s\t%s\t%s\t%s\n", c, r, f[1], truth, prof, err, se,
          kv("expected_samples"), p[6], p[5] >> rows
        if (i <= 4) line = line sprintf(" %s %+.2f%%", f[1], err)
      }
      printf "%s (samples %s, expected %s; records %s; %.1f s)\n", line, p[6] < 0 ? "n/a" : p[6], kv("expected_samples"), p[5], ms / 1000
    }' "$dir/out"
}

for r in $(seq 1 "$REPS"); do
  for c in $CASES; do
    case $c in
    high) one high "$r" "$HIGH_RATE" "$SMALL_MIB" ;;
    default) one default "$r" 524288 "$BIG_MIB" ;;
    mix) one mix "$r" "$HIGH_RATE" "$SMALL_MIB" --mix ;;
    *) echo "unknown case $c" >&2; exit 2 ;;
    esac
  done
done
load

echo
echo "## Medians over $REPS runs (error = (profile - truth) / truth)"
echo
echo "| case | rate | live set | metric | truth | profile | error, median | error, mean | \|error\|, max | se | samples/run (expected) | records |"
echo "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for c in $CASES; do
  case $c in
  high) rate=$HIGH_RATE live="$SMALL_MIB MiB" ;;
  default) rate=524288 live="$BIG_MIB MiB" ;;
  mix) rate=$HIGH_RATE live="$SMALL_MIB MiB, all functions" ;;
  esac
  for m in inuse_space alloc_space inuse_objects alloc_objects inuse_objects_unrounded alloc_objects_unrounded; do
    sel() { awk -F'\t' -v c="$c" -v m="$m" -v k="$1" '$1 == c && $3 == m { print $k }' "$ROWS"; }
    t=$(sel 4 | median) p=$(sel 5 | median) e=$(sel 6 | median) s=$(sel 7 | median)
    n=$(sel 9 | median) x=$(sel 8 | median) k=$(sel 10 | median)
    mx=$(sel 6 | awk '{ v = $1 < 0 ? -$1 : $1; if (v > x) x = v } END { print x + 0 }')
    mean=$(sel 6 | awk '{ t += $1; n++ } END { print n ? t / n : 0 }')
    awk -v c="$c" -v rate="$rate" -v live="$live" -v m="$m" -v t="$t" -v p="$p" -v e="$e" -v mx="$mx" -v s="$s" \
      -v n="$n" -v x="$x" -v k="$k" -v mean="$mean" 'BEGIN {
      printf "| %s | %s | %s | %s | %.0f | %.0f | %+.2f %% | %+.2f %% | %.2f %% | %.2f %% | %.0f (%.0f) | %.0f |\n",
        c, rate, live, m, t, p, e, mean, mx, s, n, x, k }'
  done
done
echo
echo "truth and profile are medians over the runs (each run has its own seed, so"
echo "its own truth); *_unrounded are the object counts recomputed from each record's"
echo "sampled count before the profile rounds count / (1 - exp(-size/rate)) to an integer."

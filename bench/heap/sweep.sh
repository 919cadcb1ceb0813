#!/usr/bin/env bash
# The heap sweep (issue 29): cprof's exit-time heap profile against the
# truth the workload counts itself, for every size x allocation call x
# allocator x sampling rate.
#
#   bench/heap/sweep.sh                       (make -C bench heap-sweep)
#   REPS=1 SIZES="8 16 100 1006 4096 40000 1048576 mix" \
#     CALLS="malloc calloc realloc posix_memalign aligned_alloc memalign valloc new new-sized new[] new-aligned mallocx mallocx-a64 sdallocx free_sized" \
#     ALLOCATORS="glibc jemalloc tcmalloc" RATES="default 1" \
#     LIVE_MIB=256 MAX_OBJECTS=8000000 RATE1_OBJECTS=10000 CHURN=3 TIMEOUT=300 bench/heap/sweep.sh
#
# Each cell runs `sweep CALL SIZE N --churn CHURN --seed REP` (heap/sweep.cc:
# N blocks of SIZE bytes kept from CALL, inside CHURN times as many
# allocated and freed again with the matching call) under
#   glibc     LD_PRELOAD=libcprof.so
#   jemalloc  LD_PRELOAD=libcprof.so:libjemalloc.so.2          (doc/running.md's order)
#   tcmalloc  LD_PRELOAD=libcprof.so:libtcmalloc_minimal.so.4
# with CPROF_ADDR=0 CPROF_OUTPUT=DIR and CPROF_HEAP_RATE unset ("default",
# 524288) or set to the rate; DIR/heap.pb.gz, written at exit, is read with
# `go tool pprof -raw` (heap_totals in lib.sh), keeping only the samples
# whose stack holds sweep_alloc (the loader's and libstdc++'s own
# allocations are not in the truth). N is the number of SIZE-byte blocks
# (mix: 7,877 bytes, its mean; valloc: a page at least) that make LIVE_MIB
# MiB, at most MAX_OBJECTS at the default rate and RATE1_OBJECTS at rate 1
# (where every allocation is a sample). SIZE "mix" is log-uniform 16 B-64 KiB.
#
# Per cell, for live bytes, allocated bytes, live objects and allocated
# objects: the error (profile - truth) / truth in %, and the standard error
# the sampling implies for these sizes (heap/sweep.cc: the sum over blocks
# of size^2 (1-p)/p, p = 1-exp(-size/rate)); a cell is within when every
# error is within 4 se (at rate 1 that is exact, up to half a unit per
# record). "behaviour" is what the program saw: a crash (the signal) or a
# timeout, misaligned or corrupted blocks, and whether the kept blocks'
# usable sizes (malloc_usable_size; sallocx for mallocx's) span another
# range than with the heap profiler off (the same allocator and preload,
# CPROF_HEAP_RATE=0, the cell at the rate-1 size, run once). Not without
# cprof: glibc's usable size of an aligned or grown block depends on where
# it fell, which cprof's own allocations move even with the heap profiler
# off (posix_memalign(64, 4096): 4104 without cprof, 4136 with
# CPROF_OUTPUT's recording, at rate 0 and 1 alike); for the same reason
# glibc's default-rate cells, of another size than the baseline's, are not
# compared. A call the allocator does not export
# (mallocx, sdallocx under glibc and tcmalloc; free_sized under all three
# here) is "n/a". The whole table goes to stdout and to
# bench/build/heap-sweep-<UTC time>.md.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

REPS=${REPS:-1}
SIZES=${SIZES:-8 16 100 1006 4096 40000 1048576 mix}
CALLS=${CALLS:-malloc calloc realloc posix_memalign aligned_alloc memalign valloc new new-sized new[] new-aligned mallocx mallocx-a64 sdallocx free_sized}
ALLOCATORS=${ALLOCATORS:-glibc jemalloc tcmalloc}
RATES=${RATES:-default 1}
LIVE_MIB=${LIVE_MIB:-256}
MAX_OBJECTS=${MAX_OBJECTS:-8000000}
RATE1_OBJECTS=${RATE1_OBJECTS:-10000}
CHURN=${CHURN:-3}
TIMEOUT=${TIMEOUT:-300}

need_pkgs heap-sweep golang-go libjemalloc2 libtcmalloc-minimal4
heap_available || exit 1
[ -x "$BIN/sweep" ] || make -s -C "$BENCH" "$BIN/sweep" >/dev/null
JE=$(pkg_file libjemalloc2 '/libjemalloc\.so\.2$')
TCM=$(pkg_file libtcmalloc-minimal4 '/libtcmalloc_minimal\.so\.4$')

OUTMD=$BENCH/build/heap-sweep-$(date -u +%Y%m%dT%H%M%S).md
exec > >(tee "$OUTMD")
START=$(date +%s)
echo "# Heap sweep: $REPS repetition(s); sizes: $SIZES; allocators: $ALLOCATORS; rates: $RATES"
echo "# calls: $CALLS"
echo "# LIVE_MIB=$LIVE_MIB MAX_OBJECTS=$MAX_OBJECTS RATE1_OBJECTS=$RATE1_OBJECTS CHURN=$CHURN; libcprof $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
machine
echo "glibc $(dpkg-query -W -f '${Version}' libc6); jemalloc $JE ($(dpkg-query -W -f '${Version}' libjemalloc2));" \
  "tcmalloc $TCM ($(dpkg-query -W -f '${Version}' libtcmalloc-minimal4))"
echo

# preload ALLOC: the allocator's library ("" for glibc).
preload() {
  case $1 in
  glibc) echo "" ;;
  jemalloc) echo "$JE" ;;
  tcmalloc) echo "$TCM" ;;
  *) echo "unknown allocator $1" >&2; exit 2 ;;
  esac
}

# objects SIZE CALL MAX: the number of blocks kept.
objects() {
  awk -v s="$1" -v c="$2" -v max="$3" -v mib="$LIVE_MIB" 'BEGIN {
    f = s == "mix" ? 7877 : s + 0
    if (c == "valloc") f = int((f + 4095) / 4096) * 4096
    n = int(mib * 1048576 / f); if (n > max) n = max; if (n < 1) n = 1; print n }'
}

# status RC: how the program ended, in a word.
status() {
  case $1 in
  0) echo ok ;;
  3) echo n/a ;;
  124) echo timeout ;;
  *) if [ "$1" -gt 128 ]; then echo "crash SIG$(kill -l $(($1 - 128)))"; else echo "exit $1"; fi ;;
  esac
}

ROWS=$T/rows
: >"$ROWS"
declare -A BASE # alloc/call/size -> "usable_min-usable_max" with the heap profiler off

for r in $(seq 1 "$REPS"); do
  for a in $ALLOCATORS; do
    pre=$(preload "$a")
    for call in $CALLS; do
      for s in $SIZES; do
        key=$a/$call/$s
        n1=$(objects "$s" "$call" "$RATE1_OBJECTS")
        if [ -z "${BASE[$key]+x}" ]; then
          rc=0
          rm -rf "$T/base"
          mkdir -p "$T/base"
          timeout "$TIMEOUT" env LD_PRELOAD="$LIB${pre:+:$pre}" CPROF_ADDR=0 CPROF_OUTPUT="$T/base" CPROF_HEAP_RATE=0 \
            "$BIN/sweep" "$call" "$s" "$n1" --churn "$CHURN" --seed "$r" >"$T/base.out" 2>"$T/base.err" || rc=$?
          if [ "$rc" = 0 ]; then
            BASE[$key]="$(field usable_min "$T/base.out")-$(field usable_max "$T/base.out")"
          else
            BASE[$key]=$(status "$rc" | tr ' ' _)
          fi
        fi
        if [ "${BASE[$key]}" = n/a ]; then
          for rate in $RATES; do
            printf '%s\t%s\t%s\t%s\t%s\tn/a\n' "$r" "$a" "$call" "$s" "$rate" >>"$ROWS"
          done
          continue
        fi
        for rate in $RATES; do
          if [ "$rate" = default ]; then n=$(objects "$s" "$call" "$MAX_OBJECTS") renv=(); else n=$n1 renv=(CPROF_HEAP_RATE="$rate"); fi
          dir=$T/cell
          rm -rf "$dir"
          mkdir -p "$dir"
          rc=0
          t0=$(date +%s%N)
          # timeout outside the preload: under it, it would write a profile of its own to DIR.
          timeout "$TIMEOUT" env LD_PRELOAD="$LIB${pre:+:$pre}" CPROF_ADDR=0 CPROF_OUTPUT="$dir" ${renv[@]+"${renv[@]}"} \
            "$BIN/sweep" "$call" "$s" "$n" --churn "$CHURN" --seed "$r" >"$dir/out" 2>"$dir/err" || rc=$?
          t1=$(date +%s%N)
          st=$(status "$rc")
          if [ "$st" != ok ]; then
            printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$a" "$call" "$s" "$rate" "$st" >>"$ROWS"
            echo "  $a $call $s rate=$rate: $st (heap profiler off: ${BASE[$key]}) $(head -c 200 "$dir/err" | tr '\n' ' ')" >&2
            continue
          fi
          if [ -s "$dir/heap.pb.gz" ]; then tot=$(heap_totals "$dir/heap.pb.gz" sweep_alloc); else tot=""; fi
          cmp=1
          [ "$a" = glibc ] && [ "$n" != "$n1" ] && cmp=0
          awk -v r="$r" -v a="$a" -v call="$call" -v s="$s" -v rate="$rate" -v tot="$tot" -v base="${BASE[$key]}" -v cmp="$cmp" \
            -v ms=$(((t1 - t0) / 1000000)) -v rows="$ROWS" '
            function kv(k,   i, x) { for (i = 1; i <= NF; i++) { split($i, x, "="); if (x[1] == k) return x[2] } }
            {
              beh = ""
              if (tot == "") beh = "no profile; "
              if (kv("misaligned") > 0) beh = beh "misaligned " kv("misaligned") "; "
              if (kv("corrupt") > 0) beh = beh "corrupt " kv("corrupt") "; "
              u = kv("usable_min") "-" kv("usable_max")
              if (s != "mix" && cmp && u != base) beh = beh "usable " u " (heap profiler off " base "); "
              sub(/; $/, "", beh); if (beh == "") beh = "ok"
              split(tot, p, " ")
              n = split("inuse_space 4 live_bytes se_live_bytes|alloc_space 2 alloc_bytes se_alloc_bytes|" \
                        "inuse_objects 3 live_objects se_live_objects|alloc_objects 1 alloc_objects se_alloc_objects", m, "|")
              line = sprintf("%s\t%s\t%s\t%s\t%s\tok\t%s\t%s\t%s\t%s\t%d", r, a, call, s, rate, beh, kv("expected_samples"), p[6], p[5], ms)
              within = 1
              for (i = 1; i <= n; i++) {
                split(m[i], f, " ")
                truth = kv(f[3]); prof = p[f[2]] + 0; se = kv(f[4]); sub(/%/, "", se)
                err = truth > 0 ? 100 * (prof - truth) / truth : 0
                # at rate 1: exact, up to half a unit per record
                tol = 4 * se * truth / 100 + (rate == 1 ? 0.5 * p[5] : 0)
                if ((prof - truth > tol || truth - prof > tol) || tot == "") within = 0
                line = line sprintf("\t%s\t%.0f\t%.3f\t%.3f", truth, prof, err, se)
              }
              print line "\t" within >> rows
            }' "$dir/out"
          tail -1 "$ROWS" | awk -F'\t' '{ printf "  %s %s %s rate=%s: inuse_space %+.2f%% (se %.2f) alloc_space %+.2f%% (se %.2f) inuse_objects %+.2f%% alloc_objects %+.2f%%; %s%s; %.1f s\n",
            $2, $3, $4, $5, $14, $15, $18, $19, $22, $26, $28 ? "within 4 se" : "OUTSIDE 4 se", $7 == "ok" ? "" : "; " $7, $11 / 1000 }' >&2
        done
      done
    done
  done
done
load
echo "elapsed: $(($(date +%s) - START)) s"
echo
# Rows: rep alloc call size rate status behaviour expected_samples sampled
#   records ms, then for inuse_space alloc_space inuse_objects alloc_objects:
#   truth profile err se; then within (1/0).

echo "## Every cell: live and allocated bytes, error % (se %)"
echo
echo "Error = (profile - truth) / truth; se = the standard error sampling implies; ✗ = some figure outside 4 se (at rate 1: not exact)."
echo
for a in $ALLOCATORS; do
  for rate in $RATES; do
    echo "### $a, rate $rate$([ "$rate" = default ] && echo ' (524288)')"
    echo
    printf '| call |'; for s in $SIZES; do printf ' %s |' "$s"; done; echo
    printf '|---|'; for s in $SIZES; do printf -- '---:|'; done; echo
    for call in $CALLS; do
      printf '| %s |' "$call"
      for s in $SIZES; do
        awk -F'\t' -v a="$a" -v c="$call" -v s="$s" -v rate="$rate" '
          $2 == a && $3 == c && $4 == s && $5 == rate {
            if ($6 != "ok") { cell = $6; if (cell != "n/a") cell = "**" cell "**" }
            else if (rate == 1) cell = sprintf("%+.2g / %+.2g", $14, $18)
            else cell = sprintf("%+.1f (%.1f) / %+.1f (%.1f)", $14, $15, $18, $19)
            if ($6 == "ok" && !$28) cell = cell " ✗"
            if ($6 == "ok" && $7 != "ok") cell = cell " †"
            out = out (out == "" ? "" : "; ") cell }
          END { printf " %s |", out == "" ? "-" : out }' "$ROWS"
      done
      echo
    done
    echo
  done
done
echo "Cells: live bytes error / allocated bytes error (at the default rate with their se in brackets). ✗: outside 4 se; †: behaviour, below."
echo
if [[ " $RATES " == *" 1 "* ]]; then
  echo "## Rate 1 in short: exact (every figure equal to the truth) or the sizes that are not, as live / allocated bytes error %"
  echo
  printf '| call |'; for a in $ALLOCATORS; do printf ' %s |' "$a"; done; echo
  printf '|---|'; for a in $ALLOCATORS; do printf -- '---|'; done; echo
  for call in $CALLS; do
    printf '| %s |' "$call"
    for a in $ALLOCATORS; do
      awk -F'\t' -v a="$a" -v c="$call" '
        $2 == a && $3 == c && $5 == 1 {
          if ($6 == "n/a") { na++; next }
          v = "exact"
          if ($6 != "ok") v = $6
          else if ($13 != $12 || $17 != $16 || $21 != $20 || $25 != $24) v = sprintf("%+.3g / %+.3g", $14, $18)
          cell[++n] = v; size[n] = $4
          if ($6 == "ok" && $7 != "ok") beh = beh (beh == "" ? "" : ", ") $4 }
        END {
          if (!n) { printf " %s |", na ? "n/a" : "-"; exit }
          same = 1; for (i = 2; i <= n; i++) if (cell[i] != cell[1]) same = 0
          if (same) out = cell[1] == "exact" ? "exact" : "every size: " cell[1]
          else for (i = 1; i <= n; i++) if (cell[i] != "exact") out = out (out == "" ? "" : ", ") size[i] ": " cell[i]
          if (beh != "") out = out " (behaviour: " beh ")"
          printf " %s |", out }' "$ROWS"
    done
    echo
  done
  echo
fi
echo "## Cells outside 4 se, and every behaviour that is not \"ok\""
echo
echo "| allocator | call | size | rate | status | behaviour | inuse_space | alloc_space | inuse_objects | alloc_objects | samples (expected) |"
echo "|---|---|---|---|---|---|---:|---:|---:|---:|---:|"
awk -F'\t' '
  function cell(t, p, e, se) { return sprintf("%s → %s: %+.2f%% (se %.2f)", t, p, e, se) }
  $6 == "n/a" { next }
  $6 != "ok" { printf "| %s | %s | %s | %s | **%s** | | | | | | |\n", $2, $3, $4, $5, $6; next }
  !$28 || $7 != "ok" { printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s (%s) |\n", $2, $3, $4, $5, $28 ? "within" : "**outside 4 se**", $7,
    cell($12, $13, $14, $15), cell($16, $17, $18, $19), cell($20, $21, $22, $23), cell($24, $25, $26, $27), $9, $8 }' "$ROWS"
echo
awk -F'\t' '$6 == "ok" { ok++; if ($28) w++; if ($7 != "ok") b++ } $6 != "ok" && $6 != "n/a" { bad++ } $6 == "n/a" { na++ }
  END { printf "cells run: %d; within 4 se: %d; outside: %d; behaviour not ok: %d; crashed or failed: %d; n/a: %d\n", ok + bad, w, ok - w, b, bad, na }' "$ROWS"
cp "$ROWS" "${OUTMD%.md}.tsv"
echo "(rows: ${OUTMD%.md}.tsv)"

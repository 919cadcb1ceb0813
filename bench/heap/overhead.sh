#!/usr/bin/env bash
# Heap profiling overhead: the malloc/free churn (heap/churn.c) under each
# allocator with and without its heap profiler, and cprof's effect on the
# CPU-bound `burn` of the CPU benchmarks.
#
#   bench/heap/overhead.sh
#   REPS=9 OPS=1e7 SLOTS=10000 DEPTH=10 THREADS="1 2" BURN_ROUNDS=7 BURN_SECONDS=3 bench/heap/overhead.sh
#   HEAP_VARIANTS="glibc cprof cprof-fp" THREADS=1 BURN_ROUNDS=0 bench/heap/overhead.sh
#
# Variants (each compared with the allocator it runs on, without profiling):
#   glibc              no preload: glibc's malloc
#   passthrough        LD_PRELOAD=build/libpassthrough.so (heap/passthrough.c):
#                      malloc and free forwarded through dlsym(RTLD_NEXT)
#                      pointers and nothing else, the floor of interposing
#   cprof              LD_PRELOAD=libcprof.so CPROF_ADDR=0: default rate
#                      (CPROF_HEAP_RATE=524288), CPROF_UNWIND=dwarf (default)
#   cprof-fp           the same with CPROF_UNWIND=fp
#   cprof-off          the same with CPROF_HEAP_RATE=0 (heap profiling off)
#   cprof-rare         the same with CPROF_HEAP_RATE=1073741824 (the largest:
#                      sampling on, but about one sample per GiB)
#   cprof-4096         CPROF_HEAP_RATE=4096 (a sample every ~7 steps),
#   cprof-fp-4096      with each unwinder (OPS / FAST_DIV steps): with the
#                      default-rate variants, what one sample costs
#   jemalloc           LD_PRELOAD=libjemalloc.so.2 (Debian libjemalloc2)
#   jemalloc-prof      + MALLOC_CONF=prof:true,lg_prof_sample:19 (a sample
#                      every 512 KiB on average, as cprof's default)
#   cprof-jemalloc     LD_PRELOAD=libcprof.so:libjemalloc.so.2: cprof's
#                      default sampling on top of jemalloc
#   tcmalloc           LD_PRELOAD=libtcmalloc.so.4 (Debian libgoogle-perftools4)
#   tcmalloc-sample    + TCMALLOC_SAMPLE_PARAMETER=524288 (tcmalloc's own
#                      sampling, what its heapz/MallocExtension reports)
#   cprof-tcmalloc     LD_PRELOAD=libcprof.so:libtcmalloc.so.4
#   tcmalloc-heapprof  + HEAPPROFILE=FILE: gperftools' heap profiler, which
#                      records every allocation (OPS / HEAPPROF_DIV steps)
#   heaptrack          `heaptrack -o FILE churn ...` (Debian heaptrack),
#                      every allocation (OPS / HEAPTRACK_DIV steps)
# For each repetition and each thread count, every variant runs once, in
# the order above rotated by one each repetition, so a slow spell of the
# machine hits all of them.
# `churn` times its own steps (CLOCK_MONOTONIC from its start barrier to
# the last thread's end; also its threads' CPU and the process's CPU over
# that span): start-up, filling the slots and writing a profile out at exit
# are outside the timing. Reported: ns per step (a thread's wall time per
# step), CPU ns per step, medians over REPS; and ratios to the baseline
# allocator, as the median of the per-repetition ratios. For heaptrack the
# wall time of the whole `heaptrack` command (start-up, its interpreter
# flushing the data to the file at the end) is also printed, per step.
#
# Then `burn` (bench/cpu/burn.c, about BURN_SECONDS of CPU work that makes
# no allocation in its timed part) runs alternately plain and under
# LD_PRELOAD=libcprof.so with the server on (CPROF_ADDR=127.0.0.1:0), heap
# sampling at its default rate and no CPU profile requested, BURN_ROUNDS
# times: what loading cprof costs a program that does not allocate.
#
# The workloads run at nice -10 when the script runs as root (NICE=0 to
# turn that off). Installs libjemalloc2, libgoogle-perftools-dev and
# heaptrack if missing.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

REPS=${REPS:-9}
OPS=${OPS:-1e7}
SLOTS=${SLOTS:-10000}
DEPTH=${DEPTH:-10}
THREADS=${THREADS:-1 2}
HEAPPROF_DIV=${HEAPPROF_DIV:-100}
HEAPTRACK_DIV=${HEAPTRACK_DIV:-10}
RATE_DIV=${RATE_DIV:-10}
BURN_ROUNDS=${BURN_ROUNDS:-7}
BURN_SECONDS=${BURN_SECONDS:-3}
HEAP_VARIANTS=${HEAP_VARIANTS:-glibc passthrough cprof cprof-fp cprof-off cprof-rare cprof-4096 cprof-fp-4096 jemalloc jemalloc-prof cprof-jemalloc tcmalloc tcmalloc-sample cprof-tcmalloc tcmalloc-heapprof heaptrack}

heap_allocators heap-overhead
need_pkgs heap-overhead heaptrack
case " $HEAP_VARIANTS " in *" cprof"*) heap_available || exit 1 ;; esac
if [ "$BURN_ROUNDS" -gt 0 ]; then heap_available || exit 1; fi

echo "# Heap profiling overhead: churn, $SLOTS slots, depth $DEPTH, $OPS steps per thread (heapprof / $HEAPPROF_DIV, heaptrack / $HEAPTRACK_DIV, rate 4096 / $RATE_DIV)," \
  "threads: $THREADS; $REPS repetitions of: $HEAP_VARIANTS; nice $NICE"
machine
echo "$(allocator_versions); heaptrack $(dpkg-query -W -f '${Version}' heaptrack)"

RES=$T/results # threads variant rep ns_per_op thread_cpu/op process_cpu/op command_wall/op
: >"$RES"

# run_churn VARIANT THREADS REP
run_churn() {
  local v=$1 th=$2 r=$3 ops=$OPS out=$T/churn.$1.$2.$3
  case $v in
  tcmalloc-heapprof) ops=$(awk -v o="$OPS" -v d="$HEAPPROF_DIV" 'BEGIN { printf "%d", o / d }') ;;
  heaptrack) ops=$(awk -v o="$OPS" -v d="$HEAPTRACK_DIV" 'BEGIN { printf "%d", o / d }') ;;
  cprof-4096 | cprof-fp-4096) ops=$(awk -v o="$OPS" -v d="$RATE_DIV" 'BEGIN { printf "%d", o / d }') ;;
  esac
  local args=(--threads "$th" --ops "$ops" --slots "$SLOTS" --depth "$DEPTH") w0 w1 f
  heap_variant "$v" "$T/heapprof.$th.$r"
  w0=$(date +%s%N)
  if [ "$v" = heaptrack ]; then
    nice -n "$NICE" heaptrack -o "$T/heaptrack.$th.$r" "$BIN/churn" "${args[@]}" >"$out" 2>"$out.err" || {
      echo "heaptrack failed:" >&2; cat "$out" "$out.err" >&2; exit 1; }
  else
    nice -n "$NICE" env ${ENVS[@]+"${ENVS[@]}"} "$BIN/churn" "${args[@]}" >"$out" 2>"$out.err" || {
      echo "$v failed:" >&2; cat "$out" "$out.err" >&2; exit 1; }
  fi
  w1=$(date +%s%N)
  f=$(churn_figures "$out") || exit 1
  awk -F'\t' -v v="$v" -v th="$th" -v r="$r" -v cw=$((w1 - w0)) -v res="$RES" '{
      printf "%d\t%s\t%d\t%s\t%s\t%s\t%.3f\n", th, v, r, $1, $2, $3, cw * th / $4 >> res
      printf "  rep %d threads %d %-17s %8.2f ns/step  thread CPU %8.2f ns/step  process CPU %8.2f ns/step  (%d steps, command %.2f s)\n",
        r, th, v, $1, $2, $3, $4, cw / 1e9 }' <<<"$f"
}

for r in $(seq 1 "$REPS"); do
  for th in $THREADS; do
    for v in $(rotated "$r" $HEAP_VARIANTS); do run_churn "$v" "$th" "$r"; done
  done
done
load

col() { res_col "$2" "$1" "$3"; } # VARIANT THREADS COLUMN
base_of() { heap_variant "$1"; echo "$BASE"; }
paired() { res_paired "$2" "$1" "$(base_of "$1")" "$3"; } # VARIANT THREADS COLUMN

echo
echo "## churn: medians over $REPS repetitions (ns per malloc+free step)"
echo
echo "| variant | threads | ns/step (wall) | thread CPU ns/step | process CPU ns/step | vs | wall ratio | thread CPU ratio | process CPU ratio |"
echo "|---|---:|---:|---:|---:|---|---:|---:|---:|"
for th in $THREADS; do
  for v in $HEAP_VARIANTS; do
    b=$(base_of "$v")
    w=$(col "$v" "$th" 4 | median) c=$(col "$v" "$th" 5 | median) p=$(col "$v" "$th" 6 | median)
    if [ "$b" = "$v" ]; then
      printf '| %s | %s | %.2f | %.2f | %.2f | - | - | - | - |\n' "$v" "$th" "$w" "$c" "$p"
    else
      printf '| %s | %s | %.2f | %.2f | %.2f | %s | %.3f | %.3f | %.3f |\n' "$v" "$th" "$w" "$c" "$p" "$b" \
        "$(paired "$v" "$th" 4)" "$(paired "$v" "$th" 5)" "$(paired "$v" "$th" 6)"
    fi
  done
done
case " $HEAP_VARIANTS " in *" heaptrack "*)
  echo
  for th in $THREADS; do
    printf 'heaptrack, %s thread(s): the whole `heaptrack` command took %.1f ns per step (median; churn'"'"'s own loop: %.1f)\n' \
      "$th" "$(col heaptrack "$th" 7 | median)" "$(col heaptrack "$th" 4 | median)"
  done
  ;;
esac

# samples_per_step RATE: the samples a step of churn expects at RATE
# (churn --expect draws its sizes and adds up 1 - exp(-size/RATE)).
samples_per_step() { "$BIN/churn" --expect "$1" --ops 2e6 | sed -n 's/.*samples_per_op=\([^ ]*\).*/\1/p'; }
sd=$(samples_per_step 524288) s4=$(samples_per_step 4096)
echo
for pair in "cprof cprof-4096 dwarf" "cprof-fp cprof-fp-4096 fp"; do
  set -- $pair
  case " $HEAP_VARIANTS " in *" $1 "*) ;; *) continue ;; esac
  case " $HEAP_VARIANTS " in *" $2 "*) ;; *) continue ;; esac
  th=$(echo "$THREADS" | awk '{ print $1 }')
  awk -v u="$3" -v d="$(col "$1" "$th" 5 | median)" -v h="$(col "$2" "$th" 5 | median)" -v sd="$sd" -v s4="$s4" -v th="$th" 'BEGIN {
    if (d == "" || h == "") exit
    printf "cost of one sample, CPROF_UNWIND=%s (%s thread): %.0f ns of thread CPU ((%.2f - %.2f ns/step) / (%.4f - %.4f samples/step, rate 4096 - default))\n",
      u, th, (h - d) / (s4 - sd), h, d, s4, sd }'
done

[ "$BURN_ROUNDS" -gt 0 ] || exit 0

# burn: what loading cprof (heap sampling at its default rate, the server
# on, no CPU profile) costs a program that does not allocate.
echo
UNITS=$(nice -n "$NICE" "$BIN/burn" --calibrate "$BURN_SECONDS")
echo "# burn $UNITS units (~${BURN_SECONDS} s), $BURN_ROUNDS alternating rounds of: plain, cprof (heap at default rate, server on, no CPU profile)"
load
BRES=$T/burn # variant round wall thread_cpu process_cpu
: >"$BRES"
for r in $(seq 1 "$BURN_ROUNDS"); do
  for v in plain cprof; do
    if [ $v = plain ]; then
      nice -n "$NICE" "$BIN/burn" "$UNITS" >"$T/burn.$v.$r" 2>&1
    else
      nice -n "$NICE" env LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0 "$BIN/burn" "$UNITS" >"$T/burn.$v.$r" 2>"$T/burn.$v.$r.err"
      grep -q '^cprof: serving' "$T/burn.$v.$r.err" || { echo "burn under cprof did not serve:" >&2; cat "$T/burn.$v.$r.err" >&2; exit 1; }
    fi
    w=$(field wall_ns "$T/burn.$v.$r") c=$(field thread_cpu_ns "$T/burn.$v.$r") p=$(field process_cpu_ns "$T/burn.$v.$r")
    printf '%s\t%s\t%s\t%s\t%s\n' "$v" "$r" "$w" "$c" "$p" >>"$BRES"
    awk -v v="$v" -v r="$r" -v w="$w" -v c="$c" -v p="$p" 'BEGIN {
      printf "  round %d %-6s wall %7.3f s  thread CPU %7.3f s  process CPU %7.3f s\n", r, v, w / 1e9, c / 1e9, p / 1e9 }'
  done
done
load
bcol() { awk -F'\t' -v v="$1" -v c="$2" '$1 == v { print $c }' "$BRES"; }
bpaired() {
  awk -F'\t' -v c="$1" '$1 == "plain" { p[$2] = $c } $1 == "cprof" { x[$2] = $c }
    END { for (r in x) if (r in p) printf "%.6f\n", x[r] / p[r] }' "$BRES" | median
}
echo
echo "## burn: medians over $BURN_ROUNDS rounds"
echo
echo "| variant | wall s | thread CPU s | process CPU s |"
echo "|---|---:|---:|---:|"
for v in plain cprof; do
  awk -v v="$v" -v w="$(bcol $v 3 | median)" -v c="$(bcol $v 4 | median)" -v p="$(bcol $v 5 | median)" 'BEGIN {
    printf "| %s | %.3f | %.3f | %.3f |\n", v, w / 1e9, c / 1e9, p / 1e9 }'
done
echo
printf 'cprof / plain, median of per-round ratios: wall %.4f, thread CPU %.4f, process CPU %.4f\n' \
  "$(bpaired 3)" "$(bpaired 4)" "$(bpaired 5)"

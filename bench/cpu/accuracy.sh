#!/usr/bin/env bash
# CPU profile accuracy: shares that cprof's /debug/pprof/profile reports
# against the truth the workloads measure themselves.
#
#   bench/cpu/accuracy.sh
#   REPS=5 HZ=1000 PROFILE_SECONDS=12 UNWINDERS="dwarf fp" WORKLOADS="split threads" \
#     bench/cpu/accuracy.sh
#
# For each unwinder and each repetition, `split` (work_60/work_30/work_10)
# and `threads` (heavy/light) run under LD_PRELOAD=libcprof.so with
# CPROF_CPU_HZ=$HZ. Each program sleeps 0.5 s at the start of main, while a
# profile of PROFILE_SECONDS is requested over HTTP; then it works (split
# about 0.6 x PROFILE_SECONDS of CPU, threads 0.5 x for heavy), prints its
# truth (CPU ns per function or per thread, from CLOCK_THREAD_CPUTIME_ID) and
# sleeps until the profile is over. So the profile covers all the work the
# truth counts, and nothing else the workload threads did. A run whose work
# outlasted the profile (a starved machine) is reported and left out.
# Shares are read with `go tool pprof`:
#   split    cum samples of work_60, work_30, work_10 from -top, as shares
#            of their sum (the work is in the shared unit_kernel, so flat is
#            all unit_kernel's; cum also checks that every kernel sample is
#            attributed to its caller, reported as "unattributed")
#   threads  samples per `thread` label value from -tags, heavy and light
#            as shares of their sum
# and compared with the truth in percentage points. "CPU seen" is the CPU
# the profile gives the workload's threads (their samples over
# CPROF_CPU_HZ) in percent of the CPU those threads measured they ran since
# main began: 100 % means the profile's cpu/nanoseconds add up to what
# really ran.
#
# Prints one line per run and per-unwinder markdown tables of medians.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

REPS=${REPS:-5}
HZ=${HZ:-1000}
P=${PROFILE_SECONDS:-12}
UNWINDERS=${UNWINDERS:-dwarf fp}
WORKLOADS=${WORKLOADS:-split threads}
SPLIT_SECONDS=$(awk -v p="$P" 'BEGIN { print 0.6 * p }')
THREADS_SECONDS=$(awk -v p="$P" 'BEGIN { print 0.5 * p }')

cpu_profile_available || exit 1

echo "# CPU profile accuracy: CPROF_CPU_HZ=$HZ, $P s profiles, $REPS repetitions, unwinders: $UNWINDERS"
echo "# split works ~$SPLIT_SECONDS s, threads ~$THREADS_SECONDS s (heavy's CPU), all inside the profile"
machine

ROWS=$T/rows # unwinder workload item rep truth% profile% diff samples
: >"$ROWS"

pprof() { go tool pprof "$@" 2>>"$T/pprof.err"; }

# profile_run NAME UNWINDER WORKLOAD SECONDS: runs the workload, fetches the
# profile into $T/NAME.pb.gz; its truth is in $T/NAME.out. Fails when the
# work did not end inside the profile.
profile_run() {
  local name=$1 unw=$2 workload=$3 elapsed
  start "$name" CPROF_CPU_HZ="$HZ" CPROF_UNWIND="$unw" -- \
    "$BIN/$workload" "$4" --wait-ms 500 --until-ms $((P * 1000 + 1500))
  fetch_profile "$name" "$P" || return 1
  elapsed=$(field elapsed_ms "$T/$name.out")
  if [ "$elapsed" -gt $((P * 1000)) ]; then
    echo "  $name: the work ended ${elapsed} ms after main began, after the ${P} s profile; left out" >&2
    return 1
  fi
}

# seen COUNT CPU_NS: the profile's CPU for COUNT samples, in percent of CPU_NS.
seen() { awk -v n="$1" -v hz="$HZ" -v c="$2" 'BEGIN { printf "%.2f", 100 * (n / hz) / (c / 1e9) }'; }

# row UNW WORKLOAD ITEM REP TRUTH PROFILE SAMPLES: records and prints one comparison.
row() {
  local diff
  diff=$(awk -v a="$6" -v b="$5" 'BEGIN { printf "%+.2f", a - b }')
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" "$6" "$diff" "$7" >>"$ROWS"
  printf '  %-6s %-8s %-13s truth %6.2f %%  profile %6.2f %%  diff %6s pts  (%s samples)\n' \
    "$1" "$2" "$3" "$5" "$6" "$diff" "$7"
}

# measure_split UNWINDER REP and measure_threads UNWINDER REP: one run each.
measure_split() {
  local unw=$1 rep=$2 name c60 c30 c10 ck cal sum f fn n truth nt
  # split: per-function shares.
  name=split.$unw.$rep
  profile_run "$name" "$unw" split "$SPLIT_SECONDS" || return 0
  pprof -top -sample_index=samples -nodecount=100000 -nodefraction=0 "$T/$name.pb.gz" >"$T/$name.top"
  read -r c60 c30 c10 ck cal < <(awk '
    NF == 6 && $6 == "work_60" { a = $4 } NF == 6 && $6 == "work_30" { b = $4 }
    NF == 6 && $6 == "work_10" { c = $4 } NF == 6 && $6 == "unit_kernel" { k = $4 }
    NF == 6 && $6 == "unit_ns" { u = $4 }
    END { print a + 0, b + 0, c + 0, k + 0, u + 0 }' "$T/$name.top")
  sum=$((c60 + c30 + c10))
  if [ "$sum" -eq 0 ]; then
    echo "$name: no samples in work_60/work_30/work_10; top of the profile:" >&2
    head -20 "$T/$name.top" >&2
    exit 1
  fi
  for f in work_60:$c60 work_30:$c30 work_10:$c10; do
    fn=${f%%:*} n=${f##*:}
    truth=$(awk -v f="$fn" '$1 == "truth" && $2 == f { print $4 }' "$T/$name.out")
    row "$unw" split "$fn" "$rep" "$truth" "$(awk -v n="$n" -v s="$sum" 'BEGIN { printf "%.3f", 100 * n / s }')" "$sum"
  done
  # Kernel samples whose stack lost the caller (work_*, or unit_ns: calibration).
  row "$unw" split unattributed "$rep" 0 \
    "$(awk -v k="$ck" -v s="$((sum + cal))" 'BEGIN { printf "%.3f", k ? 100 * (k - s) / k : 0 }')" "$ck"
  # CPU seen: all of the split thread's samples against the CPU it measured.
  pprof -tags -sample_index=samples "$T/$name.pb.gz" >"$T/$name.tags"
  nt=$(awk '/^ *[^ ]+:[ \t]+Total/ { key = $1 }
    key == "thread:" && /%\): *split$/ { n = $1 } END { printf "%d", n }' "$T/$name.tags")
  row "$unw" split "CPU seen" "$rep" 100 "$(seen "$nt" "$(field thread_cpu_ns "$T/$name.out")")" "$nt"
}

measure_threads() {
  local unw=$1 rep=$2 name nh nl sum f th n truth
  # threads: per-thread shares from the `thread` label.
  name=threads.$unw.$rep
  profile_run "$name" "$unw" threads "$THREADS_SECONDS" || return 0
  pprof -tags -sample_index=samples "$T/$name.pb.gz" >"$T/$name.tags"
  read -r nh nl < <(awk '
    /^ *[^ ]+:[ \t]+Total/ { key = $1 }
    key == "thread:" && /%\): *heavy$/ { h = $1 } key == "thread:" && /%\): *light$/ { l = $1 }
    END { printf "%d %d\n", h, l }' "$T/$name.tags")
  sum=$((nh + nl))
  if [ "$sum" -eq 0 ]; then
    echo "$name: no heavy/light thread labels; -tags printed:" >&2
    cat "$T/$name.tags" >&2
    exit 1
  fi
  for f in heavy:$nh light:$nl; do
    th=${f%%:*} n=${f##*:}
    truth=$(awk -v f="$th" '$1 == "truth" && $2 == f { print $4 }' "$T/$name.out")
    row "$unw" threads "$th" "$rep" "$truth" "$(awk -v n="$n" -v s="$sum" 'BEGIN { printf "%.3f", 100 * n / s }')" "$sum"
  done
  row "$unw" threads "CPU seen" "$rep" 100 \
    "$(seen "$sum" "$(awk '$1 == "truth" { s += $3 } END { print s }' "$T/$name.out")")" "$sum"
}

for rep in $(seq 1 "$REPS"); do
  for unw in $UNWINDERS; do
    for w in $WORKLOADS; do "measure_$w" "$unw" "$rep"; done
  done
done
load
echo
echo "## Medians over $REPS repetitions (CPROF_CPU_HZ=$HZ, $P s profiles)"
for unw in $UNWINDERS; do
  echo
  echo "CPROF_UNWIND=$unw"
  echo
  echo "| workload | what | truth % | profile % | diff (pts), median | \|diff\| (pts), max | samples/run |"
  echo "|---|---|---:|---:|---:|---:|---:|"
  for item in split:work_60 split:work_30 split:work_10 split:unattributed split:"CPU seen" \
    threads:heavy threads:light threads:"CPU seen"; do
    w=${item%%:*} it=${item#*:}
    case " $WORKLOADS " in *" $w "*) ;; *) continue ;; esac
    sel() { awk -F'\t' -v u="$unw" -v w="$w" -v i="$it" -v c="$1" '$1 == u && $2 == w && $3 == i { print $c }' "$ROWS"; }
    printf '| %s | %s | %.2f | %.2f | %+.2f | %.2f | %d |\n' "$w" "$it" \
      "$(sel 5 | median)" "$(sel 6 | median)" "$(sel 7 | median)" \
      "$(sel 7 | tr -d '+-' | sort -g | tail -1)" "$(sel 8 | median)"
  done
done

#!/usr/bin/env bash
# The overhead matrix: what cprof costs on several shapes of work, side by
# side in the same run with the profilers a user would otherwise pick, as
# markdown tables for README.md ("Matrix"). One command:
#
#   make -C bench matrix         or: bench/matrix.sh      (about 21 minutes on 2 quiet CPUs)
#   QUICK=1 bench/matrix.sh      every cell once, tiny runs: a smoke test of about 30 s
#   SECTIONS=cpu CPU_REPS=3 bench/matrix.sh
#
# Heap: `churn --shape S` (heap/churn.c; map and list from churn-cxx,
# heap/nodes.cc) for each shape in SHAPES at each thread count in THREADS,
# DEPTH frames deep, under each of HEAP_VARIANTS:
#   glibc            no preload
#   cprof            LD_PRELOAD=libcprof.so CPROF_ADDR=0 (default rate 524288, default unwinder)
#   jemalloc         LD_PRELOAD=libjemalloc.so.2
#   jemalloc-prof    + MALLOC_CONF=prof:true,lg_prof_sample:19 (jemalloc's profiler, 512 KiB)
#   tcmalloc         LD_PRELOAD=libtcmalloc.so.4
#   tcmalloc-sample  + TCMALLOC_SAMPLE_PARAMETER=524288 (tcmalloc's own sampling)
# (any variant of heap/overhead.sh works too); each profiler is given as
# the median of its per-repetition ratio to its own allocator without
# profiling. Then DEEP_SHAPE at DEEP_DEPTH frames under DEEP_VARIANTS: what
# a deeper stack adds. Steps per thread: each shape's own count (about
# 0.6 s of glibc's time here) times OPS_SCALE.
#
# CPU: `burn UNITS --threads CPU_THREADS --depth D` (cpu/burn.c, CPU-bound
# units at the bottom of D frames of recursion; UNITS calibrated to about
# RUN_SECONDS) built with frame pointers (burn) and without (burn-nofp),
# for each depth in DEPTHS, under
#   plain            no profiler
#   cprof-HZ         LD_PRELOAD=libcprof.so CPROF_ADDR=0 CPROF_OUTPUT=DIR CPROF_CPU_HZ=HZ
#   gperftools-HZ    LD_PRELOAD=libprofiler.so CPUPROFILE=FILE CPUPROFILE_FREQUENCY=HZ
# for each HZ in HZS. CPROF_OUTPUT records the CPU profile of the whole run
# from the library's constructor, as CPUPROFILE does for gperftools, with
# no server thread and no request to time against; burn times its work
# itself (from a start barrier to the last thread's end), so both
# profilers' start-up and their writing the profile at exit are outside
# the figures, which are the cost of taking samples. (The time added at
# exit is the next section's.) Reported: the median of the per-repetition
# ratios to plain of wall time, the working threads' CPU (which holds the
# signal handlers) and the process's CPU (which adds cprof's collector
# thread), and the samples each profiler took per second of the threads'
# CPU (cprof: samples/count, which counts a timer's overruns; gperftools:
# the interrupts it reports at exit).
#
# Depth: what CPROF_MAX_DEPTH costs on stacks deeper than it. burn on one
# thread and churn --shape wide on one, each DEEP_FRAMES frames deep (the
# frame-pointer build; recursion, as a deep stack mostly is), under
#   plain / glibc    no profiler
#   depth-D          LD_PRELOAD=libcprof.so CPROF_MAX_DEPTH=D (burn: with
#                    CPROF_OUTPUT and CPROF_CPU_HZ=DEPTH_HZ; churn: CPROF_ADDR=0,
#                    and CPROF_HEAP_RATE=DEPTH_HEAP_RATE)
#   before           the same as depth-128 with DEPTH_BEFORE_LIB, another
#                    libcprof.so (say, a build from before stacks kept their
#                    outermost frames), when set
# for each D in MAX_DEPTHS; ratios to plain (CPU: wall and the thread's CPU)
# and to glibc (heap: wall per step), medians over DEPTH_REPS repetitions
# run in rotated order, and each profile's frames per sample.
#
# Exit: bench/cpu/exit.sh (REPS=1 under QUICK), if it is there.
#
# Memory: bench/heap/bounded.sh (SECONDS_RUN=3 under QUICK): the heap
# profiler's own memory on 120 stacks and on more stacks than
# CPROF_MAX_MEMORY holds, each of thousands of sizes, over 25 s.
#
# Settings (environment), with their defaults (QUICK=1's in brackets):
#   SECTIONS="heap cpu depth exit memory"
#   REPS=7 [1]  SHAPES="small wide large map list churn"  THREADS="1 2"  DEPTH=10
#   HEAP_VARIANTS="glibc cprof jemalloc jemalloc-prof tcmalloc tcmalloc-sample"
#   DEEP_SHAPE=wide ("" for none)  DEEP_DEPTH=100  DEEP_VARIANTS="glibc cprof jemalloc jemalloc-prof"
#   OPS_SCALE=1 [0.01]
#   CPU_REPS=5 [1]  RUN_SECONDS=3 [0.3]  CPU_THREADS=2  HZS="100 1000"  DEPTHS="10 100"
#   BUILDS="fp nofp"  CPU_PROFILERS="cprof gperftools"
#   DEPTH_REPS=5 [1]  DEEP_FRAMES=500  MAX_DEPTHS="128 512 1024"  DEPTH_HZ=1000
#   DEPTH_HEAP_RATE=524288  DEPTH_BEFORE_LIB=""
#   NICE=-10 (as root)
# Variants run in an order rotated by one each repetition (cpu/lib.sh
# rotated), so a slow spell of the machine or the last run's leftovers fall
# on all alike. Progress goes to stderr, the tables to stdout, and a copy
# of them to bench/build/matrix-<UTC time>.md.
#
# Installs, if missing (as root): libjemalloc2, libgoogle-perftools-dev,
# g++ (for churn-cxx) and golang-go (go tool pprof, for cprof's sample
# counts).
. "$(dirname "${BASH_SOURCE[0]}")/heap/lib.sh"

QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then q=1; else q=; fi
SECTIONS=${SECTIONS:-heap cpu depth exit memory}
REPS=${REPS:-${q:-7}}
SHAPES=${SHAPES:-small wide large map list churn}
THREADS=${THREADS:-1 2}
DEPTH=${DEPTH:-10}
HEAP_VARIANTS=${HEAP_VARIANTS:-glibc cprof jemalloc jemalloc-prof tcmalloc tcmalloc-sample}
DEEP_SHAPE=${DEEP_SHAPE-wide}
DEEP_DEPTH=${DEEP_DEPTH:-100}
DEEP_VARIANTS=${DEEP_VARIANTS:-glibc cprof jemalloc jemalloc-prof}
OPS_SCALE=${OPS_SCALE:-${q:+0.01}}
OPS_SCALE=${OPS_SCALE:-1}
CPU_REPS=${CPU_REPS:-${q:-5}}
RUN_SECONDS=${RUN_SECONDS:-${q:+0.3}}
RUN_SECONDS=${RUN_SECONDS:-3}
CPU_THREADS=${CPU_THREADS:-2}
HZS=${HZS:-100 1000}
DEPTHS=${DEPTHS:-10 100}
BUILDS=${BUILDS:-fp nofp}
CPU_PROFILERS=${CPU_PROFILERS:-cprof gperftools}
DEPTH_REPS=${DEPTH_REPS:-${q:-5}}
DEEP_FRAMES=${DEEP_FRAMES:-500}
MAX_DEPTHS=${MAX_DEPTHS:-128 512 1024}
DEPTH_HZ=${DEPTH_HZ:-1000}
DEPTH_HEAP_RATE=${DEPTH_HEAP_RATE:-524288}
DEPTH_BEFORE_LIB=${DEPTH_BEFORE_LIB:-}

has() { case " $SECTIONS " in *" $1 "*) return 0 ;; esac; return 1; }

# Steps per thread at OPS_SCALE=1: about 0.6 s of glibc's time each on the
# machine of README.md, so that one repetition of the heap part takes
# about 80 s.
shape_ops() {
  local n
  case $1 in
  small) n=4e7 ;; churn) n=2e7 ;; list) n=4e7 ;; wide) n=5e6 ;; map) n=2e6 ;; large) n=1e5 ;;
  *) echo "matrix: unknown shape $1" >&2; exit 2 ;;
  esac
  awk -v n="$n" -v s="$OPS_SCALE" 'BEGIN { n *= s; printf "%d", n < 100 ? 100 : n }'
}
shape_bin() { case $1 in map | list) echo "$BIN/churn-cxx" ;; *) echo "$BIN/churn" ;; esac; }

# The groups of the heap part, "shape depth threads", and each one's variants.
heap_groups() {
  local s th
  for s in $SHAPES; do for th in $THREADS; do echo "$s $DEPTH $th"; done; done
  [ -z "$DEEP_SHAPE" ] || for th in $THREADS; do echo "$DEEP_SHAPE $DEEP_DEPTH $th"; done
}
group_variants() { if [ "$2" = "$DEPTH" ]; then echo "$HEAP_VARIANTS"; else echo "$DEEP_VARIANTS"; fi; }
cpu_variants() {
  local p h
  echo plain
  for p in $CPU_PROFILERS; do for h in $HZS; do echo "$p-$h"; done; done
}

words() { echo $#; }
RUNS=0 DONE=0 STARTED=$(date +%s)
if has heap; then
  while read -r s d th; do
    RUNS=$((RUNS + REPS * $(words $(group_variants "$s" "$d"))))
  done < <(heap_groups)
fi
if has cpu; then
  RUNS=$((RUNS + CPU_REPS * $(words $BUILDS) * $(words $DEPTHS) * $(words $(cpu_variants))))
fi
depth_variants() {
  local d
  echo plain
  for d in $MAX_DEPTHS; do echo "depth-$d"; done
  [ -z "$DEPTH_BEFORE_LIB" ] || echo before
}
if has depth; then
  RUNS=$((RUNS + DEPTH_REPS * 2 * $(words $(depth_variants))))
fi

# progress TEXT: one line on stderr: how far the run is and how long it has taken.
progress() {
  DONE=$((DONE + 1))
  local e=$(($(date +%s) - STARTED))
  printf 'matrix [%d/%d, %dm%02ds]: %s\n' "$DONE" "$RUNS" $((e / 60)) $((e % 60)) "$1" >&2
}

# Packages first: a missing one is installed (or named) before anything runs.
if has heap; then
  heap_allocators matrix
  heap_available || exit 1
  need_pkgs matrix g++
  case " $SHAPES $DEEP_SHAPE " in *" map "* | *" list "*)
    make -s -C "$BENCH" cxx >/dev/null ;;
  esac
fi
if has cpu; then
  gperftools_profiler matrix
  need_pkgs matrix golang-go
fi
if has depth; then
  need_pkgs matrix golang-go
fi

# ---------------------------------------------------------------- heap part

# heap_run SHAPE DEPTH THREADS VARIANT REP: one churn run, into $RES.
heap_run() {
  local s=$1 d=$2 th=$3 v=$4 r=$5 out=$T/heap.$1.$2.$3.$4.$5 f
  heap_variant "$v" "$T/profile.$s.$d.$th.$v.$r"
  nice -n "$NICE" env ${ENVS[@]+"${ENVS[@]}"} "$(shape_bin "$s")" --shape "$s" --threads "$th" --depth "$d" \
    --ops "$(shape_ops "$s")" --seed "$r" ${SLOTS:+--slots "$SLOTS"} >"$out" 2>"$out.err" || {
    echo "matrix: churn --shape $s failed as $v:" >&2; cat "$out" "$out.err" >&2; exit 1; }
  f=$(churn_figures "$out") || exit 1
  printf '%s\t%s\t%s\t%s\n' "$s:$d:$th" "$v" "$r" "$f" >>"$RES"
  progress "$(printf 'heap rep %d: %s, depth %d, %d thread(s), %-15s %9.2f ns/step' "$r" "$s" "$d" "$th" "$v" "${f%%$'\t'*}")"
}

# heap_table COLUMN WHAT: the heap results as a table, COLUMN being 4 (wall
# ns/step) or 5 (threads' CPU ns/step).
heap_table() {
  local c=$1 v h sep s d th g cell
  h="| shape | depth | threads |" sep="|---|---:|---:|"
  for v in $HEAP_VARIANTS; do
    heap_variant "$v"
    if [ "$BASE" = "$v" ]; then h+=" $v ns/step |"; else h+=" $v × $BASE |"; fi
    sep+="---:|"
  done
  case " $HEAP_VARIANTS " in *" cprof "*) h+=" cprof samples/s |" sep+="---:|" ;; esac
  echo "$h"
  echo "$sep"
  while read -r s d th; do
    g=$s:$d:$th
    printf '| %s | %s | %s |' "$s" "$d" "$th"
    for v in $HEAP_VARIANTS; do
      heap_variant "$v"
      case " $(group_variants "$s" "$d") " in *" $v "*) ;; *) printf ' |'; continue ;; esac
      if [ "$BASE" = "$v" ]; then
        cell=$(res_col "$g" "$v" "$c" | median) cell=$(printf '%.1f' "$cell")
      else
        cell=$(printf '%.3f' "$(res_paired "$g" "$v" "$BASE" "$c")")
      fi
      [ "$v" = cprof ] && [ "$BASE" = glibc ] && [ "$c" = 4 ] && cell="**$cell**"
      printf ' %s |' "$cell"
    done
    # cprof's samples a second on each thread: the samples a step expects
    # at the default rate over cprof's wall ns per step.
    case " $HEAP_VARIANTS " in *" cprof "*)
      awk -v e="${EXPECT[$s]}" -v ns="$(res_col "$g" cprof 4 | median)" 'BEGIN {
        if (ns > 0) printf " %.0f |", e * 1e9 / ns; else printf " - |" }' ;;
    esac
    echo
  done < <(heap_groups)
}

heap_part() {
  local r s d th v
  declare -gA EXPECT
  RES=$T/heap.results # group variant rep ns/step thread-CPU-ns/step process-CPU-ns/step steps
  : >"$RES"
  for s in $SHAPES $DEEP_SHAPE; do
    EXPECT[$s]=$("$(shape_bin "$s")" --shape "$s" --expect 524288 --ops 1e6 | sed -n 's/.*samples_per_op=\([^ ]*\).*/\1/p')
  done
  echo "## Heap: ns per malloc+free step, and each profiler's cost over its own allocator"
  echo
  echo "$(allocator_versions); $REPS repetitions; steps per thread: $(for s in $SHAPES; do printf '%s %s, ' "$s" "$(shape_ops "$s")"; done | sed 's/, $//'); nice $NICE"
  load
  for r in $(seq 1 "$REPS"); do
    while read -r s d th; do
      for v in $(rotated "$r" $(group_variants "$s" "$d")); do heap_run "$s" "$d" "$th" "$v" "$r"; done
    done < <(heap_groups)
  done
  load
  echo
  echo "Wall time (a thread's, per step; with 2 threads they run at once on the 2 CPUs). ×: the median of the per-repetition ratios to the allocator named."
  echo
  heap_table 4
  echo
  echo "The threads' CPU time, per step, as the same ratios:"
  echo
  heap_table 5
  echo
  echo "cprof samples/s: per thread, at the default rate (the samples a step of the shape expects, over cprof's ns/step)."
}

# ---------------------------------------------------------------- CPU part

# cpu_run BUILD DEPTH VARIANT REP: one burn run, into $RES.
cpu_run() {
  local b=$1 d=$2 v=$3 r=$4 out=$T/cpu.$1.$2.$3.$4 bin=$BIN/burn envs=() samples=- w c p
  [ "$b" = nofp ] && bin=$BIN/burn-nofp
  case $v in
  plain) ;;
  cprof-*) rm -rf "$out.dir"; mkdir -p "$out.dir"
    envs=(LD_PRELOAD="$LIB" CPROF_ADDR=0 CPROF_OUTPUT="$out.dir" CPROF_CPU_HZ="${v#cprof-}") ;;
  gperftools-*) envs=(LD_PRELOAD="$GPERF" CPUPROFILE="$out.prof" CPUPROFILE_FREQUENCY="${v#gperftools-}") ;;
  *) echo "matrix: unknown CPU variant $v" >&2; exit 2 ;;
  esac
  nice -n "$NICE" env ${envs[@]+"${envs[@]}"} "$bin" "$UNITS" --threads "$CPU_THREADS" --depth "$d" \
    >"$out" 2>"$out.err" || { echo "matrix: $bin failed as $v:" >&2; cat "$out" "$out.err" >&2; exit 1; }
  w=$(field wall_ns "$out") c=$(field thread_cpu_ns "$out") p=$(field process_cpu_ns "$out")
  [ -n "$w" ] || { echo "matrix: burn printed no result as $v:" >&2; cat "$out" "$out.err" >&2; exit 1; }
  case $v in
  cprof-*) samples=$(profile_samples "$out.dir/cpu.pb.gz"); rm -rf "$out.dir" ;;
  # gperftools says at exit: "PROFILE: interrupts/evictions/bytes = 600/0/…".
  gperftools-*) samples=$(sed -n 's|^PROFILE: interrupts/evictions/bytes = \([0-9]*\)/.*|\1|p' "$out.err"); rm -f "$out.prof"* ;;
  esac
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$b:$d" "$v" "$r" "$w" "$c" "$p" "${samples:--}" >>"$RES"
  progress "$(awk -v b="$b" -v d="$d" -v v="$v" -v r="$r" -v w="$w" -v c="$c" -v s="${samples:--}" 'BEGIN {
    printf "cpu rep %d: %s, depth %d, %-15s wall %.3f s, threads CPU %.3f s, samples %s", r, b, d, v, w / 1e9, c / 1e9, s }')"
}

cpu_part() {
  local r b d v p h
  RES=$T/cpu.results # group variant rep wall thread-CPU process-CPU samples
  : >"$RES"
  UNITS=$(nice -n "$NICE" "$BIN/burn" --calibrate "$RUN_SECONDS")
  echo "## CPU: burn on $CPU_THREADS threads, each $UNITS units (~$RUN_SECONDS s), with and without frame pointers"
  echo
  echo "gperftools $GPERF ($(dpkg-query -W -f '${Version}' libgoogle-perftools-dev)); cprof with CPROF_OUTPUT (the whole run recorded), default unwinder; $CPU_REPS repetitions; nice $NICE"
  load
  for r in $(seq 1 "$CPU_REPS"); do
    for b in $BUILDS; do
      for d in $DEPTHS; do
        for v in $(rotated "$r" $(cpu_variants)); do cpu_run "$b" "$d" "$v" "$r"; done
      done
    done
  done
  load
  echo
  local hdr="| build | depth | Hz | plain wall s |" sep="|---|---:|---:|---:|"
  for p in $CPU_PROFILERS; do
    hdr+=" $p wall × | $p threads' CPU × | $p process CPU × | $p samples/s |"
    sep+="---:|---:|---:|---:|"
  done
  echo "$hdr"
  echo "$sep"
  for b in $BUILDS; do
    for d in $DEPTHS; do
      for h in $HZS; do
        printf '| %s | %s | %s | %.3f |' "$b" "$d" "$h" "$(awk -v w="$(res_col "$b:$d" plain 4 | median)" 'BEGIN { print w / 1e9 }')"
        for p in $CPU_PROFILERS; do
          # samples per second of the working threads' CPU, median over the repetitions
          printf ' %.4f | %.4f | %.4f | %s |' "$(res_paired "$b:$d" "$p-$h" plain 4)" \
            "$(res_paired "$b:$d" "$p-$h" plain 5)" "$(res_paired "$b:$d" "$p-$h" plain 6)" \
            "$(awk -F'\t' -v g="$b:$d" -v v="$p-$h" '$1 == g && $2 == v && $7 != "-" { printf "%.6f\n", $7 / ($5 / 1e9) }' "$RES" |
              median | awk '$1 == "nan" { print "-"; next } { printf "%.0f", $1 }')"
        done
        echo
      done
    done
  done
  echo
  echo "×: the median of the per-repetition ratios to plain (same build, same depth). samples/s: per second of the working threads' CPU."
}

# ---------------------------------------------------------------- depth

# depth_envs VARIANT WORKLOAD OUT: sets ENVS for VARIANT of burn or churn.
depth_envs() {
  local lib=$LIB d=128
  ENVS=()
  case $1 in
  plain) return ;;
  before) lib=$DEPTH_BEFORE_LIB ;;
  depth-*) d=${1#depth-} ;;
  *) echo "matrix: unknown depth variant $1" >&2; exit 2 ;;
  esac
  ENVS=(LD_PRELOAD="$lib" CPROF_MAX_DEPTH="$d")
  if [ "$2" = burn ]; then
    ENVS+=(CPROF_ADDR=0 CPROF_OUTPUT="$3.dir" CPROF_CPU_HZ="$DEPTH_HZ" CPROF_HEAP_RATE=0)
  else
    ENVS+=(CPROF_ADDR=0 CPROF_HEAP_RATE="$DEPTH_HEAP_RATE")
  fi
}

# frames_per_sample FILE: the mean number of locations per sample of a
# profile (inline frames not counted), from go tool pprof -raw.
frames_per_sample() {
  go tool pprof -raw -symbolize=none "$1" 2>/dev/null | awk '
    /^Samples:/ { on = 1; next } /^Locations/ { on = 0 }
    on && /^ +[0-9]+ +[0-9]+: / { n++; f += NF - 3; next } on && /^ +[0-9]+ / && !/:/ { f += NF }
    END { if (n) printf "%.0f", f / n; else print "-" }'
}

# depth_run WORKLOAD VARIANT REP: one run of burn or churn, into $RES.
depth_run() {
  local w=$1 v=$2 r=$3 out=$T/depth.$1.$2.$3 wall cpu frames=-
  rm -rf "$out.dir"
  mkdir -p "$out.dir"
  depth_envs "$v" "$w" "$out"
  if [ "$w" = burn ]; then
    nice -n "$NICE" env ${ENVS[@]+"${ENVS[@]}"} "$BIN/burn" "$DEPTH_UNITS" --depth "$DEEP_FRAMES" >"$out" 2>"$out.err" ||
      { echo "matrix: burn failed as $v:" >&2; cat "$out" "$out.err" >&2; exit 1; }
    wall=$(field wall_ns "$out") cpu=$(field thread_cpu_ns "$out")
    [ "$v" = plain ] || frames=$(frames_per_sample "$out.dir/cpu.pb.gz")
  else
    nice -n "$NICE" env ${ENVS[@]+"${ENVS[@]}"} "$BIN/churn" --shape wide --depth "$DEEP_FRAMES" \
      --ops "$(shape_ops wide)" --seed "$r" >"$out" 2>"$out.err" ||
      { echo "matrix: churn failed as $v:" >&2; cat "$out" "$out.err" >&2; exit 1; }
    local f
    f=$(churn_figures "$out") || exit 1
    wall=$(echo "$f" | cut -f1) cpu=$(echo "$f" | cut -f2)
  fi
  rm -rf "$out.dir"
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$w" "$v" "$r" "$wall" "$cpu" "$frames" >>"$RES"
  progress "$(printf 'depth rep %d: %s, %-10s %s ns%s' "$r" "$w" "$v" "$wall" "$([ "$frames" = - ] || echo ", $frames frames a sample")")"
}

depth_part() {
  local r w v
  RES=$T/depth.results # workload variant rep wall thread-CPU frames-per-sample
  : >"$RES"
  DEPTH_UNITS=$(nice -n "$NICE" "$BIN/burn" --calibrate "$RUN_SECONDS")
  echo "## Depth: burn and churn $DEEP_FRAMES frames deep, under CPROF_MAX_DEPTH"
  echo
  echo "burn: $DEPTH_UNITS units (~$RUN_SECONDS s) on 1 thread, CPROF_CPU_HZ=$DEPTH_HZ; churn --shape wide, $(shape_ops wide) steps, CPROF_HEAP_RATE=$DEPTH_HEAP_RATE; frame pointers; $DEPTH_REPS repetitions${DEPTH_BEFORE_LIB:+; before: $DEPTH_BEFORE_LIB}; nice $NICE"
  load
  for r in $(seq 1 "$DEPTH_REPS"); do
    for w in burn churn; do
      for v in $(rotated "$r" $(depth_variants)); do depth_run "$w" "$v" "$r"; done
    done
  done
  load
  echo
  echo "| variant | CPU wall × | CPU thread × | CPU frames/sample | heap wall × | heap thread CPU × |"
  echo "|---|---:|---:|---:|---:|---:|"
  for v in $(depth_variants); do
    [ "$v" = plain ] && continue
    printf '| %s | %.4f | %.4f | %s | %.4f | %.4f |\n' "$v" "$(res_paired burn "$v" plain 4)" \
      "$(res_paired burn "$v" plain 5)" "$(res_col burn "$v" 6 | median | awk '{ printf "%.0f", $1 }')" \
      "$(res_paired churn "$v" plain 4)" "$(res_paired churn "$v" plain 5)"
  done
  echo
  echo "×: the median of the per-repetition ratios to the run without cprof (burn: plain; churn: glibc)."
}

# ---------------------------------------------------------------- exit

exit_part() {
  echo "## Time added at exit"
  echo
  if [ -x "$BENCH/cpu/exit.sh" ]; then
    if [ "$QUICK" = 1 ]; then REPS=1 "$BENCH/cpu/exit.sh"; else "$BENCH/cpu/exit.sh"; fi
  else
    echo "bench/cpu/exit.sh is missing: no exit figures in this run."
  fi
}

# ---------------------------------------------------------------- memory

memory_part() {
  echo "## The heap profiler's own memory"
  echo
  if [ "$QUICK" = 1 ]; then SECONDS_RUN=3 "$BENCH/heap/bounded.sh"; else "$BENCH/heap/bounded.sh"; fi
}

main() {
  echo "# cprof overhead matrix ($(date -u '+%Y-%m-%d %H:%M') UTC$([ "$QUICK" = 1 ] && echo ', QUICK=1: a smoke test, not figures'))"
  echo
  machine
  echo "libcprof: $LIB; the tree: $(git -C "$ROOT" log -1 --format='%h %cd' --date=format:'%Y-%m-%d %H:%M' 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet HEAD -- src include 2>/dev/null || echo ', with uncommitted changes in src/ or include/')"
  echo
  if has heap; then heap_part; echo; fi
  if has cpu; then cpu_part; echo; fi
  if has depth; then depth_part; echo; fi
  if has exit; then exit_part; echo; fi
  if has memory; then memory_part; fi
  local e=$(($(date +%s) - STARTED))
  echo
  echo "(matrix took $((e / 60)) min $((e % 60)) s)"
}

copy=$BIN/matrix-$(date -u +%Y%m%dT%H%M%SZ).md
main | tee "$copy"
echo "(tables kept in ${copy#"$ROOT"/})" >&2

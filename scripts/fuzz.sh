#!/usr/bin/env bash
# Runs the libFuzzer targets of tests/fuzz (built by `make fuzz-build`).
#   scripts/fuzz.sh --build DIR [--seconds N] [--merge] [NAME...]
# Every target (or the NAMEs given) runs N seconds (default 300) from its
# corpus, tests/fuzz/corpus/NAME, after replaying that corpus and every
# input in tests/fuzz/crashes/NAME. New inputs go to DIR/fuzz-out/NAME, a
# crash's input to DIR/fuzz-out/NAME-crash-*; the repository is not
# written. Then one line per target: executions, executions per second,
# coverage (libFuzzer's cov: edges and ft: features), corpus size, crashes.
# Exits 1 if any target crashed. --merge instead adds to each committed
# corpus the fewest inputs of DIR/fuzz-out/NAME that add coverage
# (libFuzzer's -merge=1).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=
seconds=300
merge=0
names=()
while [ $# -gt 0 ]; do
  case $1 in
  --build) build=$2; shift 2 ;;
  --seconds) seconds=$2; shift 2 ;;
  --merge) merge=1; shift ;;
  -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
  *) names+=("$1"); shift ;;
  esac
done
[ -n "$build" ] || { echo "fuzz.sh: --build DIR is required" >&2; exit 2; }
build=$(cd "$build" && pwd)
if [ ${#names[@]} -eq 0 ]; then # every tests/fuzz/fuzz_NAME.c is a target
  for src in "$here"/tests/fuzz/fuzz_*.c; do
    n=${src##*/fuzz_}
    names+=("${n%.c}")
  done
fi

# The last "#N ... cov: C ft: F corp: K/..." line and -print_final_stats'
# stat:: lines of a log, as "execs exec/s cov ft corpus".
stats() {
  local log=$1 line
  line=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -n 1)
  awk -v line="$line" '
    /^stat::number_of_executed_units:/ { execs = $2 }
    /^stat::average_exec_per_sec:/ { rate = $2 }
    END {
      n = split(line, w, " ")
      for (i = 1; i < n; i++) {
        if (w[i] == "cov:") cov = w[i + 1]
        if (w[i] == "ft:") ft = w[i + 1]
        if (w[i] == "corp:") { corp = w[i + 1]; sub(/\/.*/, "", corp) }
      }
      printf "%s %s %s %s %s\n", execs ? execs : "?", rate ? rate : "?", cov ? cov : "?",
             ft ? ft : "?", corp ? corp : "?"
    }' "$log"
}

# tests/fuzz/lsan.supp says which leak reports are libFuzzer's own.
export LSAN_OPTIONS=${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$here/tests/fuzz/lsan.supp
export ASAN_SYMBOLIZER_PATH=${ASAN_SYMBOLIZER_PATH:-$(command -v llvm-symbolizer || true)}

failed=0
printf '%-12s %8s %12s %8s %6s %7s %7s  %s\n' target seconds executions exec/s cov ft corpus crashes
for name in "${names[@]}"; do
  bin=$build/tests/fuzz/fuzz_$name
  corpus=$here/tests/fuzz/corpus/$name
  crashes=$here/tests/fuzz/crashes/$name
  out=$build/fuzz-out/$name
  log=$build/fuzz-out/$name.log
  if [ ! -x "$bin" ]; then
    echo "fuzz.sh: $bin is not built (make fuzz-build)" >&2
    failed=1
    continue
  fi
  mkdir -p "$out" "$corpus"
  if [ $merge = 1 ]; then
    before=$(ls "$corpus" | wc -l)
    "$bin" -merge=1 "$corpus" "$out" >"$log" 2>&1 || { echo "fuzz.sh: merge of $name failed, see $log" >&2; failed=1; }
    echo "$name: corpus $before -> $(ls "$corpus" | wc -l) inputs"
    continue
  fi
  args=(-max_total_time="$seconds" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048
    -artifact_prefix="$build/fuzz-out/$name-")
  [ -f "$here/tests/fuzz/$name.dict" ] && args+=(-dict="$here/tests/fuzz/$name.dict")
  dirs=("$out" "$corpus")
  [ -d "$crashes" ] && dirs+=("$crashes")
  "$bin" "${args[@]}" "${dirs[@]}" >"$log" 2>&1
  rc=$?
  read -r execs rate cov ft corp < <(stats "$log")
  verdict=none
  if [ $rc -ne 0 ]; then
    verdict="CRASH (exit $rc): $(ls "$build/fuzz-out/$name"-crash-* "$build/fuzz-out/$name"-leak-* \
      "$build/fuzz-out/$name"-timeout-* "$build/fuzz-out/$name"-oom-* 2>/dev/null | tail -n 1)"
    failed=1
  fi
  printf '%-12s %8s %12s %8s %6s %7s %7s  %s\n' "$name" "$seconds" "$execs" "$rate" "$cov" "$ft" "$corp" "$verdict"
  if [ $rc -ne 0 ]; then
    echo "--- $log (the end):" >&2
    grep -v -E '^#[0-9]+' "$log" | tail -n 40 >&2
  fi
done
exit $failed

#!/usr/bin/env bash
# Cost per CPU sample: ns per stack walk for cprof's frame-pointer and
# DWARF (src/unwind/cfa.c) unwinders at stack depths 10 and 100, through
# code built with and without frame pointers, called directly on a
# getcontext() context and from a real SIGPROF handler (see sample_cost.c),
# and the system calls each walk makes (strace -c, if strace is installed:
# the difference between a run of many walks and one of few, per walk).
#
#   bench/cpu/sample_cost.sh
#   BATCHES=11 bench/cpu/sample_cost.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BATCHES=${BATCHES:-11}

echo "# Cost per sample: $BATCHES batches per case, median ns per operation"
machine
"$BIN/sample_cost" --batches "$BATCHES" | tee "$T/cost"

# syscalls DEPTH CODE CASE: system calls per operation of CASE, from strace -c.
syscalls() {
  command -v strace >/dev/null || { echo "-"; return; }
  local n s total=()
  for s in 0.02 0.2; do
    strace -f -c -o "$T/strace" "$BIN/sample_cost" --depth "$1" --code "$2" --only "$3" \
      --batches 1 --scale "$s" >"$T/strace.out"
    n=$(field ops "$T/strace.out")
    total+=("$((n * 2))" "$(awk '$NF == "total" { print $(NF - 2) + 0 }' "$T/strace")")
  done
  # The busiest system call of the larger run names what the walks call.
  awk -v o1="${total[0]}" -v c1="${total[1]}" -v o2="${total[2]}" -v c2="${total[3]}" \
    -v top="$(awk '$1 ~ /^[0-9.]+$/ && NF >= 5 { print $NF; exit }' "$T/strace")" \
    'BEGIN { n = (c2 - c1) / (o2 - o1); if (n < 0.005) print "0"; else printf "%.1f (%s)", n, top }'
}

get() { # DEPTH CODE CASE KEY
  awk -v d="depth=$1" -v k="code=$2" -v c="case=$3" '$1 == d && $2 == k && $3 == c' "$T/cost" |
    sed -n "s/.*\\b$4=\\([^ ]*\\).*/\\1/p"
}

echo
echo "## ns per sample (median of $BATCHES batches)"
echo
echo "| code walked | unwinder | recursion depth | frames walked | direct walk, ns | in a SIGPROF handler, ns | handler minus empty handler, ns | system calls per walk |"
echo "|---|---|---:|---:|---:|---:|---:|---:|"
for k in fp nofp; do
  for d in 10 100; do
    base=$(get "$d" "$k" signal-none ns_median)
    for u in fp dwarf; do
      sig=$(get "$d" "$k" "signal-$u" ns_median)
      printf '| %s | %s | %d | %s | %.0f | %.0f | %.0f | %s |\n' \
        "$([ "$k" = fp ] && echo "frame pointers" || echo "no frame pointers")" "$u" "$d" \
        "$(get "$d" "$k" "direct-$u" frames)" "$(get "$d" "$k" "direct-$u" ns_median)" "$sig" \
        "$(awk -v a="$sig" -v b="$base" 'BEGIN { print a - b }')" "$(syscalls "$d" "$k" "direct-$u")"
    done
  done
done
echo
echo "An empty SIGPROF handler (tgkill to self, delivery, sigreturn) costs $(get 10 fp signal-none ns_median) ns here."

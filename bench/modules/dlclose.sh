#!/usr/bin/env bash
# The cost of a dlopen+dlclose pair without cprof, under cprof, and under
# another build of it (BEFORE_LIB=/path/libcprof.so, e.g. one from before
# the modules were retired): REPS alternating runs of 2000 pairs each, the
# median of each. Prints microseconds a pair and the ratios to plain.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$here/../build}
LIB=${CPROF_BUILD:-$OUT/cprof}/libcprof.so
REPS=${REPS:-7}
prog=$OUT/dlclose_loop
ldconfig -p | grep 'libexpat\.so\.1 ' >/dev/null || { echo "dlclose.sh: libexpat.so.1 is not installed" >&2; exit 1; }

variants=(plain cprof)
[ -n "${BEFORE_LIB:-}" ] && variants+=(before)
declare -A got
for r in $(seq 1 "$REPS"); do
  for v in "${variants[@]}"; do
    case $v in
      plain) t=$("$prog") ;;
      cprof) t=$(LD_PRELOAD="$LIB" CPROF_ADDR=0 "$prog") ;;
      before) t=$(LD_PRELOAD="$BEFORE_LIB" CPROF_ADDR=0 "$prog") ;;
    esac
    got[$v]+="$t "
  done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
base=$(echo "${got[plain]}" | median)
echo "dlopen+dlclose of libexpat, µs a pair, median of $REPS alternating runs of 2000:"
for v in "${variants[@]}"; do
  m=$(echo "${got[$v]}" | median)
  printf '  %-7s %6.1f  (%.2f× plain)\n' "$v" "$m" "$(echo "$m / $base" | bc -l)"
done

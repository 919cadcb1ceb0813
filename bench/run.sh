#!/usr/bin/env bash
# Runs every benchmark in bench/ (about 8 minutes for the CPU ones, 4 more
# for the heap ones, 8 more for the lock ones) and keeps a copy of the
# output in bench/build/results-DATE.txt. Settings pass through the environment to
# each script (REPS, HZ, PROFILE_SECONDS, UNWINDERS, ROUNDS, RUN_SECONDS,
# VARIANTS, BATCHES; OPS, THREADS, HEAP_VARIANTS, ...; PRIMS, CASES, MODES,
# LOCK_VARIANTS, ...: see the scripts' headers; REPS sets the repetitions of
# every script alike).
# ONLY=cpu, ONLY=heap or ONLY=locks runs one part. The overhead matrix
# (matrix.sh, make matrix) is not part of it: about 17 minutes of its own,
# and it keeps its own copy of its tables.
#
#   bench/run.sh            or: make -C bench run
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
make -s build >/dev/null
export BENCH_BUILT=1
mkdir -p build
out=build/results-$(date -u +%Y%m%dT%H%M%SZ).txt
status=0
scripts=()
[ "${ONLY:-cpu}" = cpu ] && scripts+=(cpu/sample_cost.sh cpu/accuracy.sh cpu/overhead.sh)
[ "${ONLY:-heap}" = heap ] && scripts+=(heap/accuracy.sh heap/overhead.sh heap/syscalls.sh heap/memory.sh)
[ "${ONLY:-locks}" = locks ] && scripts+=(locks/accuracy.sh locks/overhead.sh)
{
  rc=0
  for script in "${scripts[@]}"; do
    "$script" || rc=1
    echo
  done
  exit $rc
} 2>&1 | tee "$out" || status=1
echo "(output kept in bench/$out)"
exit $status

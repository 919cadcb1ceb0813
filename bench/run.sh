#!/usr/bin/env bash
# Runs every benchmark in bench/ (about 8 minutes) and keeps a copy of the
# output in bench/build/results-DATE.txt. Settings pass through the
# environment to each script (REPS, HZ, PROFILE_SECONDS, UNWINDERS, ROUNDS,
# RUN_SECONDS, VARIANTS, BATCHES: see the scripts' headers).
#
#   bench/run.sh            or: make -C bench run
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
make -s build >/dev/null
export BENCH_BUILT=1
mkdir -p build
out=build/results-$(date -u +%Y%m%dT%H%M%SZ).txt
status=0
{
  rc=0
  cpu/sample_cost.sh || rc=1
  echo
  cpu/accuracy.sh || rc=1
  echo
  cpu/overhead.sh || rc=1
  exit $rc
} 2>&1 | tee "$out" || status=1
echo "(output kept in bench/$out)"
exit $status

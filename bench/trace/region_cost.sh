#!/usr/bin/env bash
# ns per cprof_region_begin + cprof_region_end pair (see region_cost.c):
# linked statically (the listeners switched through cprof's internals) and
# through libcprof.so's PLT (nobody listening only).
#
#   make -C bench region-cost
#   BATCHES=21 PAIRS=5000000 make -C bench region-cost
. "$(dirname "${BASH_SOURCE[0]}")/../cpu/lib.sh"

BATCHES=${BATCHES:-11}
PAIRS=${PAIRS:-2000000}

echo "# Region cost: $BATCHES alternating batches of $PAIRS calls per case, ns per call"
machine
"$BIN/region_cost" --batches "$BATCHES" --pairs "$PAIRS"
echo
# Buffers reused from memory touched before: the append without page faults.
"$BIN/region_cost" --batches "$BATCHES" --pairs 200000 --warm
echo
"$BIN/region_cost_so" --batches "$BATCHES" --pairs "$PAIRS"

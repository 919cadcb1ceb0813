# The malloc family under cprof answers every call as the allocator under
# it does: the same block or NULL, the same errno, the same alignment, the
# same usable size, for sizes and alignments at and past every limit. Run
# at every sampling rate that takes a different path: 1 (every call
# sampled: the header and alignment arithmetic), the default (huge sizes
# cross the countdown, small ones do not), and 0 (the pass-through).
. "$(dirname "$0")/../integration/lib.sh"
P=$B/tests/host/host_alloc_edges

# A hang (memalign once looped for ever on a huge alignment) is exit 124.
RUN_TIMEOUT=10
run plain -- "$P"
check "without cprof: the table ran to its end" has "$T/plain.out" '^2000 blocks: errno=4242$'
check "without cprof: exit 0" rc_is plain 0
for rate in 1 default 0; do
  envs=(LD_PRELOAD="$LIB" CPROF_ADDR=0)
  [ $rate = default ] || envs+=(CPROF_HEAP_RATE=$rate)
  run "r$rate" "${envs[@]}" -- "$P"
  check "rate $rate: exit code as without cprof" same plain "r$rate" rc
  check "rate $rate: every case as without cprof" same plain "r$rate" out
  check "rate $rate: nothing on stderr" [ ! -s "$T/r$rate.err" ]
  if ! same plain "r$rate" out; then
    diff "$T/plain.out" "$T/r$rate.out" | head -40 >&2 || true
  fi
done

# Under another allocator the answers are that allocator's, not glibc's:
# jemalloc refuses aligned_alloc(3, 10) and leaves errno alone where glibc
# sets ENOMEM. (It has no pvalloc: the program would get glibc's, whose
# block jemalloc's free cannot take, with or without cprof.)
JE=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
check "jemalloc is installed" [ -e "$JE" ]
run je LD_PRELOAD="$JE" -- "$P" --no-pvalloc
check "jemalloc: the table ran to its end" has "$T/je.out" '^2000 blocks: errno=4242$'
run glibc -- "$P" --no-pvalloc
check "jemalloc answers differently from glibc (else this part tests nothing)" \
  bash -c "! cmp -s '$T/je.out' '$T/glibc.out'"
for rate in 1 0; do
  run "je$rate" LD_PRELOAD="$LIB:$JE" CPROF_ADDR=0 CPROF_HEAP_RATE=$rate -- "$P" --no-pvalloc
  check "jemalloc, rate $rate: exit code as without cprof" same je "je$rate" rc
  check "jemalloc, rate $rate: every case as without cprof" same je "je$rate" out
  if ! same je "je$rate" out; then
    diff "$T/je.out" "$T/je$rate.out" | head -40 >&2 || true
  fi
done
finish

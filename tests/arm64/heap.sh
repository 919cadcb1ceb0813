# Heap bytes at rate 1, on the aarch64 build under qemu: with every
# allocation sampled (CPROF_HEAP_RATE=1), /debug/pprof/heap of
# tests/integration/programs/heap_target.c, fetched with curl and read by
# go tool pprof, gives each allocating function the bytes it requested
# (1 % for pprof's rounding), and main the 7 MiB its own callees keep, with
# either unwinder: the heap sampler's walk from its own frames (cfa.c's
# walk from here, or the frame records) on aarch64.
. "$(dirname "$0")/lib.sh"
MiB=1048576


for unwind in dwarf fp; do
  start target --ready CPROF_HEAP_RATE=1 CPROF_UNWIND=$unwind -- "${A64[@]}" "$P/heap_target"
  check "$unwind: fetch /debug/pprof/heap" curl -sf -o "$T/heap.pb.gz" "http://$ADDR/debug/pprof/heap"
  pprof -top -unit=B -nodecount=1000 -nodefraction=0 "$T/heap.pb.gz" >"$T/top" ||
    fail "$unwind: go tool pprof -top"
  check "$unwind: inuse_space" has "$T/top" '^Type: inuse_space$'
  check "$unwind: leak_big holds 3 MiB" pprof_bytes "$T/top" leak_big $((3 * MiB)) 0.01
  check "$unwind: leak_small holds 1 MiB" pprof_bytes "$T/top" leak_small $MiB 0.01
  check "$unwind: realloc_grow holds 2 MiB" pprof_bytes "$T/top" realloc_grow $((2 * MiB)) 0.01
  check "$unwind: aligned_site holds 512 KiB" pprof_bytes "$T/top" aligned_site 524288 0.01
  check "$unwind: calloc_site holds 512 KiB" pprof_bytes "$T/top" calloc_site 524288 0.01
  check "$unwind: thread_alloc holds 1 MiB" pprof_bytes "$T/top" thread_alloc $MiB 0.01
  check "$unwind: main reaches its callees' 7 MiB" pprof_bytes "$T/top" main $((7 * MiB)) 0.01 cum
  check "$unwind: churn holds nothing" bash -c "! grep -q ' churn\$' '$T/top'"
  stop
done
finish

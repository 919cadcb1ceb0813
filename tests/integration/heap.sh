# The heap and allocs profiles, read by go tool pprof, on a program whose
# heap is known (programs/heap_target.c): each allocating function with
# its bytes, leaks in use and freed blocks not, realloc, every allocation
# function of the family, threads, fork, deltas, the legacy text format,
# cprof's own allocations never sampled, and another allocator in front.
. "$(dirname "$0")/lib.sh"

P=$B/tests/integration
MiB=1048576
# pprof_bytes (lib.sh) with 25 %: at CPROF_HEAP_RATE=4096 a 1 MiB site has
# about 250 samples, a standard error near 6 %, so 25 % is four of them.

# absent TOP FUNCTION: the listing is pprof's (so an empty or missing file,
# from a fetch or a pprof that failed, cannot pass) and does not name it.
absent() { has "$1" '^Type: ' && ! grep -Eq " $2( |$)" "$1"; }
# lacks FILE REGEX: the file exists and has no line matching the regex.
lacks() { [ -f "$1" ] && ! grep -Eq -- "$2" "$1"; }
# fetch FILE URL: the body of a 200 response into $T/FILE.
fetch() { curl -sf -o "$T/$1" "$2"; }
# top ARGS...: every function, in bytes.
top() { pprof -top -unit=B -nodecount=1000 -nodefraction=0 "$@"; }
# top_to FILE ARGS..., pprof_to FILE ARGS...: the same, into $T/FILE.
top_to() { local out=$1; shift; top "$@" >"$T/$out"; }
pprof_to() { local out=$1; shift; pprof "$@" >"$T/$out"; }

for mode in preload linked; do
  for unwind in dwarf fp; do
    t="$mode/$unwind"
    pre=()
    prog=$P/heap_target_linked
    if [ $mode = preload ]; then pre=(LD_PRELOAD="$LIB"); prog=$P/heap_target; fi
    start target --ready "${pre[@]}" CPROF_HEAP_RATE=4096 CPROF_UNWIND=$unwind -- "$prog"
    check "$t: fetch /heap" fetch heap.pb.gz "http://$ADDR/debug/pprof/heap"
    check "$t: pprof -top" top_to top "$T/heap.pb.gz"
    check "$t: /heap shows inuse_space first" has "$T/top" '^Type: inuse_space$'
    check "$t: leak_big holds 3 MiB" pprof_bytes "$T/top" leak_big $((3 * MiB)) 0.25
    check "$t: leak_small holds 1 MiB" pprof_bytes "$T/top" leak_small $MiB 0.25
    check "$t: realloc_grow holds 2 MiB (the realloc'd blocks)" pprof_bytes "$T/top" realloc_grow $((2 * MiB)) 0.25
    check "$t: realloc_start holds nothing (its blocks moved)" absent "$T/top" realloc_start
    check "$t: churn holds nothing (freed)" absent "$T/top" churn
    check "$t: the aligned family holds 512 KiB" pprof_bytes "$T/top" aligned_site 524288 0.1
    check "$t: calloc_site holds 512 KiB" pprof_bytes "$T/top" calloc_site 524288 0.1
    check "$t: threads that exited left 1 MiB" pprof_bytes "$T/top" thread_alloc $MiB 0.25
    check "$t: main reaches all but the threads' 7 MiB" pprof_bytes "$T/top" main $((7 * MiB)) 0.15 cum

    check "$t: fetch /allocs" fetch allocs.pb.gz "http://$ADDR/debug/pprof/allocs"
    check "$t: pprof allocs" top_to atop "$T/allocs.pb.gz"
    check "$t: /allocs shows alloc_space first" has "$T/atop" '^Type: alloc_space$'
    check "$t: churn allocated 8 MiB" pprof_bytes "$T/atop" churn $((8 * MiB)) 0.25
    check "$t: realloc_start allocated its 4 KiB blocks" has "$T/atop" ' realloc_start$'
    check "$t: objects" pprof_to objects -sample_index=inuse_objects -top "$T/heap.pb.gz"
    check "$t: leak_small holds about 1024 objects" python3 - "$T/objects" <<'PY'
import sys
n = [float(l.split()[0]) for l in open(sys.argv[1]) if l.rstrip().endswith(" leak_small")]
print("leak_small objects:", n)
sys.exit(0 if n and 768 <= n[0] <= 1280 else 1)
PY
    stop
  done
done

# The profile as pprof reads it: four sample types, the period, Go's labels.
start target --ready LD_PRELOAD="$LIB" CPROF_HEAP_RATE=4096 -- "$P/heap_target" --fork
check "fork: the child allocated, freed and exited cleanly" has "$T/target.out" '^child ok$'
check "fetch heap?gc=1" fetch heap.pb.gz "http://$ADDR/debug/pprof/heap?gc=1"
check "pprof -raw" pprof_to raw -raw "$T/heap.pb.gz"
sample_types() {
  grep -A1 '^Samples:$' "$T/raw" >"$T/types" &&
    has "$T/types" 'alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes\[dflt\]'
}
check "sample types are Go's four, inuse_space the default" sample_types
check "the period is the rate in space/bytes" has "$T/raw" '^PeriodType: space bytes$'
check "the period is 4096" has "$T/raw" '^Period: 4096$'
check "samples carry the block size as Go's bytes label" has "$T/raw" 'bytes:\[32768\]'

# debug=1: Go's text heap format, which pprof parses (it scales by the rate itself).
check "fetch debug=1" fetch heap.txt "http://$ADDR/debug/pprof/heap?debug=1"
check "debug=1 starts as Go's heap profile, with twice the rate" \
  has "$T/heap.txt" '^heap profile: [0-9]+: [0-9]+ \[[0-9]+: [0-9]+\] @ heap/8192$'
check "debug=1 names the frames" has "$T/heap.txt" $'^#\t0x[0-9a-f]+\tleak_big\\+0x[0-9a-f]+\t.*heap_target.c:[0-9]+$'
check "debug=1 ends with memory statistics" has "$T/heap.txt" '^# VmRSS = [0-9]+$'
check "debug=1 counts the sampled blocks" has "$T/heap.txt" '^# SampledLive = [0-9]+$'
check "pprof debug=1" top_to ttop -sample_index=inuse_space "$T/heap.txt"
check "pprof reads debug=1: leak_big holds 3 MiB" pprof_bytes "$T/ttop" leak_big $((3 * MiB)) 0.25

# seconds=N: a delta holds only what happened meanwhile.
curl -sf -o "$T/delta.pb.gz" "http://$ADDR/debug/pprof/heap?seconds=2" &
fetch=$!
sleep 0.5
check "the target takes SIGUSR1 (allocate late)" kill -USR1 "$PID"
check "fetch heap?seconds=2" wait $fetch
check "pprof delta" top_to dtop "$T/delta.pb.gz"
check "delta: late_alloc's 2 MiB" pprof_bytes "$T/dtop" late_alloc $((2 * MiB)) 0.25
check "delta: nothing from before" absent "$T/dtop" leak_big
check "delta: it lasted 2 s" has "$T/dtop" '^Duration: 2(\.[0-9]+)?s'
check "late allocation ran" has "$T/target.out" '^late done$'
check "fetch allocs?seconds=1" fetch adelta.pb.gz "http://$ADDR/debug/pprof/allocs?seconds=1"
check "pprof allocs delta" pprof_to adtop -top "$T/adelta.pb.gz"
check "allocs delta of a quiet second: nothing from before" absent "$T/adtop" leak_big

check "seconds with debug=1 is refused" [ "$(http "http://$ADDR/debug/pprof/heap?seconds=1&debug=1")" = 400 ]
check "a bad seconds is refused" [ "$(http "http://$ADDR/debug/pprof/allocs?seconds=x")" = 400 ]

# cprof's own allocations (serving these profiles, symbolizing, the HTTP
# server's threads) are never sampled: no frame of cprof's or its
# libraries' in any stack, after all the fetches above.
check "fetch goroutine?debug=2" curl -sf -o /dev/null "http://$ADDR/debug/pprof/goroutine?debug=2"
check "fetch allocs" fetch all.pb.gz "http://$ADDR/debug/pprof/allocs"
check "pprof -traces" pprof_to traces -traces "$T/all.pb.gz"
check "no stack passes through cprof, libmicrohttpd, libdw or zlib" \
  lacks "$T/traces" 'cprof_|MHD_|dwfl_|dwarf_|deflate|libmicrohttpd|libdw'
check "the program's own stacks are there" has "$T/traces" 'leak_big'
stop

# C++: operator new and delete reach malloc and free.
start cxx --ready LD_PRELOAD="$LIB" CPROF_HEAP_RATE=4096 -- "$P/cxx_alloc" --wait
check "fetch cxx heap" fetch cxx.pb.gz "http://$ADDR/debug/pprof/heap"
check "pprof cxx" top_to ctop "$T/cxx.pb.gz"
# A static C++ function is named as nm -C lists it, with its parameters.
check "C++: make_nodes keeps its 4 MiB of Nodes" pprof_bytes "$T/ctop" 'make_nodes(int)' $((1024 * 4000)) 0.25 cum
stop

# Another allocator first in the lookup order: cprof says so and stays out
# of the way; after cprof, it is profiled.
JE=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
check "jemalloc is installed" [ -e "$JE" ]
start je_first --ready LD_PRELOAD="$JE:$LIB" CPROF_HEAP_RATE=4096 -- "$P/heap_target"
check "jemalloc first: one line says heap profiling is off, and why" \
  has "$T/je_first.err" '^cprof: heap profiling is off: malloc comes from .*libjemalloc\.so\.2, ahead of libcprof'
check "fetch je heap" fetch je.pb.gz "http://$ADDR/debug/pprof/heap"
check "pprof je" pprof_to jtop -top "$T/je.pb.gz"
check "jemalloc first: the profile is empty, not wrong" absent "$T/jtop" leak_big
stop
start je_after --ready LD_PRELOAD="$LIB:$JE" CPROF_HEAP_RATE=4096 -- "$P/heap_target"
check "jemalloc after cprof: nothing said" lacks "$T/je_after.err" 'heap profiling'
check "fetch je2 heap" fetch je2.pb.gz "http://$ADDR/debug/pprof/heap"
check "pprof je2" top_to j2top "$T/je2.pb.gz"
check "jemalloc after cprof: leak_big holds 3 MiB" pprof_bytes "$T/j2top" leak_big $((3 * MiB)) 0.25
stop

# CPROF_HEAP_RATE=0: off; a bad value: one line, and the default.
start off --ready LD_PRELOAD="$LIB" CPROF_HEAP_RATE=0 -- "$P/heap_target"
check "fetch off heap" fetch off.pb.gz "http://$ADDR/debug/pprof/heap"
check "pprof off" pprof_to otop -top "$T/off.pb.gz"
check "CPROF_HEAP_RATE=0: nothing sampled" absent "$T/otop" leak_big
stop
start bad --ready LD_PRELOAD="$LIB" CPROF_HEAP_RATE=lots -- "$P/heap_target"
check "CPROF_HEAP_RATE=lots: one line naming it" \
  has "$T/bad.err" '^cprof: CPROF_HEAP_RATE="lots": expected a whole number of bytes .*; using 524288$'
stop

# Mixed sizes and the memory limit, at rate 1 (every block sampled, so the
# totals are exact): a site of 2000 sizes is one stack, its first sizes
# labelled and the rest in one sample; 4096 distinct stacks under a 1 MiB
# limit leave some stacks out, counted under one frame that says so, and
# not one byte lost.
for limit in 32M 1M; do
  start stacks_$limit --ready LD_PRELOAD="$LIB" CPROF_HEAP_RATE=1 CPROF_MAX_MEMORY=$limit -- "$P/many_stacks"
  mixed=$(sed -n 's/^mixed_bytes //p' "$T/stacks_$limit.out")
  check "$limit: fetch /heap" fetch stacks.pb.gz "http://$ADDR/debug/pprof/heap"
  check "$limit: pprof -top" top_to stop "$T/stacks.pb.gz"
  check "$limit: mixed_site holds exactly what it asked for" pprof_bytes "$T/stop" mixed_site "$mixed" 0
  check "$limit: tagfocus" pprof_to s16 -tagfocus=bytes=16B -top -unit=B "$T/stacks.pb.gz"
  check "$limit: the site's first size keeps Go's bytes label" pprof_bytes "$T/s16" mixed_site 16 0
  if [ $limit = 32M ]; then
    check "$limit: leaf_alloc holds 16 MiB" pprof_bytes "$T/stop" leaf_alloc $((16 * MiB)) 0
    check "$limit: nothing over the limit" absent "$T/stop" '\[cprof:'
  else
    check "$limit: the stacks over the limit are counted under one frame" \
      has "$T/stop" ' \[cprof: CPROF_MAX_MEMORY reached; new stacks not kept\]$'
    check "$limit: leaf_alloc and the frame together hold 16 MiB" python3 - "$T/stop" <<'PY'
import sys
got = sum(float(l.split()[0].rstrip("B")) for l in open(sys.argv[1])
          if l.rstrip().endswith((" leaf_alloc", "new stacks not kept]")))
print("leaf_alloc + over the limit:", got)
sys.exit(0 if got == 16 * 1048576 else 1)
PY
  fi
  stop
done
start badmem --ready LD_PRELOAD="$LIB" CPROF_MAX_MEMORY=lots -- "$P/heap_target"
check "CPROF_MAX_MEMORY=lots: one line naming it" \
  has "$T/badmem.err" '^cprof: CPROF_MAX_MEMORY="lots": expected a size in bytes .*; using 32M$'
stop

# CPROF_OUTPUT: heap.pb.gz at exit, with what was still in use.
mkdir -p "$T/out"
run out LD_PRELOAD="$LIB" CPROF_ADDR=0 CPROF_OUTPUT="$T/out" CPROF_HEAP_RATE=4096 -- "$P/cxx_alloc"
check "CPROF_OUTPUT: the program exits 0" rc_is out 0
check "pprof heap.pb.gz" top_to xtop -sample_index=alloc_space "$T/out/heap.pb.gz"
check "CPROF_OUTPUT: heap.pb.gz has build_map's allocations" has "$T/xtop" ' build_map\(int\)$'

finish

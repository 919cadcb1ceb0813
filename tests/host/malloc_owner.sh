# Where malloc is not libcprof's, the one stderr line that turns heap
# profiling off says what can be done, and only what can: a build without
# the sanitizer when a sanitizer owns malloc, and a shared allocator when
# the program defines malloc itself, which no preload can come before.
# ("Put libcprof first", for another library, is tests/integration/heap.sh's
# jemalloc case.) The program runs as without cprof in each case.
. "$(dirname "$0")/../integration/lib.sh"
H=$B/tests/host

# heap_lines NAME: the run's "heap profiling is off" lines.
heap_lines() { grep -c '^cprof: heap profiling is off: ' "$T/$1.err" || true; }

# The program's own malloc, in the executable.
run own.plain -- "$H/host_own_malloc"
run own.pre CPROF_ADDR=0 LD_PRELOAD="$LIB" -- "$H/host_own_malloc"
cat "$T/own.pre.err"
compare own
check "own malloc: one line turns heap profiling off ($(heap_lines own.pre))" [ "$(heap_lines own.pre)" = 1 ]
check "own malloc: it says malloc is the program's own, and what would work" \
  has "$T/own.pre.err" 'malloc is defined in the program itself \(.*host_own_malloc\), .*no library can interpose it; to profile that allocator, build it as a shared library and load libcprof before it'
check "own malloc: no advice to put libcprof first, which cannot work" \
  bash -c "! grep -q 'put libcprof first' '$T/own.pre.err'"

# AddressSanitizer's runtime, preloaded as it must be for a program that
# was not built with it (and as it is needed first for one that was).
asan=$(gcc -print-file-name=libasan.so 2>/dev/null || true)
if [ -f "$asan" ]; then
  run asan.plain ASAN_OPTIONS=detect_leaks=0 LD_PRELOAD="$asan" -- "$H/host_hello"
  run asan.pre ASAN_OPTIONS=detect_leaks=0 CPROF_ADDR=0 LD_PRELOAD="$asan:$LIB" -- "$H/host_hello"
  cat "$T/asan.pre.err"
  compare asan
  check "ASan: one line turns heap profiling off ($(heap_lines asan.pre))" [ "$(heap_lines asan.pre)" = 1 ]
  check "ASan: it says the sanitizer owns malloc and to profile a build without it" \
    has "$T/asan.pre.err" 'malloc belongs to AddressSanitizer \(.*libasan[^)]*\), which must keep the allocator it checks; profile the heap in a build without -fsanitize=address'
  check "ASan: no advice to put libcprof first, which would take ASan's allocator away" \
    bash -c "! grep -q 'put libcprof first' '$T/asan.pre.err'"
else
  echo "no libasan.so here: the sanitizer case is not run"
fi

finish

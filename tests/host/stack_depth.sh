# Issue 12, items 3 and 4: stacks that tell the truth about their ends.
#
# A 500-frame recursion between main (through above_recursion) and a leaf
# that burns CPU, allocates at rate 1 or sleeps: deeper than the default
# depth (128). Every profile keeps the innermost and the outermost frames,
# so main and above_recursion have their ~100 % cumulative share, with one
# frame between that says frames were elided: in the proto (-traces),
# debug=1 (as text, and through pprof, which asks /debug/pprof/symbol for
# the marker's address) and debug=2, where Go's "...N frames elided..."
# counts them: N plus the recurse() frames shown is 500. CPROF_MAX_DEPTH=600
# keeps the whole stack, with no marker; a bad value is one stderr line and
# the default.
#
# Code with no unwind tables (a JIT's stub in an anonymous executable page)
# between main -> call_through_jit and the callee: with the default
# unwinder, the frames above it are there in the CPU, heap and goroutine
# profiles. (The heap's walk ended at the stub's address.)
. "$(dirname "$0")/../integration/lib.sh"
H=$B/tests/host
MARK='[...frames elided: stack deeper than CPROF_MAX_DEPTH]'
MARK_RE='\[\.\.\.frames elided: stack deeper than CPROF_MAX_DEPTH\]'

# cum_at_least FILE NAME PCT: in a -top -cum listing, NAME's cum% is at least PCT.
cum_at_least() {
  awk -v n="$2" -v p="$3" '$NF == n { sub("%", "", $5); found = 1; ok = $5 + 0 >= p }
    END { exit !(found && ok) }' "$1"
}
# cum_of_leaf FILE FUNC LEAF PCT: FUNC's cumulative share in pprof -top
# FILE is at least PCT % of LEAF's flat share: the samples of the burning
# leaf (not the records a profile adds without a stack, such as the CPU a
# thread spent since its last sample) all reach FUNC.
cum_of_leaf() {
  awk -v n="$2" -v l="$3" -v p="$4" '$NF == n { sub("%", "", $5); c = $5 + 0; found++ }
    $NF == l { sub("%", "", $2); f = $2 + 0; found++ }
    END { exit !(found == 2 && f > 0 && c >= f * p / 100) }' "$1"
}
# thread_block FILE COMM: the debug=2 block of the thread named COMM.
thread_block() { awk -v n="\"$2\"" '$1 == "thread" && $3 == n { on = 1 } on && /^$/ { exit } on' "$1"; }
# lacks FILE REGEX: the file is there, not empty, and has no line matching REGEX.
lacks() { [ -s "$1" ] && ! grep -Eq -- "$2" "$1"; }
# block_has FILE COMM REGEX: the thread's debug=2 block has a line matching REGEX.
block_has() { thread_block "$1" "$2" | grep -Eq -- "$3"; }
# elided_counts FILE COMM: the thread's "...N frames elided..." N plus its
# recurse() frames shown is 500, the recursion's depth.
elided_counts() {
  thread_block "$1" "$2" | awk '/^\.\.\.[0-9]+ frames elided\.\.\.$/ { split($0, w, " "); n = substr(w[1], 4) + 0 }
    /^recurse\(\)$/ { r++ } END { print "  elided " n ", recurse() shown " r > "/dev/stderr"; exit !(n > 0 && n + r == 500) }'
}
# frames_in FILE FUNC: the frames (lines not inlined) of the first -traces sample with FUNC as its leaf.
frames_in() {
  awk -v f="$2" '/^-----/ { if (on) exit; next } $2 == f && !on { on = 1 } on && !/\(inline\)/ && !/^ +thread:/ { n++ }
    END { print n + 0 }' "$1"
}
# the lines after the leaf FUNC in the first sample that has it, in -traces.
after_leaf() { grep -A"$3" -m1 -- " $2\$" "$1"; }

# ---- the deep recursion: CPU ----
for depth in default 600 5000; do
  envs=(LD_PRELOAD="$LIB" CPROF_HEAP_RATE=0)
  [ $depth = default ] || envs+=(CPROF_MAX_DEPTH=$depth)
  # 30 s, stopped after its fetches: a 1 s profile beside other tests on 2 CPUs took up
  # to 11 s once (with the library before issue 29 too), and a program that had
  # ended by then had no goroutine dump to give.
  start cpu_$depth --ready "${envs[@]}" -- "$H/host_deep_recursion" cpu 30
  url=http://$ADDR/debug/pprof
  pprof -traces "$url/profile?seconds=1" >"$T/cpu_$depth.traces" || fail "cpu, $depth: go tool pprof -traces"
  pprof -top -cum "$T/pprof/"*.pb.gz >"$T/cpu_$depth.top" 2>/dev/null || true
  rm -rf "$T/pprof"
  curl -sf "$url/goroutine?debug=2" >"$T/cpu_$depth.g2" || fail "cpu, $depth: goroutine?debug=2"
  stop
  echo "cpu, CPROF_MAX_DEPTH=$depth: $(frames_in "$T/cpu_$depth.traces" burn_at_the_bottom) frames in burn_at_the_bottom's samples"
  # Of the burning leaf's samples: on a loaded machine a 1 s profile has a
  # few dozen, and the CPU its thread spent since its last sample, a record
  # without a stack, was 4-5 % of them.
  check "cpu, $depth: main has ~100 % cumulative" \
    cum_of_leaf "$T/cpu_$depth.top" main burn_at_the_bottom 95
  check "cpu, $depth: above_recursion has ~100 % cumulative" \
    cum_of_leaf "$T/cpu_$depth.top" above_recursion burn_at_the_bottom 95
  if [ $depth = 600 ]; then
    check "cpu, 600: the whole stack, 500 recurse frames" \
      test "$(awk '/^-----/ { if (on) exit } / burn_at_the_bottom$/ { on = 1 } on && / recurse$/ { n++ } END { print n + 0 }' "$T/cpu_600.traces")" = 500
    check "cpu, 600: no marker in -traces" lacks "$T/cpu_600.traces" 'frames elided'
    check "cpu, 600: no marker in debug=2" lacks "$T/cpu_600.g2" 'frames elided'
    check "cpu, 600: main() in the running thread's debug=2" block_has "$T/cpu_600.g2" host_deep_recur '^main\(\)$'
  else
    check "cpu, $depth: 128 frames, the marker among them" test "$(frames_in "$T/cpu_$depth.traces" burn_at_the_bottom)" = 128
    check "cpu, $depth: the marker in -traces" has "$T/cpu_$depth.traces" "^ +$MARK_RE\$"
    check "cpu, $depth: the running thread's debug=2 counts the frames elided" elided_counts "$T/cpu_$depth.g2" host_deep_recur
  fi
done
check "CPROF_MAX_DEPTH=5000: one line on stderr" \
  test "$(grep -c 'CPROF_MAX_DEPTH="5000": expected a whole number of frames from 16 to 1024; using 128' "$T/cpu_5000.err")" = 1

# ---- the deep recursion: heap at rate 1, and a thread asleep at the bottom ----
for depth in default 600; do
  envs=(LD_PRELOAD="$LIB" CPROF_HEAP_RATE=1)
  [ $depth = default ] || envs+=(CPROF_MAX_DEPTH=$depth)
  start heap_$depth --ready "${envs[@]}" -- "$H/host_deep_recursion" heap 30
  url=http://$ADDR/debug/pprof
  pprof -sample_index=inuse_space -top -cum "$url/heap" >"$T/heap_$depth.top" || fail "heap, $depth: go tool pprof -top"
  pprof -sample_index=inuse_space -traces "$url/heap" >"$T/heap_$depth.traces" || fail "heap, $depth: go tool pprof -traces"
  pprof -sample_index=inuse_space -traces "$url/heap?debug=1" >"$T/heap1_$depth.traces" || fail "heap, $depth: pprof of debug=1"
  curl -sf "$url/heap?debug=1" >"$T/heap_$depth.h1" || fail "heap, $depth: heap?debug=1"
  pprof -traces "$url/goroutine" >"$T/gor_$depth.traces" || fail "goroutine, $depth: go tool pprof -traces"
  curl -sf "$url/goroutine?debug=1" >"$T/gor_$depth.g1" || fail "goroutine, $depth: debug=1"
  curl -sf "$url/goroutine?debug=2" >"$T/gor_$depth.g2" || fail "goroutine, $depth: debug=2"
  stop
  check "heap, $depth: main has ~100 % cumulative" cum_at_least "$T/heap_$depth.top" main 99
  check "heap, $depth: above_recursion has ~100 % cumulative" cum_at_least "$T/heap_$depth.top" above_recursion 99
  check "goroutine, $depth: main() in the sleeping main thread's debug=2" \
    block_has "$T/gor_$depth.g2" host_deep_recur '^main\(\)$'
  if [ $depth = 600 ]; then
    for f in heap_600.traces heap1_600.traces heap_600.h1 gor_600.traces gor_600.g1 gor_600.g2; do
      check "600: no marker in $f" lacks "$T/$f" 'frames elided'
    done
  else
    check "heap: the marker in -traces" has "$T/heap_default.traces" "^ +$MARK_RE\$"
    check "heap: the marker in debug=1" has "$T/heap_default.h1" "^#	0x0		$MARK_RE\$"
    check "heap: the marker in debug=1 read by pprof" has "$T/heap1_default.traces" "^ +$MARK_RE\$"
    check "heap: main in debug=1 read by pprof" has "$T/heap1_default.traces" "^ +main\$"
    check "goroutine: the marker in -traces" has "$T/gor_default.traces" "^ +$MARK_RE\$"
    check "goroutine: the marker in debug=1" has "$T/gor_default.g1" "^#	0x0		$MARK_RE\$"
    check "goroutine: the sleeping thread's debug=2 counts the frames elided" \
      elided_counts "$T/gor_default.g2" host_deep_recur
  fi
done

# ---- code without unwind tables ----
for mode in cpu heap sleep; do
  start jit_$mode --ready LD_PRELOAD="$LIB" CPROF_HEAP_RATE=1 -- "$H/host_jit_frames" $mode 30
  url=http://$ADDR/debug/pprof
  case $mode in
  cpu) pprof -traces "$url/profile?seconds=1" ;;
  heap) pprof -sample_index=inuse_space -traces "$url/heap" ;;
  sleep) pprof -traces "$url/goroutine" ;;
  esac >"$T/jit_$mode.traces" || fail "jit, $mode: go tool pprof -traces"
  [ $mode = sleep ] && curl -sf "$url/goroutine?debug=2" >"$T/jit.g2"
  stop
  after_leaf "$T/jit_$mode.traces" in_jit_callee 3 >"$T/jit_$mode.above"
  sed 's/^/  /' "$T/jit_$mode.above"
  check "jit, $mode: call_through_jit above the stub" has "$T/jit_$mode.above" '^ +call_through_jit$'
  check "jit, $mode: main above it" has "$T/jit_$mode.above" '^ +main$'
done
check "jit, sleep: debug=2 has main()" \
  block_has "$T/jit.g2" host_jit_frames '^main\(\)$'
finish

# The thread-stack profile, read by the real client: go tool pprof -raw and
# -traces must show the known functions of a test program, with file:line,
# whether the program links cprof or gets it through LD_PRELOAD, with
# either unwinder.
. "$(dirname "$0")/lib.sh"

P=$B/tests/integration
for mode in linked preload; do
  for unwind in dwarf fp; do
    t="$mode/$unwind"
    if [ $mode = linked ]; then
      start target --ready CPROF_UNWIND=$unwind -- "$P/stacks_linked"
    else
      start target --ready LD_PRELOAD="$LIB" CPROF_UNWIND=$unwind -- "$P/stacks_plain"
    fi
    url=http://$ADDR/debug/pprof/goroutine
    pprof -raw "$url" >"$T/raw" || { fail "$t: go tool pprof -raw"; cat "$T/pprof.err" >&2; }
    check "$t: -raw names spin_inner with file:line" has "$T/raw" 'spin_inner .*stacks_target\.c:[0-9]+'
    check "$t: -raw has spin_outer calling spin_inner" has "$T/raw" 'spin_outer .*stacks_target\.c:[0-9]+'
    check "$t: the main program is the first mapping" has "$T/raw" "^1: 0x[0-9a-f]+/0x[0-9a-f]+/0x[0-9a-f]+ .*stacks_(linked|plain)"
    pprof -traces "$url" >"$T/traces" || fail "$t: go tool pprof -traces"
    check "$t: -traces labels samples with thread names" has "$T/traces" 'thread:.*spinner'
    check "$t: -traces shows the spinner's stack" has "$T/traces" 'spin_inner'
    # Threads in calls a signal would interrupt are unwound from outside,
    # whatever the unwinder: their stacks are there, and they sleep on.
    check "$t: the thread in nanosleep shows sleep_an_hour" has "$T/raw" 'sleep_an_hour .*stacks_target\.c:[0-9]+'
    check "$t: the thread blocking all signals shows its function" has "$T/raw" 'wait_with_signals_blocked .*stacks_target\.c:[0-9]+'
    check "$t: main in pause() shows main_wait" has "$T/raw" 'main_wait .*stacks_target\.c:[0-9]+'
    for _ in 1 2 3 4 5 6 7 8 9 10; do curl -sf -o /dev/null "$url" || break; done
    check "$t: ten more profiles later the program still runs" kill -0 "$PID"
    check "$t: no sleep or pause ended early" bash -c "! grep -Eq 'ended early|returned' '$T/target.err'"
    if [ $unwind = dwarf ]; then
      # libc's read(2) wrapper has no frame pointer, so only the DWARF
      # unwinder is expected to see through it to its caller.
      check "$t: the thread blocked in read(2) shows block_in_read" has "$T/raw" 'block_in_read .*stacks_target\.c:[0-9]+'
      check "$t: -traces has block_in_read under the reader" has "$T/traces" 'block_in_read'
    fi
    stop
  done
done

# C++: names come out demangled, namespaces, classes and templates included.
start cxx --ready LD_PRELOAD="$LIB" -- "$P/cxx_target"
pprof -raw "http://$ADDR/debug/pprof/goroutine" >"$T/cxx" || fail "C++: go tool pprof -raw"
# pprof shows each name as nm -C lists it (its system_name differs, so
# pprof does not shorten it), then in parentheses the mangled name it comes
# from.
check "C++: a member function of a template, demangled" has "$T/cxx" \
  ' shop::Queue<int>::wait_for_item\(\) .*cxx_target\.cpp:[0-9]+ s=0\(_ZN4shop5QueueIiE13wait_for_itemEv\)'
check "C++: a class method, demangled" has "$T/cxx" \
  ' shop::Worker::run\(shop::Queue<int>&\) .*cxx_target\.cpp:[0-9]+ s=0\(_ZN4shop6Worker3runERNS_5QueueIiEE\)'
check "C++: no mangled names left in our functions" bash -c "! grep -Eq '^ +([0-9]+: 0x[0-9a-f]+ M=[0-9]+ )?_Z' '$T/cxx'"
stop

# The top view people type first, as in Go's docs.
start target --ready -- "$P/stacks_linked"
pprof -top "http://$ADDR/debug/pprof/goroutine" >"$T/top" || fail "go tool pprof -top"
check "-top counts one sample per thread (9: main, reader, spinner, sleeper, blocker, cprof-server, MHD-listen, MHD-connection, cprof-metrics)" \
  has "$T/top" 'of 9 total'
check "-top names block_in_read" has "$T/top" 'block_in_read'
finish

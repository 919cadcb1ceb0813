# cprof must leave programs that are not ours as they were: same output,
# same exit code. Diagnostics go to stderr as lines starting "cprof: ", and
# only when something needs saying.
. "$(dirname "$0")/lib.sh"

cprof_lines_only() { ! grep -qv '^cprof: ' "$T/$1.err"; }

# /bin/sleep, successful and failing.
run plain -- /bin/sleep 0.3
run pre LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0 -- /bin/sleep 0.3
check "sleep: same exit code" same plain pre rc
check "sleep: same stdout" same plain pre out
check "sleep: stderr only says where it serves" bash -c "! grep -v '^cprof: serving ' '$T/pre.err' | grep -q ."
run plain -- /bin/sleep --no-such-flag
run pre LD_PRELOAD="$LIB" CPROF_ADDR=0 -- /bin/sleep --no-such-flag
check "failing sleep: same exit code (1)" same plain pre rc
check "failing sleep: same stderr" same plain pre err

# A shell running a pipeline: every process in it gets cprof.
pipeline='seq 1 50000 | sort -rn | head -3; echo done; exit 3'
run plain -- sh -c "$pipeline"
run pre LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0 -- sh -c "$pipeline"
check "pipeline: same exit code (3)" same plain pre rc
check "pipeline: same stdout" same plain pre out
check "pipeline: stderr holds only cprof's lines" cprof_lines_only pre

# C++ exceptions: nothing cprof brings may take over _Unwind_* (it once
# loaded libunwind, which exports them all).
run cxx -- "$B/tests/integration/exceptions"
run cxx_pre LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0 -- "$B/tests/integration/exceptions"
check "C++ exceptions: same exit code (7)" bash -c "[ \$(cat '$T/cxx_pre.rc') = 7 ] && cmp -s '$T/cxx.rc' '$T/cxx_pre.rc'"
check "C++ exceptions: same output" same cxx cxx_pre out
# ld.so says where each symbol binds: _Unwind_RaiseException must bind to
# libgcc_s, never to a libunwind.
unwind_binds_to_libgcc() {
  LD_PRELOAD="$LIB" LD_DEBUG=bindings LD_DEBUG_OUTPUT="$T/ld" CPROF_ADDR=127.0.0.1:0 \
    "$B/tests/integration/exceptions" >/dev/null 2>&1 || true
  grep -h "_Unwind_RaiseException'" "$T"/ld.* >"$T/bind" || return 1
  grep -q ' to [^ ]*libgcc_s' "$T/bind" && ! grep -q ' to [^ ]*libunwind' "$T/bind"
}
check "C++ exceptions: _Unwind_RaiseException still binds to libgcc_s" unwind_binds_to_libgcc

# The malloc family interposed, sampling as often as it can (every
# allocation at CPROF_HEAP_RATE=1): ls, sort on a large input and a C++
# program built on new and delete print what they print without cprof.
run ls_plain -- ls -la /usr/lib
run ls_pre LD_PRELOAD="$LIB" CPROF_ADDR=0 CPROF_HEAP_RATE=1 -- ls -la /usr/lib
check "ls under heap sampling: same output" same ls_plain ls_pre out
check "ls under heap sampling: same exit code" same ls_plain ls_pre rc
awk 'BEGIN { x = 12345; for (i = 0; i < 300000; i++) { x = (x * 1103515245 + 12345) % 2147483648; print x, i } }' >"$T/big.txt"
run sort_plain -- sort -k1,1n "$T/big.txt"
run sort_pre LD_PRELOAD="$LIB" CPROF_ADDR=0 CPROF_HEAP_RATE=64 -- sort -k1,1n "$T/big.txt"
check "sort of 300000 lines under heap sampling: same output" same sort_plain sort_pre out
check "sort under heap sampling: nothing on stderr" [ ! -s "$T/sort_pre.err" ]
run cxx_plain -- "$B/tests/integration/cxx_alloc"
run cxx_heap LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0 CPROF_HEAP_RATE=1 -- "$B/tests/integration/cxx_alloc"
check "C++ new/delete under heap sampling: same output" same cxx_plain cxx_heap out
check "C++ new/delete under heap sampling: same exit code" same cxx_plain cxx_heap rc

# A program that takes SIGPROF for itself while cprof's CPU profile runs
# (CPROF_OUTPUT profiles the whole run): it gets its own SIGPROFs and
# handlers, never the profiler's ticks. GNU sort does this, and died of
# SIGPROF before sigaction was interposed.
run sig_plain -- "$B/tests/integration/sigprof_late"
run sig_pre LD_PRELOAD="$LIB" CPROF_ADDR=0 CPROF_OUTPUT="$T/sigout" -- "$B/tests/integration/sigprof_late"
check "own SIGPROF handler under a CPU profile: same output" same sig_plain sig_pre out
check "own SIGPROF handler under a CPU profile: exit code 0" [ "$(cat "$T/sig_pre.rc")" = 0 ]
check "own SIGPROF handler under a CPU profile: the profile was written" [ -s "$T/sigout/cpu.pb.gz" ]
run sort_out LD_PRELOAD="$LIB" CPROF_ADDR=0 CPROF_OUTPUT="$T/sortout" -- sort -k1,1n "$T/big.txt"
check "sort under a whole-run CPU profile: same output" same sort_plain sort_out out
check "sort under a whole-run CPU profile: exit code 0" [ "$(cat "$T/sort_out.rc")" = 0 ]

# CPROF_ADDR=0: no server, not a word.
run off LD_PRELOAD="$LIB" CPROF_ADDR=0 -- sh -c "$pipeline"
check "CPROF_ADDR=0: same stdout" same plain off out
check "CPROF_ADDR=0: nothing on stderr" [ ! -s "$T/off.err" ]
env LD_PRELOAD="$LIB" CPROF_ADDR=0 "$B/tests/integration/stacks_plain" >"$T/off2.out" 2>&1 &
off_pid=$!
for _ in $(seq 1 100); do grep -q ready "$T/off2.out" && break; sleep 0.05; done
check "CPROF_ADDR=0: only the program's own 5 threads" [ "$(ls /proc/$off_pid/task | wc -l)" = 5 ]
check "CPROF_ADDR=0: no server thread" bash -c "! grep -q '^MHD-' /proc/$off_pid/task/*/comm"
stop "$off_pid"

# A port in use: one line naming CPROF_ADDR, and the program runs on.
start holder --ready -- "$B/tests/integration/stacks_linked"
run busy LD_PRELOAD="$LIB" CPROF_ADDR="$ADDR" -- sh -c 'echo hi; exit 4'
check "busy port: program output unchanged" [ "$(cat "$T/busy.out")" = hi ]
check "busy port: exit code unchanged" [ "$(cat "$T/busy.rc")" = 4 ]
check "busy port: one stderr line" [ "$(wc -l <"$T/busy.err")" = 1 ]
check "busy port: the line names CPROF_ADDR and the reason" \
  has "$T/busy.err" "^cprof: CPROF_ADDR=$ADDR: cannot listen: Address already in use; the profiling server is off$"
stop

# Malformed settings: one line each, naming the variable and the form.
for bad in 'CPROF_ADDR=banana' 'CPROF_ADDR=:99999' 'CPROF_ADDR=1.2.3.4:' 'CPROF_UNWIND=magic' \
  'CPROF_PREFIX=no-slash' 'CPROF_AUTH=nocolon' 'CPROF_TOKEN=has space'; do
  var=${bad%%=*}
  run bad LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0 "$bad" -- sh -c 'echo hi; exit 5'
  check "$bad: output unchanged" [ "$(cat "$T/bad.out")" = hi ]
  check "$bad: exit code unchanged" [ "$(cat "$T/bad.rc")" = 5 ]
  check "$bad: one line naming $var" bash -c "[ \$(grep -c '^cprof: $var' '$T/bad.err') = 1 ]"
done
run badauth LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0 CPROF_AUTH=nocolon -- sh -c 'echo hi'
check "a malformed credential keeps the server off" bash -c "! grep -q 'serving' '$T/badauth.err'"

# fork without exec: the child carries on without the parent's server.
run forked LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0 -- sh -c '(echo child; exit 0) & wait; echo parent'
check "fork: both sides run" [ "$(tr '\n' ' ' <"$T/forked.out")" = "child parent " ]
finish

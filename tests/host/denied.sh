# System calls that cprof needs, denied as a container's or a sandbox's
# seccomp filter denies them (host_deny), and /proc not mounted: whatever
# cannot be had says why, where the user looks, instead of coming out empty
# or short without a word.
# - timer_create denied, or no /proc: /profile answers 500 with the reason,
#   not an empty profile; CPROF_OUTPUT says it in one stderr line and writes
#   no cpu.pb.gz.
# - process_vm_readv denied: a sleeping thread's stack is its pc and a frame
#   naming the refusal, in the debug=2 dump and in the profile.
# - timer_create denied (with which a running thread is asked for its
#   stack): a running thread is listed, with the refusal as its frame (it
#   used to be left out of the dump).
. "$(dirname "$0")/../integration/lib.sh"
H=$B/tests/host
"$H/host_deny" timer_create true || skip "no seccomp filter here"

# thread NAME: the debug=2 paragraph of the thread called NAME in $T/body.
thread() { awk -v n="\"$1\"" '/^thread / { p = index($0, n) > 0 } p' "$T/body"; }

# No CPU timer can be made: the profile is an error that says why.
start notimer --ready -- "$H/host_deny" timer_create env LD_PRELOAD="$LIB" "$H/host_unsampled" spin 30
code=$(http "http://$ADDR/debug/pprof/profile?seconds=1")
[ "$code" = 200 ] || cat "$T/body" # a profile is gzip: not for the log
check "timer_create denied: /profile is an error ($code), not an empty profile" [ "$code" = 500 ]
check "timer_create denied: the answer says why, in one line" \
  eval '[ "$(cat "$T/body")" = "Could not enable CPU profiling: no thread could be given a CPU timer: timer_create: Operation not permitted" ]'
stop

run output CPROF_ADDR=0 CPROF_OUTPUT="$T/out" -- \
  "$H/host_deny" timer_create env LD_PRELOAD="$LIB" "$H/host_unsampled" spin 0.3
cat "$T/output.err"
check "timer_create denied, CPROF_OUTPUT: the program ran to its end" rc_is output 0
check "timer_create denied, CPROF_OUTPUT: one stderr line says why" \
  eval '[ "$(grep -c "^cprof: CPROF_OUTPUT: cannot record the CPU profile: no thread could be given a CPU timer: timer_create: Operation not permitted; no cpu.pb.gz will be written$" "$T/output.err")" = 1 ]'
check "timer_create denied, CPROF_OUTPUT: no empty cpu.pb.gz" [ ! -e "$T/out/cpu.pb.gz" ]
check "timer_create denied, CPROF_OUTPUT: heap.pb.gz is written as ever" [ -s "$T/out/heap.pb.gz" ]

# No /proc: the threads cannot be listed (a mount namespace of our own,
# where one can be made).
if unshare --mount --propagation private true 2>/dev/null; then
  run noproc CPROF_ADDR=0 CPROF_OUTPUT="$T/noproc" -- unshare --mount --propagation private \
    sh -c 'mount -t tmpfs none /proc && exec env LD_PRELOAD="$0" "$1" spin 0.3' "$LIB" "$H/host_unsampled"
  cat "$T/noproc.err"
  check "no /proc, CPROF_OUTPUT: the program ran to its end" rc_is noproc 0
  check "no /proc, CPROF_OUTPUT: one stderr line says why" \
    has "$T/noproc.err" "^cprof: CPROF_OUTPUT: cannot record the CPU profile: cannot list the program's threads in /proc/self/task: No such file or directory \(is /proc mounted\?\)"
  check "no /proc, CPROF_OUTPUT: no empty cpu.pb.gz" [ ! -e "$T/noproc/cpu.pb.gz" ]
else
  echo "no mount namespace here: the case without /proc is not run"
fi

# The stacks of sleeping threads cannot be read, and running threads
# cannot be asked for theirs.
start readv --ready -- "$H/host_deny" process_vm_readv,timer_create \
  env LD_PRELOAD="$LIB" "$H/host_unsampled" spin 30
code=$(http "http://$ADDR/debug/pprof/goroutine?debug=2")
check "denied: the dump is served ($code)" [ "$code" = 200 ]
thread host_unsampled >"$T/main"
thread spinner >"$T/spinner"
cat "$T/main" "$T/spinner"
# main waits in pthread_join: the pc that /proc shows, in the futex wait,
# then the frame that says why the walk went no further.
check "process_vm_readv denied: the sleeping main thread shows its pc" has "$T/main" '^__futex_abstimed_wait'
check "process_vm_readv denied: and a last frame naming the refusal" \
  eval '[ "$(grep -v "^	" "$T/main" | grep -v "^$" | tail -1)" = "[stack unreadable: process_vm_readv: Operation not permitted]" ]'
check "timer_create denied: the running thread is listed" has "$T/spinner" '^thread [0-9]+ "spinner" \[running\]:$'
check "timer_create denied: its frame names the refusal" \
  eval '[ "$(sed -n 2p "$T/spinner")" = "[thread running: cprof'"'"'s signal could not be sent: timer_create: Operation not permitted]" ]'
# The same frames in the profile, through go tool pprof.
check "denied: fetch the goroutine profile" eval '[ "$(http "http://$ADDR/debug/pprof/goroutine")" = 200 ]'
pprof -traces "$T/body" >"$T/traces" || true
check "pprof: the sleeping thread's stack ends with the refusal" \
  eval 'awk "/thread: +host_unsampled/ { p = 1; next } /^-+\\+/ { p = 0 } p" "$T/traces" | tail -1 | grep -q "^ *\[stack unreadable: process_vm_readv: Operation not permitted\]$"'
check "pprof: the running thread's frame names the refusal" \
  eval 'awk "/thread: +spinner/ { p = 1; next } /^-+\\+/ { p = 0 } p" "$T/traces" | grep -q "\[thread running: cprof.s signal could not be sent: timer_create: Operation not permitted\]"'
stop
finish

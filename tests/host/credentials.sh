# Credentials Linux keeps per thread: cprof's threads follow the program's.
# A program that drops privileges as setpriv(1) does must not abort, and
# once it has dropped every capability no thread of the process, cprof's
# HTTP threads included, may hold one.
. "$(dirname "$0")/../integration/lib.sh"
if [ "$(id -u)" != 0 ]; then
  skip "needs root to drop privileges"
fi
P=$B/tests/host/host_drop_privileges

run plain -- "$P"
check "without cprof: every step succeeds" bash -c "! grep -q -- '-1' '$T/plain.out' && grep -q dropped '$T/plain.out'"
run pre LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0 -- "$P"
check "under cprof: no abort, exit code 0 (was 134)" rc_is pre 0
check "under cprof: same output" same plain pre out

# While it waits after dropping: every thread's capabilities are none.
env LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0 "$P" >"$T/live.out" 2>"$T/live.err" &
pid=$!
for _ in $(seq 1 100); do has "$T/live.out" '^dropped$' && break; sleep 0.02; done
grep -H '^Cap\(Eff\|Prm\)' /proc/$pid/task/*/status >"$T/caps" 2>/dev/null || true
grep -H . /proc/$pid/task/*/comm >"$T/comms" 2>/dev/null || true
wait $pid || true
check "cprof's server threads are there to be checked" grep -q MHD-listen "$T/comms"
check "no thread holds a capability after capset(none)" \
  bash -c "[ -s '$T/caps' ] && ! grep -v ':\s*0000000000000000$' '$T/caps' | grep -q ."
check "the server answers after the threads were made again" bash -c "grep -q '^cprof: serving ' '$T/live.err'"

# The push's threads (CPROF_PUSH_URL) follow too, and push on after.
receiver creds
: >"$T/push.out"
env LD_PRELOAD="$LIB" CPROF_ADDR=0 CPROF_PUSH_URL="http://127.0.0.1:$RPORT" "$P" >"$T/push.out" 2>"$T/push.err" &
pid=$!
for _ in $(seq 1 100); do has "$T/push.out" '^dropped$' && break; sleep 0.02; done
grep -H '^Cap\(Eff\|Prm\)' /proc/$pid/task/*/status >"$T/pcaps" 2>/dev/null || true
grep -H . /proc/$pid/task/*/comm >"$T/pcomms" 2>/dev/null || true
rc=0
wait $pid || rc=$?
check "with the push: exit 0, the same output" eval '[ $rc = 0 ] && cmp -s "$T/plain.out" "$T/push.out"'
check "the push's threads are there to be checked" grep -q cprof-push "$T/pcomms"
check "no thread holds a capability after capset(none), the push's included" \
  bash -c "[ -s '$T/pcaps' ] && ! grep -v ':\s*0000000000000000$' '$T/pcaps' | grep -q ."
check "the push's thread, made again, sent the profiles at exit" \
  bash -c "ls '$T/creds.rx' | grep -q '\.pprof$'"

# The same sequence through syscall(): prctl and capset raw, the ids by
# glibc (which changes every thread, and aborted on cprof's: they had not
# seen PR_SET_KEEPCAPS); then every step raw (which changes the calling
# thread alone, and left cprof's threads root with every capability).
# creds NAME PID: each thread's credentials, and the main thread's.
creds() {
  for t in /proc/$2/task/*; do
    grep -E '^(Uid|Gid|Groups|CapInh|CapPrm|CapEff|CapBnd|CapAmb):' "$t/status" | tr -s '\t ' ' ' | tr '\n' ' '
    echo
  done >"$T/$1.threads" 2>/dev/null || true
  grep -E '^(Uid|Gid|Groups|CapInh|CapPrm|CapEff|CapBnd|CapAmb):' /proc/$2/status | tr -s '\t ' ' ' | tr '\n' ' ' >"$T/$1.main" 2>/dev/null || true
  echo >>"$T/$1.main"
  grep -H . /proc/$2/task/*/comm >"$T/$1.comms" 2>/dev/null || true
}
for mode in mixed raw; do
  run plain_$mode -- "$P" $mode
  run pre_$mode LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0 -- "$P" $mode
  check "$mode: without cprof every step succeeds" bash -c "! grep -q -- '-1' '$T/plain_$mode.out' && grep -q dropped '$T/plain_$mode.out'"
  check "$mode: under cprof exit code 0, the same output (was 134 for mixed)" \
    eval "rc_is pre_$mode 0 && same plain_$mode pre_$mode out"
  : >"$T/live_$mode.out"
  env LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0 "$P" $mode >"$T/live_$mode.out" 2>"$T/live_$mode.err" &
  pid=$!
  for _ in $(seq 1 100); do has "$T/live_$mode.out" '^dropped$' && break; sleep 0.02; done
  creds live_$mode $pid
  a=$(sed -n 's|^cprof: serving http://\([^/]*\)/.*|\1|p' "$T/live_$mode.err" | head -1)
  code=$(http "http://$a/debug/pprof/goroutine?debug=1" --max-time 5 || true)
  wait $pid || true
  check "$mode: cprof's server threads are there to be checked" grep -q MHD-listen "$T/live_$mode.comms"
  check "$mode: the program's thread dropped everything (uid 65534, no capability)" \
    bash -c "grep -q 'Uid: 65534 65534 65534 65534' '$T/live_$mode.main' && grep -q 'CapEff: 0000000000000000' '$T/live_$mode.main'"
  check "$mode: every thread holds what the program's holds (ids, groups, capabilities)" \
    bash -c "grep -q Uid: '$T/live_$mode.main' && grep -q Uid: '$T/live_$mode.threads' && ! grep -vxF \"\$(cat '$T/live_$mode.main')\" '$T/live_$mode.threads' | grep -q ."
  check "$mode: the server answers after the threads were made again ($code)" [ "$code" = 200 ]
done

# A child made by vfork shares the program's memory until it ends: its raw
# setresuid is its own, and must not stop (or take along) the program's
# cprof threads.
env LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0 "$P" vfork >"$T/vfork.out" 2>"$T/vfork.err" &
pid=$!
for _ in $(seq 1 100); do has "$T/vfork.out" '^dropped$' && break; sleep 0.02; done
creds vfork $pid
a=$(sed -n 's|^cprof: serving http://\([^/]*\)/.*|\1|p' "$T/vfork.err" | head -1)
code=$(http "http://$a/debug/pprof/goroutine?debug=1" --max-time 5 || true)
wait $pid || true
check "vfork: the child dropped root" grep -q '^child dropped: 0$' "$T/vfork.out"
check "vfork: the program's cprof threads are still there, root as it is" \
  bash -c "grep -q MHD-listen '$T/vfork.comms' && grep -q 'Uid: 0 0 0 0' '$T/vfork.threads' && ! grep -q 'Uid: 65534' '$T/vfork.threads'"
check "vfork: the server answers ($code)" [ "$code" = 200 ]

# setpriv itself, under the preload.
run setpriv_plain -- setpriv --reuid=65534 --regid=65534 --clear-groups /bin/true
run setpriv_pre LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0 -- setpriv --reuid=65534 --regid=65534 --clear-groups /bin/true
check "setpriv under cprof: same exit code (0; was 134)" same setpriv_plain setpriv_pre rc
finish

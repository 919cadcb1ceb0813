# Threads waiting in calls a signal would cut short (recv and accept with
# SO_RCVTIMEO, msgrcv, semtimedop, io_uring_enter, epoll_wait, nanosleep),
# a sleep the kernel resumes through restart_syscall after a stop and a
# continue, and sleeps after the program dropped root: /goroutine is fetched
# in every form while they wait, and the program prints the same as without
# cprof. The waiting threads' stacks are in the profile, unwound from outside.
. "$(dirname "$0")/../integration/lib.sh"
H=$B/tests/host

# fetch ROUNDS: the goroutine profile as text, as a dump and as a proto,
# ROUNDS times, from the program at $ADDR. The last dump is kept in $T/dump.
fetch() {
  local i q
  for i in $(seq 1 "$1"); do
    for q in debug=1 debug=2 debug=0; do
      curl -sf -o "$T/g.$q" "http://$ADDR/debug/pprof/goroutine?$q" || fail "fetch goroutine?$q"
    done
  done
  cp "$T/g.debug=2" "$T/dump"
}

# side_by_side NAME PROGRAM: runs the program without cprof and, beside
# it (to keep the test short), under cprof while the profile is fetched;
# then compares the two.
side_by_side() {
  run "$1.plain" -- "$2" &
  local plain=$!
  start "$1.pre" --ready LD_PRELOAD="$LIB" -- "$2"
  fetch 3
  await "$1.pre"
  wait $plain
  compare "$1"
}

# The calls, each in its own thread, 5 s each.
side_by_side waits "$H/host_eintr_waits"
check "waits: every call waited (no EINTR, nothing early)" \
  bash -c "! grep -Eq 'EINTR|early' '$T/waits.pre.out'"
for fn in wait_in_recv wait_in_accept wait_in_msgrcv wait_in_semtimedop wait_in_epoll \
  wait_in_nanosleep send_later; do
  check "waits: the thread in $fn is in the dump" has "$T/dump" "^$fn\("
done
if has "$T/waits.plain.out" '^io_uring_enter: skipped'; then
  echo "skip: io_uring is not available here ($(grep io_uring "$T/waits.plain.out"))"
else
  check "waits: the thread in io_uring_enter is in the dump" has "$T/dump" "^wait_in_io_uring\("
fi

# A sleep stopped and continued: the kernel resumes it in restart_syscall.
"$H/host_sleeper" 5 >"$T/stopped.plain.out" 2>"$T/stopped.plain.err" &
plain=$!
until has "$T/stopped.plain.out" '^ready$'; do sleep 0.05; done
start stopped.pre --ready LD_PRELOAD="$LIB" -- "$H/host_sleeper" 5
kill -STOP $plain $PID; sleep 0.3; kill -CONT $plain $PID
fetch 3
await stopped.pre
PID=$plain await stopped.plain
compare stopped
check "stopped: the sleep is in the dump" has "$T/dump" '^sleep_in_nanosleep\('

# Sleeps after setgid/setuid from root: /proc/self/task/TID/syscall is
# root's now, and threads whose state cannot be read are never signalled.
if [ "$(id -u)" != 0 ]; then
  echo "skip: the privilege drop needs root"
else
  side_by_side setuid "$H/host_setuid_sleep"
  check "setuid: sleeping threads are reported as of unknown state" \
    has "$T/dump" '^\[thread state unknown: .*syscall'
fi
finish

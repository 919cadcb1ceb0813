# Namespaces: calls the kernel grants only to a single-threaded process
# (unshare(CLONE_NEWUSER), setns into a user or mount namespace) work
# under cprof as without it, though cprof's threads run from load; and a
# program that keeps running afterwards is still served, on the same
# address, by threads in its new namespaces.
. "$(dirname "$0")/../integration/lib.sh"
if ! unshare --user --map-root-user true 2>/dev/null; then
  skip "unshare --user fails here without cprof too (user namespaces disabled?)"
fi
P=$B/tests/host/host_namespaces
RUN_TIMEOUT=20

# unshare(1) and nsenter(1) under the preload, in every configuration that
# starts threads: the server; the output's CPU recording; a push to a port
# nothing listens on.
CLOSED=$(free_port)
configs=("CPROF_ADDR=127.0.0.1:0"
  "CPROF_ADDR=0 CPROF_OUTPUT=$T/outdir"
  "CPROF_ADDR=0 CPROF_PUSH_URL=http://127.0.0.1:$CLOSED CPROF_PUSH_INTERVAL=1")
run u_plain -- unshare --user --map-root-user id
run m_plain -- unshare --mount --user --map-root-user true
# Processes in other namespaces to enter: a mount namespace, a user one.
# (Entering a mount namespace needs CAP_SYS_ADMIN: those checks, and the
# setns program's, run where nsenter -m works without cprof.)
if [ "$(id -u)" = 0 ]; then MNT_NS=(--mount); else MNT_NS=(--user --map-root-user --mount); fi
unshare "${MNT_NS[@]}" sleep 30 </dev/null &
MNT_PID=$!
unshare --user --map-root-user sleep 30 </dev/null &
USER_PID=$!
for _ in $(seq 1 50); do
  [ "$(readlink /proc/$MNT_PID/ns/mnt)" != "$(readlink /proc/self/ns/mnt)" ] &&
    [ "$(readlink /proc/$USER_PID/ns/user)" != "$(readlink /proc/self/ns/user)" ] && break
  sleep 0.1
done
run e_plain -- nsenter -m -t $MNT_PID true
run eu_plain -- nsenter -U -t $USER_PID true
check "without cprof: unshare -r id and unshare -m -r true exit 0" \
  eval "rc_is u_plain 0 && rc_is m_plain 0"
ENTER_MNT=0 ENTER_USER=0
if rc_is e_plain 0; then ENTER_MNT=1; else echo "skip: nsenter -m fails here without cprof: $(cat "$T/e_plain.err")"; fi
if rc_is eu_plain 0; then ENTER_USER=1; else echo "skip: nsenter -U fails here without cprof: $(cat "$T/eu_plain.err")"; fi
i=0
for cfg in "${configs[@]}"; do
  i=$((i + 1))
  # shellcheck disable=SC2086 # the configuration is several words
  run u$i LD_PRELOAD="$LIB" $cfg -- unshare --user --map-root-user id
  check "[$cfg] unshare --user --map-root-user id: same output and exit code" \
    eval "same u_plain u$i out && same u_plain u$i rc"
  # shellcheck disable=SC2086
  run m$i LD_PRELOAD="$LIB" $cfg -- unshare --mount --user --map-root-user true
  check "[$cfg] unshare --mount --user --map-root-user true: exit 0" \
    eval "same m_plain m$i out && same m_plain m$i rc"
  if [ $ENTER_MNT = 1 ]; then
    # shellcheck disable=SC2086
    run e$i LD_PRELOAD="$LIB" $cfg -- nsenter -m -t $MNT_PID true
    check "[$cfg] nsenter -m into another process's mount namespace: exit 0" \
      eval "same e_plain e$i rc"
  fi
  if [ $ENTER_USER = 1 ]; then
    # shellcheck disable=SC2086
    run eu$i LD_PRELOAD="$LIB" $cfg -- nsenter -U -t $USER_PID true
    check "[$cfg] nsenter -U into another process's user namespace: exit 0" \
      eval "same eu_plain eu$i rc"
  fi
done
check "no line says unshare or setns failed" bash -c "! grep -h 'Invalid argument' $T/*.err"

# setns into a time namespace wants one thread too (EUSERS otherwise).
if unshare --time --fork --kill-child sleep 30 </dev/null >/dev/null 2>&1 & then
  TIME_SH=$!
  for _ in $(seq 1 50); do
    TIME_PID=$(awk '{print $1}' /proc/$TIME_SH/task/$TIME_SH/children 2>/dev/null || true)
    [ -n "$TIME_PID" ] && [ "$(readlink /proc/$TIME_PID/ns/time)" != "$(readlink /proc/self/ns/time)" ] && break
    sleep 0.1
  done
  run t_enter_plain -- nsenter -T -t "${TIME_PID:-0}" true
  if rc_is t_enter_plain 0; then
    run t_enter LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0 -- nsenter -T -t "$TIME_PID" true
    check "nsenter -T into another process's time namespace: exit 0 (was EUSERS)" rc_is t_enter 0
  else
    echo "skip: nsenter -T fails here without cprof: $(cat "$T/t_enter_plain.err")"
  fi
fi

# A program that unshares and keeps running: its answers are the same, and
# cprof's threads, made again by it, are in its new user namespace and
# serve on the same address.
# looks NAME PID: every thread's user and mount namespaces, and names, into
# $T/NAME.* (a thread ending as we look, a connection's, has none to read).
looks() {
  local u m
  for t in /proc/$2/task/*; do
    u=$(readlink "$t/ns/user") && m=$(readlink "$t/ns/mnt") && echo "$u $m"
  done >"$T/$1.ns" 2>/dev/null || true
  cat /proc/$2/task/*/comm >"$T/$1.comm" 2>/dev/null || true
  echo "$(readlink /proc/$2/ns/user) $(readlink /proc/$2/ns/mnt)" >"$T/$1.main"
}
for mode in "" raw; do
  run w_plain$mode -- "$P" unshare-user $mode
  # shellcheck disable=SC2086
  start w$mode --ready LD_PRELOAD="$LIB" -- "$P" unshare-user $mode wait
  check "unshare(CLONE_NEWUSER)${mode:+ through syscall()} under cprof: same output as without" \
    bash -c "grep -v '^ready' $T/w$mode.out >$T/w$mode.cmp; grep -v '^ready' $T/w_plain$mode.out | cmp -s - $T/w$mode.cmp"
  check "${mode:-libc}: the call succeeded" grep -q '^unshare-user: 0 $' "$T/w$mode.out"
  code=$(http "http://$ADDR/debug/pprof/")
  check "${mode:-libc}: after it, /debug/pprof/ is served on the same address ($ADDR: $code)" [ "$code" = 200 ]
  code=$(http "http://$ADDR/debug/pprof/goroutine?debug=1")
  check "${mode:-libc}: and /debug/pprof/goroutine ($code)" [ "$code" = 200 ]
  looks w$mode "$PID"
  check "${mode:-libc}: cprof's server threads are there again" grep -q MHD-listen "$T/w$mode.comm"
  check "${mode:-libc}: every thread is in the program's new user namespace" \
    bash -c "grep -q user: $T/w$mode.main && grep -q user: $T/w$mode.ns && ! grep -vxF \"\$(cat $T/w$mode.main)\" $T/w$mode.ns | grep -q . && [ \"\$(cut -d' ' -f1 $T/w$mode.main)\" != \"\$(readlink /proc/self/ns/user)\" ]"
  check "${mode:-libc}: no line says the server could not listen again" bash -c "! grep -q 'cannot listen' $T/w$mode.err"
  stop "$PID"
done

# Into a network namespace of its own too: the server goes on listening on
# the socket it had, in the namespace it was made in, where its clients are.
for mode in "" raw; do
  run n_plain$mode -- "$P" unshare-net $mode
  # shellcheck disable=SC2086
  start n$mode --ready LD_PRELOAD="$LIB" -- "$P" unshare-net $mode wait
  check "unshare(CLONE_NEWUSER|CLONE_NEWNET)${mode:+ through syscall()}: same output as without (the next fd too)" \
    bash -c "grep -q '^unshare-net: 0 $' $T/n_plain$mode.out && grep -v '^ready' $T/n$mode.out | cmp -s - <(grep -v '^ready' $T/n_plain$mode.out)"
  code=$(http "http://$ADDR/debug/pprof/goroutine?debug=1" --max-time 10 || true)
  check "${mode:-libc}: still served on $ADDR, from outside its new network namespace ($code)" [ "$code" = 200 ]
  stop "$PID"
done

# With a thread of the program's own, the kernel refuses, with cprof as
# without; and nothing of cprof's was stopped for it.
run t_plain -- "$P" unshare-thread
run t_pre LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0 -- "$P" unshare-thread
check "with a thread of its own: refused (EINVAL) as without cprof" \
  eval "grep -q '^unshare-thread: -1 Invalid argument' $T/t_plain.out && same t_plain t_pre out && same t_plain t_pre rc"

# setns into another process's mount namespace, by a program that goes on.
for mode in "" raw; do
  [ $ENTER_MNT = 1 ] || break
  run s_plain$mode -- "$P" setns /proc/$MNT_PID/ns/mnt $mode
  # shellcheck disable=SC2086
  start s$mode --ready LD_PRELOAD="$LIB" -- "$P" setns /proc/$MNT_PID/ns/mnt $mode wait
  check "setns(mnt)${mode:+ through syscall()}: succeeds, same output as without" \
    bash -c "grep -q '^setns: 0 $' $T/s_plain$mode.out && grep -v '^ready' $T/s$mode.out | cmp -s - <(grep -v '^ready' $T/s_plain$mode.out)"
  code=$(http "http://$ADDR/debug/pprof/goroutine?debug=1")
  check "${mode:-libc}: served after it on the same address ($code)" [ "$code" = 200 ]
  looks s$mode "$PID"
  check "${mode:-libc}: every thread is in the mount namespace entered" \
    bash -c "grep -q MHD-listen $T/s$mode.comm && grep -q mnt: $T/s$mode.main && [ \"\$(cut -d' ' -f2 $T/s$mode.main)\" = \"\$(readlink /proc/$MNT_PID/ns/mnt)\" ] && ! grep -vxF \"\$(cat $T/s$mode.main)\" $T/s$mode.ns | grep -q ."
  stop "$PID"
done
finish

# The server's descriptor table where the kernel gives it only the old way
# (no close_range before Linux 5.9: unshare(2), and the copies of the
# program's descriptors closed one by one), and where it refuses it (unshare
# forbidden, as by Docker's default seccomp profile): the program keeps its
# descriptors either way, and in the second case the server is off, said in
# one line, rather than sharing the program's table.
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/lib/fds.sh"
P=$B/tests/host/host_closes_fds
N=$B/tests/host/host_no_own_table

"$N" old-kernel true || skip "no seccomp filter here"

# server_links PID: what the server's table holds, as "FD -> FILE" lines,
# seen from the thread that listens.
server_links() {
  local t
  for t in /proc/"$1"/task/*; do
    if [ "$(cat "$t/comm" 2>/dev/null)" = MHD-listen ]; then
      ls -l "$t/fd" | awk 'NR > 1 { print $9, $10, $11 }'
      return
    fi
  done
}

touch "$T/plain.done"
bg plain DONE="$T/plain.done" -- "$N" old-kernel "$P" loop work
done_with plain

# Before 5.9: the program closes 3..1023, and the server is out of reach.
bg old DONE="$T/old.done" -- "$N" old-kernel \
  env LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0 "$P" loop work
check "old kernel: the server is on" [ -n "$ADDR" ]
check "old kernel: every thread's stack is served after the close" \
  eval '[ "$(code "http://$ADDR/debug/pprof/goroutine?debug=2")" = 200 ] && has "$T/body" until_done'
server_links "$PID" >"$T/old.links"
cat "$T/old.links"
check "old kernel: the server's table holds its socket and none of the program's descriptors" \
  eval 'grep -q socket: "$T/old.links" && ! grep -vq -- "-> \(/dev/null\|socket:\|anon_inode:\)" "$T/old.links"'
done_with old
check "old kernel: the program printed what it prints without cprof" same plain old out

# Refused: no server, one line saying why, and the program as without cprof.
bg refused DONE="$T/refused.done" -- "$N" refused \
  env LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0 "$P" loop work
check "refused: no server thread" bash -c "! grep -q '^MHD-' /proc/$PID/task/*/comm"
done_with refused
cat "$T/refused.err"
check "refused: the program printed what it prints without cprof" same plain refused out
check "refused: one line says the server is off and why" \
  has "$T/refused.err" 'descriptor table of its own.*unshare.*Operation not permitted'
finish

# The program's descriptors are the program's (issue 11, defect 11): under
# RLIMIT_NOFILE=16 it opens as many files with cprof serving as without,
# before and after profiles were fetched; a forked child and an exec'd child
# hold exactly what they hold without cprof; a /goroutine fetch leaves no
# descriptor behind, in the program's table or the server's, and the
# symbolizer it built is let go once it has been idle a few seconds.
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/lib/fds.sh"
P=$B/tests/host/host_fd_limits

# The limit as prlimit(1) sets it for both soft and hard: there is no room
# above it for anyone's descriptors.
touch "$T/plain_limit.done"
bg plain_limit DONE="$T/plain_limit.done" -- prlimit --nofile=16:16 "$P" count
done_with plain_limit
# prlimit runs outside the preload: a cprof of its own would not survive
# its exec.
bg pre_limit DONE="$T/pre_limit.done" -- \
  prlimit --nofile=16:16 env LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0 "$P" count
check "limit 16: the server is on" [ -n "$ADDR" ]
check "limit 16: a /goroutine fetch works" \
  [ "$(code "http://$ADDR/debug/pprof/goroutine?debug=2")" = 200 ]
check "limit 16: a /heap fetch works" [ "$(code "http://$ADDR/debug/pprof/heap")" = 200 ]
done_with pre_limit
cat "$T/plain_limit.out"
check "limit 16: as many opens before EMFILE as without cprof, before and after fetches" \
  same plain_limit pre_limit out
if ! same plain_limit pre_limit out; then diff "$T/plain_limit.out" "$T/pre_limit.out" >&2 || true; fi

run plain_fork -- "$P" fork
run pre_fork LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0 -- "$P" fork
cat "$T/plain_fork.out"
check "fork: the program, its forked child and its exec'd child hold what they hold without cprof" \
  same plain_fork pre_fork out
if ! same plain_fork pre_fork out; then diff "$T/plain_fork.out" "$T/pre_fork.out" >&2 || true; fi

# fd_count PID: how many descriptors the program's table holds.
fd_count() { { ls "/proc/$1/fd" 2>/dev/null || true; } | wc -l; }

# server_fds PID: how many descriptors the server's table holds, seen from
# the thread that listens (libmicrohttpd names it MHD-listen).
server_fds() {
  local t
  for t in /proc/"$1"/task/*; do
    if [ "$(cat "$t/comm" 2>/dev/null)" = MHD-listen ]; then
      { ls "$t/fd" 2>/dev/null || true; } | wc -l
      return
    fi
  done
  echo none
}

# maps_of PID FILE: how many mappings of FILE the process has. The
# symbolizer maps each ELF file it reads, whole, beside the loader's
# mappings of its segments.
maps_of() { grep -cF " $2" "/proc/$1/maps" || true; }

bg pre_idle LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0 DONE="$T/pre_idle.done" -- "$P" count
n0=$(fd_count "$PID")
s0=$(server_fds "$PID")
m0=$(maps_of "$PID" "$P")
check "idle: a /goroutine fetch works" \
  [ "$(code "http://$ADDR/debug/pprof/goroutine?debug=2")" = 200 ]
n1=$(fd_count "$PID")
s1=$(server_fds "$PID")
m1=$(maps_of "$PID" "$P")
waited=0
while [ "$(maps_of "$PID" "$P")" != "$m0" ] && [ $waited -lt 150 ]; do
  sleep 0.1
  waited=$((waited + 1))
done
m2=$(maps_of "$PID" "$P")
s2=$(server_fds "$PID")
n2=$(fd_count "$PID")
echo "program's table: $n0 descriptors before the fetch, $n1 right after, $n2 later"
echo "server's table: $s0 descriptors before the fetch, $s1 right after, $s2 later"
echo "mappings of the program's file: $m0 before, $m1 right after, $m2 after $((waited / 10)).$((waited % 10)) s"
check "idle: the program's table is as it was before the fetch" test "$n0" = "$n1" -a "$n0" = "$n2"
check "idle: the server's table holds what it held before the fetch" test "$s0" = "$s1" -a "$s0" = "$s2"
check "idle: the fetch loaded the symbolizer (one more mapping of the program's file)" \
  [ "$m1" -gt "$m0" ]
check "idle: the symbolizer is let go once idle (that mapping gone)" [ "$m2" = "$m0" ]
done_with pre_idle
finish

# Issue 11, defect 1: programs that start processes from threads that
# allocate and contend for locks, and C++ programs that throw from threads
# that contend for a std::mutex, finish under cprof as they do without it,
# with a 1000 Hz CPU profile written at exit and the block and mutex
# profiles on, the server off and on. A hang is a run killed at
# $RUN_TIMEOUT (exit code 124).
. "$(dirname "$0")/../integration/lib.sh"
H=$B/tests/host
export RUN_TIMEOUT=${RUN_TIMEOUT:-15}

mkdir -p "$T/out"
PROFILES=(LD_PRELOAD="$LIB" CPROF_OUTPUT="$T/out" CPROF_CPU_HZ=1000 CPROF_BLOCK_RATE=1
  CPROF_MUTEX_FRACTION=1)

# A run under cprof finished, exited as the plain run did, and printed the
# same; its stderr holds nothing but cprof's own lines.
same_as_plain() {
  local plain=$1 run=$2
  same "$plain" "$run" rc && same "$plain" "$run" out && ! grep -qv '^cprof: ' "$T/$run.err"
}

# Threads that fork (half the children exec, half allocate, lock and
# _exit), with fork handlers of the program's own that take its contended
# lock (fork) or without (bare), posix_spawn, or vfork and exec: 600
# children from 4 threads.
for mode in fork bare spawn vfork; do
  run "$mode" -- "$H/host_fork_storm" "$mode"
  check "$mode storm without cprof: every child exited 0" rc_is "$mode" 0
  repeats=2
  case $mode in fork | bare) repeats=3 ;; esac
  for addr in 0 127.0.0.1:0; do
    for i in $(seq 1 $repeats); do
      name="${mode}_${addr//[.:]/_}_$i"
      run "$name" "${PROFILES[@]}" CPROF_ADDR="$addr" -- "$H/host_fork_storm" "$mode"
      check "$mode storm, server $addr, run $i: finished ($(cat "$T/$name.rc")) as without cprof" \
        same_as_plain "$mode" "$name"
    done
  done
done
check "the profiles were written at exit" test -s "$T/out/cpu.pb.gz"

# The push's thread cutting, symbolizing and sending a profile a second
# (CPROF_PUSH_URL) while threads fork.
receiver storm
for i in 1 2 3; do
  run "push_$i" LD_PRELOAD="$LIB" CPROF_ADDR=0 CPROF_CPU_HZ=1000 CPROF_PUSH_URL="http://127.0.0.1:$RPORT" \
    CPROF_PUSH_INTERVAL=1s -- "$H/host_fork_storm" fork
  check "fork storm while pushing, run $i: finished ($(cat "$T/push_$i.rc")) as without cprof" \
    same_as_plain fork "push_$i"
done
check "the storms' profiles were pushed" bash -c "ls '$T/storm.rx' | grep -q '\.pprof$'"

# C++ exceptions thrown and caught by 4 threads around a contended
# std::mutex, 5 runs.
run exc -- "$H/host_exception_storm" 4 10000
check "exception storm without cprof: exit 0" rc_is exc 0
for i in 1 2 3 4 5; do
  run "exc_$i" "${PROFILES[@]}" CPROF_ADDR=0 -- "$H/host_exception_storm" 4 10000
  check "exception storm, run $i: finished ($(cat "$T/exc_$i.rc")) as without cprof" \
    same_as_plain exc "exc_$i"
done
finish

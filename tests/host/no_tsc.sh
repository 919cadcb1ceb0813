# Issue 28, defect 5: a thread without the time stamp counter (seccomp's
# strict mode, or prctl(PR_SET_TSC, PR_TSC_SIGSEGV)) died with SIGSEGV at
# the first CPU tick: the SIGPROF handler read CLOCK_MONOTONIC through the
# vDSO, which executes rdtsc. No handler of cprof's may use the vDSO, nor
# make a system call (strict mode kills a thread for anything but read,
# write, _exit and rt_sigreturn). host_no_tsc runs one thread of each kind
# computing while every profile runs: the CPU profile at 1000 Hz over the
# whole run, the heap profile, mutex and block profiles, wall
# profiles, thread captures (/goroutine) and a trace, all while they
# compute (the CPU profile is CPROF_OUTPUT's, which /profile shares with no
# request); and short-lived threads without the TSC that wait on a
# contended mutex (timed by the lock wrappers, on that thread) and exit
# while the trace records (an event the exiting thread stamps). It must
# print and exit as without cprof, and the workers' samples must be in the
# profiles.
. "$(dirname "$0")/../integration/lib.sh"
P=$B/tests/host/host_no_tsc

run plain -- "$P" 1
if rc_is plain 2; then
  cat "$T/plain.out"
  skip "threads cannot run without the TSC here (not x86?)"
fi
check "runs without cprof" rc_is plain 0

ENVS=(LD_PRELOAD="$LIB" CPROF_OUTPUT="$T/o" CPROF_CPU_HZ=1000 CPROF_MUTEX_FRACTION=1
  CPROF_BLOCK_RATE=1)
for how in dwarf fp; do
  mkdir -p "$T/o"
  start "pre_$how" --ready "${ENVS[@]}" CPROF_UNWIND=$how -- "$P" 5
  base=http://$ADDR/debug/pprof
  curl -s -o "$T/trace_$how" "$base/trace?seconds=1" &
  c2=$!
  curl -s -o "$T/wall_$how" "$base/wall?seconds=1" &
  c3=$!
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    curl -s -o /dev/null "$base/goroutine?debug=2" || true
    curl -s -o /dev/null "$base/heap" || true
    sleep 0.1
  done
  wait "$c2" "$c3" || true
  await "pre_$how"
  echo "$how: exit code $(cat "$T/pre_$how.rc"); printed:"
  sed 's/^/  /' "$T/pre_$how.out"
  # The run printed "ready" at once: compare with a plain run's lines.
  run "plain_$how" -- "$P" 1
  check "$how: same output as without cprof" same "plain_$how" "pre_$how" out
  check "$how: same exit code as without cprof" same "plain_$how" "pre_$how" rc
  # The handlers ran on the workers: their samples are in the profiles.
  check "$how: the trace has CPU samples in compute" python3 -c '
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
sys.exit(0 if any(e.get("cat") == "cpu" and e["name"] == "compute" for e in ev) else 1)' "$T/trace_$how"
  check "$how: the whole run's CPU profile names compute" eval 'pprof -top "$T/o/cpu.pb.gz" | grep -q " compute$"'
  rm -rf "$T/o"
done
finish

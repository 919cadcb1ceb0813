# Issue 11, defect 7: a program that blocks SIGPROF and reads it (signalfd,
# sigtimedwait) reads none of cprof's timer ticks, under a whole-run CPU
# profile, and every SIGPROF it sends itself; and the profile is still one.
. "$(dirname "$0")/../integration/lib.sh"
H=$B/tests/host

profile_reads() { pprof -raw "$1" >"$T/raw" && has "$T/raw" '^Samples:'; }
# The thread that blocks SIGPROF after 200 ms of CPU is in the profile
# until then.
sampled_until_blocked() { pprof -top "$1" >"$T/top" && has "$T/top" ' blocks_later$'; }

for how in signalfd sigwaitinfo; do
  run "$how" -- "$H/host_sigprof_wait" $how 2
  mkdir -p "$T/out_$how"
  run "${how}_pre" LD_PRELOAD="$LIB" CPROF_ADDR=0 CPROF_OUTPUT="$T/out_$how" CPROF_CPU_HZ=1000 \
    -- "$H/host_sigprof_wait" $how 2
  echo "$how: without cprof $(cat "$T/$how.out"), with $(cat "${T}/${how}_pre.out")"
  check "$how: no tick read without cprof" has "$T/$how.out" '^received 0$'
  check "$how: same output under a whole-run profile" same "$how" "${how}_pre" out
  check "$how: same exit code" same "$how" "${how}_pre" rc
  check "$how: the profile reads" profile_reads "$T/out_$how/cpu.pb.gz"
  check "$how: a thread is sampled until it blocks SIGPROF" sampled_until_blocked "$T/out_$how/cpu.pb.gz"
done

run kill -- "$H/host_sigprof_wait" kill 3
mkdir -p "$T/out_kill"
run kill_pre LD_PRELOAD="$LIB" CPROF_ADDR=0 CPROF_OUTPUT="$T/out_kill" CPROF_CPU_HZ=1000 \
  -- "$H/host_sigprof_wait" kill 3
echo "kill: without cprof $(cat "$T/kill.out"), with $(cat "$T/kill_pre.out")"
check "kill: its own 3 read without cprof" has "$T/kill.out" '^received 3$'
check "kill: the same 3 read under a whole-run profile" same kill kill_pre out
check "kill: same exit code" same kill kill_pre rc
check "kill: the profile reads" profile_reads "$T/out_kill/cpu.pb.gz"
finish

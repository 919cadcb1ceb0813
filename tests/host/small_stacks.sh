# Issue 11, defect 8: the SIGPROF handler runs on whatever stack the thread
# is on. Threads on PTHREAD_STACK_MIN stacks using up to 8.5 KiB of them,
# a program's handler busy on its own 8 KiB sigaltstack, and coroutines on
# 12 KiB heap stacks each using 8.5 KiB: under a 1000 Hz whole-run profile,
# with either unwinder, each prints what it prints without cprof. And
# libcprof binds every symbol at load (-z now): a lazy binding in the
# handler runs the dynamic linker's resolver, kilobytes deep, on that stack.
. "$(dirname "$0")/../integration/lib.sh"
H=$B/tests/host

binds_now() { readelf -d "$LIB" | grep -Eq 'BIND_NOW|FLAGS_1.*NOW'; }
check "libcprof.so is linked with -z now" binds_now

for prog in small_stack altstack coroutines; do
  run "$prog" -- "$H/host_$prog"
  check "$prog: runs without cprof" rc_is "$prog" 0
  for how in dwarf fp; do
    mkdir -p "$T/out_${prog}_$how"
    run "${prog}_$how" LD_PRELOAD="$LIB" CPROF_ADDR=0 CPROF_OUTPUT="$T/out_${prog}_$how" \
      CPROF_CPU_HZ=1000 CPROF_UNWIND=$how -- "$H/host_$prog"
    echo "$prog, $how: exit code $(cat "$T/${prog}_$how.rc") (without cprof $(cat "$T/$prog.rc"))"
    check "$prog, $how: same exit code" same "$prog" "${prog}_$how" rc
    check "$prog, $how: same output" same "$prog" "${prog}_$how" out
  done
done
finish

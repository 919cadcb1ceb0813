# Issue 11, defect 8, and issue 28, defect 1: cprof's signals must never
# land on a stack the program sized for itself. Threads on PTHREAD_STACK_MIN
# stacks using up to 8.5 KiB of them, a program's handler busy on its own
# 8 KiB sigaltstack, coroutines on 12 KiB heap stacks each using 8.5 KiB,
# and (tiny_room) a thread, a coroutine and a clone(2) thread each with a
# few hundred bytes left above a guard page, less than any CPU's signal
# frame (the program checks AT_MINSIGSTKSZ): under a 1000 Hz whole-run
# profile, with either unwinder, each prints what it prints without cprof.
# cprof's handlers run on an alternate signal stack (sample/altstack.c);
# the clone's thread, which cprof did not see start, has none, gets no
# timer, and the profile says so. altstack_view: the program sees its own
# sigaltstack settings and SA_ONSTACK mask exactly as without cprof, while
# the kernel has cprof's stack until the program sets its own, and cprof's
# again once it takes its own off. And libcprof binds every symbol at load
# (-z now): a lazy binding in the handler runs the dynamic linker's
# resolver, kilobytes deep.
. "$(dirname "$0")/../integration/lib.sh"
H=$B/tests/host

binds_now() { readelf -d "$LIB" | grep -Eq 'BIND_NOW|FLAGS_1.*NOW'; }
check "libcprof.so is linked with -z now" binds_now

for prog in small_stack altstack coroutines tiny_room; do
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

# Where tiny_room's CPU went: its spinning function, sampled on the thread
# and the coroutine, and the clone's thread as not sampled, for want of a
# stack.
for how in dwarf fp; do
  prof=$T/out_tiny_room_$how/cpu.pb.gz
  : >"$T/traces_$how"
  if [ -s "$prof" ]; then pprof -traces "$H/host_tiny_room" "$prof" >"$T/traces_$how" || true; fi
  check "tiny_room, $how: the profile has samples in spin_tiny" has "$T/traces_$how" 'spin_tiny'
  check "tiny_room, $how: the thread's samples walk up to thread_main" has "$T/traces_$how" 'thread_main'
  check "tiny_room, $how: the clone's thread is shown not sampled, with the reason" \
    has "$T/traces_$how" '\[thread not sampled: no signal stack\]'
done

# The goroutine profile asks running threads for their stacks with a
# signal: tiny_room's, longer (40 million per turn), fetched while they
# spin. The clone's thread is not asked, and says why.
start capture CPROF_HEAP_RATE=0 LD_PRELOAD="$LIB" -- "$H/host_tiny_room" 40000000
: >"$T/goroutines"
for _ in 1 2 3 4 5; do
  curl -s "http://$ADDR/debug/pprof/goroutine?debug=1" >>"$T/goroutines" || true
  sleep 0.2
done
await capture
echo "tiny_room, goroutine profiles: exit code $(cat "$T/capture.rc")"
check "tiny_room, goroutine profiles: exit code 0" rc_is capture 0
check "tiny_room, goroutine profiles: the running threads are in them" has "$T/goroutines" 'spin_tiny'
check "tiny_room, goroutine profiles: the clone's thread is not asked, and says why" \
  has "$T/goroutines" '\[thread running: no signal stack\]'

# What the program sees of its sigaltstack, with the CPU profile holding
# SIGPROF (CPROF_OUTPUT) and without.
run view -- "$H/host_altstack_view"
mkdir -p "$T/out_view"
run view_cprof LD_PRELOAD="$LIB" CPROF_ADDR=0 CPROF_OUTPUT="$T/out_view" CPROF_CPU_HZ=1000 \
  -- "$H/host_altstack_view"
check "altstack_view: runs without cprof" rc_is view 0
check "altstack_view: same exit code" same view view_cprof rc
check "altstack_view: the program sees the same settings" same view view_cprof out
diff "$T/view.out" "$T/view_cprof.out" || true
for who in main thread; do
  check "altstack_view, $who: cprof's stack is in place at start" \
    has "$T/view_cprof.err" "^raw $who, at start: other\$"
  check "altstack_view, $who: the program's own replaces cprof's" \
    has "$T/view_cprof.err" "^raw $who, with own: own\$"
  check "altstack_view, $who: cprof's stack is back once the program's is off" \
    has "$T/view_cprof.err" "^raw $who, after off: other\$"
  check "altstack_view, $who: SIGPROF waits while the program's handler runs on its stack" \
    has "$T/view_cprof.err" "^raw $who, SIGPROF blocked in the SA_ONSTACK handler: yes\$"
done
finish

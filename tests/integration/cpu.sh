# The CPU profile, read by go tool pprof: hot functions in the right order
# and proportion, thread labels, every thread of a 64-thread program, Go's
# errors (400, a rate other than the running one's, a program that owns
# SIGPROF), a second profile sharing the first's recording, and a client
# that leaves mid-profile.
. "$(dirname "$0")/lib.sh"

P=$B/tests/integration
for mode in linked preload; do
  for unwind in dwarf fp; do
    t="$mode/$unwind"
    pre=()
    [ $mode = preload ] && pre=(LD_PRELOAD="$LIB")
    # The linked variant: the library linked, started from the environment.
    prog="$P/cpu_target"
    [ $mode = linked ] && prog="$P/cpu_target_linked"
    start target --ready "${pre[@]}" CPROF_UNWIND=$unwind -- "$prog"
    curl -sf -o "$T/cpu.pb.gz" "http://$ADDR/debug/pprof/profile?seconds=2" || fail "$t: fetch"
    pprof -top "$T/cpu.pb.gz" >"$T/top" || fail "$t: go tool pprof -top"
    check "$t: the profile is a cpu profile" has "$T/top" '^Type: cpu$'
    check "$t: it lasted about 2 s" has "$T/top" '^Duration: 2(\.[0-9]+)?s'
    # heavy_work does 3 units for light_work's 1: 75 % of the worker's CPU.
    # At 100 Hz over 2 s (~200 samples) the standard error is 3 points.
    check "$t: heavy_work takes 60-90% of the samples" python3 - "$T/top" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
def cum(fn):
    m = re.search(r'\s([\d.]+)%\s+' + fn + r'$', t, re.M)
    return float(m.group(1)) if m else 0.0
h, l = cum('heavy_work'), cum('light_work')
print("heavy_work %.1f%% light_work %.1f%%" % (h, l))
sys.exit(0 if 60 <= h / (h + l) * 100 <= 90 else 1)
PY
    pprof -tags "$T/cpu.pb.gz" >"$T/tags" || fail "$t: -tags"
    check "$t: samples carry the thread name" has "$T/tags" 'worker'
    if [ $mode = linked ]; then
      # The linked build labels its work: phase=heavy around heavy_work.
      check "$t: -tags shows the phase labels" has "$T/tags" 'phase: Total'
      check "$t: phase=heavy is 60-90% of the samples" python3 - "$T/tags" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
m = re.search(r'\(\s*([\d.]+)%\): heavy$', t, re.M)
print(m.group(0) if m else "no heavy"); sys.exit(0 if m and 60 <= float(m.group(1)) <= 90 else 1)
PY
      pprof -top -tagfocus=phase=light "$T/cpu.pb.gz" >"$T/light" || fail "$t: -tagfocus"
      check "$t: -tagfocus=phase=light keeps light_work" has "$T/light" ' light_work$'
      check "$t: -tagfocus=phase=light drops heavy_work" bash -c "! grep -q ' heavy_work\$' '$T/light'"
    fi
    pprof -traces "$T/cpu.pb.gz" >"$T/traces"
    check "$t: stacks run from kernel_step up to worker" \
      python3 -c "import sys; t=open(sys.argv[1]).read(); sys.exit(0 if 'kernel_step' in t and 'heavy_work' in t and 'worker' in t else 1)" "$T/traces"
    stop
  done
done

# Errors, on one program.
start target --ready LD_PRELOAD="$LIB" -- "$P/cpu_target"
U=http://$ADDR/debug/pprof
for q in seconds=0 seconds=abc seconds=-1 seconds=3601 'seconds=%zz'; do
  check "profile?$q is 400" [ "$(http "$U/profile?$q")" = 400 ]
done
for q in hz=0 hz=abc hz=10001; do
  check "profile?$q is 400" [ "$(http "$U/profile?seconds=1&$q")" = 400 ]
done
curl -s -o /dev/null "$U/profile?seconds=3&hz=200" &
first=$!
sleep 0.5
# Issue 32: a second profile shares the running recording, at its rate.
check "a second profile meanwhile is 200" [ "$(http "$U/profile?seconds=1")" = 200 ]
pprof -raw "$T/body" >"$T/second.raw" || fail "second: go tool pprof -raw"
check "... at the running rate (period 5 ms)" has "$T/second.raw" '^Period: 5000000$'
check "one asking for another rate meanwhile is 409" [ "$(http "$U/profile?seconds=1&hz=100")" = 409 ]
check "... naming the running rate" has "$T/body" 'records at 200 Hz'
wait "$first"
check "after it, another rate works" [ "$(http "$U/profile?seconds=1&hz=100")" = 200 ]
# A client that gives up mid-profile ends its reader, and the recording
# with it: the next one may set its rate.
curl -s -o /dev/null --max-time 1 "$U/profile?seconds=20&hz=300" || true
sleep 0.3
check "a client leaving mid-profile stops the recording" [ "$(http "$U/profile?seconds=1&hz=100")" = 200 ]
check "the index links the profile with its seconds" bash -c \
  "curl -s '$U/' | grep -q \"href='profile?seconds=30'\""
stop

# 64 threads: every one of them is sampled.
start many --ready LD_PRELOAD="$LIB" -- "$P/cpu_target" --threads 64
curl -sf -o "$T/many.pb.gz" "http://$ADDR/debug/pprof/profile?seconds=3" || fail "64 threads: fetch"
pprof -tags "$T/many.pb.gz" >"$T/many.tags"
check "64 threads: all 64 appear in the thread labels" \
  [ "$(grep -Eo ': w[0-9]{2}$' "$T/many.tags" | sort -u | wc -l)" = 64 ]
stop

# Threads that live 10 ms of CPU each, one after another. Interposing
# pthread_create arms each one's timer as it starts; polling /proc every
# 10 ms would arm it about halfway through its life. Measured here at
# 1000 Hz: 65-80% of the process's CPU (/proc/PID/stat) in the profile
# with interposition, 36-41% by polling alone; the kernel checks CPU timers
# only at its 4 ms tick, so the CPU after a thread's last tick is never
# seen either way (doc/internals.md). Beside other tests (ctest -j2, with
# Chromium running) it was 51% once: the bar is 50%, still above what
# polling alone reaches on an idle machine.
start short --ready LD_PRELOAD="$LIB" CPROF_CPU_HZ=1000 -- "$P/cpu_target" --short-threads
cpu_ticks() { awk '{print $14 + $15}' "/proc/$PID/stat"; }
before=$(cpu_ticks)
curl -sf -o "$T/short.pb.gz" "http://$ADDR/debug/pprof/profile?seconds=3" || fail "short threads: fetch"
after=$(cpu_ticks)
pprof -top "$T/short.pb.gz" >"$T/short.top"
check "short-lived threads: the profile holds at least 50% of the process's CPU" python3 - \
  "$T/short.top" "$before" "$after" "$(getconf CLK_TCK)" <<'PY'
import re, sys
top, before, after, tck = open(sys.argv[1]).read(), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
truth = (after - before) / tck
def secs(v):
    v = float(re.match(r'[\d.]+', v).group(0)) if v else 0
    return v
m = re.search(r'^\s*\S+\s+\S+\s+\S+\s+([\d.]+)(ms|s)\s+[\d.]+%\s+short_lived_work$', top, re.M)
got = (float(m.group(1)) / (1000 if m.group(2) == 'ms' else 1)) if m else 0.0
print("short_lived_work %.2fs of the process's %.2fs CPU" % (got, truth))
sys.exit(0 if truth > 0.3 and got >= 0.5 * truth else 1)
PY
stop

# A program that profiles itself with setitimer(ITIMER_PROF): refused, not clobbered.
start own --ready LD_PRELOAD="$LIB" -- "$P/cpu_target" --own-itimer
check "a program owning SIGPROF gets 409" [ "$(http "http://$ADDR/debug/pprof/profile?seconds=1")" = 409 ]
check "saying why" has "$T/body" 'uses SIGPROF itself'
check "and keeps running" kill -0 "$PID"
stop
finish

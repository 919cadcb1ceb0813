# The clock* waits C++ compiles std::condition_variable::wait_for,
# std::timed_mutex::try_lock_for and std::shared_timed_mutex's
# try_lock_shared_for/try_lock_for to, the same calls from C, and
# pthread_barrier_wait, pthread_timedjoin_np and pthread_clockjoin_np
# (programs/clock_waits.cpp): with every event recorded, each waiting
# function's delay in the block profile, and each lock holder's in the
# mutex profile, is what the program measured itself (within 10 % or
# 50 ms); the barrier's last arrival, which does not wait, is not a wait;
# and every such call answers (return value, errno, the lock or semaphore
# taken or not) as without cprof, also where glibc refuses the timeout.
. "$(dirname "$0")/../integration/lib.sh"
H=$B/tests/host

# near TOP FUNCTION WANT: the function's cum value in a `pprof -top -unit=ns`
# listing is WANT within 10 % or 50 ms (a missing function counts as 0).
near() {
  python3 - "$@" <<'PY'
import re, sys
top, fn, want = sys.argv[1], sys.argv[2], float(sys.argv[3])
got = 0.0
for line in open(top):
    f = line.split()
    if len(f) >= 6 and f[5] == fn:
        got = float(re.sub(r"[a-zµ]+$", "", f[3]))
tol = max(0.10 * want, 50e6)
print("%s: %.1f ms, want %.1f ms +- %.0f ms" % (fn, got / 1e6, want / 1e6, tol / 1e6))
sys.exit(0 if want > 0 and abs(got - want) <= tol else 1)
PY
}
# count TOP FUNCTION WANT: the function's cum contentions are WANT.
count() {
  awk -v fn="$2" -v want="$3" '$6 == fn { got = $4 } END {
    printf "%s: %d contentions, want %d\n", fn, got, want; exit !(got + 0 == want) }' "$1"
}
absent() { ! grep -Eq " $2( |$)" "$1"; }
top() { pprof -top -unit=ns -nodecount=1000 -nodefraction=0 -edgefraction=0 "$@"; }

run plain -- "$H/host_clock_waits"
check "plain: the program ran" rc_is plain 0
start pre --ready LD_PRELOAD="$LIB" CPROF_BLOCK_RATE=1 CPROF_MUTEX_FRACTION=1 -- \
  "$H/host_clock_waits" --serve
grep '^edge' "$T/plain.out" >"$T/edges.plain"
grep '^edge' "$T/pre.out" >"$T/edges.pre"
check "every call that does not wait answers as without cprof" diff "$T/edges.plain" "$T/edges.pre"
check "the barrier's last arrival is its serial thread" absent "$T/pre.out" 'not the serial thread'

U=http://$ADDR/debug/pprof
curl -sf -o "$T/block.pb.gz" "$U/block" || fail "fetch block"
top "$T/block.pb.gz" >"$T/btop" || fail "pprof block"
top -sample_index=contentions "$T/block.pb.gz" >"$T/bntop" || fail "pprof block contentions"
curl -sf -o "$T/mutex.pb.gz" "$U/mutex" || fail "fetch mutex"
top "$T/mutex.pb.gz" >"$T/mtop" || fail "pprof mutex"

while read -r _ fn ns n; do
  if [ "$fn" = arrive_late_barrier ]; then
    check "block: arrive_late_barrier, which completes the round, did not wait" \
      absent "$T/btop" arrive_late_barrier
    continue
  fi
  check "block: $fn's delay is its measured wait" near "$T/btop" "$fn" "$ns"
  check "block: $fn's contentions are its $n waits" count "$T/bntop" "$fn" "$n"
done < <(grep '^truth ' "$T/pre.out")

while read -r _ holder waiter; do
  ns=$(awk -v fn="$waiter" '$1 == "truth" && $2 == fn { print $3 }' "$T/pre.out")
  check "mutex: $holder is charged with $waiter's wait" near "$T/mtop" "$holder" "$ns"
  check "mutex: $waiter, which held nothing against anyone, is not charged" \
    absent "$T/mtop" "$waiter"
done < <(grep '^holds ' "$T/pre.out")
stop
finish

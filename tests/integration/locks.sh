# The block, mutex and threadcreate profiles, read by go tool pprof, on a
# program whose contention is known (programs/contention.c): a waiter's
# mutex waits and a condition variable's waits in the block profile, the
# holder charged with them in the mutex profile, each within 10% of what
# the program measured itself; deltas; sampling at a coarser rate; turning
# both on and off at run time (HTTP and C API); Go's legacy text; every
# pthread_create in threadcreate; and a program hammering its locks that
# prints the same with and without cprof.
. "$(dirname "$0")/lib.sh"

P=$B/tests/integration

# near TOP FUNCTION WANT TOLERANCE [flat|cum]: the function's value in a
# `pprof -top` listing (unit suffix dropped) is WANT within TOLERANCE (a
# fraction of WANT). A function missing from the listing counts as 0.
near() {
  python3 - "$@" <<'PY'
import re, sys
top, fn, want, tol = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
col = sys.argv[5] if len(sys.argv) > 5 else "cum"
got = 0.0
for line in open(top):
    f = line.split()
    if len(f) >= 6 and f[5] == fn:
        got = float(re.sub(r"[a-zµ]+$", "", f[0 if col == "flat" else 3]))
print("%s %s: %.0f, want %.0f +- %g%%" % (fn, col, got, want, tol * 100))
sys.exit(0 if want > 0 and abs(got - want) <= want * tol else 1)
PY
}
# total TOP WANT TOLERANCE: the listing's "of N total" is WANT within TOLERANCE.
total() {
  python3 - "$@" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
want, tol = float(sys.argv[2]), float(sys.argv[3])
m = re.search(r"of ([\d.]+)[a-zµ]* total", t)
got = float(m.group(1)) if m else 0.0
print("total: %.0f, want %.0f +- %g%%" % (got, want, tol * 100))
sys.exit(0 if want > 0 and abs(got - want) <= want * tol else 1)
PY
}
absent() { ! grep -Eq " $2( |$)" "$1"; }
# top ARGS...: every function; times in ns.
top() { pprof -top -unit=ns -nodecount=1000 -nodefraction=0 -edgefraction=0 "$@"; }
# one_line FILE: the file is exactly one line of text, newline-terminated.
one_line() { [ -s "$1" ] && [ "$(wc -l <"$1")" = 1 ] && [ "$(tail -c1 "$1" | od -An -c | tr -d ' ')" = '\n' ]; }

# round NAME N: SIGUSR1 starts round N of the program started as NAME;
# waits for its "round N ..." line.
round() {
  kill -USR1 "$PID"
  for _ in $(seq 1 200); do
    has "$T/$1.out" "^round $2 " && return 0
    sleep 0.05
  done
  echo "$1: round $2 did not end" >&2
  return 1
}
# truth NAME N KEY: KEY's value on round N's line.
truth() {
  awk -v n="$2" -v k="$3" '$1 == "round" && $2 == n {
    for (i = 3; i <= NF; i++) { split($i, kv, "="); if (kv[1] == k) print kv[2] } }' "$T/$1.out"
}

# 1, 2: block and mutex, on from the start: CPROF_* when preloaded, the C
# API (contention_linked --api) when linked.
for mode in preload linked; do
  if [ $mode = preload ]; then
    start c --ready LD_PRELOAD="$LIB" CPROF_BLOCK_RATE=1 CPROF_MUTEX_FRACTION=1 -- "$P/contention" 700
  else
    start c --ready -- "$P/contention_linked" 700 --api
  fi
  U=http://$ADDR/debug/pprof
  if [ $mode = linked ]; then
    check "C API: each call returns the previous setting, a negative one changes nothing" \
      has "$T/c.out" '^api: rate 0 7 7 fraction 0 9 9$'
  fi
  # Since the start: round 1, as nothing contended before it.
  round c 1 || fail "$mode: round 1"
  W1=$(truth c 1 wait_ns) N1=$(truth c 1 waits) CW1=$(truth c 1 cond_ns)
  echo "$mode: round 1: $N1 mutex waits, $W1 ns; cond waits $CW1 ns"
  curl -sf -o "$T/block.pb.gz" "$U/block" || fail "$mode: fetch block"
  top "$T/block.pb.gz" >"$T/btop" || fail "$mode: pprof block"
  check "$mode: block is a delay profile" has "$T/btop" '^Type: delay$'
  check "$mode: block names wait_lock" has "$T/btop" ' wait_lock$'
  check "$mode: block names cond_waiter" has "$T/btop" ' cond_waiter$'
  check "$mode: block: wait_lock's delay is the measured wait +-10%" near "$T/btop" wait_lock "$W1" 0.10
  check "$mode: block: cond_waiter's delay is the measured wait +-10%" near "$T/btop" cond_waiter "$CW1" 0.10
  check "$mode: block: an uncontended lock (hold_lock's) is not a wait" absent "$T/btop" hold_lock
  top -sample_index=contentions "$T/block.pb.gz" >"$T/bntop" || fail "$mode: pprof block contentions"
  check "$mode: block: wait_lock's contentions are its waits +-10%" near "$T/bntop" wait_lock "$N1" 0.10
  curl -sf -o "$T/mutex.pb.gz" "$U/mutex" || fail "$mode: fetch mutex"
  top "$T/mutex.pb.gz" >"$T/mtop" || fail "$mode: pprof mutex"
  check "$mode: mutex is a delay profile" has "$T/mtop" '^Type: delay$'
  check "$mode: mutex names hold_lock, the holder" has "$T/mtop" ' hold_lock$'
  check "$mode: mutex: hold_lock's delay is the waiter's measured wait +-10%" near "$T/mtop" hold_lock "$W1" 0.10
  check "$mode: mutex: the waiter, which never held it against anyone, is not charged" \
    absent "$T/mtop" wait_lock
  top -sample_index=contentions "$T/mutex.pb.gz" >"$T/mntop" || fail "$mode: pprof mutex contentions"
  check "$mode: mutex: hold_lock's contentions are the waits +-10%" near "$T/mntop" hold_lock "$N1" 0.10

  # Deltas over 2 s with round 2 (0.7 s) inside them: round 2 only.
  curl -sf -o "$T/bdelta.pb.gz" "$U/block?seconds=2" &
  fb=$!
  curl -sf -o "$T/mdelta.pb.gz" "$U/mutex?seconds=2" &
  fm=$!
  sleep 0.4
  round c 2 || fail "$mode: round 2"
  wait $fb || fail "$mode: fetch block?seconds=2"
  wait $fm || fail "$mode: fetch mutex?seconds=2"
  W2=$(truth c 2 wait_ns) CW2=$(truth c 2 cond_ns)
  echo "$mode: round 2: $W2 ns of mutex waits, $CW2 ns of cond waits"
  top "$T/bdelta.pb.gz" >"$T/btop" || fail "$mode: pprof block delta"
  check "$mode: block delta lasted 2 s" has "$T/btop" '^Duration: 2(\.[0-9]+)?s'
  check "$mode: block delta: wait_lock's delay is round 2's +-10%" near "$T/btop" wait_lock "$W2" 0.10
  check "$mode: block delta: cond_waiter's delay is round 2's +-10%" near "$T/btop" cond_waiter "$CW2" 0.10
  top "$T/mdelta.pb.gz" >"$T/mtop" || fail "$mode: pprof mutex delta"
  check "$mode: mutex delta lasted 2 s" has "$T/mtop" '^Duration: 2(\.[0-9]+)?s'
  check "$mode: mutex delta: hold_lock's delay is round 2's +-10%" near "$T/mtop" hold_lock "$W2" 0.10
  W=$((W1 + W2)) CW=$((CW1 + CW2))

  # 5: debug=1, Go's legacy text, which pprof parses.
  if [ $mode = preload ]; then
    curl -sf -o "$T/block.txt" "$U/block?debug=1" || fail "fetch block?debug=1"
    check "block debug=1 starts with Go's header" \
      [ "$(head -2 "$T/block.txt")" = $'--- contention:\ncycles/second=1000000000' ]
    check "block debug=1 has Go's records" has "$T/block.txt" '^[0-9]+ [0-9]+ @( 0x[0-9a-f]+)+$'
    check "block debug=1 names wait_lock in its comments" \
      has "$T/block.txt" $'^#\t0x[0-9a-f]+\twait_lock\\+0x[0-9a-f]+\t.*contention\\.c:[0-9]+$'
    top -sample_index=delay "$T/block.txt" >"$T/bttop" &&
      pass "go tool pprof parses block debug=1" || fail "go tool pprof parses block debug=1"
    check "block debug=1 read by pprof: all the waits +-10%" total "$T/bttop" $((W + CW)) 0.10
    check "block debug=1 read by pprof: names wait_lock" near "$T/bttop" wait_lock "$W" 0.10

    curl -sf -o "$T/mutex.txt" "$U/mutex?debug=1" || fail "fetch mutex?debug=1"
    check "mutex debug=1 starts with Go's header" python3 - "$T/mutex.txt" <<'PY'
import re, sys
head = open(sys.argv[1]).read().split("\n")[:3]
print(head)
sys.exit(0 if re.fullmatch(r"--- mutex:\ncycles/second=[0-9]+\nsampling period=1", "\n".join(head)) else 1)
PY
    check "mutex debug=1 has Go's records" has "$T/mutex.txt" '^[0-9]+ [0-9]+ @( 0x[0-9a-f]+)+$'
    check "mutex debug=1 names hold_lock in its comments" \
      has "$T/mutex.txt" $'^#\t0x[0-9a-f]+\thold_lock\\+0x[0-9a-f]+\t.*contention\\.c:[0-9]+$'
    top -sample_index=delay "$T/mutex.txt" >"$T/mttop" &&
      pass "go tool pprof parses mutex debug=1" || fail "go tool pprof parses mutex debug=1"
    check "mutex debug=1 read by pprof: names hold_lock, delay +-10%" near "$T/mttop" hold_lock "$W" 0.10
  fi

  # 4: threadcreate, always on: spawn_worker's five pthread_creates.
  curl -sf -o "$T/tc.pb.gz" "$U/threadcreate" || fail "$mode: fetch threadcreate"
  pprof -top -nodecount=1000 -nodefraction=0 "$T/tc.pb.gz" >"$T/tctop" || fail "$mode: pprof threadcreate"
  check "$mode: threadcreate is Go's" has "$T/tctop" '^Type: threadcreate$'
  check "$mode: threadcreate: spawn_worker created 5 threads" near "$T/tctop" spawn_worker 5 0
  if [ $mode = preload ]; then
    curl -sf -o "$T/tc.txt" "$U/threadcreate?debug=1" || fail "fetch threadcreate?debug=1"
    check "threadcreate debug=1 starts as Go's" has "$T/tc.txt" '^threadcreate profile: total [0-9]+$'
    check "threadcreate debug=1 names spawn_worker" has "$T/tc.txt" $'^#\t0x[0-9a-f]+\tspawn_worker\\+'
  fi
  stop
done

# Sampling: waits of ~2 ms at a rate of 4 ms are recorded about half the
# time and weighted by rate/delay; 1 mutex event in 2 is recorded and
# doubled. ~900 waits in 2 s. The block estimate's variance is at most
# rate x total (waits longer than the rate are all recorded): a standard
# error under 5%. The mutex one's is (fraction-1) x the sum of the squared
# waits, which a loaded machine's few long waits can dominate, so its
# bound comes from the waits the program measured: 5% + 4 standard errors.
start s --ready LD_PRELOAD="$LIB" CPROF_BLOCK_RATE=4000000 CPROF_MUTEX_FRACTION=2 -- "$P/contention" 2000
round s 1 || fail "sampled: round 1"
W=$(truth s 1 wait_ns) N=$(truth s 1 waits) CW=$(truth s 1 cond_ns)
U=http://$ADDR/debug/pprof
curl -sf -o "$T/block.pb.gz" "$U/block" || fail "sampled: fetch block"
top "$T/block.pb.gz" >"$T/btop" || fail "sampled: pprof block"
check "rate 4 ms: wait_lock's 2 ms waits are estimated +-20%" near "$T/btop" wait_lock "$W" 0.20
check "rate 4 ms: cond_waiter's 5 ms waits, all recorded, +-10%" near "$T/btop" cond_waiter "$CW" 0.10
top -sample_index=contentions "$T/block.pb.gz" >"$T/bntop" || fail "sampled: pprof block contentions"
check "rate 4 ms: wait_lock's contentions are estimated +-20%" near "$T/bntop" wait_lock "$N" 0.20
curl -sf -o "$T/mutex.pb.gz" "$U/mutex" || fail "sampled: fetch mutex"
top "$T/mutex.pb.gz" >"$T/mtop" || fail "sampled: pprof mutex"
tol=$(python3 -c "import math; print('%.3f' % (0.05 + 4 * math.sqrt((2 - 1) * $(truth s 1 wait_sq_us2)) * 1000 / $W))")
check "fraction 2: hold_lock's delay is estimated within 5% + 4 standard errors" \
  near "$T/mtop" hold_lock "$W" "$tol"
curl -sf -o "$T/mutex.txt" "$U/mutex?debug=1" || fail "sampled: fetch mutex?debug=1"
check "fraction 2: debug=1 says sampling period=2" has "$T/mutex.txt" '^sampling period=2$'
stop

# 3: off at the start, on and off again at run time over HTTP.
start r --ready LD_PRELOAD="$LIB" -- "$P/contention" 500
U=http://$ADDR/debug/pprof
round r 1 || fail "run time: round 1"
curl -sf -o "$T/block.pb.gz" "$U/block" || fail "run time: fetch block"
top "$T/block.pb.gz" >"$T/btop" || fail "run time: pprof block"
check "off by default: block is empty" absent "$T/btop" wait_lock
curl -sf -o "$T/mutex.pb.gz" "$U/mutex" || fail "run time: fetch mutex"
top "$T/mutex.pb.gz" >"$T/mtop" || fail "run time: pprof mutex"
check "off by default: mutex is empty" absent "$T/mtop" hold_lock
for q in "mutex?fraction=-3" "mutex?fraction=abc" "mutex?fraction=" "block?rate=-1" "block?rate=1x" "block?rate=99999999999999999999"; do
  check "POST $q is 400" [ "$(http "$U/$q" -X POST)" = 400 ]
  check "POST $q: one line says why" one_line "$T/body"
done
check "POST mutex?fraction=1 is 200" [ "$(http "$U/mutex?fraction=1" -X POST)" = 200 ]
check "POST mutex?fraction=1 answers one line" one_line "$T/body"
check "POST block?rate=1 is 200" [ "$(http "$U/block?rate=1" -X POST)" = 200 ]
check "POST block?rate=1 answers one line" one_line "$T/body"
round r 2 || fail "run time: round 2"
W=$(truth r 2 wait_ns) CW=$(truth r 2 cond_ns)
curl -sf -o "$T/block.pb.gz" "$U/block" || fail "run time: fetch block"
top "$T/block.pb.gz" >"$T/btop" || fail "run time: pprof block"
check "turned on: block has wait_lock's waits +-10%" near "$T/btop" wait_lock "$W" 0.10
check "turned on: block has cond_waiter's waits +-10%" near "$T/btop" cond_waiter "$CW" 0.10
curl -sf -o "$T/mutex.pb.gz" "$U/mutex" || fail "run time: fetch mutex"
top "$T/mutex.pb.gz" >"$T/mtop" || fail "run time: pprof mutex"
check "turned on: mutex charges hold_lock +-10%" near "$T/mtop" hold_lock "$W" 0.10
curl -sf -o "$T/mutex.txt" "$U/mutex?debug=1" || fail "run time: fetch mutex?debug=1"
check "turned on: debug=1 says sampling period=1" has "$T/mutex.txt" '^sampling period=1$'
# Off again: what was recorded stays (as in Go), nothing is added.
check "POST mutex?fraction=0 is 200" [ "$(http "$U/mutex?fraction=0" -X POST)" = 200 ]
check "POST block?rate=0 is 200" [ "$(http "$U/block?rate=0" -X POST)" = 200 ]
round r 3 || fail "run time: round 3"
curl -sf -o "$T/block.pb.gz" "$U/block" || fail "run time: fetch block"
top "$T/block.pb.gz" >"$T/btop" || fail "run time: pprof block"
check "turned off: block still holds round 2 only +-10%" near "$T/btop" wait_lock "$W" 0.10
curl -sf -o "$T/mutex.pb.gz" "$U/mutex" || fail "run time: fetch mutex"
top "$T/mutex.pb.gz" >"$T/mtop" || fail "run time: pprof mutex"
check "turned off: mutex still holds round 2 only +-10%" near "$T/mtop" hold_lock "$W" 0.10
stop

# 6: 10^7 lock/unlock pairs on two threads, then every interposed call's
# answers in known cases: the same output, exit code and (no) stderr with
# cprof preloaded or linked, profiling off or recording every event.
"$P/contention" --heavy >"$T/heavy.want" 2>"$T/heavy.err"
check "heavy: the plain program counts all 10^7 pairs" has "$T/heavy.want" '^pairs=10000000 counter=35000000$'
check "heavy: the plain program says nothing on stderr" [ ! -s "$T/heavy.err" ]
runs=(
  "linked, off||$P/contention_linked"
  "preload, off|LD_PRELOAD=$LIB|$P/contention"
  "preload, on|LD_PRELOAD=$LIB CPROF_BLOCK_RATE=1 CPROF_MUTEX_FRACTION=1|$P/contention"
  "linked, on|CPROF_BLOCK_RATE=1 CPROF_MUTEX_FRACTION=1|$P/contention_linked"
)
for r in "${runs[@]}"; do
  IFS='|' read -r what envs prog <<<"$r"
  code=0
  # shellcheck disable=SC2086 # envs is a list of words
  env CPROF_ADDR=0 $envs "$prog" --heavy >"$T/heavy.out" 2>"$T/heavy.err" || code=$?
  check "heavy, $what: exit 0" [ $code = 0 ]
  check "heavy, $what: the same output" diff "$T/heavy.want" "$T/heavy.out"
  check "heavy, $what: nothing on stderr" [ ! -s "$T/heavy.err" ]
done

finish

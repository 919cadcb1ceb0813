#!/usr/bin/env bash
# Lock profile accuracy: the delay in cprof's mutex and block profiles
# against the wait the workload measures itself.
#
#   bench/locks/accuracy.sh
#   REPS=5 CONTEND_ROUNDS=300 UNIT_US=1000 THINK=2 PRIMS="mutex timedlock rwlock" CASES="mutex block both" \
#     bench/locks/accuracy.sh
#
# `contend` (locks/contend.c) runs two threads, "long" and "short", that
# take one lock in turn: long holds it 3 units, short 1 unit (UNIT_US µs
# of busy waiting each), each then sleeps outside it for a random 0 to
# 2 x THINK units, CONTEND_ROUNDS times (the process needs at most one CPU, so a
# released waiter does not wait for one). Each thread times its lock calls with
# CLOCK_MONOTONIC: the truth. With two threads, short's wait is what
# long's holding caused and the other way round; so the mutex profile (the
# holder's stack at unlock, charged with the delay it caused) should give
# release_long short's wait and release_short long's wait, and the block
# profile (the waiter's stack) wait_long long's own wait and wait_short
# short's. PRIMS picks the lock: mutex (pthread_mutex_lock), timedlock
# (pthread_mutex_timedlock), rwlock (pthread_rwlock_wrlock), spin
# (pthread_spin_lock; cprof does not interpose pthread_spin_unlock, so a
# spin lock can only show in the block profile).
#
# Each run is
#   LD_PRELOAD=libcprof.so CPROF_ADDR=127.0.0.1:0 <case's settings> contend ... --linger 600
# (at nice -10 as root) and once it has printed its truth (all waits are over, its threads
# joined) the script GETs /debug/pprof/mutex and /debug/pprof/block, then
# ends it. Both profiles are summed with `go tool pprof -raw` (lib.sh's
# lock_sums), per function: the samples whose stack has it. CASES:
#   mutex     CPROF_MUTEX_FRACTION=1 CPROF_BLOCK_RATE=0    (goal: delay within 10 %)
#   block     CPROF_MUTEX_FRACTION=0 CPROF_BLOCK_RATE=1
#   both      CPROF_MUTEX_FRACTION=1 CPROF_BLOCK_RATE=1
#   mutex100  CPROF_MUTEX_FRACTION=100 (1 event in 100, scaled by 100: noisy)
#   block10k  CPROF_BLOCK_RATE=10000 (every wait here is longer than 10 µs)
# The profile that a case turns off is fetched too, and should be empty.
#
# Two truths: "wait" is the time the lock calls took; "until unlock" stops
# at the release that let the waiter in (Go's mutex profile charges that:
# the holder knows it at unlock), without the waiter's wake-up. error =
# (profile - truth) / truth, against wait; "vs until unlock" against the
# other. "count" compares contentions/count with the lock calls that found
# the lock held (released after the call began), and with the releases
# those calls waited for (more, when the releasing thread takes the lock
# back before the waiter wakes: a profile that records an event per
# release with a waiter counts each). The mutex100 case records about one
# event in 100 of the ~250 a run has: its single runs are noise.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

REPS=${REPS:-5}
CONTEND_ROUNDS=${CONTEND_ROUNDS:-300}
UNIT_US=${UNIT_US:-1000}
THINK=${THINK:-2}
PRIMS=${PRIMS:-mutex timedlock rwlock}
CASES=${CASES:-mutex block both}

need_pkgs lock-accuracy golang-go
lock_endpoints_available || exit 1

echo "# Lock profile accuracy: $REPS repetitions of cases: $CASES; locks: $PRIMS;" \
  "contend --rounds $CONTEND_ROUNDS --unit-us $UNIT_US --think $THINK"
machine

case_env() {
  case $1 in
  mutex) echo "CPROF_MUTEX_FRACTION=1 CPROF_BLOCK_RATE=0" ;;
  block) echo "CPROF_MUTEX_FRACTION=0 CPROF_BLOCK_RATE=1" ;;
  both) echo "CPROF_MUTEX_FRACTION=1 CPROF_BLOCK_RATE=1" ;;
  mutex100) echo "CPROF_MUTEX_FRACTION=100 CPROF_BLOCK_RATE=0" ;;
  block10k) echo "CPROF_MUTEX_FRACTION=0 CPROF_BLOCK_RATE=10000" ;;
  *) echo "unknown case $1" >&2; exit 2 ;;
  esac
}

# on_profiles CASE: the profiles the case turns on.
on_profiles() {
  case $1 in
  mutex | mutex100) echo mutex ;;
  block | block10k) echo block ;;
  both) echo "mutex block" ;;
  esac
}

ROWS=$T/rows # case prim rep profile metric truth until_truth value
: >"$ROWS"
FUNCS="release_long release_short wait_long wait_short main"
# shellcheck disable=SC2034 # start (cpu/lib.sh) runs the workloads under $WRAP
WRAP=(nice -n "$NICE")

# one CASE PRIM REP: runs contend once, adds its rows.
one() {
  local c=$1 p=$2 r=$3 name=$1.$2.$3 envs t0 t1
  read -ra envs <<<"$(case_env "$c")"
  t0=$(date +%s%N)
  start "$name" "${envs[@]}" -- "$BIN/contend" --prim "$p" --rounds "$CONTEND_ROUNDS" --unit-us "$UNIT_US" \
    --think "$THINK" --seed "$r" --linger 600 || exit 1
  wait_line "$name" "contend:" 600 || exit 1
  get "$name.mutex.pb.gz" "debug/pprof/mutex" || exit 1
  get "$name.block.pb.gz" "debug/pprof/block" || exit 1
  if [ "$p" = "${PRIMS%% *}" ] && [ ! -e "$T/first.$c.$p.mutex.txt" ]; then
    get "first.$c.$p.mutex.txt" "debug/pprof/mutex?debug=1" || exit 1
    get "first.$c.$p.block.txt" "debug/pprof/block?debug=1" || exit 1
    cp "$T/$name.mutex.pb.gz" "$T/first.$c.$p.mutex.pb.gz"
    cp "$T/$name.block.pb.gz" "$T/first.$c.$p.block.pb.gz"
  fi
  stop_started
  t1=$(date +%s%N)
  local ms mb
  # shellcheck disable=SC2086 # one argument per function
  ms=$(lock_sums "$T/$name.mutex.pb.gz" $FUNCS)
  # shellcheck disable=SC2086
  mb=$(lock_sums "$T/$name.block.pb.gz" $FUNCS)
  awk -v c="$c" -v p="$p" -v r="$r" -v ms="$ms" -v mb="$mb" -v secs=$(((t1 - t0) / 1000000)) -v rows="$ROWS" '
    function kv(k,   i, a) { for (i = 1; i <= NF; i++) { split($i, a, "="); if (a[1] == k) return a[2] } return 0 }
    function row(prof, metric, truth, until, value) {
      printf "%s\t%s\t%d\t%s\t%s\t%.0f\t%.0f\t%.0f\n", c, p, r, prof, metric, truth, until, value >> rows }
    {
      lw = kv("long_wait_ns"); sw = kv("short_wait_ns"); lu = kv("long_until_unlock_ns"); su = kv("short_until_unlock_ns")
      lc = kv("long_contended"); sc = kv("short_contended"); lr = kv("long_released"); sr = kv("short_released")
      # lock_sums: samples count delay, then count delay for each of
      # release_long release_short wait_long wait_short main
      split(ms, M, " "); split(mb, B, " ")
      row("mutex", "release_long", sw, su, M[5]); row("mutex", "release_short", lw, lu, M[7])
      row("mutex", "holders", lw + sw, lu + su, M[5] + M[7])
      row("mutex", "count", lc + sc, lr + sr, M[4] + M[6])
      row("mutex", "waiters", 0, 0, M[9] + M[11])
      row("mutex", "elsewhere", 0, 0, M[3] - M[5] - M[7])
      row("mutex", "samples", 0, 0, M[1])
      row("block", "wait_long", lw, lu, B[9]); row("block", "wait_short", sw, su, B[11])
      row("block", "waiters", lw + sw, lu + su, B[9] + B[11])
      row("block", "count", lc + sc, lr + sr, B[8] + B[10])
      row("block", "holders", 0, 0, B[5] + B[7])
      row("block", "main", 0, 0, B[13])
      row("block", "elsewhere", 0, 0, B[3] - B[9] - B[11] - B[13])
      row("block", "samples", 0, 0, B[1])
      printf "  %-8s %-9s run %d: wait long %.1f ms short %.1f ms (contended %d+%d); mutex: release_long %.1f ms release_short %.1f ms elsewhere %.1f ms (%d samples); block: wait_long %.1f ms wait_short %.1f ms main %.1f ms elsewhere %.1f ms (%d samples); %.1f s\n",
        c, p, r, lw / 1e6, sw / 1e6, lc, sc, M[5] / 1e6, M[7] / 1e6, (M[3] - M[5] - M[7]) / 1e6, M[1],
        B[9] / 1e6, B[11] / 1e6, B[13] / 1e6, (B[3] - B[9] - B[11] - B[13]) / 1e6, B[1], secs / 1000
    }' "$T/$name.out"
}

# Each repetition runs every case and lock, in an order rotated by one
# each repetition.
runs=()
for c in $CASES; do for p in $PRIMS; do runs+=("$c $p"); done; done
for r in $(seq 1 "$REPS"); do
  for i in "${!runs[@]}"; do
    # shellcheck disable=SC2086
    one ${runs[$(((i + r - 1) % ${#runs[@]}))]} "$r"
  done
done
load

echo
echo "## Medians over $REPS runs (error = (profile - truth) / truth; delays in ms)"
echo
echo "| case | lock | profile | what | truth: wait | truth: until unlock | profile | error vs wait, median | \|error\| vs wait, max | error vs until unlock, median | \|error\| vs until unlock, max |"
echo "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|"
for c in $CASES; do
  for p in $PRIMS; do
    for prof in $(on_profiles "$c"); do
      if [ "$prof" = mutex ]; then metrics="release_long release_short holders count waiters elsewhere"
      else metrics="wait_long wait_short waiters count holders main elsewhere"; fi
      for m in $metrics; do
        awk -F'\t' -v c="$c" -v p="$p" -v prof="$prof" -v m="$m" '$1 == c && $2 == p && $4 == prof && $5 == m' "$ROWS" >"$T/sel"
        [ -s "$T/sel" ] || continue
        t=$(cut -f6 "$T/sel" | median) u=$(cut -f7 "$T/sel" | median) v=$(cut -f8 "$T/sel" | median)
        err() { awk -F'\t' -v k="$1" '$k > 0 { printf "%.6f\n", 100 * ($8 - $k) / $k }' "$T/sel"; }
        amax() { awk '{ x = $1 < 0 ? -$1 : $1; if (x > m) m = x } END { print m + 0 }'; }
        e=$(err 6 | median) em=$(err 6 | amax) eu=$(err 7 | median) eum=$(err 7 | amax)
        awk -v c="$c" -v p="$p" -v prof="$prof" -v m="$m" -v t="$t" -v u="$u" -v v="$v" -v e="$e" -v em="$em" \
          -v eu="$eu" -v eum="$eum" 'BEGIN {
          if (m == "count") { fmt = "%.0f"; s = 1 } else { fmt = "%.1f"; s = 1e6 }
          printf "| %s | %s | %s | %s | ", c, p, prof, m
          if (t > 0) printf fmt " | " fmt " | ", t / s, u / s; else printf "- | - | "
          printf fmt " | ", v / s
          if (t > 0) printf "%+.1f %% | %.1f %% | %+.1f %% | %.1f %% |\n", e, em, eu, eum; else printf "- | - | - | - |\n" }'
      done
    done
  done
done
echo
echo "release_*/wait_*: the samples whose stack has that function; holders = release_long + release_short"
echo "(truth: both threads' waits); waiters = wait_long + wait_short; main = the main thread (its"
echo "pthread_join); elsewhere = any other stack (other threads, cprof's own). count: contentions/count"
echo "against the lock calls that waited (truth: wait column) and the releases they waited for"
echo "(until unlock column; more than the calls when the releasing thread took the lock back first)."
echo
for c in $CASES; do
  for prof in mutex block; do
    case " $(on_profiles "$c") " in *" $prof "*) continue ;; esac
    n=$(awk -F'\t' -v c="$c" -v prof="$prof" '$1 == c && $4 == prof && $5 == "samples" { n += $8 } END { print n + 0 }' "$ROWS")
    echo "case $c turns the $prof profile off: $n samples in it over all runs (should be 0)"
  done
done

# What the text form looks like: the first run's debug=1 answers, for the
# first lock, without the memory map at their end.
for c in $CASES; do
  for prof in $(on_profiles "$c"); do
    f=$T/first.$c.${PRIMS%% *}.$prof.txt
    [ -e "$f" ] || continue
    echo
    echo "## case $c, ${PRIMS%% *}: GET /debug/pprof/$prof?debug=1 (first run; first 20 lines, memory map left out)"
    echo
    sed '/^--- Memory map/,$d' "$f" | head -20
    echo
    echo "## case $c, ${PRIMS%% *}: go tool pprof -top -cum -sample_index=delay of the same run's /debug/pprof/$prof"
    echo
    go tool pprof -top -cum -sample_index=delay -symbolize=none "${f%.txt}.pb.gz" 2>&1 | head -14
  done
done

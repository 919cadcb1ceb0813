#!/usr/bin/env bash
# Lock profiling overhead: a pthread_mutex_lock/unlock loop (locks/lockloop.c)
# plain, under a bare forwarding interposer, and under cprof with the lock
# profiles off and on.
#
#   bench/locks/overhead.sh
#   REPS=15 MODES="uncontended single contended contended-work" UNC_OPS=1e8 CON_OPS=1e7 \
#     WORK_OPS=3e6 WORK_INSIDE=20 WORK_OUTSIDE=100 ON_DIV=2 EVENTS=1 \
#     LOCK_VARIANTS="plain passthrough cprof-off cprof-mutex cprof-block cprof-on cprof-rare" \
#     bench/locks/overhead.sh
#
# Modes:
#   uncontended     1 thread, UNC_OPS rounds of lock, increment, unlock:
#                   every lock is free, so this is the wrappers' fast path;
#                   with a second thread that only sleeps (lockloop --idle 1)
#   single          the same in a process of one thread. glibc (2.34 and
#                   later) then takes and releases a private mutex without
#                   an atomic instruction; a try-lock always uses one. No
#                   program whose locks matter has one thread, but a
#                   program that links a library using locks may
#   contended       2 threads hammer one mutex, CON_OPS rounds each, with
#                   nothing between the calls. glibc's mutex is not fair:
#                   a thread that unlocks usually takes the lock again
#                   before the woken waiter runs, so the threads hand the
#                   lock over in bursts and few rounds put a waiter to sleep
#   contended-work  2 threads, WORK_OPS rounds each of WORK_INSIDE steps of
#                   a multiply-add chain inside the lock and WORK_OUTSIDE
#                   outside it (a few ns a step): more rounds put a waiter
#                   to sleep
# (EVENTS below counts how many, for each mode.)
# Variants (every one compared with plain in the same repetition):
#   plain        no preload
#   passthrough  LD_PRELOAD=build/libpasslock.so (locks/passlock.c):
#                pthread_mutex_lock/trylock/unlock forwarded through
#                dlsym(RTLD_NEXT) pointers and nothing else, the floor of
#                interposing
#   cprof-off    LD_PRELOAD=libcprof.so CPROF_ADDR=0 CPROF_BLOCK_RATE=0
#                CPROF_MUTEX_FRACTION=0 (the defaults: both profiles off)
#   cprof-mutex  ... CPROF_MUTEX_FRACTION=1 (every contention recorded)
#   cprof-block  ... CPROF_BLOCK_RATE=1 (every blocking event recorded)
#   cprof-on     ... CPROF_MUTEX_FRACTION=1 CPROF_BLOCK_RATE=1
#   cprof-rare   ... CPROF_MUTEX_FRACTION=100 CPROF_BLOCK_RATE=10000
# In the two-thread modes the variants with a profile on run 1/ON_DIV of
# the rounds (per-round figures do not depend on the count).
# In each of REPS repetitions every variant runs once per mode, in the
# order above rotated by one each repetition (a slow spell of the
# machine hits all of them; no variant always follows the same other one),
# at nice -10 when run as root (NICE=0 to turn that off).
#
# `lockloop` times itself (CLOCK_MONOTONIC from a start barrier to the last
# thread's end; its threads' CPU, and the process's CPU over that span), so
# start-up and exit are outside. Reported: ns per round (a thread's wall
# time per lock/unlock round), CPU ns per round (all threads' CPU over all
# rounds), medians over REPS; ratios are medians over the repetitions of
# variant / plain of the same repetition, with their range.
#
# EVENTS=1 (default) then runs each two-thread mode once more under
# cprof-on with the server up (CPROF_ADDR=127.0.0.1:0), fetches
# /debug/pprof/mutex and /debug/pprof/block and prints how many
# contentions and blocking events that run recorded: what "contended"
# means in numbers. It varies from run to run: how often a lock finds its
# holder still inside depends on whether the two threads run at the same
# time, which on a shared 2-CPU machine they do not always.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

REPS=${REPS:-15}
MODES=${MODES:-uncontended single contended contended-work}
UNC_OPS=${UNC_OPS:-1e8}
CON_OPS=${CON_OPS:-1e7}
WORK_OPS=${WORK_OPS:-3e6}
WORK_INSIDE=${WORK_INSIDE:-20}
WORK_OUTSIDE=${WORK_OUTSIDE:-100}
ON_DIV=${ON_DIV:-2}
EVENTS=${EVENTS:-1}
LOCK_VARIANTS=${LOCK_VARIANTS:-plain passthrough cprof-off cprof-mutex cprof-block cprof-on cprof-rare}

case " $LOCK_VARIANTS " in *" cprof"*) locks_available || exit 1 ;; esac

echo "# Lock profiling overhead: lockloop; modes: $MODES (uncontended: 1 thread x $UNC_OPS and an idle one; single: 1 thread alone;" \
  "contended: 2 threads x $CON_OPS; contended-work: 2 threads x $WORK_OPS, inside $WORK_INSIDE, outside $WORK_OUTSIDE;" \
  "variants with a profile on: rounds / $ON_DIV in the 2-thread modes); $REPS repetitions of: $LOCK_VARIANTS; nice $NICE"
machine
echo "glibc $(dpkg-query -W -f '${Version}' libc6)"

variant_env() {
  local c="LD_PRELOAD=$LIB CPROF_ADDR=0"
  case $1 in
  plain) ;;
  passthrough) echo "LD_PRELOAD=$BIN/libpasslock.so" ;;
  cprof-off) echo "$c CPROF_BLOCK_RATE=0 CPROF_MUTEX_FRACTION=0" ;;
  cprof-mutex) echo "$c CPROF_BLOCK_RATE=0 CPROF_MUTEX_FRACTION=1" ;;
  cprof-block) echo "$c CPROF_BLOCK_RATE=1 CPROF_MUTEX_FRACTION=0" ;;
  cprof-on) echo "$c CPROF_BLOCK_RATE=1 CPROF_MUTEX_FRACTION=1" ;;
  cprof-rare) echo "$c CPROF_BLOCK_RATE=10000 CPROF_MUTEX_FRACTION=100" ;;
  *) echo "unknown variant $1" >&2; return 2 ;;
  esac
}

mode_args() { # MODE VARIANT
  local ops div=1
  case $2 in cprof-mutex | cprof-block | cprof-on | cprof-rare) div=$ON_DIV ;; esac
  case $1 in
  uncontended) echo "--threads 1 --idle 1 --ops $UNC_OPS" ;;
  single) echo "--threads 1 --ops $UNC_OPS" ;;
  contended)
    ops=$(awk -v o="$CON_OPS" -v d="$div" 'BEGIN { printf "%d", o / d }')
    echo "--threads 2 --ops $ops" ;;
  contended-work)
    ops=$(awk -v o="$WORK_OPS" -v d="$div" 'BEGIN { printf "%d", o / d }')
    echo "--threads 2 --ops $ops --inside $WORK_INSIDE --outside $WORK_OUTSIDE" ;;
  *) echo "unknown mode $1" >&2; return 2 ;;
  esac
}

RES=$T/results # mode variant rep ns_per_op thread_cpu/op process_cpu/op
: >"$RES"

# run_loop MODE VARIANT REP
run_loop() {
  local m=$1 v=$2 r=$3 out=$T/loop.$1.$2.$3 envs args
  envs=$(variant_env "$v") || exit 2
  args=$(mode_args "$m" "$v") || exit 2
  # shellcheck disable=SC2086
  nice -n "$NICE" env $envs "$BIN/lockloop" $args >"$out" 2>"$out.err" || {
    echo "$m $v failed:" >&2; cat "$out" "$out.err" >&2; exit 1; }
  local line
  line=$(grep '^lockloop:' "$out") || { echo "$m $v: lockloop printed no result" >&2; cat "$out" "$out.err" >&2; exit 1; }
  echo "$line" | awk -v m="$m" -v v="$v" -v r="$r" -v res="$RES" '
    function kv(k,   i, a) { for (i = 1; i <= NF; i++) { split($i, a, "="); if (a[1] == k) return a[2] } }
    { ops = kv("ops")
      printf "%s\t%s\t%d\t%.4f\t%.4f\t%.4f\n", m, v, r, kv("ns_per_op"), kv("thread_cpu_ns") / ops,
        kv("process_cpu_ns") / ops >> res
      printf "  rep %2d %-11s %-12s %9.2f ns/round  thread CPU %9.2f ns/round  process CPU %9.2f ns/round  (%d rounds, %.2f s)\n",
        r, m, v, kv("ns_per_op"), kv("thread_cpu_ns") / ops, kv("process_cpu_ns") / ops, ops, kv("wall_ns") / 1e9 }'
}

for r in $(seq 1 "$REPS"); do
  for m in $MODES; do
    for v in $(rotated "$r" $LOCK_VARIANTS); do run_loop "$m" "$v" "$r"; done
  done
done
load

echo
echo "## lockloop: medians over $REPS repetitions (ns per lock/unlock round; ratios: median of per-repetition ratios to plain)"
echo
echo "| mode | variant | ns/round (wall) | thread CPU ns/round | process CPU ns/round | wall ratio | (range) | thread CPU ratio | process CPU ratio | wall vs passthrough |"
echo "|---|---|---:|---:|---:|---:|---|---:|---:|---:|"
for m in $MODES; do
  for v in $LOCK_VARIANTS; do
    w=$(res_col "$m" "$v" 4 | median) c=$(res_col "$m" "$v" 5 | median) p=$(res_col "$m" "$v" 6 | median)
    if [ "$v" = plain ]; then
      printf '| %s | %s | %.2f | %.2f | %.2f | - | | - | - | |\n' "$m" "$v" "$w" "$c" "$p"
    else
      vp=-
      case " $LOCK_VARIANTS " in *" passthrough "*)
        [ "$v" != passthrough ] && vp=$(printf '%.3f' "$(res_paired "$m" "$v" passthrough 4)") ;;
      esac
      printf '| %s | %s | %.2f | %.2f | %.2f | %.3f | %s | %.3f | %.3f | %s |\n' "$m" "$v" "$w" "$c" "$p" \
        "$(res_paired "$m" "$v" plain 4)" "$(res_spread "$m" "$v" plain 4)" "$(res_paired "$m" "$v" plain 5)" "$(res_paired "$m" "$v" plain 6)" "$vp"
    fi
  done
done

[ "$EVENTS" = 1 ] || exit 0
need_pkgs lock-overhead golang-go

# Events a two-thread run records, from a twin run with the server up.
# shellcheck disable=SC2034 # start (cpu/lib.sh) runs the workload under $WRAP
WRAP=(nice -n "$NICE")
for m in $MODES; do
  case $m in uncontended | single) continue ;; esac
  echo
  args=$(mode_args "$m" cprof-on)
  # shellcheck disable=SC2086
  start "events.$m" CPROF_BLOCK_RATE=1 CPROF_MUTEX_FRACTION=1 -- "$BIN/lockloop" $args --linger 600 || exit 1
  wait_line "events.$m" "lockloop:" 600 || exit 1
  get "events.$m.mutex.pb.gz" debug/pprof/mutex || exit 1
  get "events.$m.block.pb.gz" debug/pprof/block || exit 1
  stop_started
  ms=$(lock_sums "$T/events.$m.mutex.pb.gz" lock_loop)
  bs=$(lock_sums "$T/events.$m.block.pb.gz" lock_loop)
  ops=$(field ops "$T/events.$m.out")
  awk -v m="$m" -v ms="$ms" -v bs="$bs" -v ops="$ops" \
    -v line="$(cat "$T/events.$m.out")" 'BEGIN {
    split(ms, M, " "); split(bs, B, " ")
    printf "%s: one run under cprof-on with the server up (%d rounds in all): mutex profile %d contentions," \
      " %.1f ms of delay in lock_loop; block profile %d events, %.1f ms\n", m, ops, M[4], M[5] / 1e6, B[4], B[5] / 1e6
    printf "  (%s)\n", line
    printf "  per round: %.5f contentions, %.5f blocking events\n", M[4] / ops, B[4] / ops
  }'
done

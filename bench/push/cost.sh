#!/usr/bin/env bash
# The library's push (CPROF_PUSH_URL) and its own cost: the CPU time of its
# two threads, cprof-push (cuts the CPU profile, writes it and the heap
# profile, symbolized, and sends both) and cprof-push-cpu (drains the CPU
# samples every 50 ms), from /proc/PID/task/TID/schedstat at the start and
# the end of DURATION seconds, pushing every second (which magnifies the
# per-push cost fifteenfold over the default 15 s) to a stand-in for
# Pyroscope (tests/cli/pyroscope_receiver.py) on this machine. Two shapes:
# idle (sleep: one thread, nothing to profile) and demo (examples/demo_server:
# six busy threads, heap churn, a few hundred stacks). Both run at once.
#
#   bench/push/cost.sh                 60 s
#   DURATION=20 bench/push/cost.sh
#   CPROF_BUILD=/path/to/build bench/push/cost.sh
. "$(dirname "${BASH_SOURCE[0]}")/../cpu/lib.sh"
DURATION=${DURATION:-60}

# cpu_ns PID NAME: CPU time so far of the process's threads named NAME, ns.
cpu_ns() {
  local t sum=0
  for t in /proc/"$1"/task/*; do
    [ "$(cat "$t/comm" 2>/dev/null)" = "$2" ] || continue
    sum=$((sum + $(awk '{print $1}' "$t/schedstat")))
  done
  echo $sum
}

# requests NAME: how many the receiver took (N.json; N.stc.json is a part).
requests() { ls "$T/$1.rx" | grep -c '^[0-9]*\.json$' | tr -d ' ' || true; }

mkdir -p "$T/idle.rx" "$T/demo.rx"
echo "# The push's cost: CPU time of cprof-push and cprof-push-cpu over $DURATION s, a push a second"
echo "# $(uname -r), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
declare -A cmd=([idle]="sleep $((DURATION + 60))"
  [demo]="$CPROF_BUILD/examples/demo_server --seconds $((DURATION + 60))")
declare -A pid rpid push0 cpu0 drain0
for shape in idle demo; do
  python3 "$BENCH/../tests/cli/pyroscope_receiver.py" serve "$T/$shape.rx" "$T/$shape.port" 2>/dev/null &
  rpid[$shape]=$!
  for _ in $(seq 1 100); do [ -s "$T/$shape.port" ] && break; sleep 0.1; done
  # shellcheck disable=SC2086 # the command's words
  env LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0 CPROF_PUSH_URL="http://127.0.0.1:$(cat "$T/$shape.port")" \
    CPROF_PUSH_INTERVAL=1s ${cmd[$shape]} >/dev/null 2>"$T/$shape.err" &
  pid[$shape]=$!
done
sleep 3 # the first pushes: libcurl loaded, the symbolizer built
for shape in idle demo; do
  push0[$shape]=$(requests "$shape")
  cpu0[$shape]=$(cpu_ns "${pid[$shape]}" cprof-push)
  drain0[$shape]=$(cpu_ns "${pid[$shape]}" cprof-push-cpu)
done
sleep "$DURATION"
# A push is two requests, the CPU profile and the heap profile. The
# drainer's cost goes with time, not pushes; the push thread's with pushes.
printf '%-6s %7s %14s %16s %16s\n' shape pushes "ms a push" "drainer % core" "% core at 15s"
for shape in idle demo; do
  n=$(($(requests "$shape") - push0[$shape]))
  ns=$(($(cpu_ns "${pid[$shape]}" cprof-push) - cpu0[$shape]))
  dns=$(($(cpu_ns "${pid[$shape]}" cprof-push-cpu) - drain0[$shape]))
  python3 - "$shape" "$n" "$ns" "$dns" "$DURATION" <<'PY'
import sys
shape, n, ns, dns, d = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
per = ns / 1e6 / max(n / 2, 1)
drain = dns / 1e9 / d * 100
print("%-6s %7d %14.2f %16.4f %16.4f" % (shape, n // 2, per, drain, per / 15000 * 100 + drain))
PY
done
for shape in idle demo; do # anything but the "serving" line is worth seeing
  ! grep -v '^cprof: serving ' "$T/$shape.err" >&2 || echo "(that was $shape's stderr)" >&2
done

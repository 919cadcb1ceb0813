# shellcheck shell=bash
# What bench/collect's scripts share. Source it after setting T (a scratch
# directory): it ends the jobs still running and removes T at exit (KEEP=1
# keeps it).

cleanup() {
  local p
  for p in $(jobs -p); do
    kill "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  if [ -n "${KEEP:-}" ]; then echo "(scratch files kept in $T)" >&2; else rm -rf "$T"; fi
}
trap cleanup EXIT

# serving_addr FILE WHAT [SECONDS]: the HOST:PORT of the first
# "WHAT http://HOST:PORT/" line of FILE, waiting up to SECONDS (default 10)
# for it (a collector opening a day's store checks every file first).
serving_addr() {
  local a
  for _ in $(seq 1 $((${3:-10} * 40))); do
    a=$(sed -n "s|^$2 http://\([^/]*\)/.*|\1|p" "$1" | head -1)
    [ -n "$a" ] && { echo "$a"; return 0; }
    sleep 0.025
  done
  echo "$(basename "$0"): no \"$2\" line in $1:" >&2
  cat "$1" >&2
  return 1
}

# status_kb PID FIELD: VmRSS or VmHWM, KiB.
status_kb() { awk -v f="$2:" '$1 == f {print $2}' "/proc/$1/status"; }

# record_demo DEMO: the demo's five default profiles (heap, block,
# goroutine, mutex and a 2 s CPU profile) in $T/rec/NAME.pb.gz, once it has
# run 5 s, long enough for its heap, locks and threads to show; the demo
# stopped after. Exits with a line when one cannot be recorded.
record_demo() {
  local pid addr p
  mkdir -p "$T/rec"
  CPROF_ADDR=127.0.0.1:0 "$1" >"$T/demo.out" 2>"$T/demo.err" &
  pid=$!
  addr=$(serving_addr "$T/demo.err" "cprof: serving") || exit 1
  sleep 5
  for p in heap block goroutine mutex 'profile?seconds=2'; do
    curl -sf -o "$T/rec/${p%%\?*}.pb.gz" "http://$addr/debug/pprof/$p" ||
      { echo "$(basename "$0"): cannot record /debug/pprof/$p from the demo" >&2; exit 1; }
  done
  kill "$pid"
  wait "$pid" 2>/dev/null || true
}

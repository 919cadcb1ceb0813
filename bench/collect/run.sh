#!/usr/bin/env bash
# How many targets one `cprof collect` keeps (issue 17). Records the five
# default profiles of the demo once (heap, block, goroutine, mutex, and a
# 2 s CPU profile), serves them from TARGETS ports of one Python process
# (bench/collect/targets.py; the CPU profile after the seconds asked), and
# runs the collector on them at INTERVAL seconds (10 by default; the
# seed's parca.yaml scrapes every 3 s): one interval of warm-up, then
# DURATION seconds measured. Prints the collector's CPU (utime+stime from
# /proc/PID/stat, as % of one core), its memory (VmRSS at the end, VmHWM),
# the profiles stored per second and the failures (both from its
# /metrics), the bytes per profile (stored bytes, and `du` of the directory
# with its SQLite index once the collector has stopped), the disk a day of
# this takes (the bytes stored per second of the window x 86400, and the
# same count of profiles at the `du` bytes per profile), each per target
# too, and the load generator's own CPU. bench/collect/matrix.sh runs it for 10, 100 and 200 targets at
# 3 s and 10 s and prints one table.
#
#   bench/collect/run.sh                   200 targets, 10 s, 120 s
#   TARGETS=400 DURATION=300 bench/collect/run.sh
#   INTERVAL=3 TARGETS=100 DURATION=45 bench/collect/run.sh
#   ROW_FILE=F ...                         also appends the figures to F, one
#                                          tab-separated line (matrix.sh's table)
#   CPROF_BUILD=/path/to/build bench/collect/run.sh
#   LARGE=1 CPROF_BUILD=build bench/collect/run.sh
#       the heap profile recorded instead from tests/integration/many_stacks
#       with every allocation sampled (4097 stacks, most 14 frames deep: 15 KB
#       gzipped, ten times the demo's); needs a build with tests
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export CPROF_BUILD=${CPROF_BUILD:-$BENCH/build/cprof}
[ -x "$CPROF_BUILD/cprof" ] || make -s -C "$BENCH" lib
TARGETS=${TARGETS:-200}
DURATION=${DURATION:-120}
INTERVAL=${INTERVAL:-10}
case $INTERVAL in '' | *[!0-9]* | 0) echo "collect bench: INTERVAL=$INTERVAL: want whole seconds, 1 or more" >&2; exit 2 ;; esac
CPROF=$CPROF_BUILD/cprof
DEMO=$CPROF_BUILD/examples/demo_server
TICK=$(getconf CLK_TCK)
T=$(mktemp -d /tmp/cprof-bench.XXXXXX)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# ticks PID: its utime+stime so far, clock ticks.
ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }

# metric ADDR NAME: one unlabelled value of the collector's /metrics.
metric() {
  local v
  v=$(curl -sS --max-time 10 "http://$1/metrics" | awk -v n="$2" '$1 == n {print $2}') && [ -n "$v" ] ||
    { echo "collect bench: no $2 in http://$1/metrics" >&2; return 1; }
  echo "$v"
}

echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"

# The profiles, recorded from the demo once it has run long enough for its
# heap, locks and threads to show.
record_demo "$DEMO"
if [ -n "${LARGE:-}" ]; then
  MANY=$CPROF_BUILD/tests/integration/many_stacks
  [ -x "$MANY" ] || { echo "collect bench: LARGE=1 needs $MANY (a build with tests)" >&2; exit 1; }
  LD_PRELOAD=$CPROF_BUILD/libcprof.so CPROF_ADDR=127.0.0.1:0 CPROF_HEAP_RATE=1 "$MANY" \
    >"$T/many.out" 2>"$T/many.err" &
  MANY_PID=$!
  ADDR=$(serving_addr "$T/many.err" "cprof: serving")
  for _ in $(seq 1 200); do grep -q '^ready$' "$T/many.out" && break; sleep 0.05; done
  curl -sf -o "$T/rec/heap.pb.gz" "http://$ADDR/debug/pprof/heap" ||
    { echo "collect bench: cannot record the heap of many_stacks" >&2; exit 1; }
  kill "$MANY_PID"
  wait "$MANY_PID" 2>/dev/null || true
fi
sizes=$(for f in heap block goroutine mutex profile; do
  printf '%s %s B, ' "$f" "$(stat -c %s "$T/rec/$f.pb.gz")"
done)

python3 "$BENCH/collect/targets.py" "$T/rec" "$TARGETS" "$T/ports" 2>"$T/targets.err" &
GEN_PID=$!
for _ in $(seq 1 400); do [ -f "$T/ports" ] && break; sleep 0.025; done
[ -f "$T/ports" ] || { echo "collect bench: the load generator did not listen:" >&2; cat "$T/targets.err" >&2; exit 1; }

{
  printf 'object_storage:\n  bucket:\n    type: "FILESYSTEM"\n    config:\n'
  printf '      directory: "%s/store"\n\nscrape_configs:\n' "$T"
  printf '  - job_name: "bench"\n    scrape_interval: "%ss"\n    static_configs:\n' "$INTERVAL"
  printf '      - targets:\n'
  sed 's/.*/          - "127.0.0.1:&"/' "$T/ports"
} >"$T/parca.yaml"

"$CPROF" collect --config "$T/parca.yaml" --listen 127.0.0.1:0 2>"$T/collect.err" &
PID=$!
WEB=$(serving_addr "$T/collect.err" "cprof collect: serving")

sleep "$INTERVAL"
c0=$(ticks $PID) g0=$(ticks $GEN_PID) t0=$(date +%s.%N)
p0=$(metric "$WEB" cprof_collect_stored_profiles)
s0=$(metric "$WEB" cprof_collect_scrapes_total)
f0=$(metric "$WEB" cprof_collect_scrape_failures_total)
b0=$(metric "$WEB" cprof_collect_stored_bytes)
sleep "$DURATION"
c1=$(ticks $PID) g1=$(ticks $GEN_PID) t1=$(date +%s.%N)
p1=$(metric "$WEB" cprof_collect_stored_profiles)
s1=$(metric "$WEB" cprof_collect_scrapes_total)
f1=$(metric "$WEB" cprof_collect_scrape_failures_total)
bytes=$(metric "$WEB" cprof_collect_stored_bytes)
health=$(curl -sf "http://$WEB/metrics" | sed -n 's/^cprof_collect_targets{health="\([a-z]*\)"} \(.*\)/\1 \2/p' | paste -sd, -)
rss=$(status_kb $PID VmRSS) hwm=$(status_kb $PID VmHWM)
kill $PID
wait $PID 2>/dev/null || true
# The store once the collector has closed it: SQLite has checkpointed its
# write-ahead log into the index and removed it (a few MB while it runs,
# whatever the count, which would swamp a short run's profiles).
du=$(du -sk "$T/store" | cut -f1)
pdu=$(sqlite3 "$T/store/index.sqlite" 'select count(*) from profiles' 2>/dev/null) || pdu=$p1
kill $GEN_PID
wait $GEN_PID 2>/dev/null || true

awk -v n="$TARGETS" -v d="$t1 - $t0" -v c0="$c0" -v c1="$c1" -v g0="$g0" -v g1="$g1" \
  -v tick="$TICK" -v t0="$t0" -v t1="$t1" -v p0="$p0" -v p1="$p1" -v s0="$s0" -v s1="$s1" \
  -v f0="$f0" -v f1="$f1" -v bytes="$bytes" -v du="$du" -v rss="$rss" -v hwm="$hwm" \
  -v health="$health" -v sizes="$sizes" -v iv="$INTERVAL" -v b0="$b0" -v row="${ROW_FILE:-}" -v pdu="$pdu" '
BEGIN {
  w = t1 - t0
  printf "recorded: %s\n", substr(sizes, 1, length(sizes) - 2)
  printf "%d targets, %ds interval, %.0f s measured after %ds of warm-up\n", n, iv, w, iv
  printf "collector CPU       %.1f%% of one core\n", 100 * (c1 - c0) / tick / w
  printf "collector RSS       %.1f MB at the end, %.1f MB peak (VmHWM)\n", rss / 1024, hwm / 1024
  printf "profiles stored     %.1f /s (%d in the window; %d scrapes, %.1f /s; expected %.1f /s)\n",
    (p1 - p0) / w, p1 - p0, s1 - s0, (s1 - s0) / w, n * 5 / iv
  printf "failures            %d in the window, %d since the start\n", f1 - f0, f1
  printf "disk per profile    %.1f KB stored, %.1f KB with the index (du %.1f MB for %d profiles, the collector stopped)\n",
    bytes / p1 / 1000, du * 1024 / pdu / 1000, du / 1024, pdu
  # A day at the rate of the window: its stored bytes a second, and its
  # profiles a second at what each took on disk (du, index and all).
  day_stored = (bytes - b0) / w * 86400
  day_du = (p1 - p0) / w * 86400 * du * 1024 / pdu
  printf "disk per day        %.2f GB stored, %.2f GB on disk (du); per target %.1f MB, %.1f MB\n",
    day_stored / 1e9, day_du / 1e9, day_stored / n / 1e6, day_du / n / 1e6
  cpu = 100 * (c1 - c0) / tick / w
  printf "per target          %.3f%% of a core, %.0f KB of RSS (the whole RSS over the targets)\n",
    cpu / n, rss * 1024 / n / 1000
  printf "target profiles     %s (health of each target and profile)\n", health
  printf "load generator CPU  %.1f%% of one core\n", 100 * (g1 - g0) / tick / w
  if (row != "")
    printf "%d\t%d\t%.0f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%d\t%.2f\t%.2f\t%.1f\t%.1f\t%.1f\n",
      iv, n, w, (p1 - p0) / w, n * 5 / iv, cpu, rss / 1024, hwm / 1024, f1 - f0,
      day_stored / 1e9, day_du / 1e9, day_stored / n / 1e6, day_du / n / 1e6,
      100 * (g1 - g0) / tick / w >> row
}'
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "collector's log (last lines):"
tail -n 3 "$T/collect.err" | sed 's/^/  /'
sed 's/^/  /' "$T/targets.err"

#!/usr/bin/env bash
# The query page on a day of one target (issue 32). Records the demo's five
# default profiles (heap, block, goroutine, mutex, and a 2 s CPU profile, as
# run.sh does), serves them from one target (targets.py), and lets a real
# `cprof collect` scrape it at the seed's 3 s interval for a few scrapes.
# Then, the collector stopped, bench/collect/fill.c (the store's own code,
# tools/cprof/collect/store*.c, compiled in) puts COUNT more of each TYPE
# before them, 3 s apart: copies of what the collector stored, so that the
# store holds a day of that target (28,800 profiles a type). The collector
# started again on that store (its open walks every file: timed), it
# measures with curl the answers the page asks for a day, and merges of a
# day and of 4 h (/view), with the collector's memory after them; then
# with headless Chromium (day_page.py) the time from navigation to the
# drawn line for range=24h, RUNS times per page type.
#
#   bench/collect/day.sh                              5 types x 28,800, 3 runs
#   TYPES="process_cpu memory" COUNT=28800 RUNS=3 bench/collect/day.sh
#   FSYNC=1 ...      the fill keeps the store's fsync calls (slow; by
#                    default they return at once while filling: durability
#                    while it runs, not what is stored)
#   KEEP=1 ...       keeps the scratch directory (and the store)
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
export CPROF_BUILD=${CPROF_BUILD:-$BENCH/build/cprof}
[ -x "$CPROF_BUILD/cprof" ] || make -s -C "$BENCH" lib
TYPES=${TYPES:-process_cpu memory block goroutine mutex}
PAGE_TYPES=${PAGE_TYPES:-process_cpu memory}
COUNT=${COUNT:-28800}
RUNS=${RUNS:-3}
INTERVAL=3
CPROF=$CPROF_BUILD/cprof
DEMO=$CPROF_BUILD/examples/demo_server
T=$(mktemp -d /tmp/cprof-day.XXXXXX)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

echo "$(date -u '+%Y-%m-%d %H:%M:%S UTC'), $(nproc) CPUs; load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"

# The fill tool: the store's sources and this file, nothing else.
FILL=$T/fill
# shellcheck disable=SC2046 # pkg-config's flags are words
cc -O2 -g -std=gnu11 -I"$ROOT/tools/cprof" -o "$FILL" "$BENCH/collect/fill.c" \
  "$ROOT"/tools/cprof/collect/store.c "$ROOT"/tools/cprof/collect/store_write.c \
  "$ROOT"/tools/cprof/collect/store_read.c "$ROOT"/tools/cprof/collect/store_events.c \
  $(pkg-config --cflags --libs sqlite3) -lpthread

record_demo "$DEMO"
echo "recorded: $(for f in heap block goroutine mutex profile; do printf '%s %s B, ' "$f" "$(stat -c %s "$T/rec/$f.pb.gz")"; done | sed 's/, $//')"

python3 "$BENCH/collect/targets.py" "$T/rec" 1 "$T/ports" 2>"$T/targets.err" &
for _ in $(seq 1 400); do [ -f "$T/ports" ] && break; sleep 0.025; done
[ -f "$T/ports" ] || { echo "collect day: the target did not listen" >&2; cat "$T/targets.err" >&2; exit 1; }
cat >"$T/parca.yaml" <<YAML
object_storage:
  bucket:
    type: "FILESYSTEM"
    config:
      directory: "$T/store"
scrape_configs:
  - job_name: "day"
    scrape_interval: "${INTERVAL}s"
    static_configs:
      - targets: [ '127.0.0.1:$(cat "$T/ports")' ]
YAML

# A few real scrapes: the profiles and rows the fill copies.
"$CPROF" collect --config "$T/parca.yaml" --listen 127.0.0.1:0 2>"$T/collect1.err" &
PID=$!
serving_addr "$T/collect1.err" "cprof collect: serving" 60 >/dev/null
sleep $((3 * INTERVAL))
kill -TERM "$PID"
wait "$PID" 2>/dev/null || true
echo "scraped for real: $(sqlite3 "$T/store/index.sqlite" 'select type || " " || count(*) from profiles group by type' | paste -sd, | sed 's/,/, /g')"

fsync=--no-fsync
[ -n "${FSYNC:-}" ] && fsync=
# shellcheck disable=SC2086
nice "$FILL" $fsync "$T/store" "$INTERVAL" "$COUNT" $TYPES
sync
rows=$(sqlite3 "$T/store/index.sqlite" 'select count(*) from profiles')
echo "store: $rows profiles, $(du -sh "$T/store" | cut -f1) (du), index $(du -sh "$T/store/index.sqlite" | cut -f1)," \
  "$(sqlite3 "$T/store/index.sqlite" 'select type || " " || count(*) || " avg " || cast(avg(size) as int) || " B" from profiles group by type' | paste -sd, | sed 's/,/, /g')"

# Served again: the open (repair) walks every file first.
t0=$(date +%s.%N)
"$CPROF" collect --config "$T/parca.yaml" --listen 127.0.0.1:0 2>"$T/collect2.err" &
PID=$!
WEB=$(serving_addr "$T/collect2.err" "cprof collect: serving" 60)
t1=$(date +%s.%N)
echo "cprof collect opened the store of $rows profiles and served in $(echo "$t1 - $t0" | bc | sed 's/^\./0./') s;" \
  "RSS $(($(status_kb $PID VmRSS) / 1024)) MB, peak $(($(status_kb $PID VmHWM) / 1024)) MB"
sleep 1

now=$(date +%s%N)
day=$((now - 86400 * 1000000000))
four=$((now - 4 * 3600 * 1000000000))
# timed NAME PATH: three answers' times, sizes and status.
timed() {
  local out="" r
  for _ in 1 2 3; do
    r=$(curl -s -o "$T/answer" -w '%{http_code} %{time_total} %{size_download}' "http://$WEB/$2")
    out="$out $(echo "$r" | awk '{printf "%.3fs", $2}')"
  done
  echo "$1: HTTP $(echo "$r" | cut -d' ' -f1), $(echo "$r" | cut -d' ' -f3) bytes, times$out$( [ "${r%% *}" = 200 ] || echo "; answer: $(head -c 200 "$T/answer")")"
}
timed "/api/series" "api/series"
for ty in $PAGE_TYPES; do
  timed "/api/profiles $ty, a day" "api/profiles?job=day&type=$ty&from=$day&to=$now"
  timed "/api/scrapes $ty, a day" "api/scrapes?job=day&type=$ty&from=$day&to=$now"
  timed "/view $ty, a day" "view?job=day&type=$ty&from=$day&to=$now"
  timed "/view $ty, 4 h ($(sqlite3 "$T/store/index.sqlite" "select count(*) from profiles where type='$ty' and time_ns between $four and $now") profiles)" \
    "view?job=day&type=$ty&from=$four&to=$now"
  echo "  collector RSS $(($(status_kb $PID VmRSS) / 1024)) MB, peak $(($(status_kb $PID VmHWM) / 1024)) MB"
done
echo "collector RSS after the merges: $(($(status_kb $PID VmRSS) / 1024)) MB, peak $(($(status_kb $PID VmHWM) / 1024)) MB"

# shellcheck disable=SC2086
nice python3 "$BENCH/collect/day_page.py" "$T" "http://$WEB/" day "$RUNS" $PAGE_TYPES
echo "collector RSS at the end: $(($(status_kb $PID VmRSS) / 1024)) MB, peak $(($(status_kb $PID VmHWM) / 1024)) MB"
mkdir -p "$BENCH/build"
cp "$T/collect-day.png" "$BENCH/build/collect-day.png" 2>/dev/null && echo "(the last page: $BENCH/build/collect-day.png)"
kill -TERM "$PID"
wait "$PID" 2>/dev/null || true
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"

#!/usr/bin/env bash
# cprof collect's query page in headless Chromium (tests/ui/collect_page.py)
# against real targets under LD_PRELOAD with known answers, scraped every
# second: tests/integration/programs/heap_target.c (8 MiB in use, 2 MiB
# more on SIGUSR1) and contention.c (a round of lock and condition waits on
# SIGUSR1, their measured total printed). The page must read the heap's
# 8 MiB averaged over a range (+-5 %, the line's values and the frame's
# total), a block range's contention as the program measured it (+-10 %),
# carry the unit on the y axis, set the range by a drag, compare A (8 MiB)
# with B (10 MiB: late_alloc's 2 MiB grew), reopen a view from its address,
# show a malformed selector's 400 and mark the heap target killed mid-run
# with its error; and /debug/pprof/ui/ keeps its state across a reload.
# Served again with --merge-limit 2, a longer range's 400 is what the
# status says, as the frame shows it.
# The comparison's screenshot is $CPROF_BUILD_DIR/artifacts/collect-compare.png
# (doc/collect-compare.png is one).
. "$CPROF_SOURCE_DIR/tests/integration/lib.sh"
command -v sqlite3 >/dev/null || skip "sqlite3 is not installed (scripts/install-deps.sh test)"
if ! command -v chromedriver >/dev/null || ! [ -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
  skip "chromium and chromium-driver are not installed (scripts/install-deps.sh test)"
fi
C=$B/cprof
P=$B/tests/integration

start heap --ready LD_PRELOAD="$LIB" CPROF_HEAP_RATE=1 -- "$P/heap_target"
H=$ADDR HPID=$PID
start lock --ready LD_PRELOAD="$LIB" CPROF_BLOCK_RATE=1 CPROF_MUTEX_FRACTION=1 -- "$P/contention" 2000
L=$ADDR LPID=$PID
cat >"$T/parca.yaml" <<YAML
object_storage:
  bucket:
    type: "FILESYSTEM"
    config:
      directory: "$T/store"
scrape_configs:
  - job_name: "heap"
    scrape_interval: "1s"
    static_configs:
      - targets: [ '$H' ]
    profiling_config:
      pprof_config:
        process_cpu: { enabled: false }
        block: { enabled: false }
        mutex: { enabled: false }
        goroutine: { enabled: false }
  - job_name: "lock"
    scrape_interval: "1s"
    static_configs:
      - targets: [ '$L' ]
    profiling_config:
      pprof_config:
        process_cpu: { enabled: false }
        memory: { enabled: false }
        mutex: { enabled: false }
        goroutine: { enabled: false }
YAML

check "prints where it serves" start_collect c "$T/parca.yaml"
[ -n "$W" ] || finish

mkdir -p "$B/artifacts"
check "Chromium: the query page tells the truth over time" \
  python3 "$CPROF_SOURCE_DIR/tests/ui/collect_page.py" "$T" "http://$W/" "$H" "$HPID" "$LPID" \
  "$T/heap.out" "$T/lock.out" "$B/artifacts/collect-compare.png"

kill -TERM "$CPID"
wait "$CPID" || true
# The same store served with a merge limit of 2 profiles.
check "serves again with --merge-limit 2" start_collect c2 "$T/parca.yaml" --merge-limit 2
[ -n "$W" ] || finish
check "Chromium: a range over the merge limit, said in the status" \
  python3 "$CPROF_SOURCE_DIR/tests/ui/collect_page.py" limit "$T" "http://$W/"
kill -TERM "$CPID"
wait "$CPID" || true
stop "$HPID"
stop "$LPID"
finish

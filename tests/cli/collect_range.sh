# What a range of stored profiles means (issue 32), against real cprof
# targets under LD_PRELOAD: a heap of known size (programs/heap_target.c,
# 8 MiB in use, every allocation sampled) averaged over a range reads that
# size +-5 %, in the merged profile go tool pprof reads and in the rows'
# value; a block profile's range total is the contention the program
# measured in that range (programs/contention.c: a round of mutex and
# condition waits, nothing blocking outside a round) +-10 %, and so are
# the rows' values (contention seconds per second) times their windows;
# the old meaning (mode=sum) is what made both wrong, and reads far more;
# across a restart of the program the range is both rounds' contention.
# A target killed mid-run: its failures in /api/scrapes with their class
# and error text, a down transition, the log naming each, /metrics' count
# by reason (promtool), /targets' error and Labels column. A selector
# picks series by their labels and samples by the program's (cprof_do's
# in programs/labels_do.c), and a malformed one is a 400 of one line.
# Served again with --merge-limit, a range of the limit merges and one of
# more is a 400 naming it.
. "$(dirname "$0")/../integration/lib.sh"
command -v sqlite3 >/dev/null || skip "sqlite3 is not installed (scripts/install-deps.sh test)"
command -v go >/dev/null || export PATH=$PATH:/usr/lib/go/bin
command -v go >/dev/null || skip "go is not installed"
C=$B/cprof
P=$B/tests/integration
MiB=1048576

start heap --ready LD_PRELOAD="$LIB" CPROF_HEAP_RATE=1 -- "$P/heap_target"
H=$ADDR HPID=$PID
# On a port of its own: it is started again on it, a restarted target.
# cprof does not announce a port it was given: wait for "ready" and an
# answer. lock NAME ROUND_MS: the contention program as NAME; LPID.
LPORT=$(free_port)
L=127.0.0.1:$LPORT
lock() {
  env LD_PRELOAD="$LIB" CPROF_BLOCK_RATE=1 CPROF_MUTEX_FRACTION=1 CPROF_ADDR=$L \
    "$P/contention" "$2" >"$T/$1.out" 2>"$T/$1.err" &
  LPID=$!
  for _ in $(seq 1 200); do
    has "$T/$1.out" '^ready$' && curl -sf -o /dev/null "http://$L/debug/pprof/" && return 0
    sleep 0.05
  done
  fail "$1 did not start on $L"
  cat "$T/$1.err" >&2
}
lock lock 3000
start labels --ready -- "$P/labels_do"
D=$ADDR DPID=$PID
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
        labels: { team: "locks" }
    profiling_config:
      pprof_config:
        process_cpu: { enabled: false }
        memory: { enabled: false }
        mutex: { enabled: false }
        goroutine: { enabled: false }
  - job_name: "labels"
    scrape_interval: "1s"
    static_configs:
      - targets: [ '$D' ]
    profiling_config:
      pprof_config:
        process_cpu: { enabled: false }
        memory: { enabled: false }
        block: { enabled: false }
        mutex: { enabled: false }
YAML
q() { sqlite3 "$T/store/index.sqlite" "$1" 2>/dev/null; }
json() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$1"; }
# near GOT WANT TOLERANCE: |GOT - WANT| <= WANT * TOLERANCE, said.
near() {
  python3 -c "import sys; g, w, t = map(float, sys.argv[1:]); print('got %.0f, want %.0f +- %d%%' % (g, w, t * 100)); sys.exit(0 if abs(g - w) <= w * t else 1)" "$@"
}
# pprof_total FILE ARGS...: the total go tool pprof reads in a profile.
pprof_total() {
  local f=$1
  shift
  pprof -top "$@" "$f" | sed -n 's/.* of \([0-9.]*\)[a-zA-Z]* total.*/\1/p' | head -1
}

check "prints where it serves" start_collect c "$T/parca.yaml"
[ -n "$W" ] || finish
rows() { q "select count(*) from profiles where job='$1' and type='$2' and time_ns > ${3:-0}"; }
until_rows() { # JOB TYPE N [AFTER_NS]: at least N rows (60 s bound)
  for _ in $(seq 1 600); do
    [ "$(rows "$1" "$2" "${4:-0}")" -ge "$3" ] && return 0
    sleep 0.1
  done
  return 1
}
now_ns() { date +%s%N; }

# ---- a block profile's range: the contention of one round -------------
check "two block scrapes before the round" until_rows lock block 2
kill -USR1 "$LPID"
for _ in $(seq 1 200); do has "$T/lock.out" '^round 1 ' && break; sleep 0.05; done
check "the round ended" has "$T/lock.out" '^round 1 '
after=$(now_ns)
check "two block scrapes after the round" until_rows lock block 2 "$after"
truth=$(awk '$1 == "round" && $2 == 1 { for (i = 3; i <= NF; i++) { split($i, kv, "=");
  if (kv[1] == "wait_ns" || kv[1] == "cond_ns") s += kv[2] } printf "%.0f\n", s }' "$T/lock.out")
from=$(q "select min(time_ns) from profiles where job='lock' and type='block'")
to=$(q "select max(time_ns) from profiles where job='lock' and type='block'")
check "block: /api/merge by default, 200" [ "$(http "http://$W/api/merge?job=lock&type=block&from=$from&to=$to")" = 200 ]
check "block: mode delta, said in the answer and the header" bash -c \
  "grep -qi '^x-cprof-mode: delta' '$T/headers' && python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))[\"mode\"] != \"delta\")' '$T/body'"
got=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["total"])' "$T/body")
check "block: the range's delay is the round's contention ($truth ns)" near "$got" "$truth" 0.10
curl -s -o "$T/block.pb.gz" "http://$W/api/merge?job=lock&type=block&from=$from&to=$to&format=pprof"
got=$(pprof_total "$T/block.pb.gz" -sample_index=delay -unit=ns)
check "block: go tool pprof reads the same delay" near "${got:-0}" "$truth" 0.10
check "block: the profile says what was done" bash -c \
  "go tool pprof -comments '$T/block.pb.gz' 2>/dev/null | grep -q 'delay: delta between consecutive scrapes'"
http "http://$W/api/merge?job=lock&type=block&from=$from&to=$to&mode=sum" >/dev/null
got=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["total"])' "$T/body")
check "block: mode=sum, the old meaning, reads more than 1.5 times as much ($got)" \
  python3 -c "import sys; sys.exit(0 if $got > 1.5 * $truth else 1)"
# The rows: contention seconds per second, times each row's window.
http "http://$W/api/profiles?job=lock&type=block&from=$from&to=$to" >/dev/null
cp "$T/body" "$T/block_rows.json"
got=$(python3 -c '
import json, sys
rows = json.load(open(sys.argv[1]))
s = 0.0
for a, b in zip(rows, rows[1:]):
    s += b["value"] * (int(b["time_ns"]) - int(a["time_ns"]))
print(s)' "$T/block_rows.json")
check "block rows: value x window adds up to the round's contention" near "$got" "$truth" 0.10
check "block rows: the first is a baseline (value null), the rest numbers" json "$T/block_rows.json" \
  "j[0]['value'] is None and all(isinstance(r['value'], (int, float)) for r in j[1:])"
http "http://$W/api/series" >/dev/null
check "/api/series: block is cumulative, contention seconds per second" json "$T/body" \
  "[s for s in j if s['type'] == 'block' and s['kind'] == 'cumulative' and s['unit'] == 's/s' and s['quantity'] == 'contention seconds per second']"
check "/api/series: memory is a snapshot of bytes in use" json "$T/body" \
  "[s for s in j if s['type'] == 'memory' and s['kind'] == 'snapshot' and s['unit'] == 'bytes' and s['quantity'] == 'bytes in use']"

# A restart: the program killed and started again on its port, a second
# round. The range over both is both rounds' contention: the counters'
# fall is a restart, and the new program's first profile counts whole.
stop "$LPID"
sleep 2.5 # a scrape or two find nothing on the port: a gap
restarted=$(now_ns)
lock lock2 2000
check "two block scrapes of the restarted program" until_rows lock block 2 "$restarted"
kill -USR1 "$LPID"
for _ in $(seq 1 200); do has "$T/lock2.out" '^round 1 ' && break; sleep 0.05; done
check "the second round ended" has "$T/lock2.out" '^round 1 '
after=$(now_ns)
check "two block scrapes after the second round" until_rows lock block 2 "$after"
truth2=$(awk '$1 == "round" && $2 == 1 { for (i = 3; i <= NF; i++) { split($i, kv, "=");
  if (kv[1] == "wait_ns" || kv[1] == "cond_ns") s += kv[2] } printf "%.0f\n", s }' "$T/lock2.out")
to=$(q "select max(time_ns) from profiles where job='lock' and type='block'")
curl -s -o "$T/both.pb.gz" "http://$W/api/merge?job=lock&type=block&from=$from&to=$to&format=pprof"
got=$(pprof_total "$T/both.pb.gz" -sample_index=delay -unit=ns)
check "block across a restart: both rounds' contention ($truth + $truth2 ns)" near "${got:-0}" "$((truth + truth2))" 0.10
check "block across a restart: the profile says a restart was found" bash -c \
  "go tool pprof -comments '$T/both.pb.gz' 2>/dev/null | grep -q '1 restarts'"
http "http://$W/api/merge?job=lock&type=block&from=$restarted&to=$to" >/dev/null
got=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["total"])' "$T/body")
check "block after the restart alone: the second round's contention" near "$got" "$truth2" 0.10
http "http://$W/api/scrapes?job=lock" >/dev/null
check "/api/scrapes: the restart's gap, down then up" json "$T/body" \
  "[t['up'] for t in j['transitions']] == [False, True] and j['failures']"

# ---- a heap of known size, averaged ------------------------------------
check "four heap scrapes" until_rows heap memory 4
from=$(q "select min(time_ns) from profiles where job='heap' and type='memory'")
to=$(q "select max(time_ns) from profiles where job='heap' and type='memory'")
n=$(q "select count(*) from profiles where job='heap' and type='memory' and time_ns between $from and $to")
check "memory: /api/merge by default, 200" [ "$(http "http://$W/api/merge?job=heap&type=memory&from=$from&to=$to")" = 200 ]
got=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["total"])' "$T/body")
check "memory: the average of $n scrapes is the 8 MiB in use" near "$got" $((8 * MiB)) 0.05
check "memory: in use averaged, allocations as deltas" json "$T/body" "j['mode'] == 'delta+avg'"
curl -s -o "$T/heap.pb.gz" "http://$W/api/merge?job=heap&type=memory&from=$from&to=$to&format=pprof"
got=$(pprof_total "$T/heap.pb.gz" -sample_index=inuse_space -unit=B)
check "memory: go tool pprof reads 8 MiB in use" near "${got:-0}" $((8 * MiB)) 0.05
curl -s -o "$T/heap_latest.pb.gz" "http://$W/api/merge?job=heap&type=memory&from=$from&to=$to&format=pprof&mode=latest"
got=$(pprof_total "$T/heap_latest.pb.gz" -sample_index=inuse_space -unit=B)
check "memory mode=latest: 8 MiB" near "${got:-0}" $((8 * MiB)) 0.05
http "http://$W/api/merge?job=heap&type=memory&from=$from&to=$to&mode=sum" >/dev/null
got=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["total"])' "$T/body")
check "memory mode=sum, the old meaning: $n times as much" near "$got" $((n * 8 * MiB)) 0.05
http "http://$W/api/profiles?job=heap&type=memory&from=$from&to=$to" >/dev/null
check "memory rows: each value is the 8 MiB in use" json "$T/body" \
  "len(j) == $n and all(abs(r['value'] - 8 * $MiB) <= 0.05 * 8 * $MiB for r in j)"
check "mode=mean: a 400 of one line" bash -c \
  "[ \"\$(curl -s -o '$T/bad' -w '%{http_code}' 'http://$W/api/merge?job=heap&type=memory&from=0&to=$to&mode=mean')\" = 400 ] && [ \$(wc -l <'$T/bad') = 1 ]"

# ---- a label selector, both ways ----------------------------------------
check "two goroutine scrapes of the labelled program" until_rows labels goroutine 2
to=$(q "select max(time_ns) from profiles")
# sel PAGE SELECTOR [ARGS...]: PAGE?from=0&to=$to&selector=SELECTOR&ARGS, URL-encoded.
sel() {
  local page=$1 s=$2 a
  shift 2
  local args=(-G --data-urlencode "selector=$s" --data-urlencode "from=0" --data-urlencode "to=$to")
  for a in "$@"; do args+=(--data-urlencode "$a"); done
  http "http://$W/$page" "${args[@]}"
}
total() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["total"])' "$T/body"; }
sel api/merge '{}' job=labels type=goroutine >/dev/null
all=$(total)
check "selector on samples: {thread=\"nested\"} is its one thread" bash -c \
  "[ \"\$(curl -s -G --data-urlencode 'selector={thread=\"nested\"}' 'http://$W/api/merge?job=labels&type=goroutine&from=0&to=$to' | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"total\"])')\" = 1 ]"
sel api/merge '{thread!="nested"}' job=labels type=goroutine >/dev/null
check "selector on samples: {thread!=\"nested\"} is the others ($all - 1)" [ "$(total)" = $((all - 1)) ]
sel api/merge '{request=~"checkout|refund", job="labels"}' job=labels type=goroutine >/dev/null
check "selector on samples and series: two threads in a request" [ "$(total)" = 2 ]
sel api/merge '{thread="nested"}' job=labels type=goroutine format=pprof >/dev/null
cp "$T/body" "$T/nested.pb.gz"
pprof -tags "$T/nested.pb.gz" >"$T/nested.tags" || true
check "selector on samples: go tool pprof sees the nested thread alone" bash -c \
  "grep -q 'nested' '$T/nested.tags' && ! grep -q 'inherited' '$T/nested.tags'"
n=$(q "select count(*) from profiles where job='lock' and type='block' and time_ns <= $to")
sel api/profiles '{team="locks", instance=~"127.0.0.1:.*"}' job=lock type=block >/dev/null
check "selector on series: {team=\"locks\", instance=~...} keeps the $n rows" json "$T/body" "len(j) == $n"
sel api/profiles '{team!="locks"}' job=lock type=block >/dev/null
check "selector on series: {team!=\"locks\"} keeps none" json "$T/body" "j == []"
check "selector on series: a regex is anchored (127 is no match): 404" \
  [ "$(sel api/merge '{instance=~"127"}' job=lock type=block)" = 404 ]
sel api/profiles '{thread="nested"}' job=labels type=goroutine >/dev/null
check "selector on samples in /api/profiles: each row's total and value is the one thread" json "$T/body" \
  "j and all(r['total'] == 1 and r['value'] == 1 for r in j)"
for bad in '{thread=worker}' '{thread="worker"' 'thread="worker"' '{thread=~"("}' '{thread=="x"}'; do
  check "malformed selector $bad: a 400 of one line" bash -c \
    "[ \"\$(curl -s -o '$T/bad' -w '%{http_code}' -G --data-urlencode 'selector=$bad' 'http://$W/api/merge?job=labels&type=goroutine&from=0&to=1')\" = 400 ] && [ \$(wc -l <'$T/bad') = 1 ] && grep -q '^400 bad selector' '$T/bad'"
done
c1=$(sel view '{x}' job=labels type=goroutine)
c2=$(sel api/profiles '{x}' job=labels type=goroutine)
check "malformed selector on /view and /api/profiles too ($c1, $c2)" [ "$c1" = 400 -a "$c2" = 400 ]

# ---- a target killed mid-run: its failures are data ---------------------
killed=$(now_ns)
stop "$HPID"
until_failed() { # at least 2 failures of the heap job in /api/scrapes (30 s bound)
  for _ in $(seq 1 300); do
    http "http://$W/api/scrapes?job=heap&from=$killed" >/dev/null &&
      json "$T/body" "len(j['failures']) >= 2" && return 0
    sleep 0.1
  done
  return 1
}
check "/api/scrapes: the killed target's failures" until_failed
cp "$T/body" "$T/scrapes.json"
check "/api/scrapes: each with its time, type, class and the error text" json "$T/scrapes.json" \
  "all(f['job'] == 'heap' and f['instance'] == '$H' and f['type'] == 'memory' and
       int(f['time_ns']) >= $killed and f['reason'] == 'connection_refused' and
       'onnect' in f['error'] for f in j['failures'])"
check "/api/scrapes: one down transition" json "$T/scrapes.json" \
  "[t for t in j['transitions'] if t['up'] is False and t['instance'] == '$H'] and len(j['transitions']) == 1"
http "http://$W/api/scrapes?job=labels" >/dev/null
check "/api/scrapes?job=labels: nothing (it never failed)" json "$T/body" "j['failures'] == [] and j['transitions'] == []"
check "/api/scrapes?from=x: a 400" [ "$(http "http://$W/api/scrapes?from=x")" = 400 ]
check "the log names the target, profile and reason of each failure" \
  grep -q "failed, .*: heap $H (memory): connection_refused: .*onnect" "$T/c.err"
check "the log never says only how many failed" bash -c \
  "! grep -E '[1-9][0-9]* failed, [0-9.]+ MB in the last [0-9]+ s\$' '$T/c.err'"
http "http://$W/metrics" >/dev/null
cp "$T/body" "$T/metrics"
check "/metrics: failures by job, instance, type and reason" \
  grep -Eq "^cprof_collect_target_scrape_failures_total\{job=\"heap\",instance=\"$H\",type=\"memory\",reason=\"connection_refused\"\} [1-9]" "$T/metrics"
if command -v promtool >/dev/null; then
  check "/metrics: promtool check metrics" bash -c "promtool check metrics <'$T/metrics'"
fi
http "http://$W/targets" >/dev/null
check "/targets: the Labels column has job, instance and the target's labels" bash -c \
  "grep -q 'job=lock</span><span class=\"label\">instance=$L</span><span class=\"label\">team=locks' '$T/body'"
check "/targets: the killed target's error with its class" grep -q "<b>connection_refused</b>: " "$T/body"
http "http://$W/targets?format=json" >/dev/null
check "/targets JSON: last_failure and failures_by_reason" json "$T/body" \
  "[t for x in j['jobs'] for t in x['targets'] if t['target'] == '$H' and t['last_reason'] == 'connection_refused' and t['failures_by_reason']['connection_refused'] >= 2 and t['last_failure']]"

kill -TERM "$CPID"
wait "$CPID" || true
check "the store keeps the failures: sqlite3" [ "$(q "select count(*) from scrape_events where job='heap' and event='failure'")" -ge 2 ]

# ---- the merge limit: a longer range is a 400 saying so ------------------
to=$(now_ns)
n=$(q "select count(*) from profiles where job='lock' and type='block' and time_ns <= $to")
check "the same store served again with --merge-limit $n" start_collect c2 "$T/parca.yaml" --merge-limit "$n"
check "a range of $n profiles, the limit, merges" \
  [ "$(http "http://$W/api/merge?job=lock&type=block&from=0&to=$to")" = 200 ]
kill -TERM "$CPID"
wait "$CPID" || true
start_collect c3 "$T/parca.yaml" --merge-limit $((n - 1))
check "one more than the limit ($n > $((n - 1))): a 400 of one line naming it" bash -c \
  "[ \"\$(curl -s -o '$T/bad' -w '%{http_code}' 'http://$W/api/merge?job=lock&type=block&from=0&to=$to')\" = 400 ] && [ \$(wc -l <'$T/bad') = 1 ] && grep -q '^400 the range holds more than $((n - 1)) profiles (cprof collect --merge-limit)' '$T/bad'"
kill -TERM "$CPID"
wait "$CPID" || true
check "--merge-limit abc: exit 2 and one line" bash -c \
  "'$C' collect --config '$T/parca.yaml' --merge-limit abc 2>'$T/bad'; [ \$? = 2 ] && [ \$(wc -l <'$T/bad') = 1 ] && grep -q 'merge-limit wants a number' '$T/bad'"
stop "$LPID"
stop "$DPID"
finish

# /metrics and /debug/charts/data on a program under cprof (LD_PRELOAD):
# promtool accepts the exposition, its figures agree with /proc/PID, the
# charts' JSON has the documented format, and CPROF_METRICS=0 turns both
# off with no cprof-metrics thread left; the sampler stops and starts with
# cprof_stop and cprof_start, and a forked child's is its own.
. "$(dirname "$0")/lib.sh"

P=$B/tests/integration
command -v promtool >/dev/null ||
  skip "promtool is missing (Debian package prometheus: scripts/install-deps.sh test)"

# thread_named PID NAME: one of the process's threads is called NAME.
thread_named() { grep -qx "$2" /proc/"$1"/task/*/comm 2>/dev/null; }

start target --ready LD_PRELOAD="$LIB" -- "$P/stacks_plain"
check "a cprof-metrics thread runs" thread_named "$PID" cprof-metrics

# ---- /metrics ----
code=$(http "http://$ADDR/metrics")
cp "$T/body" "$T/metrics.txt"
# Read right after the scrape, as close to it as a shell can.
read -r -a stat <<<"$(sed 's/.*) //' /proc/"$PID"/stat)"
rss_kb=$(awk '/^VmRSS:/ {print $2}' /proc/"$PID"/status)
tasks=$(ls /proc/"$PID"/task | wc -l)
fds=$(ls /proc/"$PID"/fd | wc -l)
hz=$(getconf CLK_TCK)
check "/metrics: 200" [ "$code" = 200 ]
check "/metrics: Prometheus text 0.0.4" \
  grep -qi '^content-type: text/plain; version=0.0.4; charset=utf-8' "$T/headers"
if promtool check metrics <"$T/metrics.txt" >"$T/promtool.out" 2>&1; then
  pass "promtool check metrics accepts /metrics"
else
  fail "promtool check metrics accepts /metrics"
  cat "$T/promtool.out" >&2
fi
for m in process_cpu_seconds_total process_resident_memory_bytes process_virtual_memory_bytes \
  process_virtual_memory_max_bytes process_open_fds process_max_fds process_start_time_seconds \
  process_threads cprof_heap_inuse_bytes cprof_samples_total cprof_memory_bytes \
  cprof_serve_seconds_total; do
  check "/metrics has $m with HELP and TYPE" \
    bash -c "grep -q '^# HELP $m ' '$T/metrics.txt' && grep -q '^# TYPE $m ' '$T/metrics.txt' &&
             grep -Eq '^$m(\{[^}]*\})? ' '$T/metrics.txt'"
done
check "/metrics: context switches by kind" has "$T/metrics.txt" '^cprof_context_switches_total\{kind="voluntary"\} [0-9]+$'
check "/metrics: page faults by kind" has "$T/metrics.txt" '^cprof_page_faults_total\{kind="minor"\} [0-9]+$'

value() { awk -v m="$1" '$1 == m {print $2}' "$T/metrics.txt"; }
# near GOT WANT TOLERANCE: |GOT - WANT| <= TOLERANCE.
near() {
  python3 -c 'import sys; g, w, t = map(float, sys.argv[1:]); print("got %g want %g +- %g" % (g, w, t)); sys.exit(abs(g - w) > t)' "$@"
}
cpu_proc=$(python3 -c "print(($((stat[11])) + $((stat[12]))) / $hz)")
check "process_cpu_seconds_total agrees with utime+stime (1 s drift)" \
  near "$(value process_cpu_seconds_total)" "$cpu_proc" 1
check "process_resident_memory_bytes agrees with VmRSS (10%)" \
  near "$(value process_resident_memory_bytes)" $((rss_kb * 1024)) $((rss_kb * 1024 / 10))
# The scrape's own connection thread may come and go: one or two either way.
check "process_threads agrees with the task count" near "$(value process_threads)" "$tasks" 2
check "process_open_fds agrees with /proc/PID/fd" near "$(value process_open_fds)" "$fds" 2
check "process_max_fds is RLIMIT_NOFILE" \
  [ "$(value process_max_fds)" = "$(awk '/^Max open files/ {print $4}' /proc/"$PID"/limits)" ]
starttime=$(python3 -c "
import os
btime = int([l.split()[1] for l in open('/proc/stat') if l.startswith('btime')][0])
print(btime + $((stat[19])) / os.sysconf('SC_CLK_TCK'))")
check "process_start_time_seconds is the process's start" \
  near "$(value process_start_time_seconds)" "$starttime" 1

# ---- /debug/charts/data ----
# The first point is taken at start, then one a second: wait for two.
for _ in $(seq 1 100); do
  http "http://$ADDR/debug/charts/data" >/dev/null
  python3 -c 'import json, sys; sys.exit(len(json.load(open(sys.argv[1]))["t"]) < 3)' "$T/body" 2>/dev/null && break
  sleep 0.1
done
code=$(http "http://$ADDR/debug/charts/data")
cp "$T/body" "$T/charts.json"
check "/debug/charts/data: 200" [ "$code" = 200 ]
check "/debug/charts/data: application/json" grep -qi '^content-type: application/json' "$T/headers"
if python3 - "$T/charts.json" <<'PY'; then pass "/debug/charts/data has the documented format"; else fail "/debug/charts/data has the documented format"; fi
import json, sys
d = json.load(open(sys.argv[1]))
want = ["cpu_user_pct", "cpu_system_pct", "rss_bytes", "rss_peak_bytes", "vm_bytes",
        "heap_inuse_bytes", "alloc_bytes_per_s", "threads", "open_fds",
        "ctx_voluntary_per_s", "ctx_involuntary_per_s", "faults_minor_per_s",
        "faults_major_per_s", "read_bytes_per_s", "write_bytes_per_s",
        "cprof_samples_per_s", "cprof_dropped_per_s", "cprof_memory_bytes",
        "cprof_serve_ms_per_s"]
assert d["interval_ms"] == 1000 and d["window_s"] == 600, d
assert isinstance(d["start_ms"], int) and d["start_ms"] > 1e12
t = d["t"]
assert len(t) >= 2, t
assert all(a < b for a, b in zip(t, t[1:])), t
assert t[0] >= d["start_ms"]
assert sorted(d["series"]) == sorted(want), sorted(d["series"])
for k, v in d["series"].items():
    assert len(v) == len(t), (k, len(v), len(t))
    assert all(x is None or (isinstance(x, (int, float)) and x >= 0) for x in v), (k, v)
assert all(x > 0 for x in d["series"]["rss_bytes"])
assert all(x >= 4 for x in d["series"]["threads"])  # the program's five, and ours
# The spinner burns a core: the CPU series after the first point show it.
assert max(d["series"]["cpu_user_pct"][1:]) > 20, d["series"]["cpu_user_pct"]
PY
last=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["t"][-1])' "$T/charts.json")
http "http://$ADDR/debug/charts/data?since=$last" >/dev/null
check "since=: only newer points" \
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(not all(x > int(sys.argv[2]) for x in d["t"]))' "$T/body" "$last"
check "since=garbage: 400" [ "$(http "http://$ADDR/debug/charts/data?since=x")" = 400 ]
http "http://$ADDR/debug/pprof/" >/dev/null
check "the index links /metrics" has "$T/body" "href='../../metrics'"
stop

# ---- across cprof_stop, cprof_start and fork ----
run restart -- "$P/metrics_restart"
if [ "$(cat "$T/restart.rc")" = 0 ]; then
  pass "the sampler stops with cprof_stop, starts again on a fresh ring, and a forked child's is its own"
else
  fail "the sampler across cprof_stop, cprof_start and fork"
  cat "$T/restart.out" "$T/restart.err" >&2
fi

# ---- behind the prefix and the credentials, as everything ----
start guarded --ready LD_PRELOAD="$LIB" CPROF_PREFIX=/ops CPROF_TOKEN=tok123 -- "$P/stacks_plain"
check "prefix: /metrics is not served outside it" [ "$(http "http://$ADDR/metrics" -H 'Authorization: Bearer tok123')" = 404 ]
check "prefix: no credentials, 401" [ "$(http "http://$ADDR/ops/metrics")" = 401 ]
check "prefix: /ops/metrics with the token" [ "$(http "http://$ADDR/ops/metrics" -H 'Authorization: Bearer tok123')" = 200 ]
check "prefix: /ops/debug/charts/data with the token" \
  [ "$(http "http://$ADDR/ops/debug/charts/data" -H 'Authorization: Bearer tok123')" = 200 ]
stop

# ---- CPROF_METRICS=0 ----
start off --ready LD_PRELOAD="$LIB" CPROF_METRICS=0 -- "$P/stacks_plain"
code=$(http "http://$ADDR/metrics")
check "CPROF_METRICS=0: /metrics 404" [ "$code" = 404 ]
check "CPROF_METRICS=0: /metrics says why" has "$T/body" 'metrics sampler is off'
code=$(http "http://$ADDR/debug/charts/data")
check "CPROF_METRICS=0: /debug/charts/data 404" [ "$code" = 404 ]
check "CPROF_METRICS=0: no cprof-metrics thread" bash -c "! grep -qx cprof-metrics /proc/$PID/task/*/comm"
check "CPROF_METRICS=0: the server still runs" [ "$(http "http://$ADDR/debug/pprof/")" = 200 ]
stop

# ---- a bad setting: one line, and the default ----
start bad --ready LD_PRELOAD="$LIB" CPROF_METRICS_INTERVAL=fast -- "$P/stacks_plain"
check "a bad CPROF_METRICS_INTERVAL is one line on stderr" has "$T/bad.err" '^cprof: CPROF_METRICS_INTERVAL="fast": expected a duration'
http "http://$ADDR/debug/charts/data" >/dev/null
check "a bad CPROF_METRICS_INTERVAL: the default interval" has "$T/body" '"interval_ms":1000,'
stop
finish

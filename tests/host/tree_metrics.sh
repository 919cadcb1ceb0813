# Issue 31: the charts and /metrics of a process tree. A prefork master
# (programs/prefork.c) under cprof forks 3 busy workers; the master owns
# the address, and its metrics sampler reads every process of the tree
# from /proc/PID (the workers run no sampler and are never asked):
# - /metrics keeps process_* as the master's own and adds
#   cprof_tree_processes, the sums, and per-process series labelled with
#   each worker's pid and name: a busy worker's CPU time is above 0;
#   promtool accepts it all;
# - /debug/charts/data has a "tree" member: the totals and a series per
#   process, each as long as its t, a busy worker's cores above 0;
# - a worker killed stops its series (gone from /metrics, the tree one
#   process smaller);
# - a process that forks nothing shows no tree, in either.
. "$(dirname "$0")/../integration/lib.sh"
PREFORK=$B/tests/host/host_prefork
command -v promtool >/dev/null ||
  skip "promtool is missing (Debian package prometheus: scripts/install-deps.sh test)"

start tree LD_PRELOAD="$LIB" -- "$PREFORK" 3 busy 120
MASTER=$PID
prefork_workers tree 3
echo "master $MASTER, workers ${W[*]}"
check "the master printed 3 workers" test "${#W[@]}" = 3

# Every worker in /metrics (each joins the tree about 100 ms after its
# fork; the sampler lists the tree every second), then two more points so
# that the charts have a rate for each.
for _ in $(seq 1 100); do
  http "http://$ADDR/metrics" >/dev/null
  has "$T/body" '^cprof_tree_processes 4$' && break
  sleep 0.1
done
sleep 2.2
http "http://$ADDR/metrics" >/dev/null
cp "$T/body" "$T/metrics.txt"
grep '^cprof_tree_' "$T/metrics.txt" | head -20 || true

if promtool check metrics <"$T/metrics.txt" >"$T/promtool.out" 2>&1; then
  pass "promtool check metrics accepts the tree's /metrics"
else
  cat "$T/promtool.out"
  fail "promtool check metrics accepts the tree's /metrics"
fi
check "cprof_tree_processes: the master and 3 workers" has "$T/metrics.txt" '^cprof_tree_processes 4$'
check "process_* stays the master's own: one process_resident_memory_bytes, no label" \
  test "$(grep -c '^process_resident_memory_bytes [0-9]' "$T/metrics.txt")" = 1
for fam in processes resident_memory_bytes threads process_cpu_seconds_total \
  process_resident_memory_bytes process_threads process_page_faults_total; do
  check "cprof_tree_$fam has HELP and TYPE" bash -c \
    "grep -q '^# HELP cprof_tree_$fam ' '$T/metrics.txt' && grep -q '^# TYPE cprof_tree_$fam ' '$T/metrics.txt'"
done
check "the master's own series, by its pid" \
  has "$T/metrics.txt" "^cprof_tree_process_resident_memory_bytes\{pid=\"$MASTER\",name=\"host_prefork\"\} [1-9]"
for w in "${W[@]}"; do
  cpu=$(sed -n "s/^cprof_tree_process_cpu_seconds_total{pid=\"$w\",name=\"host_prefork\",kind=\"user\"} //p" \
    "$T/metrics.txt")
  echo "worker $w: ${cpu:-no} user CPU seconds"
  check "worker $w (busy): its CPU time is above 0" \
    python3 -c "import sys; sys.exit(0 if float(sys.argv[1] or 0) > 0 else 1)" "${cpu:-0}"
  check "worker $w: resident memory and threads, by its pid and name" bash -c \
    "grep -Eq '^cprof_tree_process_resident_memory_bytes\{pid=\"$w\",name=\"host_prefork\"\} [1-9]' '$T/metrics.txt' &&
     grep -Eq '^cprof_tree_process_threads\{pid=\"$w\",name=\"host_prefork\"\} [1-9]' '$T/metrics.txt'"
done
rss_sum=$(sed -n 's/^cprof_tree_process_resident_memory_bytes{[^}]*} //p' "$T/metrics.txt" | paste -sd+ | bc || true)
check "cprof_tree_resident_memory_bytes is the sum of the processes'" \
  has "$T/metrics.txt" "^cprof_tree_resident_memory_bytes ${rss_sum:-none}$"

# The charts' data.
http "http://$ADDR/debug/charts/data" >/dev/null
cp "$T/body" "$T/charts.json"
check "charts data: the tree's totals and a series per process" python3 - "$T/charts.json" "$MASTER" "${W[@]}" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
master, workers = int(sys.argv[2]), [int(w) for w in sys.argv[3:]]
tree = d.get("tree")
ok = True
def want(what, cond, got=""):
    global ok
    print(("ok   " if cond else "FAIL ") + what, "" if cond else got)
    ok = ok and bool(cond)
want("a tree member", isinstance(tree, dict), list(d))
if not isinstance(tree, dict):
    sys.exit(1)
n = len(tree["t"])
want("its points are the process's points' times", n >= 2 and set(tree["t"]) <= set(d["t"]), n)
want("the owner is the master", tree["owner"] == master, tree["owner"])
tot = tree["totals"]
for k in ("processes", "cpu_cores", "rss_bytes", "threads"):
    want("totals." + k + ": one entry per point", len(tot.get(k, [])) == n)
want("totals.processes: 4 at the last point", tot["processes"][-1] == 4, tot["processes"][-3:])
want("totals.cpu_cores: 3 busy workers use some", tot["cpu_cores"][-1] > 0.2, tot["cpu_cores"][-3:])
want("totals.rss_bytes above 1 MB", tot["rss_bytes"][-1] > 1 << 20, tot["rss_bytes"][-1])
by = {p["pid"]: p for p in tree["processes"]}
want("the master first", tree["processes"][0]["pid"] == master, list(by))
for w in workers + [master]:
    p = by.get(w)
    want("process %d has series" % w, p is not None, list(by))
    if not p:
        continue
    want("process %d: its name" % w, p["name"] == "host_prefork", p["name"])
    for k in ("cpu_cores", "rss_bytes", "threads"):
        want("process %d: %s, one entry per point" % (w, k), len(p[k]) == n)
    if w != master:
        want("worker %d (busy): cores above 0 at the last point" % w,
             (p["cpu_cores"][-1] or 0) > 0, p["cpu_cores"][-3:])
    want("process %d: resident memory and threads" % w,
         (p["rss_bytes"][-1] or 0) > 0 and (p["threads"][-1] or 0) >= 1)
s = sum(p["rss_bytes"][-1] or 0 for p in tree["processes"])
want("totals.rss_bytes is the processes' sum", tot["rss_bytes"][-1] == s, [tot["rss_bytes"][-1], s])
sys.exit(0 if ok else 1)
PY

# A worker killed: its series stop.
kill -9 "${W[0]}"
for _ in $(seq 1 50); do
  http "http://$ADDR/metrics" >/dev/null
  has "$T/body" '^cprof_tree_processes 3$' && break
  sleep 0.1
done
check "a worker killed: the tree is 3 processes" has "$T/body" '^cprof_tree_processes 3$'
check "a worker killed: no series of it in /metrics" bash -c "! grep -q 'pid=\"${W[0]}\"' '$T/body'"
http "http://$ADDR/debug/charts/data" >/dev/null
check "a worker killed: its charts series ends (null at the last point)" python3 -c "
import json, sys
t = json.load(open(sys.argv[1]))['tree']
p = [p for p in t['processes'] if p['pid'] == int(sys.argv[2])]
sys.exit(0 if p and p[0]['rss_bytes'][-1] is None and any(v for v in p[0]['rss_bytes']) else 1)" \
  "$T/body" "${W[0]}"
stop "$MASTER"

# One process, no tree: nothing of the tree anywhere.
start single LD_PRELOAD="$LIB" -- sleep 30
sleep 1.2
http "http://$ADDR/metrics" >/dev/null
check "a single process: its /metrics has no cprof_tree_" bash -c "! grep -q cprof_tree_ '$T/body'"
http "http://$ADDR/debug/charts/data" >/dev/null
check "a single process: its charts data has no tree" python3 -c "
import json, sys; sys.exit('tree' in json.load(open(sys.argv[1])))" "$T/body"
stop
finish

# /debug/pprof/trace: the execution trace as Chrome Trace Event JSON, on a
# program whose timeline is known (programs/trace_target.c): the JSON
# parses; every event has ph, ts, pid, tid and name (dur for complete
# events); each region sits on its thread with the duration the program
# measured, within 10 %; the task begins on one thread and ends on another
# with one id; the logs, a mutex wait on the program's mutex and the thread
# names of the threads that recorded are there; the CPU samples of the
# thread that computes name the function it computes in, and the sleeping
# threads have next to none; the RSS and heap counter tracks are there; a
# second trace at once is Go's 500; bad seconds are a 400; gzip when asked
# and plain when not; the index lists it.
. "$(dirname "$0")/lib.sh"
P=$B/tests/integration

start trace --ready LD_PRELOAD="$LIB" -- "$P/trace_target" 8
curl -s -o "$T/trace.json" -D "$T/trace.headers" -w '%{http_code}' \
  "http://$ADDR/debug/pprof/trace?seconds=2" >"$T/trace.code" &
CURL=$!
sleep 0.5
code=$(http "http://$ADDR/debug/pprof/trace?seconds=1")
check "a second trace at once: 500" [ "$code" = 500 ]
check "with Go's message" has "$T/body" '^Could not enable tracing: tracing is already enabled$'
wait $CURL
check "trace: 200" [ "$(cat "$T/trace.code")" = 200 ]
check "application/json" has "$T/trace.headers" '^Content-Type: application/json'
check "named trace.json" has "$T/trace.headers" 'filename="trace.json"'
check "plain when gzip is not asked for" eval '! has "$T/trace.headers" "^Content-Encoding"'

sleep 0.5 # the program's last regions of the trace are printed
check "the trace is what the program did" python3 - "$T/trace.json" "$T/trace.out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
ok = True
def need(cond, what):
    global ok
    print(("ok  " if cond else "BAD ") + what)
    ok = ok and bool(cond)
# No displayTimeUnit: Perfetto would take it for the unit of ts.
need("displayTimeUnit" not in d and d["otherData"]["dropped"] == 0, "no displayTimeUnit, nothing dropped")
bad = [e for e in ev if not all(k in e for k in ("ph", "ts", "pid", "tid", "name"))
       or (e["ph"] == "X" and "dur" not in e)]
need(ev and not bad, "%d events, each with ph ts pid tid name (dur for X): %s" % (len(ev), bad[:2]))
names = {e["tid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
need({"regions", "task-a", "task-b", "contender", "brief"} <= set(names.values()), "thread names %s" % sorted(set(names.values())))
start, length = d["otherData"]["start_ns"], d["otherData"]["duration_us"]
# Every region the program printed that lay inside the trace: on its
# thread, at its time, with its duration within 10 %.
printed = [l.split() for l in open(sys.argv[2]) if l.startswith("region ")]
xs = [e for e in ev if e["ph"] == "X" and e.get("cat") == "region"]
matched = 0
for _, name, tid, b, dur in printed:
    ts = (int(b) - start) / 1000.0
    if ts < 1000 or ts + int(dur) / 1000.0 > length - 1000:
        continue # near an edge of the trace
    hit = [e for e in xs if e["tid"] == int(tid) and e["name"] == name and abs(e["ts"] - ts) < 2000]
    good = len(hit) == 1 and abs(hit[0]["dur"] - int(dur) / 1000.0) <= 0.1 * int(dur) / 1000.0
    need(good, "region %s on %s at %.0f us, %.1f ms as printed: %s" % (name, tid, ts, int(dur) / 1e6, hit))
    matched += good
need(matched >= 10, "%d regions matched" % matched)
inner = [e for e in xs if e["name"] == "inner" and "args" not in e]
outer = [e for e in xs if e["name"] == "outer" and "args" not in e]
need(any(o["ts"] <= i["ts"] and i["ts"] + i["dur"] <= o["ts"] + o["dur"] for o in outer for i in inner), "inner nested in outer")
begins = {e["id"]: e for e in ev if e["ph"] == "b" and e["cat"] == "task"}
ends = [e for e in ev if e["ph"] == "e" and e["cat"] == "task" and e["id"] in begins]
need(ends and all(names[begins[e["id"]]["tid"]] == "task-a" and names[e["tid"]] == "task-b" and e["name"] == "job" for e in ends),
     "%d tasks begun on task-a, ended on task-b, one id each" % len(ends))
logs = [e for e in ev if e["ph"] == "i" and e.get("cat") == "log"]
need(len(logs) >= 10 and all(e["s"] == "t" and e["args"]["category"] == "loop" and e["args"]["message"].startswith("iteration ") for e in logs), "%d logs" % len(logs))
mutex = [l.split()[1] for l in open(sys.argv[2]) if l.startswith("mutex ")][0]
waits = [e for e in ev if e["ph"] == "X" and e.get("cat") == "lock" and e["args"]["lock"] == mutex and names.get(e["tid"]) == "contender"]
# The holder keeps it 30 ms at a time: a wait is at most that, and what a
# loaded machine adds before the contender runs again (bounded at 100 ms).
need(len(waits) >= 5 and all(0 < e["dur"] <= 100000 for e in waits), "%d waits of contender on mutex %s" % (len(waits), mutex))
# A thread starts with its creator's name (it names itself later).
starts = [e for e in ev if e["ph"] == "i" and e["name"] == "thread start" and names.get(e["tid"]) == "brief"]
exits = [e for e in ev if e["ph"] == "i" and e["name"] == "thread exit" and e["args"]["name"] == "brief"]
need(len(starts) >= 3 and len(exits) >= 3, "threads brief: %d starts, %d exits" % (len(starts), len(exits)))
# CPU samples: instant events with their stacks, on the thread that ran.
cpu = [e for e in ev if e["ph"] == "i" and e.get("cat") == "cpu"]
burner = [e for e in cpu if names.get(e["tid"]) == "burner"]
hot = [e for e in burner if e["name"] == "burn" and e["args"]["stack"][0] == "burn" and "burner" in e["args"]["stack"]]
# burner computes half of the 2 s: about 100 samples at 100 Hz.
need(len(burner) >= 30 and len(hot) >= 0.9 * len(burner), "%d CPU samples of burner, %d in burn" % (len(burner), len(hot)))
sleepers = [e for e in cpu if names.get(e["tid"]) in ("holder", "task-a", "task-b")]
need(len(sleepers) <= 0.1 * len(burner), "%d CPU samples of the threads that sleep" % len(sleepers))
need(all(0 <= e["ts"] <= length for e in cpu), "every CPU sample inside the trace")
need(d["otherData"]["cpu_samples"] == "recorded by the trace", "cpu_samples: %s" % d["otherData"]["cpu_samples"])
# The program's heap is small: the heap profile's estimate may be 0.
for track, least in (("RSS", 1 << 20), ("heap in use", 0)):
    points = [e for e in ev if e["ph"] == "C" and e["name"] == track]
    need(len(points) >= 10 and all(e["args"]["bytes"] >= least for e in points), "%d points of the %s counter" % (len(points), track))
sys.exit(0 if ok else 1)
PY

# While a CPU profile runs, the trace takes its samples.
curl -s -o "$T/cpu.pb.gz" "http://$ADDR/debug/pprof/profile?seconds=2" &
CURL=$!
sleep 0.3
check "trace during a CPU profile: 200" eval '[ "$(http "http://$ADDR/debug/pprof/trace?seconds=1")" = 200 ]'
wait $CURL
check "its CPU samples come from the CPU profile and name burn" python3 - "$T/body" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
cpu = [e for e in d["traceEvents"] if e["ph"] == "i" and e.get("cat") == "cpu" and e["name"] == "burn"]
print(d["otherData"]["cpu_samples"], len(cpu))
sys.exit(0 if d["otherData"]["cpu_samples"] == "from the CPU profile already running" and len(cpu) >= 10 else 1)
PY
check "and the CPU profile is whole: go tool pprof reads burn in it" eval 'pprof -top "$T/cpu.pb.gz" | grep -q " burn$"'

code=$(http "http://$ADDR/debug/pprof/trace?seconds=0.5" --compressed)
check "trace?seconds=0.5 with --compressed: 200, gzipped" eval '[ "$code" = 200 ] && has "$T/headers" "^Content-Encoding: gzip"'
check "and it parses" python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$T/body"

for q in seconds=0 seconds=-1 seconds=x seconds=1e9 seconds=61 seconds=nan; do
  check "trace?$q: 400" eval '[ "$(http "http://$ADDR/debug/pprof/trace?$q")" = 400 ]'
done
check "with the reason" has "$T/body" '^invalid value for "seconds" - must be a number greater than 0 and at most 60$'
http "http://$ADDR/debug/pprof/" >/dev/null
check "the index lists trace" has "$T/body" "href='trace\\?seconds=1'>trace<"

await trace
check "exit 0" rc_is trace 0

# A program linked with -lcprof marks its work through cprof.h's macros,
# which test the listening word in the program: a copy of it, when the
# linker made a copy relocation, which must be the word the library sets.
# The demo marks regions, tasks and logs so (examples/demo_server.c).
start demo -- "$B/examples/demo_server" --seconds 20
check "demo: trace?seconds=1 is 200" eval '[ "$(http "http://$ADDR/debug/pprof/trace?seconds=1")" = 200 ]'
check "demo: its regions and tasks, marked through the macros, are in the trace" \
  python3 - "$T/body" <<'PY'
import collections, json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
names = collections.Counter(e["name"] for e in ev if e.get("cat") in ("region", "task"))
print(dict(names))
sys.exit(0 if names["checksum"] and names["sort"] and names["critical section"] and names["refill"] else 1)
PY
stop
finish

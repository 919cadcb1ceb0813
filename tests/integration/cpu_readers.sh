# Issue 32: one CPU recording, many readers. Against one program with a
# known CPU split (bench/cpu/split.c, the CPU accuracy benchmark's
# workload: work_60, work_30 and work_10 interleaved in rounds of a few ms,
# its truth measured with each thread's CPU clock, the same in any window
# of a second or more), three /debug/pprof/profile requests of 5, 3 and
# 2 seconds started 0.5 s apart, two /debug/pprof/wall requests of 3 and
# 2 seconds and a trace all run at once and all answer 200; meanwhile a
# CPU or wall profile asking for another rate gets 409 naming the running
# one, and one asking for the running rate 200. Each CPU profile, read by go tool
# pprof, holds the true split, lasts its own seconds within 5 %
# (duration_nanos), and starts when it was asked (time_nanos in the order
# of the requests); and as the 2 s window lies inside the 3 s one, which
# lies inside the 5 s one, each function's samples only grow from the
# shorter to the longer: a reader holds the samples of its own window, no
# more (this is exact, whatever the sampling noise). Each wall profile
# lasts its own seconds, and the working thread stands for them. Last, a
# 17th concurrent CPU profile gets 503, the 16 before it 200.
#
# How near the true split: within 2 percentage points, or within 3.5
# standard errors of the profile's own sample count where that is wider.
# The kernel checks CPU timers at its tick (CONFIG_HZ, 250 here), so one
# working thread gets at most 250 signals a second whatever the rate: a
# 2 s window is about 500 samples, whose standard error for a 60 % share
# is 2.2 points (bench/cpu/accuracy.sh measures the bias, on 12 s). 250 Hz
# then makes one sample one signal. The split's rounds vary their order so
# the ticks do not lock onto one function.
. "$(dirname "$0")/lib.sh"

P=$B/tests/integration
# Seven requests at once with the default CPROF_MAX_PROFILES (4): CPU and
# wall profiles take no slot, only the trace does.
start split LD_PRELOAD="$LIB" CPROF_CPU_HZ=250 -- \
  "$P/cpu_split" 7 --wait-ms 300 --until-ms 9000
U=http://$ADDR/debug/pprof

# fetch NAME URL: in the background, the body to $T/NAME, the status to $T/NAME.code.
fetch() { curl -s -m 30 -o "$T/$1" -w '%{http_code}' "$2" >"$T/$1.code" & }

sleep 0.5
fetch p5 "$U/profile?seconds=5"
sleep 0.5
fetch p3 "$U/profile?seconds=3"
fetch wall3 "$U/wall?seconds=3"
sleep 0.5
fetch p2 "$U/profile?seconds=2"
fetch wall "$U/wall?seconds=2"
sleep 0.3
fetch trace "$U/trace?seconds=1"
# The wall recording runs at the default 50 Hz: another rate is refused.
code=$(http "$U/wall?seconds=1&hz=100")
check "a wall profile at another rate meanwhile: 409 ($code)" [ "$code" = 409 ]
check "... naming the running rate" has "$T/body" 'already records at 50 Hz'
code=$(http "$U/profile?seconds=1&hz=100")
check "a CPU profile at another rate meanwhile: 409 ($code)" [ "$code" = 409 ]
check "... naming the running rate" has "$T/body" 'records at 250 Hz'
code=$(http "$U/profile?seconds=1&hz=250")
check "one at the running rate, said: 200 ($code)" [ "$code" = 200 ]
for job in $(jobs -p); do
  [ "$job" = "$PID" ] || wait "$job" || true
done
for r in p5 p3 p2 wall3 wall trace; do
  code=$(cat "$T/$r.code")
  check "$r: HTTP 200 ($code)" [ "$code" = 200 ]
  [ "$code" = 200 ] || head -c 300 "$T/$r" >&2
done
await split
check "the program ended well" rc_is split 0
grep '^truth' "$T/split.out" >&2 || true

# Each profile: go tool pprof reads it; its split against the truth.
for r in p5 p3 p2; do
  pprof -top -nodecount=1000 "$T/$r" >"$T/$r.top" || fail "$r: go tool pprof -top"
  pprof -raw "$T/$r" >"$T/$r.raw" || fail "$r: go tool pprof -raw"
  check "$r: the split near the truth" python3 - "$T/$r.top" "$T/split.out" "$T/$r.raw" <<'PY'
import math, re, sys
top, out, raw = open(sys.argv[1]).read(), open(sys.argv[2]).read(), open(sys.argv[3]).read()
truth = {m.group(1): float(m.group(2)) for m in re.finditer(r'^truth (\S+) \d+ ([\d.]+)$', out, re.M)}
# -top's columns: flat flat% sum% cum cum% name; the work is in unit_kernel,
# so each function's share is its cum.
cum = {}
for m in re.finditer(r'^\s*\S+\s+[\d.]+%\s+[\d.]+%\s+\S+\s+([\d.]+)%\s+(work_\d+)$', top, re.M):
    cum[m.group(2)] = float(m.group(1))
total = sum(cum.values())
# The samples (-raw: "COUNT NANOS: pcs"), of the work's and all.
n = sum(int(m.group(1)) for m in re.finditer(r'^\s*(\d+)\s+\d+:', raw, re.M)) * total / 100
ok = len(truth) == 3 and n > 0
for fn in ("work_60", "work_30", "work_10"):
    t = truth.get(fn, -100)
    got = 100 * cum.get(fn, 0) / total if total else 0
    bound = max(2.0, 3.5 * 100 * math.sqrt(max(t, 1) / 100 * (1 - max(t, 1) / 100) / max(n, 1)))
    print("%s truth %.2f%% profile %.2f%% (%.0f samples: within %.1f points)" % (fn, t, got, n, bound))
    ok = ok and abs(got - t) <= bound
sys.exit(0 if ok else 1)
PY
done
check "nested windows: each function's samples grow from 2 s to 3 s to 5 s" python3 - \
  "$T/p2.top" "$T/p3.top" "$T/p5.top" <<'PY'
import re, sys
def counts(path):
    # cum in samples: -top prints it with its unit, the profile's cpu time.
    c = {}
    for m in re.finditer(r'^\s*\S+\s+[\d.]+%\s+[\d.]+%\s+([\d.]+)(ms|s)\s+[\d.]+%\s+(work_\d+)$', open(path).read(), re.M):
        c[m.group(3)] = float(m.group(1)) / (1000 if m.group(2) == 'ms' else 1)
    return c
a, b, c = (counts(p) for p in sys.argv[1:])
print("2 s", a, "3 s", b, "5 s", c)
fns = ("work_60", "work_30", "work_10")
sys.exit(0 if all(0 < a.get(f, 0) <= b.get(f, 0) <= c.get(f, 0) for f in fns) else 1)
PY

# time_nanos and duration_nanos, read from the profiles themselves
# (profile.proto fields 9 and 10, varints at the top level).
cat >"$T/nanos.py" <<PY
import sys
sys.path.insert(0, "$CPROF_SOURCE_DIR/tests/integration")
from profile_fields import top_fields
ok, starts = True, []
args = sys.argv[1:]
for path, secs in zip(args[::2], map(int, args[1::2])):
    f = top_fields(path)
    t, d = f.get(9, 0), f.get(10, 0)
    print("%ss: time_nanos %d duration %.3f s" % (secs, t, d / 1e9))
    ok = ok and abs(d / 1e9 - secs) <= 0.05 * secs
    starts.append(t)
print("started", ", ".join("%.3f s" % ((b - a) / 1e9) for a, b in zip(starts, starts[1:])), "apart")
sys.exit(0 if ok and 0 < starts[0] and all(a < b for a, b in zip(starts, starts[1:])) else 1)
PY
check "each CPU profile lasts its own seconds within 5 %; they start in the order asked" \
  python3 "$T/nanos.py" "$T/p5" 5 "$T/p3" 3 "$T/p2" 2
check "each wall profile too" python3 "$T/nanos.py" "$T/wall3" 3 "$T/wall" 2

# The wall profile and the trace beside them.
for r in wall3 wall; do
  pprof -top "$T/$r" >"$T/$r.top" || fail "$r: go tool pprof -top"
  check "$r: a wall profile of the work" eval 'has "$T/$r.top" "^Type: wall$" && has "$T/$r.top" " work_60$"'
done
for r in wall3 wall; do pprof -tags "$T/$r" >"$T/$r.tags" || fail "$r: go tool pprof -tags"; done
check "each wall profile's working thread (cpu_split) stands for its own seconds, within 5 %" \
  python3 - "$T/wall3.tags" 3 "$T/wall.tags" 2 <<'PY'
import re, sys
args, ok = sys.argv[1:], True
for path, secs in zip(args[::2], map(int, args[1::2])):
    text = open(path).read()
    block = text.split(" thread:", 1)[1].split("\n\n", 1)[0] if " thread:" in text else ""
    got = {name: float(v) / (1000 if unit == "ms" else 1)
           for v, unit, name in re.findall(r'([\d.]+)(ms|s) \( *[\d.]+%\): (\S+)', block)}
    print(path.rsplit("/", 1)[1], got)
    ok = ok and abs(got.get("cpu_split", 0) - secs) <= 0.05 * secs
sys.exit(0 if ok else 1)
PY
check "trace: its CPU samples from the running recording, naming the work" python3 - "$T/trace" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
cpu = [e for e in d["traceEvents"] if e["ph"] == "i" and e.get("cat") == "cpu" and e["name"] == "unit_kernel"]
print(d["otherData"]["cpu_samples"], len(cpu))
sys.exit(0 if d["otherData"]["cpu_samples"] == "from the CPU profile already running" and len(cpu) >= 10 else 1)
PY

# Sixteen readers at most: a seventeenth CPU profile gets 503 saying so,
# and the sixteen all answer. (Room for that many connections from one
# address; they take no CPROF_MAX_PROFILES slot.)
start many --ready LD_PRELOAD="$LIB" CPROF_MAX_CONNECTIONS_PER_IP=32 -- \
  "$P/cpu_target"
for i in $(seq 1 16); do
  curl -s -m 30 -o /dev/null -w '%{http_code}\n' "http://$ADDR/debug/pprof/profile?seconds=3" >"$T/many$i.code" &
done
sleep 1.5
code=$(http "http://$ADDR/debug/pprof/profile?seconds=1")
check "a 17th CPU profile at once: 503 ($code)" [ "$code" = 503 ]
check "... saying why" has "$T/body" '16 CPU profiles already record, the most at once'
for job in $(jobs -p); do
  [ "$job" = "$PID" ] || wait "$job" || true
done
check "the 16 all answered 200" [ "$(cat "$T"/many*.code | grep -c '^200$')" = 16 ]
code=$(http "http://$ADDR/debug/pprof/profile?seconds=1")
check "and then a profile answers again ($code)" [ "$code" = 200 ]
stop
finish

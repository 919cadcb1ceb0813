# /debug/pprof/wall: the wall-clock profile, on a program whose split is
# known (programs/wall_target.c): a thread that computes 3 ms and sleeps
# 7 ms, over and over, shows the share of its time it spent on a CPU
# within 2 points of what it measured itself over the very time profiled
# (CLOCK_THREAD_CPUTIME_ID against the clock: beside other tests on 2
# CPUs it waits for a CPU too, so the truth is measured in the same run;
# issue 28 saw 74-75 % asleep where it measured 67.6-70.4 %); threads asleep in
# clock_nanosleep, a condition variable and read(2) show where they wait,
# labelled with the call; the regions a thread is in are labels too; no sleep of the program ends early, since
# sleeping threads are never signalled; stacks of threads asleep in the same
# place are reused from tick to tick (the X-Cprof-Wall header says how
# many); go tool pprof reads it; bad parameters are a 400; the index lists
# it. With 1,000 threads, whose ticks cost the budget, the profile still
# covers the seconds asked (issue 28: seconds=3 gave a Duration of 2.16 s)
# within its budget of 2 % of a core (it used 4 %).
. "$(dirname "$0")/lib.sh"
P=$B/tests/integration

start wall --ready LD_PRELOAD="$LIB" -- "$P/wall_target" 12
code=$(http "http://$ADDR/debug/pprof/wall?seconds=6&hz=100")
check "wall: 200" [ "$code" = 200 ]
cp "$T/body" "$T/wall.pb.gz"
check "it is named wall" has "$T/headers" 'filename="wall"'
pprof -raw "$T/wall.pb.gz" >"$T/raw" || fail "go tool pprof -raw reads it"
check "sample types samples/count and wall/nanoseconds" has "$T/raw" '^ *samples/count wall/nanoseconds'
check "period type wall, in nanoseconds" has "$T/raw" '^PeriodType: wall nanoseconds$'

# The split thread: compute_part's share of its time, against the share it
# spent on a CPU by its own measure, over the profile's own time (the
# profile's time_nanos and duration_nanos, fields 9 and 10).
pprof -top -tagfocus=thread=split -unit=ms "$T/wall.pb.gz" >"$T/split" ||
  fail "go tool pprof -top -tagfocus=thread=split reads it"
check "the split thread's compute_part share is its share on a CPU, within 2 points" \
  python3 - "$T/wall.pb.gz" "$T/wall.out" "$T/split" <<'PY'
import gzip, re, sys
data = gzip.decompress(open(sys.argv[1], 'rb').read())
def varint(b, i):
    v = s = 0
    while True:
        c = b[i]; i += 1; v |= (c & 0x7f) << s; s += 7
        if c < 0x80: return v, i
fields, i = {}, 0
while i < len(data):
    key, i = varint(data, i)
    f, wt = key >> 3, key & 7
    if wt == 0: v, i = varint(data, i); fields[f] = v
    elif wt == 1: i += 8
    elif wt == 5: i += 4
    elif wt == 2: n, i = varint(data, i); i += n
t0, dur = fields[9], fields[10]
rows = [tuple(map(int, m.groups())) for m in
        re.finditer(r'^at (\d+) compute (\d+) sleep (\d+) cpu (\d+)$', open(sys.argv[2]).read(), re.M)]
def at(t):  # the program's totals at time t, between two of its lines
    for a, b in zip(rows, rows[1:]):
        if a[0] <= t <= b[0]:
            f = (t - a[0]) / (b[0] - a[0])
            return [x + f * (y - x) for x, y in zip(a[1:], b[1:])]
    sys.exit("the program's lines do not cover the profile's time")
a, b = at(t0), at(t0 + dur)
oncpu = 100 * (b[2] - a[2]) / dur
inpart = 100 * (b[0] - a[0]) / max((b[0] - a[0]) + (b[1] - a[1]), 1)
top = open(sys.argv[3]).read()
def cum(fn):
    m = re.search(r'^\s*(?:[\d.]+ms|0)\s+[\d.]+%\s+[\d.]+%\s+([\d.]+)ms\s+[\d.]+%\s+' + fn + r'$', top, re.M)
    return float(m.group(1)) if m else 0.0
c, s = cum("compute_part"), cum("sleep_part")
share = 100 * c / max(c + s, 1)
print("the program: on a CPU %.1f %% of the %.2f s profiled (%.1f %% of it in compute_part)"
      % (oncpu, dur / 1e9, inpart))
print("the profile: compute_part %.0f ms, sleep_part %.0f ms: %.1f %%" % (c, s, share))
sys.exit(0 if c + s > 0.9 * dur / 1e6 and abs(share - oncpu) <= 2 else 1)
PY

pprof -tags "$T/wall.pb.gz" >"$T/tags" || fail "go tool pprof -tags reads it"
for thread in split napper-1 napper-2 napper-3 waiter reader; do
  check "thread $thread is there, for about the 6 s sampled" \
    has "$T/tags" "^ +(5\.[5-9]|6\.[0-4])s \( *[0-9.]+%\): $thread$"
done
check "states running and sleeping" eval 'has "$T/tags" ": running$" && has "$T/tags" ": sleeping$"'
for call in clock_nanosleep futex read; do
  check "the call a thread waits in is a label: $call" has "$T/tags" ": $call$"
done
check "the split thread's regions are labels: compute and sleep" \
  python3 - "$T/tags" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
region = text.split(" region:", 1)[1].split("\n\n", 1)[0] if " region:" in text else ""
got = dict((name, float(v) / (1000 if unit == "ms" else 1))
           for v, unit, name in re.findall(r'([\d.]+)(ms|s) \( *[\d.]+%\): (\w+)', region))
print(got)
sys.exit(0 if got.get("compute", 0) > 0 and got.get("sleep", 0) > 0 else 1)
PY
pprof -top -tagfocus=thread=waiter "$T/wall.pb.gz" >"$T/waiter" || fail "pprof reads the waiter"
check "the waiter waits in wait_part" has "$T/waiter" ' wait_part$'
pprof -top -tagfocus=thread=reader "$T/wall.pb.gz" >"$T/reader" || fail "pprof reads the reader"
check "the reader waits in read_part" has "$T/reader" ' read_part$'

# What the sampling did: every tick at 100 Hz, most stacks reused.
check "X-Cprof-Wall says what the sampling did" \
  has "$T/headers" '^X-Cprof-Wall: hz=[0-9]+; ticks=[0-9]+; threads=[0-9]+; reused=[0-9]+; cpu_us=[0-9]+'
check "sleeping threads' stacks are reused from tick to tick, not unwound again" python3 - "$T/headers" <<'PY'
import re, sys
m = re.search(r'hz=(\d+); ticks=(\d+); threads=(\d+); reused=(\d+)', open(sys.argv[1]).read())
hz, ticks, threads, reused = map(int, m.groups())
print("hz", hz, "ticks", ticks, "threads", threads, "reused", reused)
sys.exit(0 if ticks >= 300 and reused >= threads // 2 else 1)
PY

# Bad parameters, and the index.
for q in hz=0 hz=251 hz=x seconds=0 seconds=3601; do
  check "wall?$q: 400" eval '[ "$(http "http://$ADDR/debug/pprof/wall?$q")" = 400 ]'
done
http "http://$ADDR/debug/pprof/" >/dev/null
check "the index lists wall, once, linking to its route" eval '[ "$(grep -c ">wall<" "$T/body")" = 1 ] && has "$T/body" "href='\''wall\\?seconds=30'\''>wall<"'

await wall
check "exit 0" rc_is wall 0
check "no nap of the sleeping threads ended early" has "$T/wall.out" '^naps [1-9][0-9]* early 0$'

# 1,000 threads more: the first tick unwinds every one, and each tick
# costs the budget. The answer comes no sooner than the seconds asked, the
# profile's Duration is those seconds, and the sampling thread's CPU time
# (X-Cprof-Wall) is within 2 % of them, with a quarter for what a tick
# costs varying from one to the next.
start crowd --ready LD_PRELOAD="$LIB" -- "$P/wall_target" 20 1000
took=$(curl -s -o "$T/crowd.pb.gz" -D "$T/crowd.headers" -w '%{time_total}' \
  "http://$ADDR/debug/pprof/wall?seconds=6")
grep X-Cprof-Wall "$T/crowd.headers" || true
echo "answered in $took s"
pprof -raw "$T/crowd.pb.gz" >"$T/crowd.raw" || fail "go tool pprof -raw reads the crowd's profile"
grep '^Duration' "$T/crowd.raw" || true
check "1,000 threads: the answer took the 6 s asked" python3 -c "import sys; sys.exit(float('$took') < 6)"
check "1,000 threads: the profile's Duration is the 6 s asked" has "$T/crowd.raw" '^Duration: 6(\.0[0-9]|s)$'
check "1,000 threads: the crowd is in it" eval 'pprof -top "$T/crowd.pb.gz" | grep -q " crowd_part$"'
check "1,000 threads: the sampling used at most 2 % of a core (and a quarter for ticks' costs)" \
  python3 - "$T/crowd.headers" <<'PY'
import re, sys
m = re.search(r'ticks=(\d+);.*cpu_us=(\d+)', open(sys.argv[1]).read())
ticks, cpu_us = int(m.group(1)), int(m.group(2))
print("ticks", ticks, "cpu", cpu_us / 1000, "ms:", "%.2f %%" % (cpu_us / 6e6 * 100))
sys.exit(0 if cpu_us <= 0.02 * 6e6 * 1.25 else 1)
PY
stop
finish

# /debug/pprof/wall: the wall-clock profile, on a program whose split is
# known (programs/wall_target.c): a thread that computes 30 % of its time
# and sleeps 70 % shows those shares within 5 points; threads asleep in
# clock_nanosleep, a condition variable and read(2) show where they wait,
# labelled with the call; the regions a thread is in are labels too; no sleep of the program ends early, since
# sleeping threads are never signalled; stacks of threads asleep in the same
# place are reused from tick to tick (the X-Cprof-Wall header says how
# many); go tool pprof reads it; bad parameters are a 400; the index lists
# it.
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

# The split thread: compute_part's and sleep_part's shares of its time.
pprof -top -tagfocus=thread=split -unit=ms "$T/wall.pb.gz" >"$T/split" ||
  fail "go tool pprof -top -tagfocus=thread=split reads it"
check "the split thread computes 30 % and sleeps 70 % of its time, within 5 points" \
  python3 - "$T/split" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
def cum(fn):
    m = re.search(r'^\s*(?:[\d.]+ms|0)\s+[\d.]+%\s+[\d.]+%\s+([\d.]+)ms\s+[\d.]+%\s+' + fn + r'$', text, re.M)
    return float(m.group(1)) if m else 0.0
c, s = cum("compute_part"), cum("sleep_part")
total = c + s
print("compute %.0f ms, sleep %.0f ms" % (c, s))
ok = total > 0 and abs(100 * c / total - 30) <= 5 and abs(100 * s / total - 70) <= 5
print("shares %.1f %% / %.1f %%" % (100 * c / max(total, 1), 100 * s / max(total, 1)))
sys.exit(0 if ok and total > 4000 else 1)
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
check "the split thread's regions are labels: compute about 1.8 s, sleep about 4.2 s" \
  python3 - "$T/tags" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
region = text.split(" region:", 1)[1].split("\n\n", 1)[0] if " region:" in text else ""
got = dict((name, float(v)) for v, name in re.findall(r'([\d.]+)s \( *[\d.]+%\): (\w+)', region))
print(got)
sys.exit(0 if 1.5 <= got.get("compute", 0) <= 2.1 and 3.9 <= got.get("sleep", 0) <= 4.5 else 1)
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
finish

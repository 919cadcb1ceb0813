# The CPU profile's CPU per thread against each thread's own CPU clock
# (issue 29, items 3 and 4): threads at low duty cycles lost the expiries
# still pending when the profile stopped (about a tick of each thread's
# CPU), and short-lived threads those pending at their exit, with their
# name ("?": looked up after they had gone); threads that block SIGPROF
# 400 times a second (toggle) those pending at each pause, and with each
# resume the schedule's phase: about all of their CPU with SIGPROF open.
# At 1000 Hz the sampling error
# of a total is a fraction of a percent (each thread's count is within a
# period of its expectation), so a 2 % bound tests the bias.
. "$(dirname "$0")/../integration/lib.sh"

P=$B/tests/host/host_cpu_truth
# profile NAME SECONDS HZ ARGS...: runs the program under a profile, its
# work inside the window, and compares the profile with its truth.
profile() {
  local name=$1 secs=$2 hz=$3
  shift 3
  start "$name" --ready LD_PRELOAD="$LIB" CPROF_CPU_HZ=$hz -- "$P" "$@" || {
    fail "$name: start"
    return
  }
  curl -sf -o "$T/$name.pb.gz" "http://$ADDR/debug/pprof/profile?seconds=$secs" &
  local curl=$!
  sleep 0.3
  kill -USR1 "$PID"
  wait "$curl" || fail "$name: fetch"
  stop
  go tool pprof -raw "$T/$name.pb.gz" >"$T/$name.raw" 2>/dev/null || fail "$name: pprof -raw"
  check "$name: CPU per thread as the threads' clocks say, no \"?\"" \
    python3 - "$T/$name.raw" "$T/$name.out" "$hz" <<'PY'
import math, re, sys
raw, out, hz = open(sys.argv[1]).read(), open(sys.argv[2]).read(), int(sys.argv[3])
truth = {m.group(1): int(m.group(2)) for m in re.finditer(r'^cpu (\S+) (\d+)', out, re.M)}
period = 1e9 / hz
# -raw: each sample "COUNT NS: pcs", its labels on the lines after it.
got, cur = {}, None
for l in raw.split('\n'):
    m = re.match(r'^\s*(\d+)\s+(\d+):', l)
    if m:
        cur = int(m.group(2))
        continue
    m = re.search(r'thread:\[(.*?)\]', l)
    if m and cur is not None:
        got[m.group(1)] = got.get(m.group(1), 0) + cur
        cur = None
# Each thread's count is within about a period of its expectation: a
# standard error of at most period/2 a thread. The bound is 2 %, or four
# standard errors where the samples are too few for 2 % to test bias.
def within(what, names):
    t = sum(truth[n] for n in names)
    g = sum(got.get(n, 0) for n in names)
    bound = max(0.02 * t, 4 * period / 2 * math.sqrt(len(names)))
    print("%s: %d threads, truth %.1f ms, profile %.1f ms (%+.1f %%, bound %.1f %%)"
          % (what, len(names), t / 1e6, g / 1e6, (g - t) / t * 100, bound / t * 100))
    return abs(g - t) <= bound
ok = within("all", list(truth))
if any(n.startswith('duty') for n in truth):
    light = sorted(truth, key=truth.get)[:len(truth) // 4]
    ok = within("lightest quarter", light) and ok
unnamed = got.get('?', 0)
print('"?": %.1f ms' % (unnamed / 1e6))
sys.exit(0 if ok and unnamed == 0 else 1)
PY
}

profile duty_2s 2 1000 duty 128 1400
profile duty_5s 5 1000 duty 128 4000
profile duty_2s_100hz 2 100 duty 128 1400
profile short5 2 1000 short 5 1400
profile short30 2 1000 short 30 1400
profile toggle 2 1000 toggle 8 1400
finish

# Issue 32's bar, strictly: three concurrent CPU profiles of different
# lengths and the collector's scrapes all succeed against one program, each
# within 2 percentage points of its window's true shares.
#
# The program: bench/cpu/split.c (work_60, work_30 and work_10, identical
# units interleaved in rounds of a few ms, so any window of a second or more
# has the split of the whole run; its truth measured with each thread's
# CPU clock), on one thread per CPU. Against it, with cprof's default
# limits, at once: /debug/pprof/profile for 20, 17 and 14 s (started 0.5 s
# apart) and `cprof collect` scraping every default profile (process_cpu,
# memory, block, mutex, goroutine) every 3 s. Every profile answers 200;
# no scrape fails (/targets, /metrics, /api/scrapes); each profile's split,
# and that of the collector's process_cpu profiles stored over the 20 s
# window (/api/merge?format=pprof, read by go tool pprof), is within 2
# points of the truth.
#
# Why these lengths: the kernel checks CPU timers at its tick (CONFIG_HZ,
# 250 here), so a thread on a CPU gets at most 250 signals a second
# whatever the rate (doc/internals.md); one thread per CPU on 2 CPUs gives
# at most 500 samples a second. For 2 points to be 3 standard errors of a
# 60 % share the window needs 9 * 0.6 * 0.4 / 0.02^2 = 5400 samples: the
# shortest profile, 14 s, has at most 7000 (6932 measured with the CPUs
# free, 5430-6290 beside a load average of 2; it runs alone in make test,
# tests/CMakeLists.txt).
# The test computes this from each window's own sample count and says
# loudly when the design did not give enough samples (a loaded machine:
# 3150-3750 at a load of 3 to 8), rather than passing on luck; likewise
# when the work had under 75 % of its CPUs, where late signals weighted by
# many periods make the count overstate the draws. At 250 Hz a sample is
# otherwise a signal. The
# collector's merged process_cpu holds about 0.8 times the 14 s window's
# samples (its 2 s scrapes every 3 s): held to 2 points, its count shown
# but not required.
#
# A busy machine (the two DESIGN cases) is not the library's fault: the
# whole test runs once more, from the start; a second busy run fails.
if [ -z "${CPU_CONCURRENT_TRY:-}" ]; then
  for try in 1 2; do
    rc=0
    CPU_CONCURRENT_TRY=$try bash "$0" "$@" || rc=$?
    [ "$rc" = 75 ] && [ "$try" = 1 ] || exit "$rc"
    echo "cpu_concurrent: the machine was too busy for the bar; once more" >&2
  done
fi
. "$(dirname "$0")/lib.sh"
command -v go >/dev/null || export PATH=$PATH:/usr/lib/go/bin
command -v go >/dev/null || skip "go is not installed"
C=$B/cprof
P=$B/tests/integration
HZ=250
THREADS=$(nproc)
[ "$THREADS" -ge 2 ] || THREADS=2
LENGTHS="20 17 14" # the first the longest: the others lie in its window
SE_NEEDED=3        # 2 points must be at least this many standard errors

# The work runs from the start to 23 s, past the profiles' ends (about
# 21.5 s), and the program serves until it is stopped.
start split LD_PRELOAD="$LIB" CPROF_CPU_HZ=$HZ -- \
  "$P/cpu_split" -r 1000000000 --threads "$THREADS" --stop-ms 23000 --until-ms 60000
S=$ADDR SPID=$PID
U=http://$S/debug/pprof

cat >"$T/parca.yaml" <<YAML
object_storage:
  bucket:
    type: "FILESYSTEM"
    config:
      directory: "$T/store"
scrape_configs:
  - job_name: "split"
    scrape_interval: "3s"
    static_configs:
      - targets: [ '$S' ]
YAML
check "the collector serves" start_collect c "$T/parca.yaml"
[ -n "$W" ] || finish

# fetch NAME URL: in the background, the body to $T/NAME, the status to $T/NAME.code.
fetch() { curl -s -m 60 -o "$T/$1" -w '%{http_code}' "$2" >"$T/$1.code" & }
sleep 1
FETCHES=()
for s in $LENGTHS; do
  fetch "p$s" "$U/profile?seconds=$s"
  FETCHES+=($!)
  sleep 0.5
done
wait "${FETCHES[@]}" || true
for s in $LENGTHS; do
  code=$(cat "$T/p$s.code")
  check "the ${s} s profile: HTTP 200 ($code)" [ "$code" = 200 ]
  [ "$code" = 200 ] || head -c 300 "$T/p$s" >&2
done

# The collector meanwhile: no scrape failed, of any profile.
http "http://$W/targets?format=json" >/dev/null
cp "$T/body" "$T/targets.json"
check "/targets: every profile of the target scraped, none failed, all Good" python3 - "$T/targets.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
ts = [t for x in j["jobs"] for t in x["targets"]]
for t in ts:
    print("  %-12s scrapes %d failures %d %s %s" % (t["profile"], t["scrapes"], t["failures"], t["health"], t.get("last_error") or ""))
names = {t["profile"] for t in ts}
ok = {"process_cpu", "memory", "block", "mutex", "goroutine"} <= names
ok = ok and all(t["failures"] == 0 and t["health"] == "Good" and t["scrapes"] >= 5 for t in ts)
sys.exit(0 if ok else 1)
PY
http "http://$W/metrics" >/dev/null
check "/metrics: cprof_collect_scrape_failures_total 0" has "$T/body" '^cprof_collect_scrape_failures_total 0$'
check "/metrics: no failures by reason" bash -c "! grep -q '^cprof_collect_target_scrape_failures_total{' '$T/body'"
http "http://$W/api/scrapes?job=split" >/dev/null
check "/api/scrapes: no failure, no transition" python3 -c \
  "import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if j['failures'] == [] and j['transitions'] == [] else 1)" "$T/body"
check "the collector's log counts no failure" bash -c "! grep -Eq '[1-9][0-9]* failed, ' '$T/c.err'"

# time_nanos and duration_nanos of a profile (profile.proto fields 9 and
# 10, varints at the top level): the 20 s window, for the collector's rows.
window=$(python3 "$CPROF_SOURCE_DIR/tests/integration/profile_fields.py" "$T/p${LENGTHS%% *}") || window="0 0"
read -r w0 w1 <<<"$window"
# A process_cpu row's time is its scrape's start, and it covers 2 s (the
# interval less one): the rows whose 2 s lie in the window.
to=$((w1 - 2000000000))
http "http://$W/api/profiles?job=split&type=process_cpu&from=$w0&to=$to" >/dev/null
nrows=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))))" "$T/body" 2>/dev/null || echo 0)
check "the collector stored $nrows process_cpu profiles inside the 20 s window (at least 5)" [ "$nrows" -ge 5 ]
code=$(curl -s -o "$T/collected" -w '%{http_code}' "http://$W/api/merge?job=split&type=process_cpu&from=$w0&to=$to&format=pprof")
check "the collector's process_cpu over the window, merged: HTTP 200 ($code)" [ "$code" = 200 ]

# The truth, printed once the work stopped (23 s).
for _ in $(seq 1 100); do has "$T/split.out" '^truth work_10 ' && break; sleep 0.1; done
check "the program printed its truth" has "$T/split.out" '^truth work_10 '
grep -E '^(split|truth)' "$T/split.out" >&2 || true
kill -TERM "$CPID"
wait "$CPID" || true
stop "$SPID"

# Each profile: its split from go tool pprof -top (the CPU, and the sample
# count), against the truth, within 2 points; and whether 2 points was at
# least SE_NEEDED standard errors of its sample count.
for r in $(for s in $LENGTHS; do echo "p$s"; done) collected; do
  pprof -top -nodecount=1000 "$T/$r" >"$T/$r.top" || fail "$r: go tool pprof -top"
  pprof -top -nodecount=1000 -sample_index=samples "$T/$r" >"$T/$r.samples" ||
    fail "$r: go tool pprof -top -sample_index=samples"
done
# split_check NAME WHAT [design]: NAME's split within 2 points of the truth;
# with "design", fails too when 2 points is under SE_NEEDED standard errors.
split_check() {
  python3 - "$T/$1.top" "$T/$1.samples" "$T/split.out" "$SE_NEEDED" "${3:-}" <<'PY'
import math, re, sys
top, samples, out = (open(p).read() for p in sys.argv[1:4])
se_needed, design = float(sys.argv[4]), sys.argv[5] == "design"
truth = {m.group(1): float(m.group(2)) for m in re.finditer(r'^truth (\S+) \d+ ([\d.]+)$', out, re.M)}
line = r'^\s*\S+\s+[\d.]+%\s+[\d.]+%\s+(\S+)\s+([\d.]+)%\s+(work_\d+)$'
# The work is in unit_kernel, under each work_ function: its share is its cum.
cum = {m.group(3): float(m.group(2)) for m in re.finditer(line, top, re.M)}
n = sum(float(m.group(1)) for m in re.finditer(line, samples, re.M))
total = sum(cum.values())
ok = len(truth) == 3 and total > 0
worst = 0
for fn in ("work_60", "work_30", "work_10"):
    t = truth.get(fn, -100)
    got = 100 * cum.get(fn, 0) / total if total else 0
    se = 100 * math.sqrt(max(t, 1) / 100 * (1 - max(t, 1) / 100) / max(n, 1))
    worst = max(worst, se)
    print("  %s truth %.2f%% profile %.2f%%: %+.2f points (%.0f samples, standard error %.2f points)"
          % (fn, t, got, got - t, n, se))
    ok = ok and abs(got - t) <= 2.0
if design and 2.0 < se_needed * worst:
    print("  DESIGN: %.0f samples make 2 points only %.1f standard errors (%.0f wanted): too few samples "
          "for the bar; was the machine busy? (at most 250 a second per CPU: the kernel's tick)"
          % (n, 2.0 / worst, se_needed))
    ok = False
# The standard error counts samples as independent draws, one a signal. On
# a busy machine the kernel holds a thread's timer signal back (tens of ms
# of its CPU, doc/internals.md) and the late one carries the periods in
# si_overrun: few signals weighted by many periods, so the count can
# overstate what the profile knows (seen: 3.6 "standard errors" off at a
# load of 4, most likely so).
# So the work must have had its CPUs (at least 75 %: 78-82 % beside a load
# of 2 held the errors under 1 point): its threads' CPU over their wall time.
m = re.search(r'^split: rounds=\d+ threads=(\d+) wall_s=([\d.]+)', out, re.M)
busy = sum(int(v) for v in re.findall(r'^truth \S+ (\d+) ', out, re.M)) / 1e9
share = busy / (int(m.group(1)) * float(m.group(2))) if m and float(m.group(2)) > 0 else 0
if design:
    print("  the work had %.0f %% of its CPUs (%.1f s of CPU on %s threads in %s s)"
          % (100 * share, busy, m.group(1) if m else "?", m.group(2) if m else "?"))
if design and share < 0.75:
    print("  DESIGN: the work had under 75 % of its CPUs: the machine was busy, its signals came late "
          "and weighted, and the sample count is not the draws it seems")
    ok = False
busy = design and (2.0 < se_needed * worst or share < 0.75)
sys.exit(3 if busy else 0 if ok else 1)
PY
}
# The shortest first: whether the machine was too busy (exit 3).
BUSY=0
rc=0
split_check "p${LENGTHS##* }" "${LENGTHS##* }" design || rc=$?
[ "$rc" = 3 ] && BUSY=1
check "the ${LENGTHS##* } s profile: each function within 2 points of the truth, with samples enough" [ "$rc" = 0 ]
for s in ${LENGTHS% *}; do
  check "the ${s} s profile: each function within 2 points of the truth" split_check "p$s" "$s"
done
check "the collector's process_cpu over the 20 s window: each function within 2 points" \
  split_check collected window
if [ "$BUSY" = 1 ] && [ "$FAILS" -gt 0 ] && [ "${CPU_CONCURRENT_TRY:-2}" = 1 ]; then
  finish || true
  exit 75
fi
finish

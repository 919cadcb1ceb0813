# CPU shares on a known split, on the aarch64 build under qemu: bench/cpu's
# split program divides its CPU between work_60, work_30 and work_10 (6, 3
# and 1 units a round, interleaved) and prints the truth it measured with
# CLOCK_THREAD_CPUTIME_ID; the whole run's CPU profile (CPROF_OUTPUT, at
# exit) must give each function its true share within 3 standard errors of
# the samples it has, with either unwinder. The shares are of CPU time as
# the host counts the emulator's thread, which is what both the timer and
# the truth measure: they say where the program's CPU went, not how fast
# aarch64 hardware would run it (qemu cannot show that).
. "$(dirname "$0")/lib.sh"

# 250 Hz, the most the CPU profiler takes: ~750 samples in 3 s of CPU.
HZ=250
for unwind in dwarf fp; do
  mkdir -p "$T/$unwind"
  CPROF_ADDR=0 CPROF_CPU_HZ=$HZ CPROF_OUTPUT="$T/$unwind" CPROF_UNWIND=$unwind "${A64[@]}" "$P/cpu_split" 3 \
    >"$T/$unwind.out" 2>"$T/$unwind.err" || fail "$unwind: cpu_split ran"
  grep '^truth' "$T/$unwind.out" || true
  pprof -top -nodecount=100 "$T/$unwind/cpu.pb.gz" >"$T/$unwind.top" || fail "$unwind: go tool pprof -top"
  check "$unwind: each function has its true share within 3 standard errors" \
    python3 - "$T/$unwind.out" "$T/$unwind.top" $HZ <<'PY'
import math, re, sys
truth = {l.split()[1]: float(l.split()[3]) for l in open(sys.argv[1]) if l.startswith("truth ")}
top = open(sys.argv[2]).read()
# cum, in samples (a sample is 1/HZ s): the work_* functions call
# unit_kernel, which has the flat time.
hz = float(sys.argv[3])
def cum(fn):
    m = re.search(r'^\s*\S+\s+\S+\s+\S+\s+([\d.]+)(ms|s)\s+[\d.]+%\s+' + fn + r'$', top, re.M)
    if not m:
        return 0.0
    return float(m.group(1)) * (1 if m.group(2) == "s" else 0.001) * hz
got = {fn: cum(fn) for fn in truth}
n = sum(got.values())
ok = len(truth) == 3 and n >= 100
for fn, want in sorted(truth.items()):
    share = 100 * got[fn] / n if n else 0
    se = 100 * math.sqrt(want / 100 * (1 - want / 100) / n) if n else 0
    good = abs(share - want) <= 3 * se
    ok &= good
    print("  %s: %.1f%% of %d samples, truth %.1f%%, 3 standard errors %.1f points %s"
          % (fn, share, n, want, 3 * se, "ok" if good else "OFF"))
sys.exit(0 if ok else 1)
PY
done
finish

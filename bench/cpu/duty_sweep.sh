#!/usr/bin/env bash
# The CPU sweep (issue 29): a CPU profile's CPU per thread group against the
# threads' own CPU clocks, for threads at duty cycles x profile windows x
# CPROF_CPU_HZ, and for short-lived threads.
#
#   bench/cpu/duty_sweep.sh                   (make -C bench cpu-sweep)
#   REPS=3 DUTIES="0.2:16 1:8 5:4 25:2 100:1" WINDOWS="1 2 5 15" HZS="100 1000" \
#     SHORTS="5 30" SHORT_WINDOW=2 LEAD_MS=250 TAIL_MS=350 bench/cpu/duty_sweep.sh
#
# `duty` (cpu/duty.c) runs under LD_PRELOAD=libcprof.so CPROF_CPU_HZ=HZ;
# one GET /debug/pprof/profile?seconds=WINDOW; LEAD_MS after the request
# the work starts (SIGUSR1) and lasts WINDOW s - LEAD_MS - TAIL_MS, so all
# of it falls inside the profile; before and after it the threads sleep.
#   duty cycles  DUTIES: DUTY%:THREADS groups, threads "dDUTY-K" burning
#                DUTY % of every 10 ms of their CPU clock (100: all of it),
#                every (HZ, WINDOW)
#   short        threads "sK", two at a time, each burning SHORT ms of CPU
#                and exiting, SHORT_WINDOW s profiles, every HZ
# Each thread measures its CPU over the work itself (CLOCK_THREAD_CPUTIME_ID;
# a short thread at its exit, after cprof's own thread-exit hook). The
# profile's CPU of a group is the sum of its samples' cpu/nanoseconds over
# the samples whose `thread` label is one of the group's (go tool pprof
# -raw). Reported per group: truth, profile, error (profile - truth) /
# truth, and se: a thread's count of expiries is within a period of its CPU
# / period, so period/2 x sqrt(threads) is taken as its standard error (as
# tests/host/cpu_truth.sh does); a group is within when its error is within
# 2 % or 4 se, whichever is wider. "?" is the share of all samples whose
# thread label is "?" (a thread whose name cprof could not read); "other"
# the samples of threads outside the truth (main, cprof's own), in ms.
# Medians over REPS; the tables go to stdout and bench/build/cpu-sweep-<UTC time>.md.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

REPS=${REPS:-3}
DUTIES=${DUTIES:-0.2:16 1:8 5:4 25:2 100:1}
WINDOWS=${WINDOWS:-1 2 5 15}
HZS=${HZS:-100 1000}
SHORTS=${SHORTS:-5 30}
SHORT_WINDOW=${SHORT_WINDOW:-2}
LEAD_MS=${LEAD_MS:-250}
TAIL_MS=${TAIL_MS:-350}

need_pkgs cpu-sweep golang-go curl python3
cpu_profile_available || exit 1
[ -x "$BIN/duty" ] || make -s -C "$BENCH" "$BIN/duty" >/dev/null

OUTMD=$BENCH/build/cpu-sweep-$(date -u +%Y%m%dT%H%M%S).md
exec > >(tee "$OUTMD")
START=$(date +%s)
echo "# CPU sweep: $REPS repetition(s); duty groups $DUTIES; windows $WINDOWS s; CPROF_CPU_HZ $HZS;" \
  "short threads $SHORTS ms, ${SHORT_WINDOW} s windows; libcprof $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
machine
echo

ROWS=$T/rows # rep kind hz window group threads truth_ns profile_ns | rep kind hz window "?" q_ns all_ns other_ns
: >"$ROWS"

# one NAME KIND HZ WINDOW REP ARGS...: one profile of `duty WORK_MS ARGS`.
one() {
  local name=$1 kind=$2 hz=$3 win=$4 rep=$5
  shift 5
  local work=$((win * 1000 - LEAD_MS - TAIL_MS))
  start "$name" CPROF_CPU_HZ="$hz" -- "$BIN/duty" "$work" "$@" || exit 1
  for _ in $(seq 1 400); do grep -q '^ready' "$T/$name.out" && break; sleep 0.025; done
  curl -s --max-time $((win + 60)) -o "$T/$name.pb.gz" "http://$ADDR/debug/pprof/profile?seconds=$win" &
  local curl=$!
  sleep "$(awk -v m="$LEAD_MS" 'BEGIN { print m / 1000 }')"
  kill -USR1 "$PID"
  wait "$curl" || { echo "$name: the profile request failed" >&2; exit 1; }
  for _ in $(seq 1 400); do grep -q '^total' "$T/$name.out" && break; sleep 0.025; done
  kill "$PID" 2>/dev/null || true
  wait "$PID" 2>/dev/null || true
  go tool pprof -raw -symbolize=none "$T/$name.pb.gz" >"$T/$name.raw" 2>>"$T/pprof.err" || { echo "$name: pprof -raw failed" >&2; exit 1; }
  python3 - "$T/$name.raw" "$T/$name.out" "$kind" "$hz" "$win" "$rep" >>"$ROWS" <<'PY'
import re, sys
raw, out = open(sys.argv[1]).read(), open(sys.argv[2]).read()
kind, hz, win, rep = sys.argv[3:7]
truth = {m.group(1): int(m.group(2)) for m in re.finditer(r'^cpu (\S+) (\d+)', out, re.M)}
got, cur, total = {}, None, 0
for l in raw.split('\n'):
    m = re.match(r'^\s*(\d+)\s+(\d+):', l)
    if m:
        cur = int(m.group(2))
        total += cur
        continue
    m = re.search(r'thread:\[(.*?)\]', l)
    if m and cur is not None:
        got[m.group(1)] = got.get(m.group(1), 0) + cur
        cur = None
def group(n):
    return n.split('-')[0] if kind == 'duty' else 's'
groups = {}
for n, t in truth.items():
    g = groups.setdefault(group(n), [0, 0, 0])
    g[0] += 1; g[1] += t; g[2] += got.get(n, 0)
for g, (k, t, p) in groups.items():
    print('\t'.join(map(str, [rep, kind, hz, win, g, k, t, p])))
other = sum(v for n, v in got.items() if n not in truth and n != '?')
print('\t'.join(map(str, [rep, kind, hz, win, '?', got.get('?', 0), total, other])))
PY
  awk -F'\t' -v r="$rep" -v k="$kind" -v h="$hz" -v w="$win" '$1 == r && $2 == k && $3 == h && $4 == w {
      if ($5 == "?") q = sprintf("\"?\" %.1f ms of %.1f; other %.1f ms", $6 / 1e6, $7 / 1e6, $8 / 1e6)
      else { s = s sprintf(" %s %+.1f%%", $5, $7 ? 100 * ($8 - $7) / $7 : 0); t += $7; p += $8 } }
    END { printf "  %s %s Hz %s s rep %s: total %+.2f%% (truth %.1f ms);%s; %s\n", k, h, w, r, 100 * (p - t) / t, t / 1e6, s, q }' "$ROWS" >&2
}

for r in $(seq 1 "$REPS"); do
  for hz in $HZS; do
    for w in $WINDOWS; do
      # shellcheck disable=SC2086
      one "duty.$r.$hz.$w" duty "$hz" "$w" "$r" $DUTIES
    done
    for b in $SHORTS; do
      one "short.$r.$hz.$b" "short$b" "$hz" "$SHORT_WINDOW" "$r" short "$b"
    done
  done
done
load
echo "elapsed: $(($(date +%s) - START)) s"
echo

# The per-(kind, hz, window) figures of one repetition, then medians.
SUM=$T/sum # kind hz window rep what threads truth profile err se
awk -F'\t' -v duties="$DUTIES" '
  BEGIN { split(duties, d, " "); for (i in d) { split(d[i], x, ":"); frac["d" x[1]] = x[1] + 0 } }
  $5 == "?" { key = $1 SUBSEP $2 SUBSEP $3 SUBSEP $4; q[key] = $7 ? 100 * $6 / $7 : 0; next }
  { key = $1 SUBSEP $2 SUBSEP $3 SUBSEP $4; keys[key] = 1
    n[key, $5] = $6; t[key, $5] = $7; p[key, $5] = $8; groups[key] = groups[key] " " $5
    tn[key] += $6; tt[key] += $7; tp[key] += $8
    if ($2 == "duty" && (!(key in light) || frac[$5] < frac[light[key]])) light[key] = $5 }
  function row(key, what, k, tr, pr,   a, per) {
    split(key, a, SUBSEP); per = 1e9 / a[3]
    printf "%s\t%s\t%s\t%s\t%s\t%d\t%.0f\t%.0f\t%.4f\t%.4f\n", a[2], a[3], a[4], a[1], what, k, tr, pr,
      tr ? 100 * (pr - tr) / tr : 0, tr ? 100 * per / 2 * sqrt(k) / tr : 0 }
  END { for (key in keys) {
      row(key, "total", tn[key], tt[key], tp[key])
      if (key in light) row(key, "lightest", n[key, light[key]], t[key, light[key]], p[key, light[key]])
      m = split(groups[key], g, " "); for (i = 1; i <= m; i++) row(key, g[i], n[key, g[i]], t[key, g[i]], p[key, g[i]])
      split(key, a, SUBSEP); printf "%s\t%s\t%s\t%s\t?\t0\t0\t0\t%.4f\t0\n", a[2], a[3], a[4], a[1], q[key] } }' "$ROWS" >"$SUM"

# med KIND HZ WIN WHAT COL: the median over the repetitions.
med() { awk -F'\t' -v k="$1" -v h="$2" -v w="$3" -v x="$4" -v c="$5" '$1 == k && $2 == h && $3 == w && $5 == x { print $c }' "$SUM" | median; }
# span KIND HZ WIN WHAT: the errors of all repetitions, as "lo..hi".
span() { awk -F'\t' -v k="$1" -v h="$2" -v w="$3" -v x="$4" '$1 == k && $2 == h && $3 == w && $5 == x { print $9 }' "$SUM" |
  sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { if (NR > 1) printf "%+.1f..%+.1f", lo, hi; else printf "%+.1f", lo }'; }
# cell KIND HZ WIN WHAT: "err % (se %)", marked ✗ outside max(2 %, 4 se).
cell() {
  local e s
  e=$(med "$@" 9) s=$(med "$@" 10)
  awk -v e="$e" -v s="$s" -v sp="$(span "$@")" 'BEGIN {
    b = 4 * s; if (b < 2) b = 2; v = e < 0 ? -e : e
    printf "%+.1f (se %.1f)%s%s", e, s, (v > b ? " ✗" : ""), (sp ~ /\.\./ ? " [" sp "]" : "") }'
}

echo "## Duty cycles: profile vs the threads' CPU clocks, error % (se %), median of $REPS [all runs]"
echo
printf '| Hz | window s | truth ms | total | lightest |'
for g in $DUTIES; do printf ' %s %% x%s |' "${g%%:*}" "${g##*:}"; done
echo ' "?" % |'
printf '|---:|---:|---:|---:|---:|'; for g in $DUTIES; do printf -- '---:|'; done; printf -- '---:|\n'
for hz in $HZS; do
  for w in $WINDOWS; do
    printf '| %s | %s | %.0f | %s | %s |' "$hz" "$w" "$(med duty "$hz" "$w" total 7 | awk '{ print $1 / 1e6 }')" \
      "$(cell duty "$hz" "$w" total)" "$(cell duty "$hz" "$w" lightest)"
    for g in $DUTIES; do printf ' %s |' "$(cell duty "$hz" "$w" "d${g%%:*}")"; done
    printf ' %.2f |\n' "$(med duty "$hz" "$w" '?' 9)"
  done
done
echo
echo "## Short-lived threads, two at a time, ${SHORT_WINDOW} s profiles"
echo
echo '| Hz | burn ms | threads | truth ms | profile ms | error % (se %) | "?" % |'
echo '|---:|---:|---:|---:|---:|---:|---:|'
for hz in $HZS; do
  for b in $SHORTS; do
    printf '| %s | %s | %s | %.1f | %.1f | %s | %.2f |\n' "$hz" "$b" "$(med "short$b" "$hz" "$SHORT_WINDOW" total 6)" \
      "$(med "short$b" "$hz" "$SHORT_WINDOW" total 7 | awk '{ print $1 / 1e6 }')" \
      "$(med "short$b" "$hz" "$SHORT_WINDOW" total 8 | awk '{ print $1 / 1e6 }')" \
      "$(cell "short$b" "$hz" "$SHORT_WINDOW" total)" "$(med "short$b" "$hz" "$SHORT_WINDOW" '?' 9)"
  done
done
echo
echo '✗: outside 2 % and 4 se. "?": the share of all the profile'"'"'s CPU in samples labelled thread="?".'
cp "$ROWS" "${OUTMD%.md}.tsv"
echo "(rows: ${OUTMD%.md}.tsv)"

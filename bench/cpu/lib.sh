# Shared by the CPU benchmark scripts. Source it: it sets -euo pipefail,
# builds what the benchmarks need, makes a scratch directory, and stops
# every program it started when the script exits.
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
export CPROF_BUILD=${CPROF_BUILD:-$BENCH/build/cprof}
BIN=$BENCH/build
LIB=$CPROF_BUILD/libcprof.so
T=$(mktemp -d /tmp/cprof-bench.XXXXXX)
# go tool pprof keeps fetched profiles under $PPROF_TMPDIR and may write to ~.
export PPROF_TMPDIR=$T/pprof HOME=$T
WRAP=()

# Only jobs still running: a PID that has ended may already belong to
# another program (see tests/integration/lib.sh, where this bit).
bench_cleanup() {
  local p
  for p in $(jobs -p); do
    kill -9 "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true # reaped here: no "Killed" notice from bash at exit
  done
  if [ -n "${KEEP:-}" ]; then echo "(scratch files kept in $T)" >&2; else rm -rf "$T"; fi
}
trap bench_cleanup EXIT

# Builds libcprof and the workloads unless the caller already did.
if [ -z "${BENCH_BUILT:-}" ]; then
  make -s -C "$BENCH" build >/dev/null
  export BENCH_BUILT=1
fi

# start NAME ENV=VAL... -- COMMAND...: runs COMMAND under LD_PRELOAD of
# libcprof on a free port, waits for its "serving" line, and sets $ADDR and
# $PID. Its stdout and stderr go to $T/NAME.out and $T/NAME.err. A wrapper
# such as nice goes in the WRAP array, not in COMMAND: under LD_PRELOAD the
# wrapper would start a cprof server of its own before it execs COMMAND.
start() {
  local name=$1
  shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  ${WRAP[@]+"${WRAP[@]}"} env LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0 "${envs[@]}" "$@" \
    >"$T/$name.out" 2>"$T/$name.err" &
  PID=$!
  for _ in $(seq 1 400); do
    ADDR=$(sed -n 's|^cprof: serving http://\([^/]*\)/.*|\1|p' "$T/$name.err" | head -1)
    [ -n "$ADDR" ] && return 0
    if ! kill -0 "$PID" 2>/dev/null; then
      echo "$name exited before serving:" >&2
      cat "$T/$name.err" >&2
      return 1
    fi
    sleep 0.025
  done
  echo "$name did not start serving within 10 s" >&2
  return 1
}

# fetch_profile NAME SECONDS: asks the program started last (as NAME) for a
# CPU profile over SECONDS into $T/NAME.pb.gz, then waits for the program
# to end. Fails, saying why, if the program failed or the request did.
fetch_profile() {
  local name=$1 secs=$2 code
  code=$(curl -s --max-time $((secs + 60)) -o "$T/$name.pb.gz" -w '%{http_code}' \
    "http://$ADDR/debug/pprof/profile?seconds=$secs" || true)
  if ! wait "$PID"; then
    echo "$name: the workload failed under cprof:" >&2
    cat "$T/$name.err" >&2
    return 1
  fi
  if [ "$code" != 200 ]; then
    echo "$name: the profile request answered HTTP $code:" >&2
    head -c 500 "$T/$name.pb.gz" >&2
    return 1
  fi
}

# cpu_profile_available: whether this libcprof serves /debug/pprof/profile
# (200 for a one-second profile of an idle program).
cpu_profile_available() {
  start probe -- sleep 5 || return 1
  local code
  code=$(curl -s --max-time 30 -o "$T/probe.pb.gz" -w '%{http_code}' "http://$ADDR/debug/pprof/profile?seconds=1" || true)
  kill "$PID" 2>/dev/null || true
  wait "$PID" 2>/dev/null || true
  if [ "$code" != 200 ]; then
    echo "cprof's /debug/pprof/profile is not available yet (HTTP $code from $LIB)" >&2
    return 1
  fi
}

# need_pkgs SCRIPT PKG...: installs the Debian packages that are missing
# (as root), or says what to install and fails.
need_pkgs() {
  local who=$1 missing=() p
  shift
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "$who: needs ${missing[*]}; run as root, or: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
  echo "$who: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 ||
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
}

# pkg_file PKG REGEX: the first file of installed package PKG matching REGEX.
pkg_file() { dpkg -L "$1" | grep -E "$2" | head -1; }

# gperftools_profiler WHO: installs gperftools if missing and sets GPERF
# to its CPU profiler's library (libprofiler.so, used with LD_PRELOAD and
# CPUPROFILE=FILE).
gperftools_profiler() {
  need_pkgs "$1" libgoogle-perftools-dev
  GPERF=$(pkg_file libgoogle-perftools-dev '/libprofiler\.so$')
  [ -n "$GPERF" ] && [ -e "$GPERF" ] || { echo "$1: libprofiler.so not found" >&2; exit 1; }
}

# median: the median of the numbers on stdin, one per line (mean of the two
# middle ones for an even count).
median() {
  sort -g | awk '{ v[NR] = $1 } END {
    if (NR == 0) { print "nan"; exit }
    if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# rotated R WORD...: the words, one per line, starting at the R-th (from 1,
# wrapping round): repetition R of a benchmark runs its variants in this
# order, so that no variant always runs just after the same other one (the
# machine's slow spells and a previous run's leftovers in the caches fall
# on all alike).
rotated() {
  local r=$1 i
  shift
  local -a w=("$@")
  for i in "${!w[@]}"; do echo "${w[$(((i + r - 1) % ${#w[@]}))]}"; done
}

# Results files of the overhead scripts: one row per run, tab-separated:
# group (a mode, a thread count, a shape...), variant, repetition, then
# the run's figures. $RES names the file.
# res_col GROUP VARIANT COLUMN: that column of GROUP's VARIANT rows.
res_col() { awk -F'\t' -v g="$1" -v v="$2" -v c="$3" '$1 == g && $2 == v { print $c }' "$RES"; }
# res_ratios GROUP VARIANT BASE COLUMN: VARIANT's COLUMN over BASE's in
# the same group and repetition, one line per repetition: ratios of runs
# made close together, which a slow spell of the machine hits alike.
res_ratios() {
  awk -F'\t' -v g="$1" -v v="$2" -v b="$3" -v c="$4" '
    $1 == g && $2 == b { p[$3] = $c } $1 == g && $2 == v { x[$3] = $c }
    END { for (r in x) if (r in p && p[r] > 0) printf "%.6f\n", x[r] / p[r] }' "$RES"
}
# res_paired GROUP VARIANT BASE COLUMN: the median of those ratios.
res_paired() { res_ratios "$@" | median; }
# res_spread GROUP VARIANT BASE COLUMN: the lowest and the highest, as "LO-HI".
res_spread() { res_ratios "$@" | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.3f-%.3f", lo, hi }'; }

# profile_samples FILE: the sum of a profile's first sample value (for a
# CPU profile, samples/count), from go tool pprof -raw; "-" without go.
profile_samples() {
  command -v go >/dev/null || { echo -; return; }
  go tool pprof -raw -symbolize=none "$1" 2>/dev/null |
    awk '/^Samples:/ { on = 1; next } on && /^ *[0-9]+ +[0-9]+: / { n += $1 } on && /^[A-Za-z]/ && !/\// { on = 0 }
      END { printf "%d\n", n }'
}

# field KEY FILE: the value of KEY=VALUE on the first line that has it.
field() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" "$2" | head -1; }

machine() {
  echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)," \
    "Linux $(uname -r), $(cc --version | head -1)"
  load
}

# load: the load average now; other work on the machine shows here.
load() { echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) ($(date -u +%H:%M:%S) UTC)"; }

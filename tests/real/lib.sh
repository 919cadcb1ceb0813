# Helpers for tests/real: programs nobody here wrote, installed from Debian
# (scripts/install-deps.sh test), run with and without cprof. Source it after
# tests/integration/lib.sh.

# need COMMAND...: skips the test when a program it drives is not installed.
need() {
  local c
  for c in "$@"; do
    command -v "$c" >/dev/null || skip "$c is not installed (scripts/install-deps.sh test)"
  done
}

# batch WHAT MAPPING -- COMMAND...: runs COMMAND to completion without
# cprof (plain) and under LD_PRELOAD recording the whole run's CPU profile
# (pre, $T/prof/cpu.pb.gz); checks that it exits 0 without cprof, that
# output and exit code are the same with it, and that functions of the
# mapping MAPPING (see own_top) are among the profile's top 5. WHAT names
# them in the checks.
batch() {
  local what=$1 map=$2
  shift 3
  run plain -- "$@"
  check "runs without cprof" rc_is plain 0
  mkdir -p "$T/prof"
  run pre LD_PRELOAD="$LIB" CPROF_ADDR=0 CPROF_OUTPUT="$T/prof" -- "$@"
  check "same output as without cprof" same plain pre out
  same plain pre out || diff "$T/plain.out" "$T/pre.out" >&2 || true
  check "same exit code as without cprof" same plain pre rc
  local own
  own=$(own_top "$T/prof/cpu.pb.gz" 5 "$map")
  echo "top 5 (flat) functions of $map:" $own
  check "CPU profile: $what functions in the top 5" test -n "$own"
}

# own_top PROFILE N MAPPING [PPROF ARGS...]: prints the functions among the
# N first lines of `go tool pprof -top` (flat) that belong to a mapping whose
# path matches the regex MAPPING (the program's binary, or the library that
# is its engine), one a line. The mapping of each function comes from
# `pprof -raw`, which lists locations with their mapping numbers.
own_top() {
  local prof=$1 n=$2 map=$3
  shift 3
  pprof -raw "$@" "$prof" >"$T/raw.txt"
  # name -> 1 when some location of it is in a matching mapping.
  awk -v re="$map" '
    /^Mappings/ { m = 1; next }
    m && $1 ~ /^[0-9]+:$/ { id = substr($1, 1, length($1) - 1); if ($3 ~ re) own[id] = 1; next }
    /^Locations/ { l = 1; next }
    l && !m && $1 ~ /^[0-9]+:$/ && $3 ~ /^M=/ { loc[NR] = substr($3, 3) " " $4 }
    END { for (k in loc) { split(loc[k], f, " "); if (own[f[1]] && f[2] != "") print f[2] } }
  ' "$T/raw.txt" | sort -u >"$T/own_names.txt"
  pprof -top -nodecount="$n" "$@" "$prof" | awk '/ flat%/ { t = 1; next } t { print $6 }' |
    grep -Fxf "$T/own_names.txt" || true
}

# inuse_bytes PROFILE [PPROF ARGS...]: the heap profile's in-use total in
# bytes, of the samples that pass the filters in ARGS (-focus, -ignore):
# the sum of every node's flat figure, none dropped.
inuse_bytes() {
  local prof=$1
  shift
  pprof -top -nodecount=1000000 -nodefraction=0 -edgefraction=0 -unit=B \
    -sample_index=inuse_space "$@" "$prof" |
    awk '/ flat%/ { t = 1; next } t { sub(/B$/, "", $1); s += $1 } END { printf "%d\n", s }'
}

# within_se TRUTH GOT RATE: a heap profile's estimate GOT of TRUTH bytes is
# within 4 standard errors of it, sqrt(RATE x TRUTH) at the sampling rate
# RATE (each sample standing for about RATE bytes); says by how much.
within_se() {
  awk -v t="${1:-0}" -v g="${2:-0}" -v R="$3" 'BEGIN {
    d = g - t; if (d < 0) d = -d; se = sqrt(R * t)
    printf "  %.2f %% of the truth, %.2f standard errors of %d bytes\n", 100 * g / t, (g - t) / se, se
    exit !(t > 0 && d <= 4 * se) }'
}

# within A B PCT: A is within PCT % of B.
within() { awk -v a="$1" -v b="$2" -v p="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b > 0 && d * 100 <= p * b) }'; }
